package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// A stdio server's page of tools/list past the cap is cut before the SDK
// reads it: its first tools kept, its nextCursor gone, the rest of the
// message as it was; other messages pass as they are.
func TestPageBoundTrim(t *testing.T) {
	page := func(n int, extra string) string {
		tools := make([]string, n)
		for i := range tools {
			tools[i] = `{"name":"t` + strings.Repeat("x", i) + `","inputSchema":{"type":"object"}}`
		}
		return `{"jsonrpc":"2.0","id":7,"result":{"tools":[` + strings.Join(tools, ",") + `],"nextCursor":"c2"` + extra + `}}`
	}
	for _, tc := range []struct {
		name, msg string
		tools     int // after the cut; -1: the message unchanged
	}{
		{"past the cap", page(5, `,"_meta":{"k":"v"}`), 3},
		{"at the cap", page(3, ""), -1},
		{"a request", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"tools":[1,2,3,4]}}`, -1},
		{"another result", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"tools\""}]}}`, -1},
		{"an error", `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"\"tools\""}}`, -1},
		{"a batch", `[` + page(5, "") + `]`, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &pageBound{max: 3}
			got := b.trim([]byte(tc.msg))
			if tc.tools < 0 {
				if string(got) != tc.msg || b.offeredMore() {
					t.Errorf("changed %s into %s (cut %v)", tc.msg, got, b.cut.Load())
				}
				return
			}
			var m struct {
				ID     int `json:"id"`
				Result struct {
					Tools      []map[string]any `json:"tools"`
					NextCursor *string          `json:"nextCursor"`
					Meta       map[string]any   `json:"_meta"`
				} `json:"result"`
			}
			if err := json.Unmarshal(got, &m); err != nil {
				t.Fatalf("%s: %v", got, err)
			}
			if m.ID != 7 || len(m.Result.Tools) != tc.tools || m.Result.NextCursor != nil || m.Result.Meta["k"] != "v" ||
				m.Result.Tools[0]["name"] != "t" || m.Result.Tools[2]["name"] != "txx" {
				t.Errorf("cut to %s", got)
			}
			if !b.offeredMore() || b.offeredMore() {
				t.Error("offeredMore is not true once after the cut")
			}
		})
	}
}
