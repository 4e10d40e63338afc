package index

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCacheThatIsANamedPipe: an index file replaced by a named pipe (or a
// symlink to one) used to block Sync forever in the read. Now the cache is
// reported unusable, removed and rebuilt, and ranking works.
func TestCacheThatIsANamedPipe(t *testing.T) {
	for _, viaLink := range []bool{false, true} {
		name := map[bool]string{false: "named pipe", true: "symlink to a named pipe"}[viaLink]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir, cache := copyTools(t), t.TempDir()
			cat := loadReg(t, dir).Catalog()
			path := cacheFile(cache, "test/hash", cat.Dirs)
			if err := os.MkdirAll(cache, 0o755); err != nil {
				t.Fatal(err)
			}
			fifo := path
			if viaLink {
				fifo = path + ".fifo"
				if err := os.Symlink(fifo, path); err != nil {
					t.Fatal(err)
				}
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			e := newHashEmbedder(32)
			ix := New(e, Options{CacheDir: cache, Logger: quiet()})
			done := make(chan error, 1)
			go func() { done <- ix.Sync(ctx, cat) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Sync over a named-pipe cache still blocks after 30 s")
			}
			if got := e.st.docTexts.Load(); got != int64(len(cat.Tools)) {
				t.Fatalf("embedded %d documents, want all %d", got, len(cat.Tools))
			}
			if _, _, err := readCache(path); err != nil {
				t.Fatalf("cache not rewritten as a regular file: %v", err)
			}
			r, err := ix.Rank(ctx, Query{Text: "send a mail", K: 1})
			if err != nil || len(r.Hits) == 0 || r.Hits[0].Name != "send_email" {
				t.Fatalf("rank after recovery: %+v %v", r, err)
			}
		})
	}
}
