package thresholds

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// writeGenerated writes a catalog of n generated tools, verb × object ×
// qualifier as in the benchmarks' catalogs: the first 400 are named
// VERB_OBJECT ("backup_kubernetes_pods"), the rest add the qualifier's
// words to the name; a third of them are cold, a third hot-free warm, and
// backup_kubernetes_pods is cold.
func writeGenerated(t testing.TB, dir string, n int) {
	t.Helper()
	verbs := []string{"list", "create", "delete", "update", "search", "export", "import", "archive", "restore", "rename",
		"compress", "encrypt", "validate", "summarise", "translate", "schedule", "monitor", "backup", "sync", "merge"}
	objects := []string{"invoices", "calendar events", "git branches", "docker images", "log files", "user accounts",
		"database tables", "email drafts", "photos", "spreadsheets", "dns records", "firewall rules", "kubernetes pods",
		"music playlists", "weather alerts", "bank transfers", "shopping lists", "pdf documents", "ssh keys", "cron jobs"}
	quals := []string{"in the cloud", "on this machine", "for a team", "by date", "in bulk", "with a preview", "safely",
		"from a backup", "as csv", "over the network"}
	for i := 0; i < n; i++ {
		v, o := verbs[i%len(verbs)], objects[(i/len(verbs))%len(objects)]
		q := quals[(i/(len(verbs)*len(objects)))%len(quals)]
		name := v + "_" + strings.ReplaceAll(o, " ", "_")
		if i >= len(verbs)*len(objects) {
			name += "_" + strings.ReplaceAll(q, " ", "_")
		}
		tier := []string{"warm", "cold", "warm"}[i%3]
		if name == "backup_kubernetes_pods" {
			tier = "cold"
		}
		meta, _ := json.Marshal(map[string]any{
			"description": fmt.Sprintf("%s %s %s", v, o, q),
			"keywords":    []string{v + " " + o, o},
			"tier":        tier,
			"cmd":         "true",
		})
		if err := os.WriteFile(filepath.Join(dir, name+".meta"), meta, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGeneratedCatalogOffersTheBest: on 1,000 generated tools, with the
// learned last step and the shipped thresholds, a request the cold
// backup_kubernetes_pods serves best is offered that tool (coldMin never
// leaves out the best tool and offers worse ones in its place: restore,
// sync and delete_kubernetes_pods were offered instead), and nothing the
// message shares no word with pads the set.
func TestGeneratedCatalogOffersTheBest(t *testing.T) {
	dir := t.TempDir()
	writeGenerated(t, dir, 1000)
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
	f, _, ok := Shipped(emb.ID())
	if !ok {
		t.Fatal("no shipped thresholds for the built-in embedder")
	}
	for _, tc := range []struct{ text, want string }{
		{"backup my kubernetes pods", "backup_kubernetes_pods"},
		{"please encrypt my ssh keys", "encrypt_ssh_keys"},
	} {
		sel, r, err := f.Policy.Offer(ctx, ix, reg.Catalog(), index.Query{Text: tc.text, K: 30}, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := sel.Names()
		if r.Hits[0].Name != tc.want {
			t.Fatalf("%q: ranked %s first, want %s", tc.text, r.Hits[0].Name, tc.want)
		}
		if len(names) == 0 || names[0] != tc.want {
			var top []string
			for _, h := range r.Hits[:min(5, len(r.Hits))] {
				top = append(top, fmt.Sprintf("%s %.3f", h.Name, h.Score))
			}
			t.Errorf("%q: offered %v (%s), want %s, the best, first; ranked %v", tc.text, names, sel.Reason, tc.want, top)
		}
		unmatched := UnmatchedIn(r)
		for _, n := range names[1:] {
			if unmatched(n) {
				t.Errorf("%q: %s offered after the best, but it matched no word of the message", tc.text, n)
			}
		}
	}
}
