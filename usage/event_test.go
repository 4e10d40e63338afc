package usage

import (
	"strings"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Show Git Status":            "show git status",
		"  show\tgit \n\n status  ":  "show git status",
		"ÉTAT du   Dépôt":            "état du dépôt",
		"":                           "",
		" \t ":                       "",
		"find TODO\u00a0in *.go":     "find todo in *.go",
		"already normalized request": "already normalized request",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPrepare(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, err := prepare(Event{
		Request: strings.Repeat("é", MaxRequest), // 2 bytes each: cut in half
		Tool:    strings.Repeat("t", MaxName+5),
		Time:    now.Add(time.Hour),
		Offered: make([]string, MaxOffered+3),
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Request) != MaxRequest || len(p.Tool) != MaxName || !p.Time.Equal(now) || len(p.Offered) != 0 ||
		p.Source != SourceAPI || len(p.ID) != 32 || p.count != 1 || p.key.Request != Normalize(p.Request) {
		t.Errorf("%+v", p)
	}
	if p, _ := prepare(Event{Request: "x", Time: now.Add(-time.Hour), ID: "mine", Count: 3}, now); p.ID != "mine" || !p.Time.Equal(now.Add(-time.Hour)) || p.count != 3 {
		t.Errorf("%+v", p)
	}
	if p, _ := prepare(Event{Request: "x\xff"}, now); p.Request != "x\uFFFD" {
		t.Errorf("invalid UTF-8 kept: %q", p.Request)
	}
}

func TestCodec(t *testing.T) {
	e := Entry{Key: Key{"show status", "git_status", "claude", "mcp:claude"}, Text: "Show  status", Count: 5, Failed: 2,
		First: time.Unix(0, 1), Last: time.Unix(0, 1e18), Offered: []string{"git_status", "", "ls"}, Version: 1 << 50}
	rec := encodeEntry(nil, &e, 2*failScale)
	var got Entry
	if f, err := decodeEntry(rec, &got, nil); err != nil || f != 2*failScale {
		t.Fatal(f, err)
	}
	if got.Key != e.Key || got.Text != e.Text || got.Count != 5 || got.Failed != 2 || !got.First.Equal(e.First) ||
		!got.Last.Equal(e.Last) || strings.Join(got.Offered, ",") != strings.Join(e.Offered, ",") || got.Version != e.Version {
		t.Errorf("%+v", got)
	}
	// Any cut or extended record is damage, not a wrong entry.
	for i := range rec {
		if _, err := decodeEntry(rec[:i], &got, nil); !isDamage(err) {
			t.Errorf("a record cut at %d decodes: %v", i, err)
		}
	}
	if _, err := decodeEntry(append(rec, 0), &got, nil); !isDamage(err) {
		t.Errorf("a record with a byte more decodes: %v", err)
	}
}
