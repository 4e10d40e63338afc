package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool's directory is granted to it whole only when that grants nothing
// more: a tools directory that is the home directory (directly or through
// a symlink, or named by a HOME that is a symlink), one above it, or a
// hidden directory of it (~/.config itself) would let every tool there
// read the user's keys and tokens. Such a tool still runs (its executable
// is granted), but reads nothing else there.
func TestToolDirectoryCoveringHomeNotGranted(t *testing.T) {
	for _, c := range []struct {
		name string
		// layout returns the home directory (as HOME names it), the tools
		// directory, and a secret file, all under root.
		layout func(t *testing.T, root string) (home, tools, secret string)
	}{
		{"the home directory", func(t *testing.T, root string) (string, string, string) {
			home := filepath.Join(root, "home")
			return home, home, filepath.Join(home, ".ssh", "id_rsa")
		}},
		{"a symlink to the home directory", func(t *testing.T, root string) (string, string, string) {
			home := filepath.Join(root, "home")
			return home, symlink(t, home, filepath.Join(root, "tools")), filepath.Join(home, ".ssh", "id_rsa")
		}},
		{"the home directory, HOME a symlink to it", func(t *testing.T, root string) (string, string, string) {
			home := filepath.Join(root, "home")
			return symlink(t, home, filepath.Join(root, "homelink")), home, filepath.Join(home, ".ssh", "id_rsa")
		}},
		{"above the home directory", func(t *testing.T, root string) (string, string, string) {
			home := filepath.Join(root, "home")
			return home, root, filepath.Join(home, ".ssh", "id_rsa")
		}},
		{"a hidden directory of home", func(t *testing.T, root string) (string, string, string) {
			home := filepath.Join(root, "home")
			return home, filepath.Join(home, ".config"), filepath.Join(home, ".config", "gh", "hosts.yml")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			root := t.TempDir()
			home, tools, secret := c.layout(t, root)
			mustWriteFile(t, secret, "TOP-SECRET\n")
			os.MkdirAll(tools, 0o755)
			f.tools = tools
			f.add("peek", `{"description":"reads a file beside it"}`, "#!/bin/sh\necho ran\ncat "+secret+"\n")
			r := f.runner(func(o *Options) {
				o.Getenv = func(k string) string {
					if k == "HOME" {
						return home
					}
					return ""
				}
			})
			res, _ := f.call(r, "peek", `{}`)
			if res == nil || !strings.Contains(string(res.Stdout), "ran") {
				t.Fatalf("the tool did not run: %+v", res)
			}
			if strings.Contains(string(res.Stdout), "TOP-SECRET") {
				t.Errorf("a tool in %s read %s", tools, secret)
			}
		})
	}
}

// The repository that holds the working directory is readable, except when
// it is the home directory (a home kept in git): also when HOME names the
// home directory through a symlink.
func TestRepositoryAtHomeNotGrantedThroughSymlink(t *testing.T) {
	f := newFixture(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	secret := filepath.Join(home, ".ssh", "id_rsa")
	mustWriteFile(t, secret, "TOP-SECRET\n")
	os.MkdirAll(filepath.Join(home, ".git"), 0o755)
	f.work = filepath.Join(home, "proj")
	os.MkdirAll(f.work, 0o755)
	homeLink := symlink(t, home, filepath.Join(root, "homelink"))
	f.add("peek", `{"description":"reads a file of the repository"}`, "#!/bin/sh\ncat "+secret+"\n")
	r := f.runner(func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "HOME" {
				return homeLink
			}
			return ""
		}
	})
	if res, _ := f.call(r, "peek", `{}`); res != nil && strings.Contains(string(res.Stdout), "TOP-SECRET") {
		t.Errorf("a tool in a project of a home kept in git read %s", secret)
	}
}

// symlink makes link point to target and returns link.
func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func mustWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
