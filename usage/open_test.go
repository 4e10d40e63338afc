package usage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenURLs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://toolsrv:secret@db.example/usage", "PostgreSQL usage stores are not built yet"},
		{"postgresql://db.example/usage?sslmode=require", "PostgreSQL usage stores are not built yet"},
		{"POSTGRES://db.example/usage", "PostgreSQL usage stores are not built yet"},
		{"mysql://db.example/usage", "no usage store for mysql:// URLs"},
		{"", "no usage store given"},
	} {
		_, _, err := Open(ctx, tc.dsn, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): %v, want %q", tc.dsn, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) tells the password: %v", tc.dsn, err)
		}
	}
	// A registered driver gets its URLs, with the options filled in.
	var got Options
	errFake := errors.New("fake")
	Register("fake+test", func(ctx context.Context, dsn string, opts Options) (Store, []string, error) {
		got = opts
		return nil, nil, errFake
	})
	if _, _, err := Open(ctx, "fake+test://x", Options{PerTool: 3}); err != errFake || got.PerTool != 3 || got.Total != DefaultTotal {
		t.Errorf("registered driver: %v, %+v", err, got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of a scheme did not panic")
		}
	}()
	Register("fake+test", func(context.Context, string, Options) (Store, []string, error) { return nil, nil, nil })
}

func TestDefaultPath(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/toolsrv/usage.db"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/toolsrv/usage.db"},
		// A relative XDG_STATE_HOME is not one (the XDG rule).
		{map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/toolsrv/usage.db"},
	} {
		if got := DefaultPath(func(k string) string { return tc.env[k] }); got != filepath.FromSlash(tc.want) {
			t.Errorf("%v: %s, want %s", tc.env, got, tc.want)
		}
	}
}
