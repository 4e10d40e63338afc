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

// writeRE tells, in the line of a permission error, that the tool was
// writing (creating, removing, moving, changing) rather than reading:
// "sh: 1: cannot create /x", "touch: cannot touch '/x'", "mkdir: cannot
// create directory", "cp: cannot create regular file", "rm: cannot
// remove", "chmod: changing permissions of".
var writeRE = regexp.MustCompile(`(?i)cannot (?:create|touch|remove|move|overwrite|write|make|link|rename|unlink)|changing (?:permissions|ownership)|for writing|temporary file`)

// denialHint explains a tool's permission error that the sandbox (not the
// file's own permissions) most likely caused: the first path the tool
// names that the policy does not let it reach, and what would allow it. A
// write is told what allows writing (--read would not help it).
func denialHint(stderr []byte, pol sandbox.Policy) string {
	if pol.Unconfined || len(stderr) == 0 {
		return ""
	}
	text := string(stderr)
	for _, m := range denialRE.FindAllStringSubmatchIndex(text, 8) {
		p := filepath.Clean(text[m[2]:m[3]])
		if !filepath.IsAbs(p) {
			continue
		}
		// Its line up to the error: the tools name what they did first.
		line := text[:m[1]]
		writing := writeRE.MatchString(line[strings.LastIndexByte(line, '\n')+1:])
		switch {
		case !writing && !pol.Readable(p):
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
