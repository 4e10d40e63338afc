package ninep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/registry"
)

// maxNotices is how many ctl notices an agent keeps.
const maxNotices = 64

// session is session/S: a working directory, its agents, and the
// definitions it was sent (its overlay).
type session struct {
	srv  *Server
	name string

	mu      sync.Mutex
	agents  map[string]*agent
	workDir string
	ended   bool
	// ov is the session's own catalog (Options.Overlays), made when the
	// first definition is sent; nil until then: the session's catalog is
	// the server's.
	ov  Overlay
	err string
	// text is the rendering of the session's catalog (see texts).
	text atomic.Pointer[catalogText]
}

// agent is session/S/agent/A: its profile, turn counter and loaded tools.
type agent struct {
	sess    *session
	name    string
	profile *registry.Profile

	mu      sync.Mutex
	turn    uint64
	loaded  map[string]*loadedTool
	rev     uint64 // catalog revision last reconciled against
	notices []string
	err     string
	ended   bool
}

// caller is who acts through agent ag on connection c: the agent of its
// session, or a tool of the agent (a connection confined to it).
func (ag *agent) caller(c *conn) engine.Caller {
	return engine.Caller{Transport: "9p", Client: ag.sess.name + "/" + ag.name, Session: ag.sess.name, Agent: ag.name,
		ByTool: c.acc.scoped()}
}

// loadedTool is one tool an agent has loaded.
type loadedTool struct {
	lastUse uint64 // the turn it was last loaded or called in
	hash    string // its definition when last seen
	// pinned: the agent's profile auto-loads it, so retention never
	// unloads it (only tool_unload or the tool leaving the catalog do).
	pinned bool
}

// newSession is mkdir session/NAME.
func (s *Server) newSession(name string) error {
	if err := registry.ValidName(name); err != nil {
		return Refuse(linux.EINVAL, "bad session name %q: %v", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[name]; ok {
		return Refuse(linux.EEXIST, "session %s already exists", name)
	}
	if len(s.sessions) >= s.opts.Limits.MaxSessions {
		return tooMany("mkdir session/"+name+": too many sessions", s.opts.Limits.MaxSessions)
	}
	s.sessions[name] = &session{srv: s, name: name, agents: map[string]*agent{}, workDir: s.opts.WorkDir}
	s.log.Debug("session created", "session", name)
	return nil
}

// endSession is rmdir session/NAME: the session and all its agents end.
func (s *Server) endSession(name string) error {
	s.mu.Lock()
	se, ok := s.sessions[name]
	delete(s.sessions, name)
	s.mu.Unlock()
	if !ok {
		return Refuse(linux.ENOENT, "no session %s", name)
	}
	se.mu.Lock()
	se.ended = true
	for _, ag := range se.agents {
		ag.end()
	}
	se.agents = nil
	ov := se.ov
	se.ov = nil
	se.mu.Unlock()
	if ov != nil {
		ov.Close()
	}
	s.log.Debug("session ended", "session", name)
	return nil
}

func (s *Server) session(name string) (*session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.sessions[name]
	return se, ok
}

func (s *Server) sessionNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.sessions))
	for n := range s.sessions {
		out = append(out, n)
	}
	return out
}

func (se *session) agent(name string) (*agent, bool) {
	se.mu.Lock()
	defer se.mu.Unlock()
	ag, ok := se.agents[name]
	return ag, ok
}

func (se *session) agentNames() []string {
	se.mu.Lock()
	defer se.mu.Unlock()
	out := make([]string, 0, len(se.agents))
	for n := range se.agents {
		out = append(out, n)
	}
	return out
}

// catalog is the session's catalog: the server's, with the definitions
// sent to the session.
func (se *session) catalog() *registry.Catalog {
	if ov := se.overlay(); ov != nil {
		return ov.Catalog()
	}
	return se.srv.catalog()
}

// overlay is the session's overlay, nil when nothing was sent to it.
func (se *session) overlay() Overlay {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.ov
}

func (se *session) setErr(msg string) {
	se.mu.Lock()
	se.err = msg
	se.mu.Unlock()
}

func (se *session) errText() string {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.err
}

func (se *session) dir() string {
	se.mu.Lock()
	defer se.mu.Unlock()
	return se.workDir
}

// setDir is the session ctl's "cwd PATH"; check, when set, vets the
// directory and says which to use (see Options.CheckWorkDir).
func (se *session) setDir(p string, check func(string) (string, error)) error {
	if !filepath.IsAbs(p) {
		return Refuse(linux.EINVAL, "cwd %q: the working directory must be an absolute path", p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return Refuse(linux.ENOENT, "cwd %s: %v", p, err)
	}
	if !fi.IsDir() {
		return Refuse(linux.ENOTDIR, "cwd %s: not a directory", p)
	}
	p = filepath.Clean(p)
	if check != nil {
		dir, err := check(p)
		if err != nil {
			return Refuse(linux.EACCES, "cwd %s: %v", p, err)
		}
		p = dir
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.ended {
		return Refuse(linux.ENOENT, "session %s has ended", se.name)
	}
	se.workDir = p
	return nil
}

// newAgent is mkdir session/S/agent/NAME: the profile is read and its
// autoLoad tools are loaded (those that exist and are allowed; the others
// are skipped with a notice in ctl).
func (s *Server) newAgent(se *session, name string) error {
	if err := registry.ValidName(name); err != nil {
		return Refuse(linux.EINVAL, "bad agent name %q: %v", name, err)
	}
	prof := &registry.Profile{Name: name}
	if s.opts.Profiles != nil {
		p, err := s.opts.Profiles(name)
		if err != nil {
			return Refuse(linux.EINVAL, "agent %s: %v", name, err)
		}
		if p != nil {
			prof = p
		}
	}
	ag := &agent{sess: se, name: name, profile: prof, loaded: map[string]*loadedTool{}}
	cat := se.catalog()
	ag.rev = cat.Revision
	for _, t := range prof.AutoLoad {
		if err := ag.loadLocked(cat, t); err != nil {
			ag.noteLocked("autoLoad %s skipped: %v", t, err)
			continue
		}
		ag.loaded[t].pinned = true
	}
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.ended {
		return Refuse(linux.ENOENT, "session %s has ended", se.name)
	}
	if _, ok := se.agents[name]; ok {
		return Refuse(linux.EEXIST, "agent %s already exists in session %s", name, se.name)
	}
	if len(se.agents) >= s.opts.Limits.MaxAgents {
		return tooMany("mkdir session/"+se.name+"/agent/"+name+": too many agents in the session", s.opts.Limits.MaxAgents)
	}
	se.agents[name] = ag
	return nil
}

// endAgent is rmdir session/S/agent/NAME.
func (se *session) endAgent(name string) error {
	se.mu.Lock()
	ag, ok := se.agents[name]
	delete(se.agents, name)
	se.mu.Unlock()
	if !ok {
		return Refuse(linux.ENOENT, "no agent %s in session %s", name, se.name)
	}
	ag.end()
	return nil
}

func (ag *agent) end() {
	ag.mu.Lock()
	ag.ended = true
	ag.mu.Unlock()
}

func (ag *agent) setErr(msg string) {
	ag.mu.Lock()
	ag.err = msg
	ag.mu.Unlock()
}

func (ag *agent) errText() string {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return ag.err
}

// noteLocked adds a line to the agent's ctl notices.
func (ag *agent) noteLocked(format string, args ...any) {
	ag.notices = append(ag.notices, fmt.Sprintf("turn %d: ", ag.turn)+fmt.Sprintf(format, args...))
	if len(ag.notices) > maxNotices {
		ag.notices = append(ag.notices[:0], ag.notices[len(ag.notices)-maxNotices:]...)
	}
}

// lock locks the agent, brings it up to date with cat, and fails if the
// agent has ended.
func (ag *agent) lock(cat *registry.Catalog) error {
	ag.mu.Lock()
	if ag.ended {
		ag.mu.Unlock()
		return Refuse(linux.ENOENT, "agent %s of session %s has ended", ag.name, ag.sess.name)
	}
	ag.reconcileLocked(cat)
	return nil
}

// reconcileLocked follows catalog changes: a loaded tool that disappeared is
// unloaded, one whose definition changed is noted (its schema is always
// read from the current catalog).
func (ag *agent) reconcileLocked(cat *registry.Catalog) {
	if cat.Revision == ag.rev {
		return
	}
	ag.rev = cat.Revision
	for _, name := range sortedKeys(ag.loaded) {
		lt := ag.loaded[name]
		t, ok := cat.Get(name)
		switch {
		case !ok:
			delete(ag.loaded, name)
			why := "removed from the catalog"
			if r, hidden := cat.HiddenReason(name); hidden {
				why = r
			}
			ag.noteLocked("unloaded %s: %s (revision %d)", name, why, cat.Revision)
		case t.Hash != lt.hash:
			lt.hash = t.Hash
			ag.noteLocked("updated %s: definition changed (revision %d); read schemas again", name, cat.Revision)
		}
	}
}

// available returns the tool name if this agent may load or call it.
func (ag *agent) available(cat *registry.Catalog, name string) (*registry.Tool, error) {
	// A .meta tool's name, or a provided tool's PROVIDER:TOOL (a remote
	// toolsrv's, an MCP server's).
	if err := registry.ValidProvidedName(name); err != nil {
		return nil, Refuse(linux.EINVAL, "bad tool name %q: %v", name, err)
	}
	t, err := cat.Lookup(name)
	if err != nil {
		return nil, refuseLookup(err)
	}
	if !ag.profile.Allows(name) {
		return nil, Refuse(linux.EACCES, "tool %s is not allowed for agent %s (not in its profile's allowTools)", name, ag.name)
	}
	return t, nil
}

// refuseLookup turns a catalog lookup error into a refusal: the catalog's
// own words for a hidden tool; for an unknown one, where to look on this
// tree rather than the host's directories.
func refuseLookup(err error) error {
	var le *registry.LookupError
	if errors.As(err, &le) && !le.Hidden() {
		return Refuse(linux.ENOENT, "unknown tool: %s (read /tools for the catalog)", le.Name)
	}
	return Refuse(linux.ENOENT, "%v", err)
}

// loadLocked loads a tool (or marks an already loaded one as used).
func (ag *agent) loadLocked(cat *registry.Catalog, name string) error {
	t, err := ag.available(cat, name)
	if err != nil {
		return err
	}
	if lt, ok := ag.loaded[name]; ok {
		lt.lastUse, lt.hash = ag.turn, t.Hash
		return nil
	}
	ag.loaded[name] = &loadedTool{lastUse: ag.turn, hash: t.Hash}
	return nil
}

func (ag *agent) unloadLocked(name string) error {
	if _, ok := ag.loaded[name]; !ok {
		return Refuse(linux.ENOENT, "tool %s is not loaded for agent %s", name, ag.name)
	}
	delete(ag.loaded, name)
	return nil
}

// turnLocked ends the current turn and applies the retention tiers: hot
// tools stay; a warm tool goes after warm turns without use, a cold one
// after one.
func (ag *agent) turnLocked(cat *registry.Catalog, warm int) {
	ag.turn++
	for _, name := range sortedKeys(ag.loaded) {
		lt := ag.loaded[name]
		t, ok := cat.Get(name)
		if !ok {
			continue // reconcile handles it
		}
		if lt.pinned {
			continue
		}
		var limit uint64
		switch t.Tier {
		case registry.Hot:
			continue
		case registry.Cold:
			limit = 1
		default:
			limit = uint64(warm)
		}
		if unused := ag.turn - lt.lastUse - 1; unused >= limit {
			delete(ag.loaded, name)
			ag.noteLocked("unloaded %s: %s tool unused for %d turn%s", name, t.Tier, unused, plural(unused))
		}
	}
}

// ctl runs one agent ctl command for connection c.
func (s *Server) agentCtl(c *conn, ag *agent, line string) error {
	verb, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	cat := ag.sess.catalog()
	if err := ag.lock(cat); err != nil {
		return err
	}
	if verb == "tool_load" {
		if arg == "" {
			ag.mu.Unlock()
			return Refuse(linux.EINVAL, "tool_load needs a tool name: tool_load NAME")
		}
		err := ag.loadLocked(cat, arg)
		ag.mu.Unlock()
		s.log.Info("tool_load", "session", ag.sess.name, "agent", ag.name, "tool", arg, "err", err)
		if err == nil && s.opts.Loaded != nil {
			s.opts.Loaded(ag.caller(c), arg)
		}
		return err
	}
	defer ag.mu.Unlock()
	switch verb {
	case "tool_unload":
		if arg == "" {
			return Refuse(linux.EINVAL, "tool_unload needs a tool name: tool_unload NAME")
		}
		err := ag.unloadLocked(arg)
		s.log.Info("tool_unload", "session", ag.sess.name, "agent", ag.name, "tool", arg, "err", err)
		return err
	case "turn":
		if arg != "" {
			return Refuse(linux.EINVAL, "turn takes no argument")
		}
		ag.turnLocked(cat, s.opts.WarmTurns)
		return nil
	}
	return Refuse(linux.EINVAL, "unknown command %q; the agent ctl takes tool_load NAME, tool_unload NAME or turn", line)
}

// loadedTools returns the agent's loaded tools, by name.
func (ag *agent) loadedToolsLocked(cat *registry.Catalog) []*registry.Tool {
	var out []*registry.Tool
	for _, name := range sortedKeys(ag.loaded) {
		if t, ok := cat.Get(name); ok {
			out = append(out, t)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func plural(n uint64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
