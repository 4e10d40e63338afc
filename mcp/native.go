package mcp

import (
	"context"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/registry"
)

// DefaultNativeCap is how many found tools ServerOptions.Native lists at
// most (besides find_tools, call_tool and the hot tools). 32 keeps a
// client's list of toolsrv's tools, with find_tools and call_tool, under
// the 40 tools some clients take from all their MCP servers together
// (Cursor), and their schemas at a few thousand tokens of the model's
// context; a tool dropped from the list is one find_tools away.
const DefaultNativeCap = 32

// nativeSep joins SERVER and TOOL in the native name of an imported
// SERVER:TOOL, whose ':' MCP does not allow in a tool name (nor do the
// model APIs clients pass tool names to): fs:read_text_file is listed as
// fs__read_text_file.
const nativeSep = "__"

// nativeTool is a found tool listed under its own name (ServerOptions.Native).
type nativeTool struct {
	tool string // its name in the catalog
	hash string // its definition's, to see changes
	used uint64 // the server's clock when it was last found or called
}

// NativeName is the name under which tool is listed natively: its own,
// or for an imported SERVER:TOOL, SERVER__TOOL.
func NativeName(tool string) string {
	return strings.ReplaceAll(tool, registry.ProviderSep, nativeSep)
}

// nativeRefusal says why tool t cannot be listed natively as name, or "".
// Call with s.mu held.
func (s *Server) nativeRefusal(cat *registry.Catalog, t *registry.Tool, name string) string {
	switch {
	case name == FindTools || name == CallTool:
		return "its name is one of toolsrv's own MCP tools"
	case !mcpName.MatchString(name):
		return "its name is not a valid MCP tool name"
	case !isObjectSchema(t.Args):
		return "its input schema is not an object schema"
	}
	if name != t.Name {
		if _, ok := cat.Get(name); ok {
			return "its MCP name " + name + " is another tool's"
		}
	}
	if _, hot := s.listed[name]; hot && name != t.Name {
		return "its MCP name " + name + " is a hot tool's"
	}
	return ""
}

// listNative lists the offered tools under their own names (best first
// being the most recently used), drops the least recently used ones past
// the cap, and returns the offered tools that are listed, by their MCP
// names. The SDK tells clients (notifications/tools/list_changed) when
// the list changes. Hot tools are listed already and count as listed.
func (s *Server) listNative(cat *registry.Catalog, offered []engine.Offer) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The worst first: the best is then the most recently used.
	for i := len(offered) - 1; i >= 0; i-- {
		n := offered[i].Name
		if _, hot := s.listed[n]; hot {
			continue
		}
		t, ok := cat.Get(n)
		if !ok {
			continue
		}
		name := NativeName(n)
		if why := s.nativeRefusal(cat, t, name); why != "" {
			s.log.Debug("a found tool is not listed natively; call_tool reaches it", "tool", n, "why", why)
			continue
		}
		s.clock++
		if nt := s.native[name]; nt != nil && nt.tool == n && nt.hash == t.Hash {
			nt.used = s.clock
			continue
		}
		s.addNative(name, t)
	}
	s.evictNative()
	out := map[string]string{}
	for _, o := range offered {
		if _, hot := s.listed[o.Name]; hot {
			out[o.Name] = o.Name
		} else if nt := s.native[NativeName(o.Name)]; nt != nil && nt.tool == o.Name {
			out[o.Name] = NativeName(o.Name)
		}
	}
	return out
}

// addNative lists t as name (replacing what was listed as name). Call with
// s.mu held.
func (s *Server) addNative(name string, t *registry.Tool) {
	s.native[name] = &nativeTool{tool: t.Name, hash: t.Hash, used: s.clock}
	tool := t.Name
	s.srv.AddTool(&sdk.Tool{Name: name, Description: t.Description, InputSchema: objectSchema(t.Args),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: t.ReadOnly, OpenWorldHint: &t.Network}},
		s.relay(func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.touchNative(name, tool)
			return s.call(ctx, req, engine.CallRequest{Tool: tool, Arguments: orEmpty(req.Params.Arguments)}), nil
		}))
}

// evictNative drops the least recently used native tools past the cap.
// Call with s.mu held.
func (s *Server) evictNative() {
	over := len(s.native) - s.opts.NativeCap
	if over <= 0 {
		return
	}
	names := make([]string, 0, len(s.native))
	for n := range s.native {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return s.native[names[i]].used < s.native[names[j]].used })
	gone := names[:over]
	for _, n := range gone {
		delete(s.native, n)
	}
	s.srv.RemoveTools(gone...)
}

// touchNative marks native tool name (of catalog tool tool) as used now.
func (s *Server) touchNative(name, tool string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if nt := s.native[name]; nt != nil && nt.tool == tool {
		s.clock++
		nt.used = s.clock
	}
}

// syncNative keeps the native tools as the catalog changes: a tool gone
// (or no longer listable) is dropped, a changed one listed anew, one that
// became hot left to the hot list. Call with s.mu held, after the hot
// tools are synced.
func (s *Server) syncNative(cat *registry.Catalog) {
	var gone []string
	for name, nt := range s.native {
		if _, hot := s.listed[name]; hot {
			delete(s.native, name) // the hot tool's AddTool replaced it
			continue
		}
		t, ok := cat.Get(nt.tool)
		if !ok || s.nativeRefusal(cat, t, name) != "" {
			gone = append(gone, name)
			continue
		}
		if t.Hash != nt.hash {
			used := nt.used
			s.addNative(name, t)
			s.native[name].used = used
		}
	}
	if len(gone) > 0 {
		sort.Strings(gone)
		for _, n := range gone {
			delete(s.native, n)
		}
		s.srv.RemoveTools(gone...)
	}
}

// Native are the found tools listed under their own names (MCP name →
// catalog name).
func (s *Server) Native() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.native))
	for n, nt := range s.native {
		out[n] = nt.tool
	}
	return out
}
