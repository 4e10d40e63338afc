package ninep

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// memOverlay is a session overlay over a registry, as engine.Overlay is
// over an engine: the registry's catalog with the sent definitions, ranked
// by word overlap.
type memOverlay struct {
	reg     *registry.Registry
	session string
	caller  Caller

	mu     sync.Mutex
	data   map[string][]byte
	res    map[string]registry.Sent
	rev    uint64
	closed bool
}

func newMemOverlay(reg *registry.Registry, session string) *memOverlay {
	return &memOverlay{reg: reg, session: session, data: map[string][]byte{}, res: map[string]registry.Sent{}}
}

func (o *memOverlay) Catalog() *registry.Catalog {
	o.mu.Lock()
	defer o.mu.Unlock()
	var sent []registry.Sent
	for _, s := range o.res {
		sent = append(sent, s)
	}
	host := o.reg.Catalog()
	return registry.WithSent(host, sent, host.Revision+o.rev)
}

func (o *memOverlay) Send(ctx context.Context, name string, data []byte) (registry.Sent, error) {
	res, err := o.reg.ResolveSent(ctx, name, "session/"+o.session+"/meta/"+name, data)
	if err != nil {
		return res, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.data[name], o.res[name] = append([]byte(nil), data...), res
	o.rev++
	return res, nil
}

func (o *memOverlay) Withdraw(_ context.Context, name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.data[name]; !ok {
		return false
	}
	delete(o.data, name)
	delete(o.res, name)
	o.rev++
	return true
}

func (o *memOverlay) Definition(name string) ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b, ok := o.data[name]
	return b, ok
}

func (o *memOverlay) Sent() []registry.Sent {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []registry.Sent
	for _, s := range o.res {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (o *memOverlay) Rank(ctx context.Context, q engine.Request) (engine.Answer, error) {
	return wordRanker{o}.Rank(ctx, q)
}

// Call calls through the test server's caller, as engine.Overlay calls
// through its engine (the sent tools included).
func (o *memOverlay) Call(ctx context.Context, c engine.CallRequest) (*exec.Result, error) {
	if o.caller == nil {
		return nil, Refuse(linux.ENOSYS, "tool execution is not available in this server")
	}
	return o.caller.Call(ctx, c)
}

// Load makes it a Source, for wordRanker.
func (o *memOverlay) Load(context.Context) error { return nil }

func (o *memOverlay) Close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
}

// sentEnv is a server whose sessions take definitions, and whose Access
// answer the test sets before each connection.
func sentEnv(t *testing.T, tweak func(*Options)) (*testEnv, func(string) *memOverlay, func(Access)) {
	t.Helper()
	var mu sync.Mutex
	made := map[string]*memOverlay{}
	var e *testEnv
	e, next := accessEnv(t, func(o *Options) {
		o.Overlays = func(session string) Overlay {
			mu.Lock()
			defer mu.Unlock()
			ov := newMemOverlay(e.reg, session)
			ov.caller = e.caller
			made[session] = ov
			return ov
		}
		if tweak != nil {
			tweak(o)
		}
	})
	overlay := func(s string) *memOverlay {
		mu.Lock()
		defer mu.Unlock()
		return made[s]
	}
	return e, overlay, func(a Access) { next.Store(&a) }
}

const lunar = `{"description": "Phase of the moon tonight", "keywords": ["moon", "lunar"], "cmd": "/bin/echo"}`

// Definitions sent to a session join that session's catalog (listing,
// ranking, loading, calling) and no other, can be read back and withdrawn,
// and shadow the host's tool of the same name there; an invalid one is
// kept and refused with its problems, in the session's err and errors.
func TestSendDefinitions(t *testing.T) {
	e, overlay, _ := sentEnv(t, nil)
	cl := e.client()
	for _, p := range []string{"session/s1", "session/s1/agent/a", "session/s2", "session/s2/agent/a"} {
		mustMkdir(t, cl, p)
	}
	rev0 := mustRead(t, cl, "session/s1/revision")
	if got := mustRead(t, cl, "session/s1/tools"); got != mustRead(t, cl, "tools") {
		t.Errorf("a session with nothing sent lists %q, the server %q", got, mustRead(t, cl, "tools"))
	}
	if err := cl.Send("session/s1/meta/lunar_phase", []byte(lunar)); err != nil {
		t.Fatal(err)
	}
	if got := entryNames(t, cl, "session/s1/meta"); strings.Join(got, ",") != "lunar_phase" {
		t.Errorf("meta/ lists %v", got)
	}
	if got := mustRead(t, cl, "session/s1/meta/lunar_phase"); got != lunar {
		t.Errorf("read back %q", got)
	}
	if rev := mustRead(t, cl, "session/s1/revision"); rev == rev0 {
		t.Errorf("the session's revision stayed %s after a send", rev)
	}
	if !strings.Contains(mustRead(t, cl, "session/s1/tools"), "lunar_phase\twarm\tPhase of the moon tonight") {
		t.Errorf("session tools: %q", mustRead(t, cl, "session/s1/tools"))
	}
	for _, p := range []string{"tools", "session/s2/tools"} {
		if strings.Contains(mustRead(t, cl, p), "lunar_phase") {
			t.Errorf("%s lists s1's sent tool", p)
		}
	}
	var cat struct {
		Tools []registry.Tool `json:"tools"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, cl, "session/s1/tools.json")), &cat); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range cat.Tools {
		if tl.Name == "lunar_phase" {
			found = tl.File == "session/s1/meta/lunar_phase" && tl.Dir == "" && tl.Command.Argv[0] == "/bin/echo"
		}
	}
	if !found {
		t.Errorf("session tools.json lacks lunar_phase as sent: %+v", cat.Tools)
	}

	// The session's agents rank, load and call it; another session's do not.
	if got := names(transact(t, cl, "session/s1/agent/a/rank", "moon tonight")); len(got) == 0 || got[0] != "lunar_phase" {
		t.Errorf("s1 ranks %v", got)
	}
	if got := names(transact(t, cl, "session/s2/agent/a/rank", "moon tonight")); len(got) > 0 && got[0] == "lunar_phase" {
		t.Errorf("s2 ranks s1's tool: %v", got)
	}
	mustWrite(t, cl, "session/s1/agent/a/ctl", "tool_load lunar_phase")
	if ans := transact(t, cl, "session/s1/agent/a/call/lunar_phase", `{}`); !strings.Contains(ans, `"tool":"lunar_phase"`) {
		t.Errorf("call: %s", ans)
	}
	wantRefused(t, cl.Write("session/s2/agent/a/ctl", []byte("tool_load lunar_phase")), linux.ENOENT, "unknown tool: lunar_phase")

	// A sent tool that the host also has wins in the session; the shadow
	// is reported.
	if err := cl.Send("session/s1/meta/weather", []byte(`{"description":"Weather from the sender's own service","cmd":"/bin/echo"}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cl, "session/s1/tools"); !strings.Contains(got, "weather\twarm\tWeather from the sender's own service") {
		t.Errorf("session tools: %q", got)
	}
	if got := mustRead(t, cl, "session/s1/errors"); !strings.Contains(got, "session/s1/meta/weather: shadows the host's weather (") {
		t.Errorf("session errors: %q", got)
	}
	if got := mustRead(t, cl, "tools"); !strings.Contains(got, "Current weather forecast") {
		t.Errorf("the host's own weather changed: %q", got)
	}

	// Invalid: refused with its problems, kept and listed.
	err := cl.Send("session/s1/meta/broken", []byte("{\n  \"description\": \"x\",\n  \"readonly\": true\n}"))
	wantRefused(t, err, linux.EINVAL, "definition broken is not usable on this host", `did you mean "readOnly"`)
	if got := mustRead(t, cl, "session/s1/err"); !strings.Contains(got, `did you mean "readOnly"`) {
		t.Errorf("session err: %q", got)
	}
	if got := mustRead(t, cl, "session/s1/errors"); !strings.Contains(got, `session/s1/meta/broken:3: field "readonly": did you mean`) {
		t.Errorf("session errors: %q", got)
	}
	if got := entryNames(t, cl, "session/s1/meta"); strings.Join(got, ",") != "broken,lunar_phase,weather" {
		t.Errorf("meta/ lists %v", got)
	}
	// Too large: refused, nothing sent.
	big := `{"description":"d","cmd":"true","prompt":"` + strings.Repeat("x", registry.MaxSentSize) + `"}`
	wantRefused(t, cl.Send("session/s1/meta/big", []byte(big)), linux.EFBIG, "larger than 262144 bytes")
	if got := entryNames(t, cl, "session/s1/meta"); strings.Join(got, ",") != "broken,lunar_phase,weather" {
		t.Errorf("after a too large send, meta/ lists %v", got)
	}
	wantRefused(t, cl.Send("session/s1/meta/a b", []byte(lunar)), linux.EINVAL, "bad tool name")

	// Withdrawn: gone from the session, the host's weather back.
	if err := cl.Remove("session/s1/meta/weather"); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, cl, "session/s1/tools"); !strings.Contains(got, "Current weather forecast") {
		t.Errorf("after withdrawal: %q", got)
	}
	wantRefused(t, cl.Remove("session/s1/meta/weather"), linux.ENOENT, "no definition weather")
	wantRefused(t, func() error { _, err := cl.Read("session/s1/meta/weather"); return err }(), linux.ENOENT, "no definition weather")

	// The session ends: its overlay is released.
	if err := cl.Remove("session/s1"); err != nil {
		t.Fatal(err)
	}
	if ov := overlay("s1"); ov == nil || !ov.closed {
		t.Error("the ended session's overlay was not closed")
	}
}

func transact(t *testing.T, cl *Client, p, req string) string {
	t.Helper()
	b, err := cl.Transact(p, []byte(req))
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return string(b)
}

// Who may send: a connection the OS authenticated; not a TCP one, nor a
// tool's own; not past the limit; not to a server without overlays.
func TestSendRefusals(t *testing.T) {
	e, _, set := sentEnv(t, func(o *Options) { o.Limits.MaxSent = 2 })
	owner := e.client()
	mustMkdir(t, owner, "session/s1")
	mustMkdir(t, owner, "session/s1/agent/a")

	set(Access{Unauthenticated: "this connection is TCP"})
	tcp := e.client()
	wantRefused(t, tcp.Send("session/s1/meta/lunar_phase", []byte(lunar)), linux.EACCES,
		"definitions are taken only on connections the operating system authenticated", "this connection is TCP")
	if got := mustRead(t, tcp, "session/s1/tools"); got == "" {
		t.Error("a TCP connection cannot read the session's tools")
	}
	set(Access{Session: "s1", Agent: "a"})
	tool := e.client()
	wantRefused(t, tool.Send("session/s1/meta/lunar_phase", []byte(lunar)), linux.EACCES, "may only use that agent's")
	set(Access{})

	for _, n := range []string{"one", "two"} {
		if err := owner.Send("session/s1/meta/"+n, []byte(lunar)); err != nil {
			t.Fatal(err)
		}
	}
	wantRefused(t, owner.Send("session/s1/meta/three", []byte(lunar)), linux.ENOSPC, "too many definitions", "limit is 2")
	if err := owner.Send("session/s1/meta/two", []byte(lunar)); err != nil {
		t.Errorf("replacing a definition at the limit: %v", err)
	}

	plain := newEnv(t, nil)
	cl := plain.client()
	mustMkdir(t, cl, "session/s1")
	wantRefused(t, cl.Send("session/s1/meta/lunar_phase", []byte(lunar)), linux.ENOSYS, "takes no tool definitions")
}

// /version names the tree's protocol and the build.
func TestVersionFile(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Build = "toolsrv v1.2.3" })
	if got := mustRead(t, e.client(), "version"); got != Protocol+"\nbuild toolsrv v1.2.3\n" {
		t.Errorf("version = %q", got)
	}
}

// A provider's tools (PROVIDER:TOOL) are loaded and called like any.
func TestProvidedToolsOverNinep(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.reg.Provide(e.ctx, "srv", registry.Provision{Source: "ssh:srv", Tools: []registry.Provided{
		{Name: "system_logs", Description: "Recent system logs of the server"}}}); err != nil {
		t.Fatal(err)
	}
	cl := e.client()
	mustMkdir(t, cl, "session/s1")
	mustMkdir(t, cl, "session/s1/agent/a")
	mustWrite(t, cl, "session/s1/agent/a/ctl", "tool_load srv:system_logs")
	if got := entryNames(t, cl, "session/s1/agent/a/call"); strings.Join(got, ",") != "srv:system_logs" {
		t.Errorf("call/ lists %v", got)
	}
	if ans := transact(t, cl, "session/s1/agent/a/call/srv:system_logs", `{}`); !strings.Contains(ans, `"tool":"srv:system_logs"`) {
		t.Errorf("call: %s", ans)
	}
	wantRefused(t, cl.Write("session/s1/agent/a/ctl", []byte("tool_load srv:a/b")), linux.EINVAL, "bad tool name")
}

// A transaction file kept open serves one request after another.
func TestTxReuse(t *testing.T) {
	e := newEnv(t, nil)
	cl := e.client()
	tx, err := cl.OpenTx("rank")
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, c := range []struct{ msg, top string }{{"will it rain", "weather"}, {"echo a text", "echo_text"}, {"rain temperature", "weather"}} {
		ans, err := tx.Do([]byte(c.msg))
		if err != nil {
			t.Fatal(err)
		}
		if got := names(string(ans)); len(got) == 0 || got[0] != c.top {
			t.Errorf("%q: %v, want %s first", c.msg, got, c.top)
		}
	}
	_, err = tx.Do([]byte(""))
	wantRefused(t, err, linux.EINVAL, "empty message")
	if ans, err := tx.Do([]byte("will it rain")); err != nil || names(string(ans))[0] != "weather" {
		t.Errorf("after a refusal: %q %v", ans, err)
	}
}
