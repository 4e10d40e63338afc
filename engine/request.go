package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// Request is one request for tools, the same from every front end: the Go
// API, the CLI (rank), 9P (the rank files, JSON form) and MCP
// (find_tools). Its JSON names are the ones every transport takes; the
// older names "text" (for query) and "k" (for limit) are still accepted.
type Request struct {
	// Query is the user's message; Context earlier messages, oldest
	// first.
	Query   string   `json:"query"`
	Context []string `json:"context,omitempty"`
	// Limit is the most tools offered (0: the thresholds decide). It also
	// sizes Answer.Ranking: enough for the thresholds, 10 with All, the
	// whole catalog with Full (then Limit is a cap, 0 for none).
	Limit int `json:"limit,omitempty"`
	// Explain asks for Answer.Explain: each ranked tool's signals and
	// matched words, and the rule that offered it or left it out.
	Explain bool `json:"explain,omitempty"`
	// Session and Agent say who asks (the answer remembers them for the
	// call that follows).
	Session string `json:"session,omitempty"`
	Agent   string `json:"agent,omitempty"`
	// Source says which front end asks ("mcp", "9p", "cli", "api" when
	// empty).
	Source string `json:"-"`

	// Profile is the asking agent's (nil: none): only the tools it allows
	// are ranked, and its hot tools are always offered.
	Profile *registry.Profile `json:"-"`
	// Allow, when set, further limits the tools ranked.
	Allow func(name string) bool `json:"-"`
	// Full ranks the whole catalog.
	Full bool `json:"-"`
	// Mode is hybrid (the default), lexical or dense.
	Mode index.Mode `json:"-"`
	// All skips the thresholds: the answer's tools are the top Limit (10)
	// of the ranking.
	All bool `json:"-"`
	// NoLearned ranks with the fixed fusion.
	NoLearned bool `json:"-"`
	// Timeout bounds the ranking (Options.RankTimeout).
	Timeout time.Duration `json:"-"`
}

// UnmarshalJSON reads a request, with the older names "text" and "k".
func (r *Request) UnmarshalJSON(b []byte) error {
	type plain Request
	var v struct {
		plain
		Text *string `json:"text"`
		K    *int    `json:"k"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if v.Query == "" && v.Text != nil {
		v.Query = *v.Text
	}
	if v.Limit == 0 && v.K != nil {
		v.Limit = *v.K
	}
	if v.Limit < 0 {
		return fmt.Errorf("limit %d: give a positive number of tools, or leave it out", v.Limit)
	}
	*r = Request(v.plain)
	r.Query = strings.TrimSpace(r.Query)
	return nil
}

// Offer is one tool offered for the prompt.
type Offer struct {
	index.Hit
	// Hot: offered for its tier (a hot tool of the agent's profile), not
	// for its score.
	Hot bool
	// Description and InputSchema are filled by front ends that hand the
	// model the tool itself (MCP's find_tools).
	Description string
	InputSchema json.RawMessage
}

// offerJSON is an Offer on the wire: its name, score and what a model
// needs; the ranking's parts (dense, lexical) are in Answer.Ranking.
type offerJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Score       float64         `json:"score"`
	Hot         bool            `json:"hot,omitempty"`
	Named       bool            `json:"named,omitempty"`
}

// MarshalJSON writes the wire form.
func (o Offer) MarshalJSON() ([]byte, error) {
	return json.Marshal(offerJSON{Name: o.Name, Description: o.Description, InputSchema: o.InputSchema,
		Score: o.Score, Hot: o.Hot, Named: o.Named})
}

// UnmarshalJSON reads the wire form.
func (o *Offer) UnmarshalJSON(b []byte) error {
	var v offerJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = Offer{Hit: index.Hit{Name: v.Name, Score: v.Score, Named: v.Named}, Hot: v.Hot,
		Description: v.Description, InputSchema: v.InputSchema}
	return nil
}

// Answer is what the engine offers for a Request, the same for every front
// end.
type Answer struct {
	// ID names this answer: a later call (CallRequest.Answer) cites it, so
	// that what was asked, what was offered and what was called are
	// linked (the usage history).
	ID string `json:"id,omitempty"`
	// Tools are the tools for the prompt, best first.
	Tools []Offer `json:"tools"`
	// NoToolFits: nothing in the catalog serves the message (Tools holds
	// at most the agent's hot tools); Reason says why.
	NoToolFits bool   `json:"noToolFits"`
	Reason     string `json:"reason,omitempty"`
	// Degraded: the ranking fell back to lexical scores (the embedder
	// failed or was late); DegradedReason says why.
	Degraded       bool   `json:"degraded,omitempty"`
	DegradedReason string `json:"degradedReason,omitempty"`

	// Explain says why the answer is what it is (Request.Explain).
	Explain *Explanation `json:"explain,omitempty"`

	// Selection is the thresholds' decision (zero with Request.All or
	// without thresholds), and Ranking the ranking it was made on.
	Selection thresholds.Selection `json:"-"`
	Ranking   index.Ranking        `json:"-"`
}

// Names are the offered tools' names, best first.
func (a Answer) Names() []string {
	out := make([]string, len(a.Tools))
	for i, o := range a.Tools {
		out[i] = o.Name
	}
	return out
}
