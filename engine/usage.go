package engine

import (
	"context"
	"errors"
	"time"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/usage"
)

// usageWrite bounds how long recording one event may take (a busy store
// is waited for, within reason, never past this).
const usageWrite = 2 * time.Second

// used records the call c of tool in the usage history, when it is linked
// to a request (a cited answer, or CallRequest.Request) and the engine
// keeps one (Options.Usage). A call that failed is recorded as failed: it
// never raises the tool. Recording never fails the call.
func (e *Engine) used(c CallRequest, tool string, res *exec.Result, err error) {
	if e.opts.Usage == nil {
		return
	}
	ev := usage.Event{Tool: tool, OK: err == nil, Agent: c.Context.Agent, Source: c.Source, Request: c.Request}
	if a := e.answers.cite(c.Answer, tool); a != nil {
		ev.Request, ev.Offered = a.Query, a.Offered
		if ev.Agent == "" {
			ev.Agent = a.Agent
		}
	}
	if ev.Request == "" {
		return // nothing to learn from: no request is known
	}
	if ev.Source == "" {
		ev.Source = usage.SourceAPI
	}
	var ce *exec.CallError
	if errors.As(err, &ce) && !errors.Is(err, exec.ErrExit) && !errors.Is(err, exec.ErrTimeout) {
		// The tool did not run (bad arguments, refused): that says
		// nothing about whether it fits the request.
		return
	}
	e.record(ev)
}

// Loaded notes that session's agent loaded tool after the answer with ID
// answer (9P's tool_load after a rank): unless a call of that tool cites
// the answer later, the load is recorded in the usage history when the
// answer is forgotten (so that a load and the call that follows it count
// once).
func (e *Engine) Loaded(answer, tool, session, agent string) {
	if e.opts.Usage == nil {
		return
	}
	e.answers.load(answer, tool)
}

// unused records what an answer led to that no call recorded, when it is
// forgotten: the tools loaded after it and never called, or, when nothing
// was loaded or called, that no tool was used — evidence that no tool fits
// requests like it. Only a session's answers count for the latter (an agent
// that asked and went on without a tool); a one-off command's ranking is
// not a conversation.
func (e *Engine) unused(a *asked) {
	if e.opts.Usage == nil || a.Query == "" {
		return
	}
	for _, t := range a.Loaded {
		e.record(usage.Event{Request: a.Query, Offered: a.Offered, Tool: t, Agent: a.Agent, OK: true, Time: a.At, Source: a.source})
	}
	if a.Called || len(a.Loaded) > 0 || a.Session == "" {
		return
	}
	e.record(usage.Event{Request: a.Query, Offered: a.Offered, Agent: a.Agent, OK: true, Time: a.At, Source: a.source})
}

func (e *Engine) record(ev usage.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), usageWrite)
	defer cancel()
	if err := e.opts.Usage.Record(ctx, ev); err != nil {
		// The request is user text: it is not logged.
		e.log.Warn("usage history: an event was not recorded", "tool", ev.Tool, "agent", ev.Agent, "err", err)
	}
}
