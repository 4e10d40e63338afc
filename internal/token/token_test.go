package token

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
		{"0123456789abcdef\n", "character 17"},
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

// A token file is made once (0600, in a private directory), and read
// back at the next start; a file others may read, or of another user, or
// empty, is refused with what to do.
func TestTokenFile(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := filepath.Join(t.TempDir(), "state", "toolsrv")
	path := filepath.Join(dir, "mcp-token")
	me := os.Geteuid()
	tok, made, err := MakeFile(path, me, log)
	if err != nil || !made || Check(tok) != nil {
		t.Fatalf("MakeFile: %q, %v, %v", tok, made, err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %04o", p, fi.Mode(), err, want)
		}
	}
	again, made, err := MakeFile(path, me, log)
	if err != nil || made || again != tok {
		t.Errorf("the second start: %q, made %v, %v; want the same token", again, made, err)
	}
	if got, err := ReadFile(path, me); err != nil || got != tok {
		t.Errorf("ReadFile: %q, %v", got, err)
	}
	os.Chmod(path, 0o644)
	if _, err := ReadFile(path, me); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a token file others may read: %v", err)
	}
	if _, _, err := MakeFile(path, me, log); err == nil {
		t.Error("MakeFile took a token file others may read")
	}
	os.Chmod(path, 0o600)
	if _, err := ReadFile(path, me+1); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("a token file of another user: %v", err)
	}
	for content, want := range map[string]string{"": "is empty", "short\n": "at least 16", "two words are not a token\n": "may hold"} {
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := ReadFile(path, me); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a token file holding %q: %v, want %q", content, err, want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), me); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("a missing token file: %v", err)
	}
	// Several starts at once agree on one token.
	path2 := filepath.Join(dir, "race-token")
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, _, err := MakeFile(path2, me, log)
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		}()
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] || g == "" {
			t.Fatalf("starts at once made different tokens: %v", got)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*-token-*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}
