// Command tuneplot draws the curves of a threshold sweep as a PNG (with
// gonum/plot, which the toolsrv binary does not carry: "toolsrv tune" draws
// an SVG itself). Used for the repository's pictures:
//
//	toolsrv tune --corpus DIR... --curves /tmp/curves.json
//	go run ./bench/cmd/tuneplot /tmp/curves.json bench/tune-builtin.png
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/toolsrv/toolsrv/bench/plot"
	"github.com/toolsrv/toolsrv/bench/tune"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: tuneplot CURVES.json OUT.png (CURVES.json from toolsrv tune --curves)")
		os.Exit(2)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tuneplot:", err)
		os.Exit(1)
	}
	var c tune.Curves
	if err := json.Unmarshal(b, &c); err != nil {
		fmt.Fprintf(os.Stderr, "tuneplot: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	f, err := os.Create(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tuneplot:", err)
		os.Exit(1)
	}
	if err := plot.Tune(f, c.Result, c.Title); err != nil {
		f.Close()
		fmt.Fprintln(os.Stderr, "tuneplot:", err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "tuneplot:", err)
		os.Exit(1)
	}
}
