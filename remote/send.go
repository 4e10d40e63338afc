package remote

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/registry"
)

// localDef is one .meta file of a directory to send.
type localDef struct {
	name, path string
	data       []byte
	// why, when set, is why it is not sent.
	why string
}

// readDefs reads the .meta files of dir (as the registry lists them: no
// dotfiles, no subdirectories). A definition whose command is the
// executable beside it is not sendable: only the .meta travels.
func readDefs(dir string) ([]localDef, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the tools to send: %w", err)
	}
	var out []localDef
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".meta")
		if !ok || strings.HasPrefix(e.Name(), ".") || e.IsDir() {
			continue
		}
		d := localDef{name: name, path: filepath.Join(dir, e.Name())}
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			d.why = fmt.Sprintf("not sent: its command is the executable %s beside the .meta, and only the .meta can be sent; install the program on the remote host and name it in \"cmd\"",
				filepath.Join(dir, name))
			out = append(out, d)
			continue
		}
		d.data, err = fileio.ReadRegular(d.path, registry.MaxSentSize)
		switch {
		case errors.Is(err, fileio.ErrTooLarge):
			d.why = fmt.Sprintf("not sent: larger than %d bytes, the limit for a sent definition; shorten its prompt", registry.MaxSentSize)
		case errors.Is(err, fs.ErrNotExist):
			continue // gone meanwhile
		case err != nil:
			d.why = "not sent: " + err.Error()
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// dirState is what says that a directory's .meta files changed: their
// names, sizes and times.
func dirState(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".meta") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

// sendDir makes session's definitions on the remote those of dir: each is
// written (the remote resolves it against its own host; its problems come
// back in the session's tools.json), and those sent before that dir no
// longer has are withdrawn. It returns the local problems (definitions not
// sent and why) and an error only when the connection fails.
func sendDir(conn *Conn, session, dir string) ([]registry.Problem, error) {
	defs, err := readDefs(dir)
	if err != nil {
		return []registry.Problem{{File: dir, Msg: err.Error() + "; nothing is sent"}}, nil
	}
	meta := "session/" + session + "/meta/"
	var probs []registry.Problem
	keep := map[string]bool{}
	for _, d := range defs {
		if d.why != "" {
			probs = append(probs, registry.Problem{Name: d.name, File: d.path, Msg: d.why})
			continue
		}
		keep[d.name] = true
		err := conn.Send(meta+d.name, d.data)
		var r *ninep.RefusedError
		switch {
		case err == nil:
		case errors.As(err, &r) && r.Errno == linux.EINVAL:
			// Kept there with its problems; tools.json reports them.
		case errors.As(err, &r):
			probs = append(probs, registry.Problem{Name: d.name, File: d.path, Msg: "not sent: " + r.Reason})
		default:
			return nil, err
		}
	}
	ents, err := conn.List(strings.TrimSuffix(meta, "/"))
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !keep[e.Name] {
			if err := conn.Remove(meta + e.Name); err != nil {
				var r *ninep.RefusedError
				if !errors.As(err, &r) {
					return nil, err
				}
			}
		}
	}
	return probs, nil
}
