package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/usage"
)

// What the usage history records, written once (the capture rule). The
// transports only say who acts (Caller) and on which tool; the engine's
// memory of its answers (answers.go) says which answer that follows.
//
//   - A call of a tool that ran (it exited, whatever its status, or timed
//     out) is a use. It is recorded when it is linked to a request: the
//     answer it cites (one given to the same session, or without a session
//     to the same client), else the request it
//     gives (CallRequest.Request, the CLI's --for), else its session's
//     latest answer that offered the tool, else its session's latest
//     answer (the agent found the tool some other way: the history learns
//     what the ranking missed). A call that did not run
//     (arguments refused, no sandbox, bypass denied) is no use and records
//     nothing; a call that failed is recorded as failed, which never
//     raises the tool.
//   - A load (9P's tool_load) is a use too, linked as a call is. It is
//     recorded when that answer leaves
//     the memory, unless a call of the tool followed the same answer (a
//     load and the call after it count once).
//   - An answer that nothing followed records nothing: a client that
//     asked and left (a one-shot session that only looked) says nothing
//     of whether a tool fits. Only a client that says so (NoToolFits:
//     MCP's call_tool with "noToolFits", 9P's no_tool, the Go API)
//     records its answer's request as answered without a tool, evidence
//     that no tool fits requests like it. A one-off ranking (no session)
//     records nothing.
//   - What a tool does within its agent (Caller.ByTool) is not a use.
//   - Every event carries its principal, who recorded it: the caller's
//     Client as its transport names it ("owner" for the user at the
//     terminal; "api" for a program that names none). The ranking weighs
//     it by what that principal has earned (index/usagevoice.go).
//   - A session adds evidence at a bounded rate (admit): at most
//     sessionBurst requests or tools new to it at once, one more every
//     sessionRefill; beyond, its events are not recorded (a page an agent
//     reads cannot make it write the history at will). Calls of what the
//     session recorded already, and the owner's, are not bounded.

// usageWrite bounds how long recording one event may take (a busy store
// is waited for, within reason, never past this).
const usageWrite = 2 * time.Second

// used applies the capture rule to the call c of tool, which returned res
// and err. Recording never fails the call.
func (e *Engine) used(c CallRequest, tool string, err error) {
	if e.opts.Usage == nil || c.Caller.ByTool {
		return
	}
	var ce *exec.CallError
	if errors.As(err, &ce) && !errors.Is(err, exec.ErrExit) && !errors.Is(err, exec.ErrTimeout) {
		// The tool did not run: that says nothing about whether it
		// fits the request.
		return
	}
	follows := tool
	if c.Request != "" {
		follows = "" // the call says which request it serves
	}
	ev := e.event(c.Caller, c.Request, nil, tool, err == nil, time.Time{})
	if ev.Agent == "" {
		ev.Agent = c.Context.Agent
	}
	if a := e.answers.follow(c.Caller, c.Answer, follows, false); a != nil {
		ev.Request, ev.Offered = a.Query, a.Offered
		if ev.Agent == "" {
			ev.Agent = a.Caller.Agent
		}
	}
	if ev.Request == "" {
		return // nothing to learn from: no request is known
	}
	e.record(c.Caller, ev)
}

// NoToolFits records that the request of answer (an answer given to c's
// session; "": the session's latest) was answered without a tool: the
// client says so (MCP's call_tool with "noToolFits", 9P's no_tool). It is
// evidence that no tool fits requests like it, weighed by who says it as
// any event is. An answer not given to c's session, or forgotten, is an
// error that says so.
func (e *Engine) NoToolFits(c Caller, answer string) error {
	if c.ByTool {
		return errors.New("a tool's own connection cannot say how its agent answered")
	}
	a := e.answers.settle(c, answer)
	if a == nil {
		if answer == "" {
			return errors.New("no answer to settle: rank first (find_tools, rank), then say that no tool fits its request")
		}
		return fmt.Errorf("no answer %q was given to this session (or it was given over an hour ago): cite the id of an answer of this session", answer)
	}
	if e.opts.Usage == nil {
		return nil
	}
	e.record(c, e.event(a.Caller, a.Query, a.Offered, "", true, time.Time{}))
	return nil
}

// Loaded applies the capture rule to a load of tool by c (9P's
// tool_load): unless a call of that tool follows the same answer, the load
// is recorded when the answer it follows leaves the memory.
func (e *Engine) Loaded(c Caller, tool string) {
	if e.opts.Usage == nil || c.ByTool {
		return
	}
	e.answers.follow(c, "", tool, true)
}

// unused applies the capture rule to an answer that leaves the memory:
// the tools loaded after it and never called. An answer nothing followed
// records nothing (NoToolFits is how a client says no tool fits).
func (e *Engine) unused(a *asked) {
	if e.opts.Usage == nil || a.Query == "" {
		return
	}
	for _, t := range a.Loaded {
		ev := e.event(a.Caller, a.Query, a.Offered, t, true, a.At)
		e.record(a.Caller, ev)
	}
}

// event is the usage event of caller c's use of tool ("": none) for
// request, offered offered: the one place where who acted becomes what
// is recorded, its principal the transport's identity of its client
// (principalOf).
func (e *Engine) event(c Caller, request string, offered []string, tool string, ok bool, at time.Time) usage.Event {
	src := c.Transport
	if src == "" {
		src = usage.SourceAPI
	}
	return usage.Event{Request: request, Offered: offered, Tool: tool, OK: ok, Agent: c.Agent, Principal: principalOf(c),
		Source: src, Time: at}
}

// principalOf is who c is to the usage history: its Client, or "api" for
// a program of the Go API that names none.
func principalOf(c Caller) string {
	if c.Client == "" {
		return usage.API
	}
	return c.Client
}

// record records ev, an event of c's session, unless the session is past
// its bound (admit).
func (e *Engine) record(c Caller, ev usage.Event) {
	if ev.Principal != usage.Owner && !e.answers.admit(c, ev.Principal, usage.Normalize(ev.Request), ev.Tool) {
		e.log.Info("usage history: a session past its bound; an event was not recorded", "tool", ev.Tool, "principal", ev.Principal,
			"bound", fmt.Sprintf("%d at once, one more every %s", sessionBurst, sessionRefill))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), usageWrite)
	defer cancel()
	if err := e.opts.Usage.Record(ctx, ev); err != nil {
		// The request is user text: it is not logged.
		e.log.Warn("usage history: an event was not recorded", "tool", ev.Tool, "agent", ev.Agent, "err", err)
	}
}
