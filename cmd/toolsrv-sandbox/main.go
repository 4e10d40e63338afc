// Command toolsrv-sandbox is toolsrv's sandbox helper on its own: the same
// code "toolsrv __sandbox" runs (package exec/sandbox), in a binary a tenth
// the size whose start-up does none of toolsrv's other initialisation.
// toolsrv uses it when it is installed next to the toolsrv binary
// (exec.DefaultHelper; "make build" and "go install ./cmd/..." put it
// there), and re-executes itself otherwise: it is an optimisation, never a
// requirement.
package main

import (
	"fmt"
	"os"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != sandbox.HelperArg {
		fmt.Fprintln(os.Stderr, "toolsrv-sandbox is started by toolsrv itself (toolsrv-sandbox "+sandbox.HelperArg+" POLICY -- COMMAND...), not by hand")
		os.Exit(2)
	}
	os.Exit(sandbox.HelperMain(os.Args[2:]))
}
