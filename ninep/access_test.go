package ninep

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hugelgupf/p9/linux"
	"github.com/toolsrv/toolsrv/engine"
)

// accessEnv is a server whose Access answer the test sets before each
// connection.
func accessEnv(t *testing.T, tweak func(*Options)) (*testEnv, *atomic.Pointer[Access]) {
	t.Helper()
	next := &atomic.Pointer[Access]{}
	next.Store(&Access{})
	e := newEnv(t, func(o *Options) {
		o.Access = func(net.Conn) Access { return *next.Load() }
		if tweak != nil {
			tweak(o)
		}
	})
	return e, next
}

func entryNames(t *testing.T, cl *Client, p string) []string {
	t.Helper()
	ents, err := cl.List(p)
	if err != nil {
		t.Fatalf("ls %s: %v", p, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name)
	}
	return out
}

// A tool's connection (the red team's escape: a readOnly tool without
// network made a session, set its cwd to the home directory and called a
// writing tool there) reaches its own agent's ctl, tools, schemas and err,
// and nothing else.
func TestToolConnectionReachesOnlyItsAgent(t *testing.T) {
	e, next := accessEnv(t, nil)
	owner := e.client()
	for _, p := range []string{"session/s1", "session/s1/agent/helper", "session/s1/agent/other", "session/s2", "session/s2/agent/helper"} {
		mustMkdir(t, owner, p)
	}
	next.Store(&Access{Session: "s1", Agent: "helper"})
	tool := e.client()
	a := "session/s1/agent/helper/"

	for _, c := range []struct {
		dir  string
		want []string
	}{
		{"/", []string{"err", "session"}},
		{"session", []string{"s1"}},
		{"session/s1", []string{"agent"}},
		{"session/s1/agent", []string{"helper"}},
		{a, []string{"ctl", "err", "schemas", "tools"}},
	} {
		if got := entryNames(t, tool, c.dir); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ls %s = %v, want %v", c.dir, got, c.want)
		}
	}
	// What the seeds need works.
	mustWrite(t, tool, a+"ctl", "tool_load echo_text")
	mustWrite(t, tool, a+"tools", "weather")
	mustWrite(t, tool, a+"ctl", "turn")
	mustWrite(t, tool, a+"ctl", "tool_unload weather")
	if got := names(mustRead(t, tool, a+"tools")); !reflect.DeepEqual(got, []string{"echo_text"}) {
		t.Errorf("tools = %v", got)
	}
	if !strings.Contains(mustRead(t, tool, a+"schemas"), `"echo_text"`) {
		t.Error("schemas lack the loaded tool")
	}
	if got := names(mustRead(t, owner, a+"tools")); !reflect.DeepEqual(got, []string{"echo_text"}) {
		t.Errorf("the owner sees tools = %v", got)
	}

	// Everything else is refused, with the reason in err.
	for _, c := range []struct {
		op, path string
		do       func() error
	}{
		{"read", "tools.json", func() error { _, err := tool.Read("tools.json"); return err }},
		{"read", "tools", func() error { _, err := tool.Read("tools"); return err }},
		{"rank", "rank", func() error { _, err := tool.Transact("rank", []byte("read a file")); return err }},
		{"rank.json", "rank.json", func() error { _, err := tool.Transact("rank.json", []byte("read a file")); return err }},
		{"reload", "ctl", func() error { return tool.Write("ctl", []byte("reload")) }},
		{"other session", "session/s2/agent/helper/ctl", func() error { return tool.Write("session/s2/agent/helper/ctl", []byte("tool_load weather")) }},
		{"other agent", "session/s1/agent/other/ctl", func() error { return tool.Write("session/s1/agent/other/ctl", []byte("tool_load weather")) }},
		{"cwd", "session/s1/ctl", func() error { return tool.Write("session/s1/ctl", []byte("cwd /")) }},
		{"call", a + "call/echo_text", func() error { _, err := tool.Transact(a+"call/echo_text", []byte(`{"text":"x"}`)); return err }},
		{"agent rank", a + "rank", func() error { _, err := tool.Transact(a+"rank", []byte("weather")); return err }},
		{"agent rank.json", a + "rank.json", func() error { _, err := tool.Transact(a+"rank.json", []byte("weather")); return err }},
		{"mkdir session", "session/s3", func() error { return tool.Mkdir("session/s3") }},
		{"mkdir agent", "session/s1/agent/new", func() error { return tool.Mkdir("session/s1/agent/new") }},
		{"rm session", "session/s2", func() error { return tool.Remove("session/s2") }},
		{"rm other agent", "session/s1/agent/other", func() error { return tool.Remove("session/s1/agent/other") }},
		{"rm own agent", "session/s1/agent/helper", func() error { return tool.Remove("session/s1/agent/helper") }},
	} {
		err := c.do()
		var r *RefusedError
		if !errors.As(err, &r) {
			t.Errorf("%s: %v, want a refusal", c.op, err)
			continue
		}
		if r.Errno != linux.EACCES || !strings.Contains(r.Reason, "may only use that agent's ctl") {
			t.Errorf("%s: errno %v reason %q", c.op, r.Errno, r.Reason)
		}
	}
	// The owner's sessions are intact.
	if got := entryNames(t, owner, "session"); !reflect.DeepEqual(got, []string{"s1", "s2"}) {
		t.Errorf("sessions = %v", got)
	}
	if got := entryNames(t, owner, "session/s1/agent"); !reflect.DeepEqual(got, []string{"helper", "other"}) {
		t.Errorf("agents = %v", got)
	}
}

func TestDeniedConnection(t *testing.T) {
	e, next := accessEnv(t, nil)
	next.Store(&Access{Denied: "this connection comes from a sandboxed tool that is not a call of this server"})
	cl := e.client()
	if got := entryNames(t, cl, "/"); !reflect.DeepEqual(got, []string{"err"}) {
		t.Errorf("ls / = %v", got)
	}
	if got := mustRead(t, cl, "err"); !strings.Contains(got, "not a call of this server") {
		t.Errorf("err = %q", got)
	}
	for _, p := range []string{"tools", "session", "rank", "rank.json", "ctl"} {
		_, err := cl.Read(p)
		wantRefused(t, err, linux.EACCES, "not a call of this server")
	}
	wantRefused(t, cl.Mkdir("session/x"), linux.EACCES, "not a call of this server")
}

// Unbounded state (the red team held 1M fids, 220k sessions and 3,000 idle
// connections): every kind is bounded, with a clear refusal.
func TestServerLimits(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Limits = Limits{MaxConns: 3, MaxFiles: 16, MaxSessions: 2, MaxAgents: 2}
	})
	cl := e.client()

	t.Run("files per connection", func(t *testing.T) {
		var held []interface{ Close() error }
		var err error
		for i := 0; i < 40; i++ {
			_, f, werr := cl.root.Walk([]string{"tools"})
			if werr != nil {
				err = werr
				break
			}
			held = append(held, f)
		}
		if !errors.Is(err, linux.EMFILE) {
			t.Fatalf("after %d fids: %v, want EMFILE", len(held), err)
		}
		if len(held) < 8 {
			t.Fatalf("refused after only %d fids", len(held))
		}
		for _, f := range held {
			f.Close()
		}
		if got := mustRead(t, cl, "err"); !strings.Contains(got, "holds 16 files, the limit") {
			t.Errorf("err = %q", got)
		}
		// Clunked fids are given back.
		for i := 0; i < 40; i++ {
			if _, err := cl.Read("revision"); err != nil {
				t.Fatalf("after clunking: %v", err)
			}
		}
	})
	t.Run("sessions and agents", func(t *testing.T) {
		mustMkdir(t, cl, "session/a")
		mustMkdir(t, cl, "session/b")
		wantRefused(t, cl.Mkdir("session/c"), linux.ENOSPC, "too many sessions", "2")
		mustMkdir(t, cl, "session/a/agent/x")
		mustMkdir(t, cl, "session/a/agent/y")
		wantRefused(t, cl.Mkdir("session/a/agent/z"), linux.ENOSPC, "too many agents")
		if err := cl.Remove("session/b"); err != nil {
			t.Fatal(err)
		}
		mustMkdir(t, cl, "session/c")
	})
	t.Run("connections", func(t *testing.T) {
		c2 := e.client()
		c3 := e.client()
		_, err := Connect(e.ctx, e.addr)
		if err == nil || !errors.Is(err, linux.EUSERS) || !strings.Contains(err.Error(), "close idle clients") {
			t.Fatalf("fourth connection: %v, want EUSERS and advice", err)
		}
		c3.Close()
		// The count drops once the server has finished with the connection.
		if err := e.srv.conns.waitAtMost(t.Context(), 2); err != nil {
			t.Fatal(err)
		}
		c4, err := Connect(e.ctx, e.addr)
		if err != nil {
			t.Fatalf("a connection after one closed: %v", err)
		}
		c4.Close()
		_ = c2
	})
}

func TestCwdCheck(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.CheckWorkDir = func(dir string) (string, error) {
			if dir == "/" {
				return "", errors.New("it holds the home directory: tools would get write access to all of it")
			}
			return dir, nil
		}
	})
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	wantRefused(t, cl.Write("session/s/ctl", []byte("cwd /")), linux.EACCES, "holds the home directory")
	mustWrite(t, cl, "session/s/ctl", "cwd "+e.tools)
	if got := mustRead(t, cl, "session/s/ctl"); got != "cwd "+e.tools+"\n" {
		t.Errorf("ctl = %q", got)
	}
}

// Tools an agent's profile auto-loads stay loaded, whatever their tier.
func TestAutoLoadedToolsStay(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	mustMkdir(t, cl, "session/s")
	mustMkdir(t, cl, "session/s/agent/coder") // autoLoad: file_read (hot), git_push (cold)
	a := "session/s/agent/coder/"
	mustWrite(t, cl, a+"tools", "echo_text") // warm, loaded by hand
	for i := 0; i < 8; i++ {
		mustWrite(t, cl, a+"ctl", "turn")
	}
	if got := names(mustRead(t, cl, a+"tools")); !reflect.DeepEqual(got, []string{"file_read", "git_push"}) {
		t.Fatalf("after 8 turns: %v, want the auto-loaded tools only", got)
	}
	mustWrite(t, cl, a+"ctl", "tool_unload git_push")
	if got := names(mustRead(t, cl, a+"tools")); !reflect.DeepEqual(got, []string{"file_read"}) {
		t.Fatalf("after unloading: %v", got)
	}
}

// Every load is told (Options.Loaded) with who loaded it: the agent of its
// session for a full client, a tool of the agent (ByTool, which the
// engine never records) for a tool's own connection.
func TestLoadsToldWithTheirCaller(t *testing.T) {
	var mu sync.Mutex
	var loads []engine.Caller
	e, next := accessEnv(t, func(o *Options) {
		o.Loaded = func(c engine.Caller, tool string) {
			mu.Lock()
			defer mu.Unlock()
			if tool == "echo_text" {
				loads = append(loads, c)
			}
		}
	})
	owner := e.client()
	mustMkdir(t, owner, "session/s")
	mustMkdir(t, owner, "session/s/agent/a")
	mustWrite(t, owner, "session/s/agent/a/ctl", "tool_load echo_text")
	next.Store(&Access{Session: "s", Agent: "a"})
	tool := e.client()
	mustWrite(t, tool, "session/s/agent/a/ctl", "tool_load echo_text")
	mustWrite(t, owner, "session/s/agent/a/tools", "echo_text")
	mu.Lock()
	defer mu.Unlock()
	agent := engine.Caller{Transport: "9p", Client: "s/a", Session: "s", Agent: "a"}
	byTool := agent
	byTool.ByTool = true
	if want := []engine.Caller{agent, byTool, agent}; !reflect.DeepEqual(loads, want) {
		t.Errorf("loads told %+v, want %+v", loads, want)
	}
}
