package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/internal/sshtest"
	"github.com/toolsrv/toolsrv/internal/testdeps"
	"github.com/toolsrv/toolsrv/remote"
)

// The command line end to end, with the built binary on both sides of a
// real sshd: "toolsrv 9p --addr ssh:" (serve --stdio there starts the
// remote's server), sending a definition; "toolsrv serve --remote
// --remote-tools" federating it, a forwarded call; and a TCP connection
// refused when it sends.
func TestRemoteCLI(t *testing.T) {
	testdeps.Long(t, "real ssh logins and a federation, ~25 s")
	bin := buildToolsrv(t)
	s := sshtest.Start(t)
	host := sshtest.NewHost(t, bin, nil)
	host.WriteTool(t, "disk_usage", `{"description": "Show how full each file system is", "cmd": "/bin/echo"}`)
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		remote.SSHCommandEnv + "=" + s.SSHCommand, remote.RemoteCmdEnv + "=" + host.Cmd}
	run := func(stdin string, args ...string) toolRun {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
		defer cancel()
		cmd := osexec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*osexec.ExitError)
			if !ok {
				t.Fatalf("toolsrv %v: %v", args, err)
			}
			code = ee.ExitCode()
		}
		return toolRun{stdout: out.String(), stderr: errb.String(), code: code}
	}
	want := func(r toolRun, code int, out, errs string) {
		t.Helper()
		if r.code != code || !strings.Contains(r.stdout, out) || !strings.Contains(r.stderr, errs) {
			t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q\nremote server log:\n%s", r.code, r.stdout, r.stderr, code, out, errs, host.ServerLog())
		}
	}
	greet := `{"description": "Greet someone by name", "args": {"type": "object", "properties": {"name": {"type": "string"}}}, "cmd": "/bin/cat"}`

	// toolsrv 9p over ssh.
	want(run("", "9p", "--addr", s.Addr, "cat", "tools"), 0, "disk_usage\twarm\tShow how full", "")
	want(run("", "9p", "--addr", s.Addr, "mkdir", "session/cli"), 0, "", "")
	want(run(greet, "9p", "--addr", s.Addr, "write", "session/cli/meta/greet"), 0, "", "")
	want(run("", "9p", "--addr", s.Addr, "cat", "session/cli/tools"), 0, "greet\twarm\tGreet someone by name", "")
	want(run(`{"description": 1}`, "9p", "--addr", s.Addr, "write", "session/cli/meta/bad"), 1, "",
		"definition bad is not usable on this host")
	want(run("", "9p", "--addr", "ssh:127.0.0.1:1", "ls", "/"), 1, "", "ssh could not connect to 127.0.0.1")

	// An agent that reaches the host over ssh is that host's to its usage
	// history (one principal per host: 9p:AGENT@ssh:ADDR).
	want(run("", "9p", "--addr", s.Addr, "mkdir", "session/cli/agent/a"), 0, "", "")
	want(run("", "9p", "--addr", s.Addr, "write", "session/cli/agent/a/rank", "how full is the disk"), 0, "# answer ", "")
	want(run("", "9p", "--addr", s.Addr, "write", "session/cli/agent/a/ctl", "tool_load disk_usage"), 0, "", "")
	want(run("", "9p", "--addr", s.Addr, "write", "session/cli/agent/a/call/disk_usage", "{}"), 0, `"ok":true`, "")
	if out, err := osexec.Command(host.Cmd, "usage", "ls", "--json").CombinedOutput(); err != nil ||
		!strings.Contains(string(out), `"9p:a@ssh:127.0.0.1"`) {
		t.Errorf("the remote host's usage history: %v\n%s", err, out)
	}

	// toolsrv serve --remote: the remote's tools and the directory sent.
	local, send, dir := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(local, "weather.meta"), `{"description": "Current weather forecast for a city", "cmd": "/bin/true"}`)
	writeFile(t, filepath.Join(send, "greet.meta"), greet)
	work := filepath.Join(home, "project")
	os.MkdirAll(work, 0o755)
	sock := filepath.Join(dir, "run", "9p.sock")
	port := freeTCPPort(t)
	serve := osexec.Command(bin, "serve", "--tools", local, "--listen", "unix:"+sock, "--listen", "tcp:127.0.0.1:"+port,
		"--remote", "srv="+s.Addr, "--remote-tools", "srv="+send, "--remote-poll", "100ms", "--workdir", work, "--no-cache")
	serve.Env = env
	var log syncBuffer
	serve.Stdout, serve.Stderr = &log, &log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
		if t.Failed() {
			t.Logf("local serve:\n%s", log.String())
		}
	})
	unix := "unix:" + sock
	deadline := time.Now().Add(safetyNet)
	for {
		r := run("", "9p", "--addr", unix, "cat", "tools")
		if strings.Contains(r.stdout, "srv:greet\twarm\tGreet someone by name") && strings.Contains(r.stdout, "srv:disk_usage") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the remote's tools never came: %q %q", r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want(run("", "9p", "--addr", unix, "mkdir", "session/s"), 0, "", "")
	want(run("", "9p", "--addr", unix, "mkdir", "session/s/agent/a"), 0, "", "")
	want(run("", "9p", "--addr", unix, "write", "session/s/agent/a/ctl", "tool_load srv:greet"), 0, "", "")
	want(run("", "9p", "--addr", unix, "write", "session/s/agent/a/call/srv:greet", `{"name":"Ada"}`), 0,
		`"tool":"srv:greet","ok":true,"exitCode":0,"output":"{\"name\":\"Ada\"}`, "")

	// Over TCP the server takes no definitions; over its socket it does.
	tcp := "tcp:127.0.0.1:" + port
	want(run("", "9p", "--addr", tcp, "write", "session/s/meta/greet", greet), 1, "",
		"definitions are taken only on connections the operating system authenticated")
	want(run("", "9p", "--addr", unix, "write", "session/s/meta/greet", greet), 0, "", "")
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// Remotes come from a config file and the flags; mistakes are said before
// anything connects.
func TestRemoteConfig(t *testing.T) {
	dir := t.TempDir()
	tools := t.TempDir()
	good := filepath.Join(dir, "remotes.json")
	writeFile(t, good, `{"remotes": [{"name": "srv", "addr": "ssh:srv"}, {"name": "db", "addr": "ssh:admin@db:2222", "tools": "`+tools+`", "session": "laptop"}]}`)
	unknown := filepath.Join(dir, "unknown.json")
	writeFile(t, unknown, `{"remotes": [{"name": "srv", "adr": "ssh:srv"}]}`)
	for _, tc := range []struct {
		name  string
		args  []string
		names []string
		err   string
	}{
		{"file", []string{"--remote-config", good}, []string{"db", "srv"}, ""},
		{"file and flags", []string{"--remote-config", good, "--remote", "ci=ssh:ci", "--remote", "srv=ssh:other"}, []string{"ci", "db", "srv"}, ""},
		{"flags only", []string{"--remote", "a=ssh:a", "--remote-tools", "a=" + tools}, []string{"a"}, ""},
		{"unknown field", []string{"--remote-config", unknown}, nil, `unknown field "adr"`},
		{"missing file", []string{"--remote-config", filepath.Join(dir, "none.json")}, nil, "no such file"},
		{"tools of no remote", []string{"--remote-tools", "x=" + tools}, nil, "no remote x"},
		{"tools not a directory", []string{"--remote", "a=ssh:a", "--remote-tools", "a=" + good}, nil, "not a directory"},
		{"bad name", []string{"--remote", "a:b=ssh:a"}, nil, "must be a valid tool name without"},
		{"bad address", []string{"--remote", "a=ftp:a"}, nil, "write unix:PATH or tcp:HOST:PORT"},
		{"option as host", []string{"--remote", "a=ssh:-oProxyCommand=x"}, nil, "ssh would read as an option"},
		{"twice in the file", []string{"--remote-config", good, "--remote-config", good}, []string{"db", "srv"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			rf := addRemoteFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			env := &cliEnv{stderr: io.Discard, getenv: func(k string) string {
				if k == "HOME" {
					return dir
				}
				return ""
			}}
			ps, err := rf.providers(env, slog.New(slog.DiscardHandler))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range ps {
				names = append(names, p.Name())
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Errorf("remotes %v, want %v", names, tc.names)
			}
		})
	}
}

// A TCP connection's peer cannot be identified: it may not send
// definitions, and is told why.
func TestPeerAccessTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	acc := peerAccess(nil, a)
	if acc.Denied != "" || acc.Session != "" || !strings.Contains(acc.Unauthenticated, "TCP") || acc.Host != "tcp:pipe" {
		t.Errorf("access %+v", acc)
	}
}
