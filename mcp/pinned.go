package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// pinned splits a listing (tools, defs[i] the definition of tools[i])
// into the tools offered and those held (ProviderOptions.Pins), and keeps
// the held ones for Held and Call. Without pins every tool is offered. A
// pins file that cannot be read (damaged, another user's) holds every
// tool: what changed cannot be told; one that cannot be made at all (a
// read-only home directory) pins nothing, with a warning (Notes).
func (p *Provider) pinned(ctx context.Context, tools []registry.Provided, defs []Definition) ([]registry.Provided, []registry.Hidden) {
	if p.opts.Pins == nil {
		return tools, nil
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	held, err := p.opts.Pins.check(pctx, p.cfg.File, p.cfg.Name, defs, p.cfg.TrustNewTools)
	note := ""
	switch {
	case err == nil:
	case errors.Is(err, errNoPinsStore):
		note = fmt.Sprintf("mcp server %s: its tools are not pinned (%v): toolsrv cannot notice when their definitions change", p.cfg.Name, err)
		held = map[string]*Held{}
	default:
		note = fmt.Sprintf("mcp server %s: every tool is held: %v; fix or move the pins file aside (toolsrv then pins the tools it lists as first seen)", p.cfg.Name, err)
		held = map[string]*Held{}
		for _, d := range defs {
			held[d.Name] = &Held{Server: p.cfg.Name, Tool: d.Name, Now: d, Hash: d.Hash(), Unreadable: true}
		}
	}
	if note != "" {
		p.log.Warn(note)
	}
	offered := make([]registry.Provided, 0, len(tools))
	var hidden []registry.Hidden
	for _, t := range tools {
		if h := held[t.Name]; h != nil {
			hidden = append(hidden, registry.Hidden{Name: t.Name, Reason: h.Reason()})
			continue
		}
		offered = append(offered, t)
	}
	p.mu.Lock()
	p.held, p.pinNote = held, note
	p.mu.Unlock()
	return offered, hidden
}

// Held are the server's tools held back from the catalog until their
// owner approves them (ProviderOptions.Pins), by name.
func (p *Provider) Held() []*Held {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Held, 0, len(p.held))
	for _, h := range p.held {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// holding reports whether a tool is held.
func (p *Provider) holding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held) > 0
}

// pinsStamp identifies the pins file's current contents (it is replaced
// whole at each change): "" without pins or file.
func (p *Provider) pinsStamp() string {
	if p.opts.Pins == nil {
		return ""
	}
	fi, err := os.Stat(p.opts.Pins.path)
	if err != nil {
		return ""
	}
	ino := uint64(0)
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d/%d/%d", ino, fi.Size(), fi.ModTime().UnixNano())
}
