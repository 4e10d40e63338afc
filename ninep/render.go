package ninep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolsrv/toolsrv/registry"
)

// catalogText is the rendered text of one catalog snapshot, shared by every
// connection until the catalog changes.
type catalogText struct {
	cat      *registry.Catalog
	tools    []byte
	json     []byte
	errors   []byte
	revision []byte
}

func (s *Server) texts() *catalogText {
	cat := s.catalog()
	if t := s.text.Load(); t != nil && t.cat == cat {
		return t
	}
	t := &catalogText{cat: cat, tools: toolLines(cat.Tools), revision: []byte(strconv.FormatUint(cat.Revision, 10) + "\n")}
	if b, err := json.MarshalIndent(cat, "", "  "); err == nil {
		t.json = append(b, '\n')
	} else {
		t.json = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
	}
	var eb bytes.Buffer
	for _, p := range cat.Problems {
		eb.WriteString(oneLine(p.Error()))
		eb.WriteByte('\n')
	}
	t.errors = eb.Bytes()
	s.text.Store(t)
	return t
}

// toolLines is the tools format: one line per tool, "name<TAB>tier<TAB>description".
func toolLines(tools []*registry.Tool) []byte {
	var b bytes.Buffer
	for _, t := range tools {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", t.Name, t.Tier, oneLine(t.Description))
	}
	return b.Bytes()
}

// oneLine folds newlines and tabs so a text fits one tab-separated field.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// trimLine trims a command line, including a CR from a CRLF.
func trimLine(s string) string { return strings.TrimSpace(s) }

// modelTool is one entry of an agent's schemas file: what the model sees.
// Keywords are discovery-only and never shown.
type modelTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Prompt      string          `json:"prompt,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

func schemas(tools []*registry.Tool) []byte {
	out := make([]modelTool, 0, len(tools))
	for _, t := range tools {
		args := t.Args
		if len(args) == 0 {
			args = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, modelTool{Name: t.Name, Description: t.Description, Prompt: t.Prompt, Parameters: args})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
	}
	return append(b, '\n')
}

// rankAnswer is the rank format: optional comment lines ("# degraded:
// REASON", "# NOTE"), then
// "name<TAB>score" lines, best first. Names a stale ranking still holds but
// the catalog no longer has (or allow refuses) are dropped.
func rankAnswer(r Ranking, cat *registry.Catalog, allow func(string) bool) []byte {
	var b bytes.Buffer
	if r.Degraded {
		reason := r.Reason
		if reason == "" {
			reason = "ranking fell back to a simpler method"
		}
		fmt.Fprintf(&b, "# degraded: %s\n", oneLine(reason))
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "# %s\n", oneLine(r.Note))
	}
	for _, h := range r.Hits {
		if _, ok := cat.Get(h.Name); !ok || (allow != nil && !allow(h.Name)) {
			continue
		}
		fmt.Fprintf(&b, "%s\t%.4f\n", h.Name, h.Score)
	}
	return b.Bytes()
}

// callAnswer is the call/NAME answer: one JSON object.
type callAnswer struct {
	Tool        string          `json:"tool"`
	ExitCode    int             `json:"exitCode"`
	Output      string          `json:"output"`
	Content     json.RawMessage `json:"content,omitempty"`
	Stderr      string          `json:"stderr,omitempty"`
	Truncated   bool            `json:"truncated,omitempty"`
	Unsandboxed bool            `json:"unsandboxed,omitempty"`
	Denied      string          `json:"denied,omitempty"`
	DurationMS  float64         `json:"durationMs"`
}

func renderCall(tool string, r *CallResult) ([]byte, error) {
	a := callAnswer{Tool: tool, ExitCode: r.ExitCode, Output: string(r.Stdout), Content: r.Content,
		Stderr: string(r.Stderr), Truncated: r.Truncated, Unsandboxed: r.Unsandboxed, Denied: r.Denied,
		DurationMS: float64(r.Duration.Microseconds()) / 1000}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encoding the result of %s: %w", tool, err)
	}
	return append(b, '\n'), nil
}

// ctlText is what reading an agent's ctl shows: its state, then notices
// (tools unloaded by retention or by catalog changes, autoLoad problems).
func (ag *agent) ctlTextLocked() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "session %s\nagent %s\nturn %d\n", ag.sess.name, ag.name, ag.turn)
	for _, n := range ag.notices {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
