package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// providedTool is an MCP tool as the catalog takes it: its name, its
// description (its title when it has none), its title as a keyword, its
// input schema (compiled and bounded by the registry like a .meta
// schema), and its read-only hint.
func providedTool(t *sdk.Tool, sc ServerConfig) (registry.Provided, error) {
	pt := registry.Provided{Name: t.Name, Description: t.Description, Timeout: sc.Timeout}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if pt.Description == "" {
		pt.Description = title
	} else if title != "" && !strings.EqualFold(title, t.Name) {
		pt.Keywords = []string{title}
	}
	if t.Annotations != nil {
		pt.ReadOnly = t.Annotations.ReadOnlyHint
	}
	if t.InputSchema == nil {
		return pt, fmt.Errorf("the server gives no input schema (MCP requires one; {\"type\":\"object\"} takes any object)")
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return pt, fmt.Errorf("the input schema cannot be read: %w", err)
	}
	if len(raw) > registry.MaxSchemaSize {
		return pt, fmt.Errorf("the input schema is %d bytes; the limit is %d (%d KiB): left out", len(raw), registry.MaxSchemaSize, registry.MaxSchemaSize>>10)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return pt, fmt.Errorf("the input schema is %s, not a JSON Schema object", abbrev(string(raw), 80))
	}
	pt.Args = raw
	return pt, nil
}

func abbrev(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// resultOf is an MCP tool result as a call's result: Content holds its
// content items as they came, Stdout their text (text items, each on its
// line; other items as their JSON), or the structured content when there
// is no content.
func resultOf(res *sdk.CallToolResult, dur time.Duration) *exec.Result {
	r := &exec.Result{Duration: dur}
	var out bytes.Buffer
	if len(res.Content) > 0 {
		if b, err := json.Marshal(res.Content); err == nil {
			r.Content = b
		}
		for i, c := range res.Content {
			if i > 0 {
				out.WriteByte('\n')
			}
			if tc, ok := c.(*sdk.TextContent); ok {
				out.WriteString(tc.Text)
			} else if b, err := json.Marshal(c); err == nil {
				out.Write(b)
			}
		}
	} else if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			out.Write(b)
		}
	}
	r.Stdout = out.Bytes()
	r.StdoutBytes = int64(len(r.Stdout))
	return r
}

// contentOf is a call's result as MCP content: the items of a
// {"content": [...]} result as they are (an item the SDK cannot read
// becomes its JSON as text), else the output as one text item.
func contentOf(r *exec.Result) []sdk.Content {
	if r == nil {
		return []sdk.Content{}
	}
	if len(r.Content) > 0 {
		var items []json.RawMessage
		if json.Unmarshal(r.Content, &items) == nil {
			out := make([]sdk.Content, 0, len(items))
			for _, it := range items {
				var one sdk.CallToolResult
				if err := json.Unmarshal([]byte(`{"content":[`+string(it)+`]}`), &one); err == nil && len(one.Content) == 1 {
					out = append(out, one.Content[0])
				} else {
					out = append(out, &sdk.TextContent{Text: string(it)})
				}
			}
			return out
		}
	}
	return []sdk.Content{&sdk.TextContent{Text: string(r.Stdout)}}
}
