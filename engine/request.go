package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolsrv/toolsrv/index"
	"github.com/toolsrv/toolsrv/registry"
	"github.com/toolsrv/toolsrv/thresholds"
)

// Caller is who asks or calls, as the transport knows it. The transport
// sets it (it is never read from the request's own text): it says which
// session's answers a call follows, and it is the one place where a
// transport's identity of its client reaches the engine, recorded with
// the usage history's events (see capture.go).
type Caller struct {
	// Transport is the front end: "cli", "mcp", "9p" ("" is the Go API);
	// the usage history's source.
	Transport string
	// Client is the transport's identity of the client: "owner" (the
	// user at the terminal, the CLI), the MCP session, the 9P session's
	// agent ("S/A"). The usage history does not weigh events by it yet.
	Client string
	// Session names the conversation whose calls and loads follow its
	// answers ("": none; each ranking is one-off, and a call follows an
	// answer only by citing it).
	Session string
	// Agent is the agent's name (its profile's), recorded with each
	// event.
	Agent string
	// ByTool: the client is a tool acting within the agent (a tool's own
	// 9P connection), not the agent itself: what it does is not the
	// agent's use of a tool, and records nothing.
	ByTool bool
}

// Request is one request for tools, the same from every front end: the Go
// API, the CLI (rank), 9P (the rank files) and MCP (find_tools). Its JSON
// form (DecodeRequest, ParseRequest) is what 9P and MCP take; the older
// names "text" (for query) and "k" (for limit) are still accepted.
type Request struct {
	// Query is the user's message; Context earlier messages, oldest
	// first.
	Query   string   `json:"query"`
	Context []string `json:"context,omitempty"`
	// Limit is the most tools offered (0: Options.DefaultLimit, else the
	// thresholds alone decide). It also sizes Answer.Ranking: enough for
	// the thresholds (at least 10), Limit with All (10 when 0), the whole
	// catalog with Full (then Limit is a cap, 0 for none). The tools the
	// thresholds offer past it are explained as left out by the limit.
	Limit int `json:"limit,omitempty"`
	// Explain asks for Answer.Explain: each ranked tool's signals and
	// matched words, the rule that offered it or left it out, and what
	// would bring in each tool left out.
	Explain bool `json:"explain,omitempty"`
	// Expect names tools the asker expected to be offered (at most
	// MaxExpect): the explanation covers each of them wherever it ranks,
	// and says why one that is not offered is not (not ranked near the
	// top, left out by a rule, not in the catalog, hidden, invalid, not
	// allowed) and what would bring it in. It implies Explain.
	Expect []string `json:"expect,omitempty"`

	// Caller says who asks (set by the transport): the answer is
	// remembered for the calls of the same session.
	Caller Caller `json:"-"`
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

// ErrNoQuery is the error of a request without a message.
var ErrNoQuery = errors.New(`empty message: give the user's message ("query") to rank tools for it`)

// requestForm is how a request is written: plain text, or a JSON object
// of these members.
const requestForm = `{"query": "...", "context": ["earlier message", ...], "limit": N, "explain": true, "expect": ["tool", ...]}`

// MaxExpect is the most tools a request may name in Expect.
const MaxExpect = 16

// DecodeRequest reads a request's JSON form: an object with "query" (the
// user's message, required), "context" (earlier messages, oldest first: an
// array of strings, one string, or an array written as JSON text), "limit"
// (a positive integer, or its decimal text; 0 is the same as none),
// "explain" (true or false, or their text) and "expect" (tool names: an
// array of strings, one string, or an array written as JSON text). Clients that can only send
// strings (a command line's) are understood; "text" and "k" are the older
// names of "query" and "limit". Other members are ignored. The error says
// which member is wrong and what it takes.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		return Request{}, err
	}
	if r.Query == "" {
		return Request{}, ErrNoQuery
	}
	return r, nil
}

// ParseRequest reads a request as 9P's rank files take it: a JSON object
// (DecodeRequest) when it begins with '{', else the message itself, as
// plain text.
func ParseRequest(b []byte) (Request, error) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' {
		if !json.Valid(t) {
			var v any
			err := json.Unmarshal(t, &v)
			return Request{}, fmt.Errorf("the request is not valid JSON (%v); write the message as plain text or %s", err, requestForm)
		}
		return DecodeRequest(t)
	}
	r := Request{Query: string(t)}
	if r.Query == "" {
		return Request{}, ErrNoQuery
	}
	return r, nil
}

// UnmarshalJSON reads a request's JSON form, leniently (see
// DecodeRequest); a missing query is left empty.
func (r *Request) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("the request must be a JSON object %s", requestForm)
	}
	var v struct {
		Query   json.RawMessage `json:"query"`
		Text    json.RawMessage `json:"text"`
		Context json.RawMessage `json:"context"`
		Limit   json.RawMessage `json:"limit"`
		K       json.RawMessage `json:"k"`
		Explain json.RawMessage `json:"explain"`
		Expect  json.RawMessage `json:"expect"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("the request must be a JSON object %s: %v", requestForm, err)
	}
	var out Request
	var err error
	for _, m := range []struct {
		name string
		raw  json.RawMessage
	}{{"query", v.Query}, {"text", v.Text}} {
		if out.Query != "" || absent(m.raw) {
			continue
		}
		if json.Unmarshal(m.raw, &out.Query) != nil {
			return fmt.Errorf("%q must be a string: the user's message", m.name)
		}
		out.Query = strings.TrimSpace(out.Query)
	}
	if out.Context, err = contextMember(v.Context); err != nil {
		return err
	}
	if out.Limit, err = limitMember("limit", v.Limit); err != nil {
		return err
	}
	if out.Limit == 0 {
		if out.Limit, err = limitMember("k", v.K); err != nil {
			return err
		}
	}
	if out.Explain, err = boolMember("explain", v.Explain); err != nil {
		return err
	}
	if out.Expect, err = expectMember(v.Expect); err != nil {
		return err
	}
	*r = out
	return nil
}

func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// contextMember is "context": an array of strings, one string, or an
// array written as JSON text (a command line's client sends that).
func contextMember(raw json.RawMessage) ([]string, error) {
	if absent(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		var list []string
		if strings.HasPrefix(strings.TrimSpace(one), "[") && json.Unmarshal([]byte(one), &list) == nil {
			return list, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errors.New(`"context" must be a string or an array of strings (earlier messages, oldest first)`)
	}
	return list, nil
}

// expectMember is "expect": tool names, in the forms "context" takes.
func expectMember(raw json.RawMessage) ([]string, error) {
	names, err := contextMember(raw)
	if err != nil {
		return nil, errors.New(`"expect" must be a tool name or an array of tool names (the tools you expected to be offered)`)
	}
	return names, checkExpect(names)
}

// checkExpect says what is wrong with a request's Expect, if anything.
func checkExpect(names []string) error {
	if len(names) > MaxExpect {
		return fmt.Errorf(`"expect" names %d tools: name at most %d`, len(names), MaxExpect)
	}
	for _, n := range names {
		if n == "" || len(n) > maxExpectName {
			return fmt.Errorf(`"expect": %q is not a tool name (1 to %d bytes)`, n, maxExpectName)
		}
	}
	return nil
}

// maxExpectName bounds a name in Expect (a provider's PROVIDER:TOOL
// included).
const maxExpectName = 300

// limitMember is "limit" (or "k"): a non-negative integer, or its decimal
// text; 0 is the same as none.
func limitMember(name string, raw json.RawMessage) (int, error) {
	if absent(raw) {
		return 0, nil
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, fmt.Errorf("%q must be a positive integer (the most tools to offer)", name)
		}
		if n, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return 0, fmt.Errorf("%q must be a positive integer (the most tools to offer)", name)
		}
	}
	if n < 0 || n != float64(int(n)) || n > 1<<20 {
		return 0, fmt.Errorf("%q %v: must be a positive integer (the most tools to offer), or left out", name, n)
	}
	return int(n), nil
}

// boolMember is a boolean member: true, false, or their text (a command
// line's client sends that); absent is false.
func boolMember(name string, raw json.RawMessage) (bool, error) {
	if absent(raw) {
		return false, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if v, err := strconv.ParseBool(strings.TrimSpace(s)); err == nil {
			return v, nil
		}
	}
	return false, fmt.Errorf("%q must be true or false", name)
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
// needs; the ranking's parts (dense, lexical) are in Answer.Explain.
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
// end: "toolsrv rank --json", MCP's find_tools and 9P's rank.json write
// it as it is (9P's rank file as text lines).
type Answer struct {
	// ID names this answer: a later call of one of its tools in the same
	// session follows it (or cites it: CallRequest.Answer), so that what
	// was asked, what was offered and what was called are linked (the
	// usage history).
	ID string `json:"id,omitempty"`
	// Tools are the tools for the prompt, best first: tools of the
	// catalog the answer was made on, that the request's profile allows.
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
