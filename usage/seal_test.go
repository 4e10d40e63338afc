package usage

import (
	"bytes"
	"context"
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
		k, ok := s.(Keyed)
		if !ok {
			t.Fatal("the file store gives no secret")
		}
		return k.Secret(purpose)
	}
	dir := t.TempDir()
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
