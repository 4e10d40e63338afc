package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolsrv/toolsrv/internal/poison"
	"github.com/toolsrv/toolsrv/mcp"
	"github.com/toolsrv/toolsrv/registry"
)

// textWarning is text of a tool's definition that addresses the model
// rather than the user (package poison): a warning of validate, for
// .meta and imported tools alike.
type textWarning struct {
	Tool  string `json:"tool"`
	File  string `json:"file"`
	Field string `json:"field"`
	Msg   string `json:"message"`
}

// textWarnings scans what the model is shown of each tool of cat, and of
// each held tool's new definition: its description, its prompt, and the
// strings of its input schema (property names, descriptions, titles).
func textWarnings(cat *registry.Catalog, held []*mcp.Held) []textWarning {
	out := []textWarning{}
	scan := func(tool, file, field, text string) {
		for _, f := range poison.Scan(text) {
			out = append(out, textWarning{Tool: tool, File: file, Field: field,
				Msg: fmt.Sprintf("tool %s: its %s speaks to the model, not the user: %s (how a poisoned tool steers the model; read it before you offer the tool)", tool, field, f)})
		}
	}
	for _, t := range cat.Tools {
		scan(t.Name, t.File, "description", t.Description)
		scan(t.Name, t.File, "prompt", t.Prompt)
		scan(t.Name, t.File, "input schema", schemaText(t.Args))
	}
	for _, h := range held {
		// (The tool's name, valid: it was published.)
		name := h.Server + registry.ProviderSep + h.Tool + " (held)"
		file := "mcp server " + h.Server
		scan(name, file, "description", h.Now.Description)
		scan(name, file, "title", h.Now.Title)
		scan(name, file, "input schema", schemaText(h.Now.InputSchema))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// schemaText is every string of a JSON schema (keys and values), one a
// line: what of it a model reads.
func schemaText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
			b.WriteByte('\n')
		case map[string]any:
			for k, x := range v {
				b.WriteString(k)
				b.WriteByte('\n')
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return b.String()
}
