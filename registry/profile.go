package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/internal/fileio"
)

// MaxProfileSize is the largest agent profile file read.
const MaxProfileSize = 1 << 20

// ErrNoProfile is wrapped by ReadProfile's error when the agent has no
// profile file (errors.Is(err, ErrNoProfile)).
var ErrNoProfile = errors.New("no agent profile")

// profileHint ends every profile error: what a profile looks like.
const profileHint = `; a profile is a JSON object such as {"autoLoad": ["file_read"], "allowTools": ["file_read", "file_grep"]}`

// Profile is an agent profile: the tools an agent loads at start
// and, when AllowTools is not nil, the only tools it may load or be offered.
type Profile struct {
	Name string `json:"name"`
	// File is the profile file; "" for the empty profile LoadProfile gives
	// an agent without one.
	File       string    `json:"file,omitempty"`
	AutoLoad   []string  `json:"autoLoad,omitempty"`
	AllowTools *[]string `json:"allowTools,omitempty"`

	lines *fieldLines // "autoLoad[2]" → line, for Check
}

// Allows reports whether the profile lets its agent load or see tool.
func (p *Profile) Allows(tool string) bool {
	if p == nil || p.AllowTools == nil {
		return true
	}
	for _, t := range *p.AllowTools {
		if t == tool {
			return true
		}
	}
	return false
}

// DefaultAgentsDir is ~/.config/ollie/agents.
func DefaultAgentsDir(getenv func(string) string) string {
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".config", "ollie", "agents")
}

// LoadProfile reads dir/NAME.json. An agent without a profile file gets an
// empty profile (nothing auto-loaded, everything allowed, File ""), so agents
// work before anyone writes profiles. Use ReadProfile to treat a missing
// profile as an error.
func LoadProfile(dir, name string) (*Profile, error) {
	p, err := ReadProfile(dir, name)
	if errors.Is(err, ErrNoProfile) {
		return &Profile{Name: name}, nil
	}
	return p, err
}

// ReadProfile reads and checks dir/NAME.json. When there is no such file the
// error wraps ErrNoProfile; a file that does not parse gives an error
// wrapping FieldErrors (every problem, with its field and line).
func ReadProfile(dir, name string) (*Profile, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("agent name %q: %w", name, err)
	}
	path := filepath.Join(dir, name+".json")
	p, err := readProfile(path, name)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func readProfile(path, name string) (*Profile, error) {
	data, err := fileio.ReadRegular(path, MaxProfileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("agent %s: %w (%s does not exist)", name, ErrNoProfile, path)
	case err != nil:
		return nil, fmt.Errorf("agent profile %s: %w", path, err)
	}
	p, err := ParseProfile(name, data)
	if err != nil {
		return nil, fmt.Errorf("agent profile %s: %w%s", path, err, profileHint)
	}
	p.File = path
	return p, nil
}

// profileKeys are the keys a profile may have.
var profileKeys = []string{"allowTools", "autoLoad"}

// ParseProfile parses the contents of an agent profile. It refuses unknown
// keys (suggesting the likely one), keys given twice, a null allowTools
// (which would allow everything) and names that cannot be tools. The error,
// when not nil, is a FieldErrors holding every problem.
func ParseProfile(name string, data []byte) (*Profile, error) {
	var top map[string]json.RawMessage
	if err := strictUnmarshal(data, &top); err != nil {
		return nil, FieldErrors{syntaxError(data, err)}
	}
	if top == nil {
		return nil, FieldErrors{{Msg: "the file must hold a JSON object, not null"}}
	}
	p := &metaParser{lines: newFieldLines(data, func(parent jsonPath) bool { return len(parent) <= 1 })}
	dups, err := scanKeys(data, nil)
	if err != nil {
		return nil, FieldErrors{{Msg: "not valid JSON: " + err.Error()}}
	}
	for _, d := range collapseDuplicates(dups) {
		p.errs = append(p.errs, &FieldError{Field: d.Path.field(), Line: d.Line, Msg: d.message() + ", which is ambiguous: keep one"})
	}
	prof := &Profile{Name: name, lines: p.lines}
	for _, k := range sortedKeys(top) {
		raw := top[k]
		switch k {
		case "autoLoad":
			if !isNull(raw) {
				prof.AutoLoad = p.toolNames(raw, k)
			}
		case "allowTools":
			if isNull(raw) {
				p.fail(k, "is null: remove it to allow every tool, or write [] to allow none")
				continue
			}
			names := p.toolNames(raw, k)
			if names == nil {
				names = []string{}
			}
			prof.AllowTools = &names
		default:
			msg := "is not a profile key; a profile has only \"autoLoad\" and \"allowTools\""
			if s, ok := nearMiss(k, profileKeys); ok {
				msg = fmt.Sprintf("is not a profile key: did you mean %q? (a profile has only \"autoLoad\" and \"allowTools\")", s)
			}
			p.fail(k, msg)
		}
	}
	if len(p.errs) > 0 {
		sortByLine(p.errs)
		return nil, capErrors(p.errs)
	}
	return prof, nil
}

// toolNames decodes a list of tool names, reporting each bad one.
func (p *metaParser) toolNames(raw json.RawMessage, field string) []string {
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			p.fail(field, fmt.Sprintf("must be an array of tool names such as [\"file_read\"], not %s", jsonKind(raw)))
			return nil
		}
		for i, e := range elems {
			var s string
			if json.Unmarshal(e, &s) != nil {
				p.fail(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("must be a tool name (a string), not %s", jsonKind(e)))
			}
		}
		return nil
	}
	for i, n := range names {
		// A provider's tool is PROVIDER:TOOL (a remote toolsrv's).
		if err := ValidProvidedName(n); err != nil {
			p.fail(fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%q cannot be a tool name: %v", n, err))
		}
	}
	return names
}

// ProfileProblem is one problem of an agent profile: invalid unless Warning.
type ProfileProblem struct {
	Agent string `json:"agent"`
	File  string `json:"file"`
	// Field is the key or list element at fault ("autoLoad[2]"), if any.
	Field string `json:"field,omitempty"`
	Line  int    `json:"line,omitempty"`
	Msg   string `json:"error"`
	// Warning marks a remark that does not make the profile invalid.
	Warning bool `json:"warning,omitempty"`
}

func (p ProfileProblem) Error() string {
	return Problem{File: p.File, Field: p.Field, Line: p.Line, Msg: p.Msg}.Error()
}

// Check reports the names of p that do not fit cat: a name no .meta defines
// (an error: the agent would silently lack the tool), an autoLoad name
// outside allowTools (an error: it can never be loaded), and names of tools
// hidden on this host or invalid (warnings: the tool may work elsewhere, and
// its own problems are reported with the catalog's).
func (p *Profile) Check(cat *Catalog) []ProfileProblem {
	var out []ProfileProblem
	add := func(field, msg string, warning bool) {
		out = append(out, ProfileProblem{Agent: p.Name, File: p.File, Field: field, Line: p.lines.line(field), Msg: msg, Warning: warning})
	}
	check := func(list string, names []string) {
		for i, n := range names {
			field := fmt.Sprintf("%s[%d]", list, i)
			if _, ok := cat.Get(n); ok {
				if list == "autoLoad" && !p.Allows(n) {
					add(field, fmt.Sprintf("%q is not in allowTools, so it can never be loaded: add it to allowTools or remove it here", n), false)
				}
				continue
			}
			why, known := cat.HiddenReason(n)
			switch {
			case known:
				add(field, fmt.Sprintf("tool %q is not available on this host: %s", n, why), true)
			case strings.Contains(n, ProviderSep):
				prov, _, _ := strings.Cut(n, ProviderSep)
				add(field, fmt.Sprintf("%q is a tool of provider %s (a remote toolsrv, an MCP server), which this catalog does not have now", n, prov), true)
			default:
				msg := fmt.Sprintf("%q is not a tool: no .meta defines it in %s", n, strings.Join(cat.Dirs, ":"))
				if s, ok := nearMiss(n, toolNames(cat)); ok {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				add(field, msg, false)
			}
		}
	}
	check("autoLoad", p.AutoLoad)
	if p.AllowTools != nil {
		check("allowTools", *p.AllowTools)
	}
	return out
}

func toolNames(cat *Catalog) []string {
	out := make([]string, len(cat.Tools))
	for i, t := range cat.Tools {
		out[i] = t.Name
	}
	return out
}

// CheckProfiles reads every profile (NAME.json) in dir and checks it against
// cat. It returns how many profiles it read and every problem, sorted by
// file and line. A missing dir has no profiles; an unreadable one is an
// error.
func CheckProfiles(dir string, cat *Catalog) (int, []ProfileProblem, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading agent profiles: %w", err)
	}
	n := 0
	var out []ProfileProblem
	for _, e := range ents {
		base := e.Name()
		if !strings.HasSuffix(base, ".json") || strings.HasPrefix(base, ".") || e.IsDir() {
			continue
		}
		n++
		name := strings.TrimSuffix(base, ".json")
		path := filepath.Join(dir, base)
		if err := ValidName(name); err != nil {
			out = append(out, ProfileProblem{Agent: name, File: path, Msg: "bad agent name: " + err.Error() + "; rename the file"})
			continue
		}
		p, err := readProfile(path, name)
		if err != nil {
			var all FieldErrors
			if errors.As(err, &all) {
				for _, fe := range all {
					out = append(out, ProfileProblem{Agent: name, File: path, Field: fe.Field, Line: fe.Line, Msg: fe.Msg})
				}
				continue
			}
			var pe *fs.PathError
			msg := err.Error()
			if errors.As(err, &pe) {
				msg = pe.Err.Error()
			}
			out = append(out, ProfileProblem{Agent: name, File: path, Msg: msg})
			continue
		}
		out = append(out, p.Check(cat)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return n, out, nil
}
