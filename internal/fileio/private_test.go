package fileio

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// PrivateDir creates a missing directory 0700, tightens one of ours that
// others may enter (saying so), and refuses another user's and a shared
// one.
func TestPrivateDir(t *testing.T) {
	me := os.Geteuid()
	for _, tc := range []struct {
		name    string
		path    string      // under the test's directory
		mode    os.FileMode // 0: missing
		as      int         // the uid PrivateDir is told is ours
		want    os.FileMode // the mode after
		refused bool
		logged  bool
	}{
		{name: "missing", path: "a/b/cache", want: 0o700},
		{name: "private", path: "cache", mode: 0o700, want: 0o700},
		{name: "readable by others", path: "cache", mode: 0o755, want: 0o700, logged: true},
		{name: "group-writable", path: "cache", mode: 0o770, want: 0o700, logged: true},
		{name: "another user's", path: "cache", mode: 0o755, as: me + 1, want: 0o755, refused: true},
		{name: "another user's, private", path: "cache", mode: 0o700, as: me + 1, want: 0o700, refused: true},
		{name: "shared", path: "cache", mode: os.ModeSticky | 0o777, want: os.ModeSticky | 0o777, refused: true},
		{name: "shared, toolsrv's own", path: "toolsrv", mode: os.ModeSticky | 0o777, want: 0o700, logged: true},
		{name: "in toolsrv's own", path: "toolsrv/builtin_v1", mode: 0o755, want: 0o700, logged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.path)
			if tc.mode != 0 {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			as := me
			if tc.as != 0 {
				as = tc.as
			}
			var log bytes.Buffer
			err := PrivateDir(dir, as, slog.New(slog.NewTextHandler(&log, nil)))
			if tc.refused != (err != nil) || err != nil && !errors.Is(err, ErrNotPrivate) {
				t.Errorf("PrivateDir = %v, refused %v", err, tc.refused)
			}
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != tc.want {
				t.Errorf("mode %v, want %v", got, tc.want)
			}
			if lines := strings.Count(log.String(), "\n"); tc.logged != (lines == 1 && strings.Contains(log.String(), "private")) || lines > 1 {
				t.Errorf("logged %q, want one line: %v", log.String(), tc.logged)
			}
			if tc.path == "a/b/cache" {
				if fi, _ := os.Stat(filepath.Dir(dir)); fi.Mode().Perm() != 0o700 {
					t.Errorf("a missing parent is %v, want 0700", fi.Mode().Perm())
				}
			}
		})
	}
	// Not a directory.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if err := PrivateDir(file, me, nil); err == nil {
		t.Error("a file taken for a directory")
	}
}

// SharedDir refuses directories whose mode change would cut others off.
func TestSharedDir(t *testing.T) {
	me := os.Geteuid()
	mixed := t.TempDir()
	if err := os.WriteFile(filepath.Join(mixed, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sticky := filepath.Join(t.TempDir(), "sticky")
	if err := os.Mkdir(sticky, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, os.ModeSticky|0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir  string
		as   int
		want string
	}{
		{"/", me, "is a system directory"},
		{"/usr/share", me, "is a system directory"},
		{"/etc", me, "is a system directory"},
		{sticky, me, "is shared (sticky or world-writable)"},
		{mixed, me, ""},
		{mixed, me + 1, "holds files of other users (f belongs to uid " + strconv.Itoa(me) + ")"},
	}
	for _, c := range cases {
		fi, err := os.Stat(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := SharedDir(c.dir, fi, c.as); got != c.want {
			t.Errorf("SharedDir(%s) as uid %d = %q, want %q", c.dir, c.as, got, c.want)
		}
	}
}
