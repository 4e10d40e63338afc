package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// makeCatalog writes n synthetic tools with typical field sizes.
func makeCatalog(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := 0; i < n; i++ {
		meta := fmt.Sprintf(`{"description":"Synthetic tool %d that reads and filters records.",
 "prompt":"## tool_%d\n\nReads records from the input and returns those matching the filter. Use it when the user asks for records of kind %d.",
 "keywords":["records","filter","kind %d"],"tier":"warm","cmd":"cat",
 "args":{"type":"object","required":["filter"],"properties":{"filter":{"type":"string","description":"what to keep"},"limit":{"type":"integer","minimum":1}}}}`, i, i, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("tool_%05d.meta", i)), []byte(meta), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkLoad10k measures a cold load of 10,000 tools (a fresh registry:
// read, parse, compile every schema, resolve) and a reload with nothing
// changed (stat only).
func BenchmarkLoad10k(b *testing.B) {
	dir := makeCatalog(b, 10000)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r := New(Options{Dirs: []string{dir}})
			if err := r.Load(ctx); err != nil {
				b.Fatal(err)
			}
			if n := len(r.Catalog().Tools); n != 10000 {
				b.Fatalf("%d tools", n)
			}
		}
	})
	// A new process's load with the catalog snapshot written by an earlier
	// one ("cold" is the same load without it).
	b.Run("snapshot", func(b *testing.B) {
		cache := filepath.Join(b.TempDir(), "catalog.snap")
		later := func() time.Time { return time.Now().Add(time.Minute) } // the files count as old
		r := New(Options{Dirs: []string{dir}, CatalogCache: cache})
		r.now = later
		if err := r.Load(ctx); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r := New(Options{Dirs: []string{dir}, CatalogCache: cache})
			r.now = later
			if err := r.Load(ctx); err != nil {
				b.Fatal(err)
			}
			if n := len(r.Catalog().Tools); n != 10000 {
				b.Fatalf("%d tools", n)
			}
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		r := New(Options{Dirs: []string{dir}})
		if err := r.Load(ctx); err != nil {
			b.Fatal(err)
		}
		rev := r.Catalog().Revision
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := r.Load(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if r.Catalog().Revision != rev {
			b.Fatal("revision moved with nothing changed")
		}
	})
}

// BenchmarkParseMeta parses the example tools' .meta files (the registry's
// per-file cost at start-up, without the file system).
func BenchmarkParseMeta(b *testing.B) {
	paths, err := filepath.Glob("../examples/tools/*.meta")
	if err != nil || len(paths) == 0 {
		b.Fatalf("no example tools: %v", err)
	}
	var files [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, data)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, data := range files {
			if m, errs := parseMeta(data); m == nil || len(errs) > 0 {
				b.Fatalf("parse: %v", errs)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(files)), "ns/file")
}
