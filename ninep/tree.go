package ninep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// The tree (SPEC §8). Each constructor below builds one node for one fid;
// it passes itself as the node's fresh function so that a cloned fid gets
// its own File.

func (c *conn) root() p9.File {
	return newDir(c, "", nil, c.root, func() []entry {
		switch {
		case c.acc.Denied != "":
			return []entry{{"err", false}}
		case c.acc.scoped():
			return []entry{{"err", false}, {"session", true}}
		}
		return []entry{{"tools", false}, {"tools.json", false}, {"revision", false}, {"errors", false},
			{"err", false}, {"rank", false}, {"ctl", false}, {"session", true}}
	}, c.rootChild)
}

func (c *conn) rootChild(name string) (p9.File, error) {
	s := c.srv
	if name != "err" && (c.acc.Denied != "" || (c.acc.scoped() && name != "session")) {
		return nil, c.acc.refuse("/" + name)
	}
	var mk func() p9.File
	switch name {
	case "tools":
		mk = func() p9.File {
			return newROFile(c, name, nil, mk, func() ([]byte, error) { return s.texts().tools, nil })
		}
	case "tools.json":
		mk = func() p9.File {
			return newROFile(c, name, nil, mk, func() ([]byte, error) { return s.texts().json, nil })
		}
	case "revision":
		mk = func() p9.File {
			return newROFile(c, name, nil, mk, func() ([]byte, error) { return s.texts().revision, nil })
		}
	case "errors":
		mk = func() p9.File {
			return newROFile(c, name, nil, mk, func() ([]byte, error) { return s.texts().errors, nil })
		}
	case "err":
		mk = func() p9.File {
			return newROFile(c, name, nil, mk, func() ([]byte, error) { return withNewline(c.errText()), nil })
		}
	case "rank":
		mk = func() p9.File {
			return newTxFile(c, name, nil, mk, func(req []byte) ([]byte, error) { return s.rank(c, nil, req) }, rankComplete)
		}
	case "ctl":
		mk = func() p9.File {
			return newCmdFile(c, name, nil, mk, nil, func(line string) error { return s.rootCtl(c, line) })
		}
	case "session":
		mk = func() p9.File { return c.sessionsDir() }
	default:
		return nil, linux.ENOENT
	}
	return mk(), nil
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

// sessionsDir is /session: mkdir makes a session, rmdir ends one.
func (c *conn) sessionsDir() p9.File {
	s := c.srv
	d := newDir(c, "session", nil, c.sessionsDir, func() []entry {
		var names []string
		for _, n := range s.sessionNames() {
			if c.acc.allowsSession(n) {
				names = append(names, n)
			}
		}
		return dirEntries(names)
	}, func(name string) (p9.File, error) {
		if !c.acc.allowsSession(name) {
			return nil, c.acc.refuse("/session/" + name)
		}
		se, ok := s.session(name)
		if !ok {
			return nil, linux.ENOENT
		}
		return c.sessionDir(se), nil
	})
	d.mkdir = func(name string) error {
		if c.acc.scoped() {
			return c.fail(nil, c.acc.refuse("mkdir /session/"+name))
		}
		if err := s.newSession(name); err != nil {
			return c.fail(nil, err)
		}
		return nil
	}
	d.unlink = func(name string, _ bool) error {
		if c.acc.scoped() {
			return c.fail(nil, c.acc.refuse("rm /session/"+name))
		}
		if err := s.endSession(name); err != nil {
			return c.fail(nil, err)
		}
		return nil
	}
	return d
}

func dirEntries(names []string) []entry {
	out := make([]entry, len(names))
	for i, n := range names {
		out[i] = entry{n, true}
	}
	return out
}

// fixedUnlink lets rm -r walk through a session: the fixed entries of a
// session or agent directory "remove" without effect, and removing the
// session or agent directory itself is what ends it.
func fixedUnlink(string, bool) error { return nil }

// sessionDir is /session/S: its ctl (working directory) and agent/.
func (c *conn) sessionDir(se *session) p9.File {
	p := "session/" + se.name
	d := newDir(c, p, nil, func() p9.File { return c.sessionDir(se) }, func() []entry {
		if c.acc.scoped() {
			return []entry{{"agent", true}}
		}
		return []entry{{"agent", true}, {"ctl", false}}
	}, func(name string) (p9.File, error) {
		switch name {
		case "agent":
			return c.agentsDir(se), nil
		case "ctl":
			if c.acc.scoped() {
				return nil, c.acc.refuse("/" + p + "/ctl")
			}
			return c.sessionCtl(se), nil
		}
		return nil, linux.ENOENT
	})
	d.unlink = fixedUnlink
	return d
}

func (c *conn) sessionCtl(se *session) p9.File {
	return newCmdFile(c, "session/"+se.name+"/ctl", nil, func() p9.File { return c.sessionCtl(se) },
		func() ([]byte, error) { return []byte("cwd " + se.dir() + "\n"), nil },
		func(line string) error {
			verb, arg, _ := strings.Cut(line, " ")
			if verb != "cwd" {
				return Refuse(linux.EINVAL, "unknown command %q; a session ctl takes: cwd /ABSOLUTE/PATH", line)
			}
			return se.setDir(strings.TrimSpace(arg), c.srv.opts.CheckWorkDir)
		})
}

// agentsDir is /session/S/agent: mkdir makes an agent, rmdir ends one.
func (c *conn) agentsDir(se *session) p9.File {
	s := c.srv
	p := "session/" + se.name + "/agent"
	d := newDir(c, p, nil, func() p9.File { return c.agentsDir(se) }, func() []entry {
		var names []string
		for _, n := range se.agentNames() {
			if c.acc.allowsAgent(se.name, n) {
				names = append(names, n)
			}
		}
		return dirEntries(names)
	}, func(name string) (p9.File, error) {
		if !c.acc.allowsAgent(se.name, name) {
			return nil, c.acc.refuse("/" + p + "/" + name)
		}
		ag, ok := se.agent(name)
		if !ok {
			return nil, linux.ENOENT
		}
		return c.agentDir(ag), nil
	})
	d.mkdir = func(name string) error {
		if c.acc.scoped() {
			return c.fail(nil, c.acc.refuse("mkdir /"+p+"/"+name))
		}
		if err := s.newAgent(se, name); err != nil {
			return c.fail(nil, err)
		}
		return nil
	}
	d.unlink = func(name string, _ bool) error {
		if c.acc.scoped() {
			return c.fail(nil, c.acc.refuse("rm /"+p+"/"+name))
		}
		if err := se.endAgent(name); err != nil {
			return c.fail(nil, err)
		}
		return nil
	}
	return d
}

func agentPath(ag *agent) string { return "session/" + ag.sess.name + "/agent/" + ag.name }

// agentDir is /session/S/agent/A.
func (c *conn) agentDir(ag *agent) p9.File {
	p := agentPath(ag)
	d := newDir(c, p, ag, func() p9.File { return c.agentDir(ag) }, func() []entry {
		if c.acc.scoped() {
			return []entry{{"tools", false}, {"ctl", false}, {"schemas", false}, {"err", false}}
		}
		return []entry{{"tools", false}, {"ctl", false}, {"schemas", false}, {"rank", false},
			{"call", true}, {"err", false}}
	}, func(name string) (p9.File, error) { return c.agentChild(ag, name) })
	d.unlink = fixedUnlink
	return d
}

func (c *conn) agentChild(ag *agent, name string) (p9.File, error) {
	s := c.srv
	p := path.Join(agentPath(ag), name)
	if c.acc.scoped() && (name == "rank" || name == "call") {
		return nil, c.acc.refuse("/" + p)
	}
	var mk func() p9.File
	switch name {
	case "tools":
		mk = func() p9.File {
			return newCmdFile(c, p, ag, mk, func() ([]byte, error) {
				cat := s.catalog()
				if err := ag.lock(cat); err != nil {
					return nil, err
				}
				defer ag.mu.Unlock()
				return toolLines(ag.loadedToolsLocked(cat)), nil
			}, func(line string) error { return s.agentCtl(ag, "tool_load "+line) })
		}
	case "ctl":
		mk = func() p9.File {
			return newCmdFile(c, p, ag, mk, func() ([]byte, error) {
				if err := ag.lock(s.catalog()); err != nil {
					return nil, err
				}
				defer ag.mu.Unlock()
				return ag.ctlTextLocked(), nil
			}, func(line string) error { return s.agentCtl(ag, line) })
		}
	case "schemas":
		mk = func() p9.File {
			return newROFile(c, p, ag, mk, func() ([]byte, error) {
				cat := s.catalog()
				if err := ag.lock(cat); err != nil {
					return nil, err
				}
				defer ag.mu.Unlock()
				return schemas(ag.loadedToolsLocked(cat)), nil
			})
		}
	case "rank":
		mk = func() p9.File {
			return newTxFile(c, p, ag, mk, func(req []byte) ([]byte, error) { return s.rank(c, ag, req) }, rankComplete)
		}
	case "err":
		mk = func() p9.File {
			return newROFile(c, p, ag, mk, func() ([]byte, error) { return withNewline(ag.errText()), nil })
		}
	case "call":
		mk = func() p9.File { return c.callDir(ag) }
	default:
		return nil, linux.ENOENT
	}
	return mk(), nil
}

// callDir is /session/S/agent/A/call: one transaction file per loaded tool.
// Walking to a tool that is in the catalog but not loaded works, so that the
// write can say why the call is refused.
func (c *conn) callDir(ag *agent) p9.File {
	s := c.srv
	p := agentPath(ag) + "/call"
	d := newDir(c, p, ag, func() p9.File { return c.callDir(ag) }, func() []entry {
		cat := s.catalog()
		if err := ag.lock(cat); err != nil {
			return nil
		}
		defer ag.mu.Unlock()
		var out []entry
		for _, t := range ag.loadedToolsLocked(cat) {
			out = append(out, entry{t.Name, false})
		}
		return out
	}, func(name string) (p9.File, error) {
		if _, err := s.catalog().Lookup(name); err != nil {
			return nil, refuseLookup(err)
		}
		return c.callFile(ag, name), nil
	})
	d.unlink = fixedUnlink
	return d
}

func (c *conn) callFile(ag *agent, name string) p9.File {
	s := c.srv
	return newTxFile(c, agentPath(ag)+"/call/"+name, ag, func() p9.File { return c.callFile(ag, name) },
		func(req []byte) ([]byte, error) { return s.call(c, ag, name, req) }, callComplete)
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

// rankRequest is the JSON form of a rank request; plain text is the message.
type rankRequest struct {
	Query   string   `json:"query"`
	Context []string `json:"context"`
	K       int      `json:"k"`
}

// rank answers a rank transaction, for an agent (its allowTools apply) or
// for the whole catalog (ag nil).
func (s *Server) rank(c *conn, ag *agent, req []byte) ([]byte, error) {
	if s.opts.Ranker == nil {
		return nil, Refuse(linux.ENOSYS, "ranking is not available in this server")
	}
	q := RankQuery{K: s.opts.RankK}
	t := bytes.TrimSpace(req)
	if len(t) > 0 && t[0] == '{' {
		var r rankRequest
		if err := json.Unmarshal(t, &r); err != nil {
			return nil, Refuse(linux.EINVAL, "rank request is not valid JSON (%v); write the message as plain text or {\"query\": ..., \"context\": [...], \"k\": N}", err)
		}
		q.Text, q.Context = strings.TrimSpace(r.Query), r.Context
		if r.K > 0 {
			q.K = r.K
		}
	} else {
		q.Text = string(t)
	}
	if q.Text == "" {
		return nil, Refuse(linux.EINVAL, "empty message: write the user's message to rank tools for it")
	}
	if ag != nil {
		if err := ag.lock(s.catalog()); err != nil {
			return nil, err
		}
		prof := ag.profile
		ag.mu.Unlock()
		q.Profile = prof
		if prof.AllowTools != nil {
			q.Allow = prof.Allows
		}
	}
	r, err := s.opts.Ranker.Rank(c.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("ranking failed: %w", err)
	}
	return rankAnswer(r, s.catalog(), q.Allow), nil
}

// call answers a call/NAME transaction.
func (s *Server) call(c *conn, ag *agent, name string, req []byte) ([]byte, error) {
	cat := s.catalog()
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
	if s.opts.Caller == nil {
		return nil, Refuse(linux.ENOSYS, "tool execution is not available in this server")
	}
	res, err := s.opts.Caller.Call(c.ctx, t, args, CallContext{WorkDir: ag.sess.dir(), Session: ag.sess.name,
		Agent: ag.name, Timeout: t.Timeout})
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", name, err)
	}
	return renderCall(name, res)
}
