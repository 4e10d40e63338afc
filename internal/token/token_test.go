package token

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		token string
		want  string // "" for none
	}{
		{"0123456789abcdef", ""},
		{"AZaz09-._~+/=AZaz09", ""},
		{"0123456789abcde", "at least 16"},
		{"0123456789 abcdef", "character 11"},
		{"0123456789,abcdef", "character 11"}, // a mount option's separator
		{"0123456789abcdéf", "may hold"},
	} {
		err := Check(c.token)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%q) = %v, want %q", c.token, err, c.want)
		}
	}
}

func TestSumMatches(t *testing.T) {
	s := SumOf("0123456789abcdef")
	for guess, want := range map[string]bool{
		"0123456789abcdef":  true,
		"0123456789abcdeF":  false,
		"0123456789abcde":   false,
		"0123456789abcdef0": false,
		"":                  false,
	} {
		if got := s.Matches([]byte(guess)); got != want {
			t.Errorf("Matches(%q) = %v, want %v", guess, got, want)
		}
	}
}

// MakeFile makes a token once, 0600 in a private directory, and its
// temporary file is gone; ReadFile refuses a file others may read.
func TestMakeFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "toolsrv")
	path := filepath.Join(dir, "9p-token")
	me := os.Geteuid()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tok, made, err := MakeFile(path, me, log)
	if err != nil || !made || Check(tok) != nil {
		t.Fatalf("MakeFile: %q, %v, %v", tok, made, err)
	}
	if again, made, err := MakeFile(path, me, log); err != nil || made || again != tok {
		t.Errorf("again: %q, %v, %v; want the same token", again, made, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want the token file only", len(ents))
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path, me); err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), tok) {
		t.Errorf("a token file others may read: %v", err)
	}
}
