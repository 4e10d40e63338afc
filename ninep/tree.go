package ninep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
)

// The file tree, declared once per directory (see dirspec.go): each
// table below gives both what the directory lists and what it opens.
//
//	/                        rootDir      T: nothing
//	session/                 sessionsDir  T: nothing
//	session/S/               sessionDir   T: the session
//	session/S/meta/          metaDir      T: the session (sent.go)
//	session/S/agent/         agentsDir    T: the session
//	session/S/agent/A/       agentDir     T: the agent
//	session/S/agent/A/call/  callDir      T: the agent
//
// These are declarations: nothing ever writes to them.

type none = struct{}

// root is a connection's root directory.
func (c *conn) root() p9.File {
	return newDir(place{c: c, fresh: c.root}, none{}, &rootDir)
}

// rootDir is /.
var rootDir = dirSpec[none]{
	fixed: []fixedChild[none]{
		{"tools", false, needFull, catalogFile(func(t *catalogText) []byte { return t.tools })},
		{"tools.json", false, needFull, catalogFile(func(t *catalogText) []byte { return t.json })},
		{"revision", false, needFull, catalogFile(func(t *catalogText) []byte { return t.revision })},
		{"errors", false, needFull, catalogFile(func(t *catalogText) []byte { return t.errors })},
		{"err", false, needNothing, func(pl place, _ none) p9.File {
			return newUnchargedFile(pl, func() ([]byte, error) { return withNewline(pl.c.errText()), nil })
		}},
		{"rank", false, needFull, func(pl place, _ none) p9.File {
			return newTxFile(pl, func(req []byte) ([]byte, error) { return pl.c.srv.rank(pl.c, nil, req, false) }, rankComplete)
		}},
		{"rank.json", false, needFull, func(pl place, _ none) p9.File {
			return newTxFile(pl, func(req []byte) ([]byte, error) { return pl.c.srv.rank(pl.c, nil, req, true) }, rankComplete)
		}},
		{"ctl", false, needFull, func(pl place, _ none) p9.File {
			return newCmdFile(pl, nil, func(line string) error { return pl.c.srv.rootCtl(pl.c, line) })
		}},
		{"session", true, needAgent, func(pl place, _ none) p9.File { return newDir(pl, none{}, &sessionsDir) }},
		{"version", false, needFull, func(pl place, _ none) p9.File {
			return newROFile(pl, func() ([]byte, error) { return pl.c.srv.versionText(), nil })
		}},
	},
	// A denied or confined connection learns nothing at the root: any
	// other name is refused with the reason, not reported missing.
	unknown: needFull,
}

// sessionsDir is /session: mkdir makes a session, rmdir (rm) ends one.
var sessionsDir = dirSpec[none]{
	each: &varChildren[none]{
		dir:   true,
		names: func(pl place, _ none) []string { return pl.c.srv.sessionNames() },
		sees:  func(a Access, _ none, name string) bool { return a.allowsSession(name) },
		open: func(pl place, _ none, name string) (p9.File, error) {
			se, ok := pl.c.srv.session(name)
			if !ok {
				return nil, linux.ENOENT
			}
			return pl.child(name, func(p place) p9.File {
				p.sink = se // its files record refusals in the session's err too
				return newDir(p, se, &sessionDir)
			}), nil
		},
	},
	mkdir: &dirChange[none]{needFull, func(pl place, _ none, name string) error { return pl.c.srv.newSession(name) }},
	rm:    &dirChange[none]{needFull, func(pl place, _ none, name string) error { return pl.c.srv.endSession(name) }},
}

// sessionDir is /session/S: its ctl (working directory), agent/, the
// definitions sent to it (meta/) and its catalog (the server's with them).
var sessionDir = dirSpec[*session]{
	fixed: []fixedChild[*session]{
		{"agent", true, needAgent, func(pl place, se *session) p9.File { return newDir(pl, se, &agentsDir) }},
		{"ctl", false, needFull, sessionCtlFile},
		{"meta", true, needFull, func(pl place, se *session) p9.File { return newDir(pl, se, &metaDir) }},
		{"tools", false, needFull, sessionCatalogFile(func(t *catalogText) []byte { return t.tools })},
		{"tools.json", false, needFull, sessionCatalogFile(func(t *catalogText) []byte { return t.json })},
		{"revision", false, needFull, sessionCatalogFile(func(t *catalogText) []byte { return t.revision })},
		{"errors", false, needFull, sessionCatalogFile(func(t *catalogText) []byte { return t.errors })},
		{"err", false, needFull, func(pl place, se *session) p9.File {
			return newUnchargedFile(pl, func() ([]byte, error) { return withNewline(se.errText()), nil })
		}},
	},
	rm: ignoreRm[*session](),
}

// sessionCatalogFile is a session file rendered from its catalog.
func sessionCatalogFile(pick func(*catalogText) []byte) func(place, *session) p9.File {
	return func(pl place, se *session) p9.File {
		return newUnchargedFile(pl, func() ([]byte, error) { return pick(se.texts()), nil })
	}
}

// agentsDir is /session/S/agent: mkdir makes an agent, rmdir ends one.
var agentsDir = dirSpec[*session]{
	each: &varChildren[*session]{
		dir:   true,
		names: func(_ place, se *session) []string { return se.agentNames() },
		sees:  func(a Access, se *session, name string) bool { return a.allowsAgent(se.name, name) },
		open: func(pl place, se *session, name string) (p9.File, error) {
			ag, ok := se.agent(name)
			if !ok {
				return nil, linux.ENOENT
			}
			return pl.child(name, func(p place) p9.File {
				p.sink = ag // its files record refusals in the agent's err too
				return newDir(p, ag, &agentDir)
			}), nil
		},
	},
	mkdir: &dirChange[*session]{needFull, func(pl place, se *session, name string) error { return pl.c.srv.newAgent(se, name) }},
	rm:    &dirChange[*session]{needFull, func(_ place, se *session, name string) error { return se.endAgent(name) }},
}

// agentDir is /session/S/agent/A.
var agentDir = dirSpec[*agent]{
	fixed: []fixedChild[*agent]{
		{"tools", false, needAgent, agentToolsFile},
		{"ctl", false, needAgent, agentCtlFile},
		{"schemas", false, needAgent, agentSchemasFile},
		{"rank", false, needFull, func(pl place, ag *agent) p9.File {
			return newTxFile(pl, func(req []byte) ([]byte, error) { return pl.c.srv.rank(pl.c, ag, req, false) }, rankComplete)
		}},
		{"rank.json", false, needFull, func(pl place, ag *agent) p9.File {
			return newTxFile(pl, func(req []byte) ([]byte, error) { return pl.c.srv.rank(pl.c, ag, req, true) }, rankComplete)
		}},
		{"call", true, needFull, func(pl place, ag *agent) p9.File { return newDir(pl, ag, &callDir) }},
		{"err", false, needAgent, func(pl place, ag *agent) p9.File {
			return newUnchargedFile(pl, func() ([]byte, error) { return withNewline(ag.errText()), nil })
		}},
	},
	rm: ignoreRm[*agent](),
}

// callDir is /session/S/agent/A/call: one transaction file per loaded tool.
// Walking to a tool that is in the catalog but not loaded works, so that the
// write can say why the call is refused.
var callDir = dirSpec[*agent]{
	each: &varChildren[*agent]{
		names: func(pl place, ag *agent) []string {
			cat := ag.sess.catalog()
			if err := ag.lock(cat); err != nil {
				return nil
			}
			defer ag.mu.Unlock()
			var out []string
			for _, t := range ag.loadedToolsLocked(cat) {
				out = append(out, t.Name)
			}
			return out
		},
		sees: func(Access, *agent, string) bool { return true }, // call/ itself needs full access
		open: func(pl place, ag *agent, name string) (p9.File, error) {
			if _, err := ag.sess.catalog().Lookup(name); err != nil {
				return nil, refuseLookup(err)
			}
			return pl.child(name, func(p place) p9.File {
				return newTxFile(p, func(req []byte) ([]byte, error) { return p.c.srv.call(p.c, ag, name, req) }, callComplete)
			}), nil
		},
	},
	rm: ignoreRm[*agent](),
}

// catalogFile is a root file rendered from the catalog.
func catalogFile(pick func(*catalogText) []byte) func(place, none) p9.File {
	return func(pl place, _ none) p9.File {
		return newUnchargedFile(pl, func() ([]byte, error) { return pick(pl.c.srv.texts()), nil })
	}
}

func withNewline(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s + "\n")
}

// rootCtl runs a command written to /ctl.
func (s *Server) rootCtl(c *conn, line string) error {
	switch line {
	case "reload":
		if err := s.opts.Source.Load(c.ctx); err != nil {
			return fmt.Errorf("reload failed: %w", err)
		}
		return nil
	}
	return Refuse(linux.EINVAL, "unknown command %q; /ctl takes: reload", line)
}

// sessionCtlFile is session/S/ctl: "cwd PATH".
func sessionCtlFile(pl place, se *session) p9.File {
	return newCmdFile(pl,
		func() ([]byte, error) { return []byte("cwd " + se.dir() + "\n"), nil },
		func(line string) error {
			verb, arg, _ := strings.Cut(line, " ")
			if verb != "cwd" {
				return Refuse(linux.EINVAL, "unknown command %q; a session ctl takes: cwd /ABSOLUTE/PATH", line)
			}
			return se.setDir(strings.TrimSpace(arg), pl.c.srv.opts.CheckWorkDir)
		})
}

// agentToolsFile is session/S/agent/A/tools: read the loaded tools, write names
// to load them.
func agentToolsFile(pl place, ag *agent) p9.File {
	s := pl.c.srv
	return newCmdFile(pl, func() ([]byte, error) {
		cat := ag.sess.catalog()
		if err := ag.lock(cat); err != nil {
			return nil, err
		}
		defer ag.mu.Unlock()
		return toolLines(ag.loadedToolsLocked(cat)), nil
	}, func(line string) error { return s.agentCtl(pl.c, ag, "tool_load "+line) })
}

// agentCtlFile is session/S/agent/A/ctl.
func agentCtlFile(pl place, ag *agent) p9.File {
	s := pl.c.srv
	return newCmdFile(pl, func() ([]byte, error) {
		if err := ag.lock(ag.sess.catalog()); err != nil {
			return nil, err
		}
		defer ag.mu.Unlock()
		return ag.ctlTextLocked(), nil
	}, func(line string) error { return s.agentCtl(pl.c, ag, line) })
}

// agentSchemasFile is session/S/agent/A/schemas.
func agentSchemasFile(pl place, ag *agent) p9.File {
	return newROFile(pl, func() ([]byte, error) {
		cat := ag.sess.catalog()
		if err := ag.lock(cat); err != nil {
			return nil, err
		}
		defer ag.mu.Unlock()
		return schemas(ag.loadedToolsLocked(cat)), nil
	})
}

// rankComplete: a plain-text message is complete at the end of a write; a
// JSON request when it parses.
func rankComplete(req []byte, short bool) bool {
	t := bytes.TrimSpace(req)
	if len(t) > 0 && t[0] == '{' {
		return json.Valid(t)
	}
	return short
}

// callComplete: arguments are complete when they parse as JSON, or as soon
// as they cannot be a JSON object (to refuse them at once).
func callComplete(req []byte, _ bool) bool {
	t := bytes.TrimSpace(req)
	if len(t) == 0 {
		return false
	}
	return t[0] != '{' || json.Valid(t)
}

// rank answers a rank transaction, for an agent (its allowTools apply) or
// for the whole catalog (ag nil), in the rank format or, asJSON, as the
// engine's Answer. The request is plain text (the message) or a Request
// as JSON (engine.ParseRequest).
func (s *Server) rank(c *conn, ag *agent, req []byte, asJSON bool) ([]byte, error) {
	if s.opts.Ranker == nil {
		return nil, Refuse(linux.ENOSYS, "ranking is not available in this server")
	}
	q, err := engine.ParseRequest(req)
	if err != nil {
		return nil, Refuse(linux.EINVAL, "rank request: %v", err)
	}
	q.Caller = engine.Caller{Transport: "9p"}
	var ranker Ranker = s.opts.Ranker
	cat := s.catalog
	if ag != nil {
		if err := ag.lock(ag.sess.catalog()); err != nil {
			return nil, err
		}
		prof := ag.profile
		ag.mu.Unlock()
		q.Profile, q.Caller = prof, ag.caller(c)
		if prof.AllowTools != nil {
			q.Allow = prof.Allows
		}
		if ov := ag.sess.overlay(); ov != nil {
			ranker, cat = ov, ov.Catalog
		}
	}
	start := time.Now()
	a, err := ranker.Rank(c.ctx, q)
	if err != nil {
		s.log.Info("rank failed", "agent", q.Caller.Agent, "err", err)
		return nil, fmt.Errorf("ranking failed: %w", err)
	}
	// The request is user text: it is not logged.
	attrs := []any{"agent", q.Caller.Agent, "offered", a.Names(), "took", time.Since(start).Round(time.Microsecond)}
	if a.Degraded {
		attrs = append(attrs, "degraded", a.DegradedReason)
	}
	if a.NoToolFits {
		attrs = append(attrs, "note", a.Reason)
	}
	s.log.Info("rank", attrs...)
	if a.NoToolFits && a.Reason != "" && len(cat().Tools) == 0 {
		// Nothing to rank at all (no tool directory, no .meta file): err
		// says why too, as for a refusal, for a client that reads it
		// after an empty answer.
		var sink errSink
		if ag != nil {
			sink = ag
		}
		c.note(sink, a.Reason)
	}
	if asJSON {
		return jsonLine(a)
	}
	return rankAnswer(a), nil
}

// call answers a call/NAME transaction.
func (s *Server) call(c *conn, ag *agent, name string, req []byte) ([]byte, error) {
	cat := ag.sess.catalog()
	if err := ag.lock(cat); err != nil {
		return nil, err
	}
	t, err := ag.available(cat, name)
	if err == nil {
		if lt, ok := ag.loaded[name]; ok {
			lt.lastUse = ag.turn // calling counts as use
		} else {
			err = Refuse(linux.EACCES, "tool %s is not loaded for agent %s; load it first (write \"tool_load %s\" to ctl)", name, ag.name, name)
		}
	}
	ag.mu.Unlock()
	if err != nil {
		return nil, err
	}
	args := bytes.TrimSpace(req)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if err := t.ValidateArgs(args); err != nil {
		return nil, Refuse(linux.EINVAL, "arguments for %s: %v", name, err)
	}
	caller := s.opts.Caller
	if ov := ag.sess.overlay(); ov != nil {
		caller = ov
	}
	if caller == nil {
		return nil, Refuse(linux.ENOSYS, "tool execution is not available in this server")
	}
	start := time.Now()
	res, err := caller.Call(c.ctx, engine.CallRequest{Tool: name, Arguments: args, Caller: ag.caller(c),
		Context: exec.CallContext{WorkDir: ag.sess.dir(), Session: ag.sess.name, Agent: ag.name, Timeout: t.Timeout}})
	who := []any{"tool", name, "session", ag.sess.name, "agent", ag.name}
	if res != nil {
		s.log.Info("call", append(who, "exit", res.ExitCode, "took", time.Since(start).Round(time.Millisecond),
			"truncated", res.Truncated, "unsandboxed", res.Unsandboxed)...)
	} else {
		s.log.Info("call refused", append(who, "err", err)...)
	}
	var refused *Refusal
	if errors.As(err, &refused) {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	if err != nil && !(errors.Is(err, exec.ErrExit) && res != nil) {
		return nil, &Refusal{Errno: linux.Errno(engine.KindOf(err).Errno), Reason: fmt.Sprintf("call %s: %v", name, err)}
	}
	return jsonLine(engine.Outcome(name, res, err))
}
