package main

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolsrv/toolsrv/internal/fileio"
	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/remote"
)

// runServeStdio is "toolsrv serve --stdio": one 9P connection on standard
// input and output (the way sftp-server runs under ssh), relayed to this
// user's running server on its Unix socket (the first unix: --listen, else
// the default socket), started first if none runs. Every other flag is
// the started server's.
func runServeStdio(ctx context.Context, env *cliEnv, args []string, listens listenList, tools *dirList) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(env.stderr, "toolsrv serve --stdio: "+format+"\n", a...)
		return 1
	}
	sock := ""
	for _, l := range listens {
		if a, err := ninep.ParseAddr(l); err == nil && a.Net == "unix" {
			sock = a.Addr
			break
		}
	}
	var pass []string
	for _, a := range args {
		if a == "--stdio" || a == "-stdio" || strings.HasPrefix(a, "--stdio=") || strings.HasPrefix(a, "-stdio=") {
			continue
		}
		pass = append(pass, a)
	}
	if sock == "" {
		sock = ninep.DefaultSocket(env.getenv)
		pass = append(pass, "--listen", "unix:"+sock)
	}
	self, err := os.Executable()
	if err != nil {
		return fail("cannot find my own binary to start a server: %v", err)
	}
	start := func(ctx context.Context) (<-chan error, error) {
		return startServer(env, self, pass, sock, tools)
	}
	err = remote.Relay(ctx, env.stdin, env.stdout, remote.RelayOptions{Socket: sock, Start: start, Logger: logger(env)})
	if err != nil {
		return fail("%v", err)
	}
	return 0
}

// startServer starts "toolsrv serve ARGS" on its own (a new session, its
// output in a log file under $XDG_STATE_HOME/toolsrv, else
// ~/.local/state/toolsrv, a private directory (fileio.PrivateDir); its pid
// beside the socket), for serve --stdio.
// A server started this way works in a private directory of its own unless
// --workdir says otherwise (ssh starts in the home directory, which is
// refused as a working directory), and, when the tools come from the
// default directory, that directory is made if it is missing: a host with
// no tools of its own can still be sent some.
func startServer(env *cliEnv, self string, args []string, sock string, tools *dirList) (<-chan error, error) {
	state := env.getenv("XDG_STATE_HOME")
	if state == "" {
		home := env.getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		state = filepath.Join(home, ".local", "state")
	}
	logDir := filepath.Join(state, "toolsrv")
	if err := fileio.PrivateDir(logDir, os.Geteuid(), logger(env)); err != nil {
		return nil, fmt.Errorf("the log directory: %w", err)
	}
	logPath := filepath.Join(logDir, "serve.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the server's log: %w", err)
	}
	defer logf.Close()
	if !hasFlag(args, "workdir") {
		dir, err := os.MkdirTemp("", "toolsrv-work-")
		if err != nil {
			return nil, fmt.Errorf("making a working directory for the server: %w", err)
		}
		args = append(args, "--workdir", dir)
	}
	if p := resolveToolPath(env, tools); p.from == "the default" {
		for _, d := range p.dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("making the default tools directory: %w", err)
			}
		}
	}
	fmt.Fprintf(logf, "%s toolsrv serve --stdio: starting toolsrv serve %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := osexec.Command(self, append([]string{"serve"}, args...)...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting toolsrv serve: %w", err)
	}
	pid := filepath.Join(filepath.Dir(sock), "serve.pid")
	if err := os.WriteFile(pid, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		fmt.Fprintf(logf, "toolsrv serve --stdio: writing %s: %v\n", pid, err)
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = fmt.Errorf("it exited")
		}
		exited <- fmt.Errorf("%w; its log is %s", err, logPath)
	}()
	return exited, nil
}

// hasFlag reports whether args set flag name (-name, --name, with or
// without =VALUE).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		n := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if n == name || strings.HasPrefix(n, name+"=") {
			return true
		}
	}
	return false
}
