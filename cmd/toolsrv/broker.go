package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/toolsrv/toolsrv/exec"
	"github.com/toolsrv/toolsrv/registry"
)

// runBroker is the reference bypass approval broker: it listens on a Unix
// socket and asks a person on this terminal about every request.
func runBroker(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "broker", "broker [--socket PATH]",
		"Listens on a Unix socket (mode 0600) for bypass requests from toolsrv (tools with \"bypass\": true\n"+
			"ask to run outside the sandbox) and asks on this terminal: allow once, or deny.\n"+
			"Start toolsrv serve/call with OLLIE_BYPASS_SOCKET=PATH (or --bypass-socket PATH).\n"+
			"A request nobody answers in time is denied by the caller.")
	socket := fs.String("socket", "", "socket path (default $OLLIE_BYPASS_SOCKET)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 0 {
		return usageError(fs, "unexpected argument %q (the socket goes in --socket)", fs.Arg(0))
	}
	if *socket == "" {
		*socket = env.getenv("OLLIE_BYPASS_SOCKET")
	}
	if *socket == "" {
		return usageError(fs, "no socket: pass --socket PATH or set OLLIE_BYPASS_SOCKET")
	}
	ln, err := listenUnixPrivate(*socket)
	if err != nil {
		fmt.Fprintln(env.stderr, "toolsrv broker:", err)
		return 1
	}
	defer os.Remove(*socket)
	fmt.Fprintf(env.stdout, "toolsrv broker: listening on %s\nStart toolsrv with OLLIE_BYPASS_SOCKET=%s. Answer each request with a (allow once) or d (deny).\n", *socket, *socket)

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(env.stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	// ServeBroker asks one question at a time, so expired needs no lock.
	expired := false
	decide := func(dctx context.Context, req exec.BypassRequest) exec.BypassAnswer {
		if expired {
			// A line typed after the last question expired is a late
			// answer to that one: it must not answer this one.
			drain(lines)
		}
		a := askPerson(dctx, env.stdout, lines, req)
		expired = dctx.Err() != nil
		return a
	}
	if err := exec.ServeBroker(ctx, ln, decide, logger(env)); err != nil {
		fmt.Fprintln(env.stderr, "toolsrv broker:", err)
		return 1
	}
	return 0
}

// askPerson shows one request and waits for a line: "a"/"allow"/"y"/"yes"
// allows once; anything else denies. The end of input, or the requester
// giving up, denies.
func askPerson(ctx context.Context, w io.Writer, lines <-chan string, req exec.BypassRequest) exec.BypassAnswer {
	fmt.Fprintf(w, "\n--- bypass request: tool %q wants to run OUTSIDE the sandbox\n", req.Tool)
	fmt.Fprintf(w, "    command:   %s\n", registry.QuoteArgv(req.Command))
	if req.Description != "" {
		fmt.Fprintf(w, "    about:     %s\n", req.Description)
	}
	fmt.Fprintf(w, "    arguments: %s\n", compactJSON(req.Arguments))
	fmt.Fprintf(w, "    workdir:   %s\n", req.WorkDir)
	if req.Session != "" || req.Agent != "" {
		fmt.Fprintf(w, "    session:   %s  agent: %s\n", req.Session, req.Agent)
	}
	fmt.Fprintf(w, "    allow once? [a]llow / [d]eny (%.0fs to answer): ", req.TimeoutSeconds)
	select {
	case line, ok := <-lines:
		if !ok {
			fmt.Fprintln(w, "\n    denied: no more input on the terminal")
			return exec.BypassAnswer{Reason: "the broker's terminal has no more input"}
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "allow", "y", "yes":
			fmt.Fprintln(w, "    allowed (this call only)")
			return exec.BypassAnswer{Allow: true}
		}
		fmt.Fprintln(w, "    denied")
		return exec.BypassAnswer{Reason: "denied by the person at the broker"}
	case <-ctx.Done():
		fmt.Fprintln(w, "\n    expired: the caller stopped waiting (denied)")
		return exec.BypassAnswer{Reason: "no answer in time"}
	}
}

// drain drops the lines already typed.
func drain(lines <-chan string) {
	for {
		select {
		case _, ok := <-lines:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

func compactJSON(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// listenUnixPrivate listens on path with mode 0600, replacing a stale
// socket file (one nobody answers on) but never another live broker or a
// non-socket file.
func listenUnixPrivate(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; choose another path", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("another broker is already listening on %s", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket: %w", err)
		}
	}
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, errors.Join(fmt.Errorf("making %s private", path), err)
	}
	return ln, nil
}
