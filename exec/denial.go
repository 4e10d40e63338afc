package exec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/toolsrv/toolsrv/exec/sandbox"
)

// denialRE finds a path next to a permission error in a tool's standard
// error, in the forms of the usual tools: "cat: /x: Permission denied",
// "cannot open '/x': Permission denied", "open /x: permission denied",
// "/x: Operation not permitted".
var denialRE = regexp.MustCompile(`(?:^|[\s'"‘(])(/[^\s'"’:)]*)['"’)]?\s*:?\s*(?:[^:\n]*:\s*)?(?i:permission denied|operation not permitted)`)

// denialHint explains a tool's permission error that the sandbox (not the
// file's own permissions) most likely caused: the first path the tool
// names that the policy does not let it reach, and what would allow it.
func denialHint(stderr []byte, pol sandbox.Policy) string {
	if pol.Unconfined || len(stderr) == 0 {
		return ""
	}
	for _, m := range denialRE.FindAllStringSubmatch(string(stderr), 8) {
		p := filepath.Clean(m[1])
		if !filepath.IsAbs(p) {
			continue
		}
		switch {
		case !pol.Readable(p):
			return fmt.Sprintf("denied by the sandbox: %s is outside what this tool may read (system directories, its own directory, the working directory %s%s); give the session a working directory that holds it, or let the server read it (--read %s)",
				p, pol.WorkDir, readList(pol), p)
		case pol.ReadOnly && !pol.Writable(p):
			return fmt.Sprintf("denied by the sandbox: the tool is readOnly, so it may not write %s; remove \"readOnly\" from its .meta if it must write", p)
		case !pol.Writable(p):
			return fmt.Sprintf("denied by the sandbox: %s is outside what this tool may write (the working directory %s and its temporary directory); give the session a working directory that holds it", p, pol.WorkDir)
		}
	}
	return ""
}

func readList(pol sandbox.Policy) string {
	if len(pol.Read) == 0 {
		return ""
	}
	return ", " + strings.Join(pol.Read, ", ")
}
