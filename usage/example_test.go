package usage_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsrv/toolsrv/usage"
)

func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "usage-example")
	defer os.RemoveAll(dir)

	// Usually usage.DefaultPath(os.Getenv); nothing is made until the
	// first Record.
	store, warnings, err := usage.Open(ctx, filepath.Join(dir, "usage.db"), usage.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	for _, w := range warnings {
		log.Print(w)
	}

	err = store.Record(ctx,
		usage.Event{Request: "What changed in my repo?", Tool: "git_status", OK: true, Agent: "claude", Source: usage.SourceMCP},
		usage.Event{Request: "what  changed in my repo?", Tool: "git_status", OK: false, Agent: "claude", Source: usage.SourceMCP},
		usage.Event{Request: "Tell me a joke", Tool: "", OK: true, Agent: "claude", Source: usage.SourceMCP}, // no tool fits
	)
	if err != nil {
		log.Fatal(err)
	}

	entries, version, err := store.Snapshot(ctx)
	if err != nil {
		log.Fatal(err)
	}
	slices.SortFunc(entries, func(a, b usage.Entry) int { return strings.Compare(b.Key.Request, a.Key.Request) })
	for _, e := range entries {
		fmt.Printf("%q tool=%q calls=%d failed=%d\n", e.Key.Request, e.Key.Tool, e.Count, e.Failed)
	}
	// Later: what changed since this snapshot.
	changed, removed, _, err := store.Changes(ctx, version)
	fmt.Println(len(changed), len(removed), err)
	// Output:
	// "what changed in my repo?" tool="git_status" calls=2 failed=1
	// "tell me a joke" tool="" calls=1 failed=0
	// 0 0 <nil>
}
