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
		c, err := cosine(ctx, e, args[i], args[i+1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "cosine:", err)
			os.Exit(1)
		}
		fmt.Printf("%.3f\t%s\t%s\n", c, args[i], args[i+1])
	}
}

// cosine is the cosine similarity of a's and b's query vectors (both are
// unit vectors).
func cosine(ctx context.Context, e *builtin.Embedder, a, b string) (float32, error) {
	va, err := e.EmbedQuery(ctx, a)
	if err != nil {
		return 0, err
	}
	vb, err := e.EmbedQuery(ctx, b)
	if err != nil {
		return 0, err
	}
	var dot float32
	for j := range va {
		dot += va[j] * vb[j]
	}
	return dot, nil
}
