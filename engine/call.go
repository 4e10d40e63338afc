package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// ErrNoRunner is returned by Call on an engine made without Options.Runner.
var ErrNoRunner = errors.New("this engine runs no tools (Options.Runner is not set)")

// CallRequest is one call of a tool, the same from every front end (MCP's
// call_tool takes it as its arguments; 9P's call/NAME and the CLI fill it
// from the path or the command line). The older names "name" (for tool)
// and "answerId" (for answer) are still accepted, and arguments written as
// JSON text (a command line's client sends that) are read as the object
// they hold.
type CallRequest struct {
	// Tool is the tool's name, as an answer gave it.
	Tool string `json:"tool"`
	// Arguments are its arguments, a JSON object ("{}" when empty).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Answer is the ID of the answer this call follows (Answer.ID), an
	// answer given to the same session: it links the call to the request
	// and the offered tools. Without it, the call follows the session's
	// latest answer that offered the tool. Request is the user's request
	// when no answer is followed (the CLI's --for). Either one makes the
	// call part of the usage history.
	Answer  string `json:"answer,omitempty"`
	Request string `json:"request,omitempty"`
	// NoToolFits, instead of a call (no Tool), says that the request of
	// Answer was answered without any tool (Engine.NoToolFits).
	NoToolFits bool `json:"noToolFits,omitempty"`

	// Caller says who calls (set by the transport); Context where and as
	// whom the call runs.
	Caller  Caller           `json:"-"`
	Context exec.CallContext `json:"-"`
}

// UnmarshalJSON reads a call request, with the older names "name" and
// "answerId", arguments written as JSON text, and "noToolFits" as true,
// false or their text.
func (c *CallRequest) UnmarshalJSON(b []byte) error {
	var v struct {
		Tool      *string         `json:"tool"`
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Answer    *string         `json:"answer"`
		AnswerID  *string         `json:"answerId"`
		Request   *string         `json:"request"`
		NoTool    json.RawMessage `json:"noToolFits"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	none, err := boolMember("noToolFits", v.NoTool)
	if err != nil {
		return err
	}
	out := CallRequest{Tool: deref(v.Tool), Answer: deref(v.Answer), Request: deref(v.Request), NoToolFits: none}
	if out.Tool == "" {
		out.Tool = deref(v.Name)
	}
	if out.Answer == "" {
		out.Answer = deref(v.AnswerID)
	}
	args := bytes.TrimSpace(v.Arguments)
	if len(args) > 0 && args[0] == '"' {
		var text string
		if json.Unmarshal(args, &text) == nil {
			args = []byte(text)
		}
	}
	out.Arguments = args
	*c = out
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// args returns the arguments, "{}" when none were given.
func (c CallRequest) args() []byte {
	a := bytes.TrimSpace(c.Arguments)
	if len(a) == 0 || string(a) == "null" {
		return []byte("{}")
	}
	return a
}

// Call runs c.Tool of the current catalog as the runner does: arguments
// checked against its schema, sandboxed, limited. A missing or hidden tool
// is a *registry.LookupError. A call that cites an answer, or gives the
// request, is recorded in the usage history.
func (e *Engine) Call(ctx context.Context, c CallRequest) (*exec.Result, error) {
	t, err := e.reg.Catalog().Lookup(c.Tool)
	if err != nil {
		return nil, err
	}
	return e.callTool(ctx, t, c)
}

// callTool runs t, a tool of a catalog of this engine: a provided tool
// by its provider (arguments checked against its schema first), any
// other by the runner.
func (e *Engine) callTool(ctx context.Context, t *registry.Tool, c CallRequest) (*exec.Result, error) {
	res, err := e.run(ctx, t, c)
	e.used(c, t.Name, err)
	return res, err
}

func (e *Engine) run(ctx context.Context, t *registry.Tool, c CallRequest) (*exec.Result, error) {
	args := c.args()
	if c.Context.ToolsPath == "" {
		c.Context.ToolsPath = strings.Join(e.opts.Dirs, ":")
	}
	if t.Provider == "" {
		if e.runner == nil {
			return nil, ErrNoRunner
		}
		return e.runner.Call(ctx, t, args, c.Context)
	}
	p, ok := e.providers[t.Provider]
	if !ok {
		return nil, &exec.CallError{Tool: t.Name, Kind: exec.ErrStart, Err: fmt.Errorf("%w %q in this engine", errUnknownProvider, t.Provider)}
	}
	if err := t.ValidateArgs(args); err != nil {
		return nil, &exec.CallError{Tool: t.Name, Kind: exec.ErrInvalidArgs, Msg: "nothing was run", Err: err}
	}
	return p.Call(ctx, strings.TrimPrefix(t.Name, t.Provider+registry.ProviderSep), args, c.Context)
}

// CallResult is a call's outcome on the wire, the same for every front end
// (9P's call/NAME answer, the CLI's call --json, an HTTP front end): what
// the tool wrote and how it ended, or why it did not run.
type CallResult struct {
	Tool string `json:"tool"`
	// OK: the tool ran and exited 0.
	OK bool `json:"ok"`
	// ExitCode is the tool's exit status (-1: killed; 0 when it did not
	// run).
	ExitCode int    `json:"exitCode"`
	Output   string `json:"output"`
	// Content is the "content" array of a {"content": [...]} output.
	Content     json.RawMessage `json:"content,omitempty"`
	Stderr      string          `json:"stderr,omitempty"`
	Truncated   bool            `json:"truncated,omitempty"`
	Unsandboxed bool            `json:"unsandboxed,omitempty"`
	// Denied says why the sandbox most likely made the tool fail, and
	// what would allow it.
	Denied     string  `json:"denied,omitempty"`
	DurationMS float64 `json:"durationMs"`
	// Error and Kind say why a call failed (Kind: one of CallErrorKinds'
	// names).
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// Outcome is the wire form of a call of tool that returned res and err.
func Outcome(tool string, res *exec.Result, err error) CallResult {
	out := CallResult{Tool: tool, OK: err == nil}
	if res != nil {
		out.ExitCode, out.Output, out.Content, out.Stderr = res.ExitCode, string(res.Stdout), res.Content, string(res.Stderr)
		out.Truncated, out.Unsandboxed, out.Denied = res.Truncated, res.Unsandboxed, res.Denied
		out.DurationMS = float64(res.Duration.Microseconds()) / 1000
	}
	if err != nil {
		out.Error = err.Error()
		out.Kind = KindOf(err).Name
	}
	return out
}
