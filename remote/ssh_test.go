package remote

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/internal/sshtest"
	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/registry"
)

// systemLogs is one definition with two variants: the first holds only
// where the program toolsrv-test-journal is on $PATH (the remote host
// here), the second anywhere.
const systemLogs = `{
  "description": "Recent system logs",
  "args": {"type": "object", "properties": {"lines": {"type": "integer"}}},
  "variants": [
    {"match": {"binary": "toolsrv-test-journal"}, "description": "Recent entries of the systemd journal", "cmd": "toolsrv-test-journal"},
    {"description": "Recent lines of the syslog file", "cmd": "echo syslog of the local host"}
  ]
}`

// journal is the program that exists only on the remote host.
const journal = "#!/bin/sh\necho \"journal entries of the remote host, asked: $(cat)\"\n"

func dialOpts(s *sshtest.Server, cmd string) DialOptions {
	return DialOptions{RemoteCmd: cmd, Batch: true, Timeout: 60 * time.Second,
		Getenv: func(k string) string {
			if k == SSHCommandEnv {
				return s.SSHCommand
			}
			return ""
		}}
}

// One sent .meta resolves to the other variant on the remote host (whose
// $PATH has a program the local one lacks) than here, and a call runs
// there, through a real OpenSSH server on loopback and toolsrv serve
// --stdio, which started the remote server on first use.
func TestSSHSendResolvesOnTheRemote(t *testing.T) {
	testdeps.Long(t, "real ssh logins, ~15 s")
	s := sshtest.Start(t)
	host := sshtest.NewHost(t, toolsrvBin(t), nil)
	host.WriteBin(t, "toolsrv-test-journal", journal)
	if _, err := osexec.LookPath("toolsrv-test-journal"); err == nil {
		t.Fatal("toolsrv-test-journal is on this machine's PATH: the test needs it on the remote only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Here, the definition takes the second variant.
	local := registry.New(registry.Options{Dirs: []string{t.TempDir()}})
	here, err := local.ResolveSent(ctx, "system_logs", "here", []byte(systemLogs))
	if err != nil || here.Tool == nil || here.Tool.Variant != 1 {
		t.Fatalf("locally: %+v %v", here, err)
	}

	conn, err := Dial(ctx, s.Addr, dialOpts(s, host.Cmd))
	if err != nil {
		t.Fatalf("dial: %v\nserver log:\n%s", err, host.ServerLog())
	}
	defer conn.Close()
	if conn.Build == "" || host.ServerPID() == 0 {
		t.Errorf("build %q, server pid %d: serve --stdio should have started a server there", conn.Build, host.ServerPID())
	}
	for _, d := range []string{"session/s1", "session/s1/agent/a"} {
		if err := conn.Mkdir(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Send("session/s1/meta/system_logs", []byte(systemLogs)); err != nil {
		t.Fatal(err)
	}
	b, err := conn.Read("session/s1/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var cat registry.Catalog
	if err := json.Unmarshal(b, &cat); err != nil {
		t.Fatal(err)
	}
	var there *registry.Tool
	for _, tl := range cat.Tools {
		if tl.Name == "system_logs" {
			there = tl
		}
	}
	if there == nil || there.Variant != 0 || there.Description != "Recent entries of the systemd journal" ||
		there.Command.Argv[0] != host.Root+"/bin/toolsrv-test-journal" {
		t.Fatalf("on the remote: %+v", there)
	}
	if err := conn.Write("session/s1/agent/a/ctl", []byte("tool_load system_logs")); err != nil {
		t.Fatal(err)
	}
	ans, err := conn.Transact("session/s1/agent/a/call/system_logs", []byte(`{"lines": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ExitCode int    `json:"exitCode"`
		Output   string `json:"output"`
	}
	if err := json.Unmarshal(ans, &res); err != nil || res.ExitCode != 0 ||
		res.Output != "journal entries of the remote host, asked: {\"lines\":5}\n" {
		t.Fatalf("call: %s (%v)", ans, err)
	}

	// The server outlives the connection: the next one finds the session
	// and what was sent, and no second server was started.
	pid := host.ServerPID()
	conn.Close()
	again, err := Dial(ctx, s.Addr, dialOpts(s, host.Cmd))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := again.Read("session/s1/meta/system_logs"); err != nil || string(got) != systemLogs {
		t.Errorf("the next connection reads back %q, %v", got, err)
	}
	if host.ServerPID() != pid {
		t.Errorf("a second server was started (%d, then %d)", pid, host.ServerPID())
	}
}

// Each way a connection can fail says which side failed.
func TestSSHDialFailures(t *testing.T) {
	testdeps.Long(t, "real ssh logins that fail in seven ways, ~30 s")
	s := sshtest.Start(t)
	host := sshtest.NewHost(t, toolsrvBin(t), nil)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	closed := "ssh:127.0.0.1:1"
	for _, tc := range []struct {
		name, addr, cmd string
		timeout         time.Duration
		kind            error
		says            []string
	}{
		{name: "ssh cannot connect", addr: closed, kind: ErrSSH, says: []string{"ssh could not connect to 127.0.0.1", "exit status 255", "Connection refused"}},
		{name: "toolsrv missing there", cmd: "/nonexistent/toolsrv", kind: ErrNoToolsrv,
			says: []string{"toolsrv is missing on 127.0.0.1", "/nonexistent/toolsrv serve --stdio", "TOOLSRV_REMOTE_CMD"}},
		{name: "a banner, not 9P", cmd: "echo 'Welcome to the build server!'; sleep 30 #", kind: ErrNot9P,
			says: []string{"answered something that is not 9P", `"Welcom`}},
		{name: "ssh hangs", cmd: "sleep 60 #", timeout: 2 * time.Second, kind: ErrTimeout,
			says: []string{"no 9P answer from 127.0.0.1 within 2s"}},
		{name: "another version", cmd: self + " fake9p 'toolsrv-9p 999' #", kind: ErrVersion,
			says: []string{"version mismatch", `"toolsrv-9p 999"`, "build fake", ninep.Protocol}},
		{name: "a toolsrv without /version", cmd: self + " fake9p none #", kind: ErrVersion,
			says: []string{"version mismatch", "no /version"}},
		{name: "the remote toolsrv fails", cmd: "echo 'toolsrv serve: no tool directory' >&2; exit 3 #", kind: ErrRemote,
			says: []string{"remote toolsrv on 127.0.0.1 failed (exit status 3)", "no tool directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			addr, cmd := tc.addr, tc.cmd
			if addr == "" {
				addr = s.Addr
			}
			if cmd == "" {
				cmd = host.Cmd
			}
			o := dialOpts(s, cmd)
			if tc.timeout != 0 {
				o.Timeout = tc.timeout
			}
			c, err := Dial(ctx, addr, o)
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("error %v, want %v", err, tc.kind)
			}
			for _, f := range tc.says {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not say %q", err, f)
				}
			}
		})
	}
}

// Bad input a remote must refuse: a definition too large, invalid, or
// sent over a connection that is not allowed to send.
func TestSSHSendRefusals(t *testing.T) {
	testdeps.Long(t, "real ssh logins, ~8 s")
	s := sshtest.Start(t)
	host := sshtest.NewHost(t, toolsrvBin(t), nil)
	host.WriteTool(t, "backup", `{"description": "The remote's own backup tool", "cmd": "/bin/true"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := Dial(ctx, s.Addr, dialOpts(s, host.Cmd))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Mkdir("session/s1"); err != nil {
		t.Fatal(err)
	}
	refused := func(err error, errno linux.Errno, says string) {
		t.Helper()
		var r *ninep.RefusedError
		if !errors.As(err, &r) || r.Errno != errno || !strings.Contains(r.Reason, says) {
			t.Errorf("got %v, want %v saying %q", err, errno, says)
		}
	}
	big := `{"description":"d","cmd":"true","prompt":"` + strings.Repeat("x", registry.MaxSentSize) + `"}`
	refused(conn.Send("session/s1/meta/big", []byte(big)), linux.EFBIG, "limit for a sent definition")
	refused(conn.Send("session/s1/meta/helper", []byte(`{"description":"runs the script beside it"}`)), linux.EINVAL,
		"a sent definition cannot bring an executable beside it")
	// The remote's own tool of the same name: the sent one wins in the
	// session, and the shadow is reported there.
	if err := conn.Send("session/s1/meta/backup", []byte(`{"description":"The laptop's backup tool","cmd":"/bin/true"}`)); err != nil {
		t.Fatal(err)
	}
	errs, err := conn.Read("session/s1/errors")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"session/s1/meta/helper: field \"cmd\": no command",
		"session/s1/meta/backup: shadows the host's backup (" + host.Root + "/tools/backup.meta): the sent definition is served in this session",
	} {
		if !strings.Contains(string(errs), want) {
			t.Errorf("session errors %q lack %q", errs, want)
		}
	}
	tools, _ := conn.Read("session/s1/tools")
	if !strings.Contains(string(tools), "backup\twarm\tThe laptop's backup tool") {
		t.Errorf("session tools: %q", tools)
	}
	if root, _ := conn.Read("tools"); !strings.Contains(string(root), "The remote's own backup tool") {
		t.Errorf("the remote's own catalog: %q", root)
	}
}
