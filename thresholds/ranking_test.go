package thresholds

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// Offer over a real registry, index and the built-in embedder. The levels
// are chosen so the assertions do not depend on the embedder's quality: a
// tool named in the message scores 1, and a message of unknown words has
// no lexical score, so its hybrid score stays at or below 0.5.
func TestOfferEndToEnd(t *testing.T) {
	dir := t.TempDir()
	tools := map[string]map[string]any{
		"weather_forecast": {"description": "Weather forecast for a city", "tier": "warm"},
		"deploy_service":   {"description": "Deploy a service to production", "tier": "cold"},
		"shell":            {"description": "Run a shell command", "tier": "hot"},
		"send_email":       {"description": "Send an email message"},
	}
	for name, m := range tools {
		m["cmd"] = "cat"
		data, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: log})
	if err := reg.Load(ctx); err != nil {
		t.Fatal(err)
	}
	emb, err := builtin.New()
	if err != nil {
		t.Fatal(err)
	}
	ix := index.New(emb, index.Options{NoCache: true, Logger: log})
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		t.Fatal(err)
	}
	pol := Policy{Levels: Levels{Min: 0.7, ColdMin: 0.8, Relative: 0.9, MaxTools: 3}}
	noWeather := []string{"shell", "send_email", "deploy_service"}
	noShell := []string{"weather_forecast"}
	withShell := &registry.Profile{Name: "c", AutoLoad: []string{"shell"}}
	tests := []struct {
		name     string
		text     string
		profile  *registry.Profile
		want     []string
		noneFits bool
	}{
		{"named tool, no profile: no hot tool forced", "please run weather_forecast for Paris", nil, []string{"weather_forecast"}, false},
		{"named tool, the profile's hot tool too", "please run weather_forecast for Paris", withShell, []string{"weather_forecast", "shell"}, false},
		{"named cold tool clears the cold min", "use deploy_service now", withShell, []string{"deploy_service", "shell"}, false},
		{"unknown words: no tool fits, hot still offered", "xqzzv plorbt wuggle", withShell, []string{"shell"}, true},
		{"unknown words, no profile: nothing at all", "xqzzv plorbt wuggle", nil, []string{}, true},
		{"profile hides a named tool", "please run weather_forecast for Paris", &registry.Profile{Name: "a", AllowTools: &noWeather}, []string{"shell"}, true},
		{"profile without the hot tool", "please run weather_forecast for Paris", &registry.Profile{Name: "b", AllowTools: &noShell}, []string{"weather_forecast"}, false},
	}
	t.Run("bm25 mode uses the degraded levels", func(t *testing.T) {
		strict := pol
		strict.Degraded = &Levels{Min: 1, ColdMin: 1, Relative: 1, MaxTools: 1}
		q := index.Query{Text: "send an email message to bob", Mode: index.Lexical}
		sel, _, err := strict.Offer(ctx, ix, reg.Catalog(), q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.NoToolFits || sel.Levels != *strict.Degraded {
			t.Fatalf("bm25 ranking selected with %+v: %v (%s)", sel.Levels, sel.Names(), sel.Reason)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, rk, err := pol.Offer(ctx, ix, reg.Catalog(), index.Query{Text: tc.text, K: 1}, tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.Names(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("offered %v, want %v (%s; ranking %+v)", got, tc.want, sel.Reason, rk.Hits)
			}
			if sel.NoToolFits != tc.noneFits {
				t.Fatalf("NoToolFits = %v, want %v (%s)", sel.NoToolFits, tc.noneFits, sel.Reason)
			}
			if len(rk.Hits) < pol.MaxTools && len(rk.Hits) < len(reg.Catalog().Tools) && tc.profile == nil {
				t.Errorf("K=1 was not raised to MaxTools: %d hits", len(rk.Hits))
			}
		})
	}
}

func TestProfileHot(t *testing.T) {
	dir := t.TempDir()
	for name, tier := range map[string]string{"h1": "hot", "h2": "hot", "h3": "hot", "w": "warm"} {
		os.WriteFile(filepath.Join(dir, name+".meta"), []byte(`{"description":"d","cmd":"cat","tier":"`+tier+`"}`), 0o644)
	}
	reg := registry.New(registry.Options{Dirs: []string{dir}, Logger: slog.New(slog.DiscardHandler)})
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	cat := reg.Catalog()
	allowH1H2W := []string{"h1", "h2", "w", "gone"}
	tests := []struct {
		name    string
		profile *registry.Profile
		allow   func(string) bool
		want    []string
	}{
		{"no profile", nil, nil, nil},
		{"autoLoad names hot and warm", &registry.Profile{AutoLoad: []string{"h2", "w", "h1"}}, nil, []string{"h1", "h2"}},
		{"allowTools names count, duplicates once, unknown skipped", &registry.Profile{AutoLoad: []string{"h1"}, AllowTools: &allowH1H2W}, nil, []string{"h1", "h2"}},
		{"autoLoad outside allowTools is not offered", &registry.Profile{AutoLoad: []string{"h3"}, AllowTools: &allowH1H2W}, nil, []string{"h1", "h2"}},
		{"query filter applies too", &registry.Profile{AutoLoad: []string{"h1", "h2"}}, func(n string) bool { return n == "h2" }, []string{"h2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProfileHot(cat, tc.profile, tc.allow); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ProfileHot = %v, want %v", got, tc.want)
			}
		})
	}
}

// A tool is unmatched when the embedding is its only evidence: no real
// word of the message matched (a lexical score from a class, a number or
// a phrase of stop words alone is none), not named, nothing from the
// usage history.
func TestUnmatchedIn(t *testing.T) {
	r := index.Ranking{Hits: []index.Hit{
		{Name: "dense", Score: 0.3, Dense: 0.4},
		{Name: "word", Score: 0.2, Dense: 0.1, Lexical: 0.2, Words: true},
		{Name: "classes", Score: 0.2, Dense: 0.1, Lexical: 0.4},
		{Name: "named", Score: 1, Named: true},
		{Name: "used", Score: 0.1, Usage: 0.05},
	}}
	un := UnmatchedIn(r)
	for name, want := range map[string]bool{"dense": true, "word": false, "classes": true, "named": false, "used": false, "absent": false} {
		if got := un(name); got != want {
			t.Errorf("UnmatchedIn(%s) = %v, want %v", name, got, want)
		}
	}
}
