package index_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/toolsrv/toolsrv/embed/builtin"
	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
)

// A prompt assembler ranks the catalog for each user message, with the last
// few messages as context and a deadline, and keeps the index in step with
// the tool directory.
func Example() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	reg := registry.New(registry.Options{Dirs: []string{"testdata/tools"}, Logger: logger})
	if err := reg.Load(ctx); err != nil {
		panic(err)
	}
	emb, err := builtin.New()
	if err != nil {
		panic(err)
	}
	ix := index.New(emb, index.Options{NoCache: true, Logger: logger}) // default: cached under the user cache dir
	if err := ix.Sync(ctx, reg.Catalog()); err != nil {
		fmt.Println("some tools rank lexically until the embedder is back:", err)
	}
	// In a server: go reg.Watch(ctx); go ix.Follow(ctx, reg.Subscribe(ctx))

	// A prompt assembler gives each ranking a budget (tens of milliseconds;
	// past it the answer is lexical and says so). This example's is
	// generous so that its output does not depend on the machine's load.
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := ix.Rank(qctx, index.Query{
		Text:    "and what about tomorrow in Oslo?",
		Context: []string{"Will it rain in Bergen today? I need the forecast."},
		K:       3,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Hits[0].Name, r.Degraded)
	// Output: get_weather false
}
