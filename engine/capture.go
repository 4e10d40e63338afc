package engine

import (
	"context"
	"errors"
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
//   - A session's answer that no call or load followed, when the session
//     used no tool at all after it, is recorded as answered without a
//     tool (evidence that no tool fits requests like it) when it leaves
//     the memory. A call of a tool an earlier answer offered follows that
//     one, so a later answer that offered nothing (say "no tool fits")
//     records nothing. A one-off ranking (no session) records nothing.
//   - What a tool does within its agent (Caller.ByTool) is not a use.

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
	e.record(ev)
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
// the tools loaded after it and never called, or, when nothing followed
// it in its session, that it was answered without a tool.
func (e *Engine) unused(a *asked) {
	if e.opts.Usage == nil || a.Query == "" {
		return
	}
	for _, t := range a.Loaded {
		ev := e.event(a.Caller, a.Query, a.Offered, t, true, a.At)
		e.record(ev)
	}
	if a.Called || len(a.Loaded) > 0 || a.Caller.Session == "" || a.wentOn {
		return
	}
	e.record(e.event(a.Caller, a.Query, a.Offered, "", true, a.At))
}

// event is the usage event of caller c's use of tool ("": none) for
// request, offered offered: the one place where who acted becomes what
// is recorded. c.Client, the transport's identity of its client, is
// where an event's principal comes from once the history weighs events
// by who recorded them.
func (e *Engine) event(c Caller, request string, offered []string, tool string, ok bool, at time.Time) usage.Event {
	src := c.Transport
	if src == "" {
		src = usage.SourceAPI
	}
	return usage.Event{Request: request, Offered: offered, Tool: tool, OK: ok, Agent: c.Agent, Source: src, Time: at}
}

func (e *Engine) record(ev usage.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), usageWrite)
	defer cancel()
	if err := e.opts.Usage.Record(ctx, ev); err != nil {
		// The request is user text: it is not logged.
		e.log.Warn("usage history: an event was not recorded", "tool", ev.Tool, "agent", ev.Agent, "err", err)
	}
}
