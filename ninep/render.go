package ninep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/toolsrv/toolsrv/engine"
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
	t := renderCatalog(cat)
	s.text.Store(t)
	return t
}

// renderCatalog renders the catalog files of cat.
func renderCatalog(cat *registry.Catalog) *catalogText {
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

// rankAnswer is the rank format: comment lines ("# answer ID", the ID of
// the answer; "# degraded: REASON"; "# NOTE", why no tool fits), then
// "name<TAB>score" lines, best first, then with an explanation one
// "# explain JSON" line.
func rankAnswer(a engine.Answer) []byte {
	var b bytes.Buffer
	if a.ID != "" {
		fmt.Fprintf(&b, "# answer %s\n", a.ID)
	}
	if a.Degraded {
		reason := a.DegradedReason
		if reason == "" {
			reason = "ranking fell back to a simpler method"
		}
		fmt.Fprintf(&b, "# degraded: %s\n", oneLine(reason))
	}
	if a.NoToolFits && a.Reason != "" {
		fmt.Fprintf(&b, "# %s\n", oneLine(a.Reason))
	}
	for _, o := range a.Tools {
		fmt.Fprintf(&b, "%s\t%.4f\n", o.Name, o.Score)
	}
	if a.Explain != nil {
		// One comment line, so that a reader of the tool lines skips it.
		if j, err := json.Marshal(a.Explain); err == nil {
			fmt.Fprintf(&b, "# explain %s\n", j)
		}
	}
	return b.Bytes()
}

// jsonLine is v as one line of JSON: rank.json's answer (an engine.Answer)
// and call/NAME's (an engine.CallResult).
func jsonLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the answer: %w", err)
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
