// Command cosine prints the built-in embedder's cosine similarity of pairs of
// texts (the shipped table, its training IDF, no catalog): a quick look at
// what the table knows. For example, whether it relates a request's word to
// the word a tool's description uses:
//
//	go run ./bench/cmd/cosine bitcoin cryptocurrency  weather forecast
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/toolsrv/toolsrv/embed/builtin"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 || len(args)%2 != 0 {
		fmt.Fprintln(os.Stderr, "usage: cosine TEXT TEXT [TEXT TEXT ...] (pairs of texts)")
		os.Exit(2)
	}
	e, err := builtin.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cosine:", err)
		os.Exit(1)
	}
	ctx := context.Background()
	for i := 0; i < len(args); i += 2 {
		a, err := e.EmbedQuery(ctx, args[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, "cosine:", err)
			os.Exit(1)
		}
		b, err := e.EmbedQuery(ctx, args[i+1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "cosine:", err)
			os.Exit(1)
		}
		var dot float32
		for j := range a {
			dot += a[j] * b[j]
		}
		fmt.Printf("%.3f\t%s\t%s\n", dot, args[i], args[i+1])
	}
}
