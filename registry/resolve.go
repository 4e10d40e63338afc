package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// bareNameRE matches a cmd that names an executable without a shell.
var bareNameRE = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

// holds reports whether m holds on h, and if not, why.
func (m match) holds(h Host) (bool, string) {
	keys := []string{"os", "arch", "binary", "file", "env", "nenv"}
	for _, k := range keys {
		alts, ok := m[k]
		if !ok {
			continue
		}
		any := false
		for _, a := range alts {
			if condHolds(h, k, a) {
				any = true
				break
			}
		}
		if !any {
			return false, fmt.Sprintf("%s %s", k, describeAlts(k, alts))
		}
	}
	return true, ""
}

func condHolds(h Host, key, val string) bool {
	switch key {
	case "os":
		return h.OS() == val
	case "arch":
		return h.Arch() == val
	case "binary":
		if filepath.IsAbs(val) {
			return h.Executable(val)
		}
		_, ok := h.LookPath(val)
		return ok
	case "file":
		return h.Exists(val)
	case "env":
		return h.Getenv(val) != ""
	case "nenv":
		return h.Getenv(val) == ""
	}
	return false
}

func describeAlts(key string, alts []string) string {
	q := make([]string, len(alts))
	for i, a := range alts {
		q[i] = fmt.Sprintf("%q", a)
	}
	list := strings.Join(q, " or ")
	switch key {
	case "binary":
		return list + " not found"
	case "file":
		return list + " missing"
	case "env":
		return list + " unset or empty"
	case "nenv":
		return list + " set"
	}
	return "is not " + list
}

// resolve picks the variant for h and the command, producing a Tool. It
// returns (nil, reason, nil) when the tool is hidden on h and an error when the
// tool is invalid. dir is the tool's directory; "" for a definition that has
// none (one sent to a session: see ResolveSent).
func resolve(name, file, dir string, digest [32]byte, m *Meta, schemas map[int]*compileJob, h Host) (*Tool, string, error) {
	f := m.fields
	idx := -1
	if len(m.Variants) > 0 {
		var why []string
		for i, v := range m.Variants {
			ok, reason := true, ""
			if v.Match != nil {
				ok, reason = v.Match.holds(h)
			}
			if ok {
				idx = i
				f = overlay(f, v.fields)
				break
			}
			why = append(why, fmt.Sprintf("variant %d: %s", i, reason))
		}
		if idx < 0 {
			return nil, "no variant matches this host (" + strings.Join(why, "; ") + ")", nil
		}
	}
	t := &Tool{
		Name:     name,
		File:     file,
		Dir:      dir,
		Variant:  idx,
		Extra:    m.Extra,
		Warnings: m.Warnings,
	}
	f.build(t)
	// The variant's own schema if it has one, else the top-level one.
	if s, ok := schemas[idx]; ok && m.Variants != nil && idx >= 0 && m.Variants[idx].has("args") {
		t.schema = s
	} else {
		t.schema = schemas[-1]
	}
	cmd, err := resolveCommand(name, t.Dir, t.Cmd, h)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && idx >= 0 && m.Variants[idx].has("cmd") {
			fe.Field = fmt.Sprintf("variants[%d].cmd", idx)
		}
		return nil, "", err
	}
	t.Command = cmd
	t.Hash = toolHash(digest, idx, cmd)
	return t, "", nil
}

// toolHash is a resolved tool's Hash: the first 16 hex digits of the
// SHA-256 of its file's digest, the variant and the command, NUL-separated.
func toolHash(digest [32]byte, idx int, cmd Command) string {
	n := len(digest) + 24 + len(cmd.Kind)
	for _, a := range cmd.Argv {
		n += len(a) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, digest[:]...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(idx), 10)
	b = append(b, 0)
	b = append(b, cmd.Kind...)
	b = append(b, 0)
	for i, a := range cmd.Argv {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, a...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// resolveCommand tries, in order: a co-located executable, then cmd (an
// absolute path or bare name directly, anything else through /bin/sh -c),
// then the tool's name on $PATH.
//
// A bare cmd name is looked up in the tool's own directory before $PATH, so a
// variant can name a helper script shipped beside the .meta (as the seeds'
// system_logs example does). A definition without a directory (dir "", one
// sent to a session) has neither: its command must be on the host.
func resolveCommand(name, dir, cmd string, h Host) (Command, error) {
	if dir != "" {
		if p := filepath.Join(dir, name); h.Executable(p) {
			return Command{Kind: CoLocated, Argv: []string{p}}, nil
		}
	}
	if cmd != "" {
		c := strings.TrimSpace(cmd)
		switch {
		case filepath.IsAbs(c) && !strings.ContainsAny(c, " \t\n;|&$`'\"<>(){}*?"):
			if !h.Executable(c) {
				return Command{}, &FieldError{Field: "cmd", Msg: fmt.Sprintf("%s is not an executable file on this host; install it or fix the path", c)}
			}
			return Command{Kind: Direct, Argv: []string{c}, Cmd: cmd}, nil
		case bareNameRE.MatchString(c):
			if dir != "" {
				if p := filepath.Join(dir, c); h.Executable(p) {
					return Command{Kind: Direct, Argv: []string{p}, Cmd: cmd}, nil
				}
			}
			if p, ok := h.LookPath(c); ok {
				return Command{Kind: Direct, Argv: []string{p}, Cmd: cmd}, nil
			}
			if dir == "" {
				return Command{}, &FieldError{Field: "cmd", Msg: fmt.Sprintf("%q is not on this host's $PATH, and a sent definition cannot bring an executable with it; install %s on this host, or write a shell command", c, c)}
			}
			return Command{}, &FieldError{Field: "cmd", Msg: fmt.Sprintf("%q is neither an executable in %s nor on $PATH; install it, or write a shell command", c, dir)}
		default:
			return Command{Kind: Shell, Argv: []string{"/bin/sh", "-c", cmd}, Cmd: cmd}, nil
		}
	}
	if p, ok := h.LookPath(name); ok {
		return Command{Kind: OnPath, Argv: []string{p}}, nil
	}
	if dir == "" {
		return Command{}, &FieldError{Field: "cmd", Msg: fmt.Sprintf(
			"no command: there is no \"cmd\", %q is not on this host's $PATH, and a sent definition cannot bring an executable beside it (executables are not sent); add \"cmd\" naming a program of this host",
			name)}
	}
	return Command{}, &FieldError{Field: "cmd", Msg: fmt.Sprintf(
		"no command: there is no executable %s, no \"cmd\", and %q is not on $PATH; add \"cmd\" or an executable named %s beside the .meta",
		filepath.Join(dir, name), name, name)}
}
