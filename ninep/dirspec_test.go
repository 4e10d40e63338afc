package ninep

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"testing"

	"github.com/hugelgupf/p9/p9"
)

// For every directory of the tree and each kind of connection (full access,
// confined to one agent, denied): every name a directory lists can be walked
// to and opened, as the kind it is listed as, and every name that can be
// walked to is listed, except the call/NAME of a catalog tool that is not
// loaded (walkable by design, so that the call can say why it is refused).
func TestListingMatchesWalk(t *testing.T) {
	e, next := accessEnv(t, nil)
	owner := e.client()
	for _, p := range []string{"session/s1", "session/s1/agent/a", "session/s1/agent/b", "session/s2", "session/s2/agent/a"} {
		mustMkdir(t, owner, p)
	}
	mustWrite(t, owner, "session/s1/agent/a/ctl", "tool_load echo_text") // so that call/ lists something

	// The names to try in every directory: all the tree's names (tree.go),
	// every name the owner sees anywhere, a tool that is not loaded, and
	// names that are nowhere.
	candidates := map[string]bool{"weather": true, "nope": true, "tools.jso": true}
	for _, n := range []string{"tools", "tools.json", "revision", "errors", "err", "rank", "rank.json", "ctl", "session", "agent", "schemas", "call", "meta", "version"} {
		candidates[n] = true
	}
	for _, d := range walkTree(t, owner) {
		for _, en := range d.entries {
			candidates[en.Name] = true
		}
	}

	fullDirs := []string{"", "session", "session/s1", "session/s1/agent", "session/s1/agent/a",
		"session/s1/agent/a/call", "session/s1/agent/b", "session/s1/agent/b/call", "session/s1/meta", "session/s2", "session/s2/agent",
		"session/s2/agent/a", "session/s2/agent/a/call", "session/s2/meta"}
	for _, k := range []struct {
		name string
		acc  Access
		// dirs are the directories this connection must reach.
		dirs []string
	}{
		{"full", Access{}, fullDirs},
		{"unauthenticated", Access{Unauthenticated: "a TCP peer"}, fullDirs},
		{"confined", Access{Session: "s1", Agent: "a"}, []string{"", "session", "session/s1", "session/s1/agent", "session/s1/agent/a"}},
		{"denied", Access{Denied: "this connection comes from a sandboxed tool that is not a call of this server"}, []string{""}},
	} {
		t.Run(k.name, func(t *testing.T) {
			next.Store(&k.acc)
			cl := e.client()
			var visited []string
			for _, d := range walkTree(t, cl) {
				visited = append(visited, d.path)
				listed := map[string]bool{}
				for _, en := range d.entries {
					if listed[en.Name] {
						t.Errorf("/%s lists %s twice", d.path, en.Name)
					}
					listed[en.Name] = true
				}
				for name := range candidates {
					p := path.Join(d.path, name)
					qids, f, err := cl.root.Walk(split(p))
					if err != nil {
						continue
					}
					f.Close()
					if !listed[name] && !(path.Base(d.path) == "call" && isCatalogTool(e, name)) {
						t.Errorf("/%s can be walked to (%v) but /%s does not list it", p, qids[len(qids)-1].Type, d.path)
					}
				}
			}
			sort.Strings(visited)
			want := append([]string(nil), k.dirs...)
			sort.Strings(want)
			if !slices.Equal(visited, want) {
				t.Errorf("directories reached: %q, want %q", visited, want)
			}
		})
	}
}

// listedDir is one directory reached by walkTree and what it lists.
type listedDir struct {
	path    string
	entries []Entry
}

// walkTree lists every directory it can reach from the root, and checks on
// the way that each listed entry can be walked to and opened as what it is
// listed as.
func walkTree(t *testing.T, cl *Client) []listedDir {
	t.Helper()
	var out []listedDir
	queue := []string{""}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		ents, err := cl.List(d)
		if err != nil {
			t.Errorf("ls /%s: %v", d, err)
			continue
		}
		out = append(out, listedDir{d, ents})
		for _, en := range ents {
			p := path.Join(d, en.Name)
			if err := walkOpen(cl, p, en.Dir); err != nil {
				t.Errorf("/%s lists %s (dir %v), but: %v", d, en.Name, en.Dir, err)
				continue
			}
			if en.Dir {
				queue = append(queue, p)
			}
		}
	}
	return out
}

// walkOpen walks to p, checks that it is a directory or not as expected,
// and opens it the way its mode allows (read if readable, else write).
func walkOpen(cl *Client, p string, dir bool) error {
	qids, f, err := cl.root.Walk(split(p))
	if err != nil {
		return cl.refused("walk", p, err)
	}
	defer f.Close()
	if isDir := qids[len(qids)-1].Type&p9.TypeDir != 0; isDir != dir {
		return fmt.Errorf("/%s: walked to a directory: %v, listed as one: %v", p, isDir, dir)
	}
	_, _, attr, err := f.GetAttr(p9.AttrMaskAll)
	if err != nil {
		return cl.refused("stat", p, err)
	}
	mode := p9.ReadOnly
	if attr.Mode.Permissions()&0o444 == 0 {
		mode = p9.WriteOnly
	}
	if _, _, err := f.Open(mode); err != nil {
		return cl.refused("open", p, err)
	}
	return nil
}

func isCatalogTool(e *testEnv, name string) bool {
	_, err := e.reg.Catalog().Lookup(name)
	return err == nil
}
