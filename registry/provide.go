package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ProviderSep separates a provider's name from the name its tool has
// there: a provided tool is PROVIDER:TOOL in the catalog. No .meta file can
// define a name with a ':', so provided tools never collide with the
// directories' tools, nor with another provider's.
const ProviderSep = ":"

// Provided is one tool that a provider defines rather than a .meta file (an
// MCP server's tool, a remote toolsrv's): what ranking needs and what a call
// checks, already resolved by the provider.
type Provided struct {
	// Name is the provider's own name for it: one or more valid tool names
	// joined by ProviderSep (a remote can pass on tools it was provided).
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Prompt      string          `json:"prompt,omitempty"`
	Keywords    []string        `json:"keywords,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"` // the input schema; empty: {"type":"object"}

	Tier        Tier          `json:"tier,omitempty"`        // "" is Warm
	ReadOnly    bool          `json:"readOnly,omitempty"`    // as declared by the provider (a hint)
	Network     bool          `json:"network,omitempty"`     // as declared by the provider
	Concurrency Concurrency   `json:"concurrency,omitempty"` // "" is Parallel
	Timeout     time.Duration `json:"timeout,omitempty"`
}

// Provision is a provider's whole current offer; each Provide replaces the
// one before.
type Provision struct {
	// Source says where the tools come from, as a user would recognise it
	// ("mcp server fs: npx -y @modelcontextprotocol/server-filesystem /srv",
	// "ssh:build-host"); it is each tool's File.
	Source string
	Tools  []Provided
	// Unavailable, when set, says why the provider cannot serve now (a
	// server that died and is being restarted, a remote being
	// reconnected). Its tools (these, or when Tools is nil the last ones
	// provided) are then listed as hidden with this reason: neither ranked
	// nor callable, and back when a Provision without it arrives.
	Unavailable string
	// Problems are the provider's own (it could not start, a tool it
	// offers is unusable); problems of the tools above are added by
	// Provide. Name and File may be left empty.
	Problems []Problem
	// Held are tools the provider offers but holds back (an imported tool
	// whose definition changed since its owner approved it), each with
	// the reason, which anyone who asks for the tool is told (so it must
	// not repeat what the provider said): listed as hidden, neither
	// ranked nor callable. Name is the provider's own; File may be left
	// empty.
	Held []Hidden
}

// provision is what one provider amounts to in the catalog.
type provision struct {
	tools    []*Tool
	hidden   []Hidden
	problems []Problem
	// last is the last usable set of tools, for an Unavailable provision
	// with no tools; lastHeld the last held ones.
	last     []Provided
	lastHeld []Hidden
}

// ValidProvidedName reports why name cannot be a provided tool's name (its
// name at the provider), or nil. The error shows the name as ShownName
// does.
func ValidProvidedName(name string) error {
	for _, part := range strings.Split(name, ProviderSep) {
		if err := ValidName(part); err != nil {
			return fmt.Errorf("%s: %w", ShownName(name), err)
		}
	}
	return nil
}

// maxShownName bounds the bytes of a name ShownName shows.
const maxShownName = 160

// ShownName is a name that came from elsewhere (a provider, a file name)
// as a message shows it: a valid tool name as it is; anything else quoted
// as a Go string (a line feed, an escape sequence, a bidirectional control
// shown escaped, so that it cannot start a line of its own or rewrite the
// terminal) and cut after a few lines' worth, with the length it had.
func ShownName(name string) string {
	if ValidName(name) == nil {
		return name
	}
	if len(name) <= maxShownName {
		return strconv.Quote(name)
	}
	cut := maxShownName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(name[:cut]), len(name))
}

// Provide publishes provider's tools in the catalog as PROVIDER:NAME,
// replacing what it provided before, and tells subscribers what changed as
// a file edit would. A tool whose name or schema is unusable is left out and
// reported in the catalog's problems (the schema bounds and compile
// deadline of .meta files apply); the others are published. Provide waits
// for the schemas' compiles (bounded by Options.CompileTimeout) or ctx.
func (r *Registry) Provide(ctx context.Context, provider string, p Provision) error {
	if err := ValidName(provider); err != nil {
		return fmt.Errorf("provider name: %w", err)
	}
	if strings.Contains(provider, ProviderSep) {
		return fmt.Errorf("provider name %q: contains %q", provider, ProviderSep)
	}
	src := p.Source
	if src == "" {
		src = provider
	}
	tools, held := p.Tools, p.Held
	r.mu.Lock()
	prev := r.provided[provider]
	if tools == nil && p.Unavailable != "" && prev != nil {
		tools, held = prev.last, prev.lastHeld
	}
	// Schemas: shared compile jobs, compiled off the lock.
	jobs := make([]*compileJob, len(tools))
	var fresh []*compileJob
	for i, t := range tools {
		p := prepareSchema(-1, t.Args)
		if p.bounds != "" {
			continue
		}
		j, isNew := r.jobLocked(p.key, p.raw)
		jobs[i] = j
		if isNew {
			fresh = append(fresh, j)
		}
	}
	r.mu.Unlock()
	if err := r.compileOwn(ctx, fresh); err != nil {
		return err
	}
	for _, j := range jobs {
		if j != nil {
			select {
			case <-j.done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}

	next := &provision{}
	seen := map[string]bool{}
	var usable []Provided
	for i, pt := range tools {
		full := provider + ProviderSep + pt.Name
		bad := func(field, msg string) {
			// File is the provider, so the message names the tool.
			next.problems = append(next.problems, Problem{Name: full, File: src, Field: field, Msg: "tool " + full + ": " + msg})
		}
		if err := ValidProvidedName(pt.Name); err != nil {
			// The name is not one: shown quoted, and bounded.
			full = provider + ProviderSep + ShownName(pt.Name)
			bad("name", err.Error()+" (a provided tool's name must be a valid tool name)")
			continue
		}
		if seen[pt.Name] {
			bad("name", "the provider offers two tools of this name; the first is kept")
			continue
		}
		seen[pt.Name] = true
		raw := pt.Args
		if len(raw) == 0 {
			raw = defaultArgs
		}
		if why := schemaBounds(raw); why != "" {
			bad("args", "the input schema "+why)
			continue
		}
		if !jobs[i].usable() {
			bad("args", "the input schema: "+jobs[i].errMsg)
			continue
		}
		t, err := providedTool(provider, full, src, pt, jobs[i])
		if err != nil {
			bad("", err.Error())
			continue
		}
		usable = append(usable, pt)
		if p.Unavailable != "" {
			next.hidden = append(next.hidden, Hidden{Name: full, File: src, Reason: p.Unavailable})
			continue
		}
		next.tools = append(next.tools, t)
	}
	next.last, next.lastHeld = usable, held
	for _, h := range held {
		if seen[h.Name] {
			continue // offered as a usable tool too: a provider's mistake
		}
		seen[h.Name] = true
		if h.File == "" {
			h.File = src
		}
		h.Name = provider + ProviderSep + h.Name
		next.hidden = append(next.hidden, h)
	}
	if p.Unavailable != "" && len(tools) == 0 {
		next.problems = append(next.problems, Problem{Name: provider + ProviderSep, File: src, Msg: p.Unavailable})
	}
	for _, pr := range p.Problems {
		if pr.Name == "" {
			pr.Name = provider + ProviderSep
		}
		if pr.File == "" {
			pr.File = src
		}
		next.problems = append(next.problems, pr)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.provided == nil {
		r.provided = map[string]*provision{}
	}
	r.provided[provider] = next
	r.markProvidedLocked(prev)
	r.markProvidedLocked(next)
	r.publishLocked()
	return nil
}

// Withdraw removes every tool provider provided (a provider that was
// removed from the configuration).
func (r *Registry) Withdraw(provider string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, ok := r.provided[provider]
	if !ok {
		return
	}
	delete(r.provided, provider)
	r.markProvidedLocked(prev)
	r.publishLocked()
}

func (r *Registry) markProvidedLocked(p *provision) {
	if p == nil {
		return
	}
	for _, t := range p.tools {
		r.dirty[t.Name] = true
	}
	for _, h := range p.hidden {
		r.dirty[h.Name] = true
	}
}

// providedTool builds the catalog's Tool for a provided one.
func providedTool(provider, full, src string, pt Provided, schema *compileJob) (*Tool, error) {
	t := &Tool{
		Name:        full,
		File:        src,
		Provider:    provider,
		Description: pt.Description,
		Prompt:      pt.Prompt,
		Keywords:    pt.Keywords,
		Args:        pt.Args,
		Tier:        pt.Tier,
		ReadOnly:    pt.ReadOnly,
		Network:     pt.Network,
		Concurrency: pt.Concurrency,
		Timeout:     pt.Timeout,
		Variant:     -1,
		Command:     Command{Kind: ByProvider},
		schema:      schema,
	}
	if len(t.Args) == 0 {
		t.Args = defaultArgs
	}
	switch t.Tier {
	case "":
		t.Tier = Warm
	case Hot, Warm, Cold:
	default:
		return nil, fmt.Errorf("tier %q: must be hot, warm or cold", t.Tier)
	}
	switch t.Concurrency {
	case "":
		t.Concurrency = Parallel
	case Parallel, Serial, Exclusive:
	default:
		return nil, fmt.Errorf("concurrency %q: must be parallel, serial or exclusive", t.Concurrency)
	}
	if strings.TrimSpace(t.Description) == "" {
		// MCP makes a description optional: rank by the name alone.
		t.Description = pt.Name
		t.Warnings = append(t.Warnings, "the provider gives no description: ranked by its name alone")
	}
	b, err := json.Marshal(pt)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(provider+"\x00"), b...))
	t.Hash = hex.EncodeToString(sum[:])[:16]
	return t, nil
}
