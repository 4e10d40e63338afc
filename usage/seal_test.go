package usage

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file store gives the secret of the installation whose directory holds
// it: the same at every opening (a saved view and its rebuild agree), of
// its key (not the key), another for another purpose and another
// installation.
func TestFileStoreSecret(t *testing.T) {
	ctx := context.Background()
	secret := func(dir, purpose string) []byte {
		t.Helper()
		s, _, err := Open(ctx, filepath.Join(dir, "usage.db"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Record(ctx, Event{Request: "show git status", Tool: "git_status", OK: true}); err != nil {
			t.Fatal(err)
		}
		k, ok := s.(Keyed)
		if !ok {
			t.Fatal("the file store gives no secret")
		}
		return k.Secret(purpose)
	}
	dir := t.TempDir()
	none, _, err := Open(ctx, filepath.Join(dir, "usage.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b := none.(Keyed).Secret("p"); b != nil {
		t.Errorf("a store not made yet gives a secret %x", b)
	}
	none.Close()
	if _, err := os.Stat(filepath.Join(dir, InstanceKeyFile)); err == nil {
		t.Error("asking a store not made yet for its secret made the installation's key")
	}
	a := secret(dir, "p")
	if len(a) != 32 {
		t.Fatalf("secret of %d bytes", len(a))
	}
	key, err := InstanceKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		same bool
	}{
		{"opened again", secret(dir, "p"), true},
		{"another purpose", secret(dir, "q"), false},
		{"another installation", secret(t.TempDir(), "p"), false},
		{"the key itself", key, false},
	} {
		if bytes.Equal(a, c.b) != c.same {
			t.Errorf("%s: the same secret %v, want %v", c.name, !c.same, c.same)
		}
	}
}

// The file store reads the installation's key once (every apply of the
// history asks for a secret): the key file replaced afterwards changes
// nothing this process derives; a key that cannot be read is warned of
// once however often it is asked for.
func TestFileStoreSecretReadOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var logs bytes.Buffer
	s, _, err := Open(ctx, filepath.Join(dir, "usage.db"), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Record(ctx, Event{Request: "show git status", Tool: "git_status", OK: true}); err != nil {
		t.Fatal(err)
	}
	a := s.(Keyed).Secret("p")
	if err := os.Remove(filepath.Join(dir, InstanceKeyFile)); err != nil {
		t.Fatal(err)
	}
	if b := s.(Keyed).Secret("p"); !bytes.Equal(a, b) {
		t.Errorf("the key file removed after the first read: secret %x, was %x (the key read again)", b, a)
	}
	if _, err := os.Stat(filepath.Join(dir, InstanceKeyFile)); err == nil {
		t.Error("the key file was made again: the key was read again")
	}

	dir2 := t.TempDir()
	logs.Reset()
	s2, _, err := Open(ctx, filepath.Join(dir2, "usage.db"), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Record(ctx, Event{Request: "show git status", Tool: "git_status", OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir2, InstanceKeyFile), make([]byte, 7), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if b := s2.(Keyed).Secret("p"); b != nil {
			t.Fatalf("a key of 7 bytes gave a secret %x", b)
		}
	}
	if n := strings.Count(logs.String(), "cannot be read"); n != 1 {
		t.Errorf("a key that cannot be read, asked 3 times: %d warnings, want 1:\n%s", n, logs.String())
	}
}
