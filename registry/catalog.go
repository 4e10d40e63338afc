package registry

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is why one .meta file was left out of the catalog.
type Problem struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Field is the JSON field at fault ("args", "variants[1].match"), if known.
	Field string `json:"field,omitempty"`
	// Line is the 1-based line of a syntax error, if known.
	Line int    `json:"line,omitempty"`
	Msg  string `json:"error"`
}

func (p Problem) Error() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, p.Line)
	}
	if p.Field != "" {
		return fmt.Sprintf("%s: field %q: %s", loc, p.Field, p.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, p.Msg)
}

// Hidden is a valid tool that no variant matches on this host.
type Hidden struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// Shadow reports a definition that an earlier directory overrides.
type Shadow struct {
	Name       string `json:"name"`
	File       string `json:"file"`
	ShadowedBy string `json:"shadowedBy"`
}

// Catalog is an immutable snapshot of the registry.
type Catalog struct {
	Revision uint64    `json:"revision"`
	Tools    []*Tool   `json:"tools"` // sorted by name
	Hidden   []Hidden  `json:"hidden,omitempty"`
	Problems []Problem `json:"problems,omitempty"`
	Shadowed []Shadow  `json:"shadowed,omitempty"`
	Dirs     []string  `json:"dirs"`

	byName map[string]*Tool
}

func newCatalog(rev uint64, dirs []string, tools []*Tool, hidden []Hidden, problems []Problem, shadowed []Shadow) *Catalog {
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	sort.Slice(hidden, func(i, j int) bool { return hidden[i].Name < hidden[j].Name })
	// A file can have several problems: keep them in the file's order.
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].File < problems[j].File })
	sort.Slice(shadowed, func(i, j int) bool { return shadowed[i].File < shadowed[j].File })
	c := &Catalog{Revision: rev, Tools: tools, Hidden: hidden, Problems: problems, Shadowed: shadowed, Dirs: dirs,
		byName: make(map[string]*Tool, len(tools))}
	for _, t := range tools {
		c.byName[t.Name] = t
	}
	return c
}

// InvalidFiles lists the .meta files with at least one problem, sorted
// (Problems has one entry per problem, and a file can have several).
func (c *Catalog) InvalidFiles() []string {
	var out []string
	for i, p := range c.Problems {
		if i == 0 || c.Problems[i-1].File != p.File {
			out = append(out, p.File)
		}
	}
	return out
}

// Get returns the visible tool called name.
func (c *Catalog) Get(name string) (*Tool, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Lookup returns the visible tool called name, or a *LookupError that says
// why there is none. Every front end (show, call, the 9P tree) reports a
// missing tool with it, so they say the same thing.
func (c *Catalog) Lookup(name string) (*Tool, error) {
	if t, ok := c.byName[name]; ok {
		return t, nil
	}
	why, _ := c.HiddenReason(name)
	return nil, &LookupError{Name: name, Reason: why, Dirs: c.Dirs}
}

// LookupError is a tool name the catalog has no visible tool for. Reason is
// empty for a name no directory defines; otherwise it says why the tool is
// hidden (a variant that does not fit this host, or an invalid file).
type LookupError struct {
	Name, Reason string
	Dirs         []string
}

// Hidden reports whether a definition exists but is not visible.
func (e *LookupError) Hidden() bool { return e.Reason != "" }

func (e *LookupError) Error() string {
	if e.Hidden() {
		return fmt.Sprintf("tool %s is not available: %s", e.Name, e.Reason)
	}
	if prov, _, ok := strings.Cut(e.Name, ProviderSep); ok {
		return fmt.Sprintf("unknown tool: %s (no provider %s offers it; toolsrv ls lists the tools there are)", e.Name, prov)
	}
	return fmt.Sprintf("unknown tool: %s (no .meta defines it in %s)", e.Name, strings.Join(e.Dirs, ":"))
}

// HiddenReason says why name is not visible, if it is hidden or invalid.
func (c *Catalog) HiddenReason(name string) (string, bool) {
	for _, h := range c.Hidden {
		if h.Name == name {
			return h.Reason, true
		}
	}
	for _, p := range c.Problems {
		if p.Name == name {
			return "invalid: " + p.Error(), true
		}
	}
	return "", false
}

// Change is published to subscribers when the catalog changes.
type Change struct {
	Catalog *Catalog
	// Upserted names tools that are new or whose Hash changed; Removed names
	// tools that are no longer visible.
	Upserted []string
	Removed  []string
}
