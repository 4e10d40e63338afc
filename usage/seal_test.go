package usage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
