package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hugelgupf/p9/linux"

	"github.com/toolsrv/toolsrv/ninep"
	"github.com/toolsrv/toolsrv/remote"
)

const ninepAbout = `A small 9P client for the toolsrv tree (scripts, tools, people):
  ls PATH            list a directory (directories end in /)
  cat PATH           print a file
  write PATH [DATA]  write DATA (default: standard input); on a transaction
                     file (rank, rank.json, call/NAME) print the answer read back
  mkdir PATH         make a session (session/S) or an agent (session/S/agent/A)
  rm PATH            end a session or an agent
The server is --addr, else $TOOLSRV_ADDR, else the default Unix socket of
"toolsrv serve". --addr ssh:[USER@]HOST[:PORT] runs ssh (your ssh config,
keys and agent apply; $TOOLSRV_SSH_COMMAND replaces "ssh" as
$GIT_SSH_COMMAND does for git) with "toolsrv serve --stdio" on HOST
($TOOLSRV_REMOTE_CMD or --remote-cmd replaces "toolsrv"), which reaches that
user's server there, starting it if none runs. Over --addr tcp: it sends
the server's token as the attach name: --token-file's, else
$TOOLSRV_9P_TOKEN, else the file a server of this user's made
($XDG_STATE_HOME/toolsrv/9p-token, else ~/.local/state/toolsrv/9p-token).
Writing
session/S/meta/NAME sends a .meta definition to session S: the server
resolves it against its own host. A refused request prints
the server's reason (its err file) and exits 1; usage errors exit 2. SIGINT
or SIGTERM stops a request the server does not answer (exit 1). DATA that
begins with - goes after --.
Examples:
  toolsrv 9p cat tools
  toolsrv 9p mkdir session/s1 && toolsrv 9p mkdir session/s1/agent/coder
  echo file_read | toolsrv 9p write session/s1/agent/coder/tools
  toolsrv 9p write session/s1/agent/coder/rank "find TODO comments"
  toolsrv 9p write session/s1/agent/coder/call/file_read '{"path":"README.md"}'
  toolsrv 9p --addr ssh:build-server write session/s1/meta/system_logs < system_logs.meta`

func run9P(ctx context.Context, env *cliEnv, args []string) int {
	fs, _ := newFlags(env, "9p", "9p [--addr unix:PATH|tcp:HOST:PORT|ssh:[USER@]HOST[:PORT]] [--token-file FILE] ls|cat|write|mkdir|rm PATH [DATA]", ninepAbout)
	addr := fs.String("addr", "", "server address (default $"+ninep.AddrEnv+", else the default socket)")
	tokenFile := fs.String("token-file", "", "with a tcp: address, the file holding the server's token (default $"+NinePTokenEnv+", else the one a server of this user's made in $XDG_STATE_HOME/toolsrv/9p-token)")
	remoteCmd := fs.String("remote-cmd", "", "with --addr ssh:..., the command that runs toolsrv there (default $"+remote.RemoteCmdEnv+", else toolsrv)")
	timeout := fs.Duration("connect-timeout", remote.DefaultDialTimeout, "with --addr ssh:..., how long ssh may take until the server there answers")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	rest := fs.Args()
	if len(rest) < 2 {
		return usageError(fs, "give an operation and a PATH")
	}
	op, p := rest[0], rest[1]
	want := map[string][2]int{"ls": {2, 2}, "cat": {2, 2}, "write": {2, 3}, "mkdir": {2, 2}, "rm": {2, 2}}
	n, ok := want[op]
	if !ok {
		return usageError(fs, "unknown operation %q: use ls, cat, write, mkdir or rm", op)
	}
	if len(rest) < n[0] || len(rest) > n[1] {
		return usageError(fs, "%s: wrong number of arguments", op)
	}
	var data []byte
	if op == "write" {
		if len(rest) == 3 {
			data = []byte(rest[2])
		} else {
			b, err := io.ReadAll(env.stdin)
			if err != nil {
				fmt.Fprintln(env.stderr, "toolsrv 9p write: reading standard input:", err)
				return 1
			}
			data = b
		}
	}
	if *addr == "" {
		*addr = ninep.DefaultAddr(env.getenv)
	}
	// The client closes the connection when ctx ends (SIGINT, SIGTERM), so
	// a server that does not answer cannot hold this command.
	var cl *ninep.Client
	if remote.IsSSH(*addr) {
		c, err := remote.Dial(ctx, *addr, remote.DialOptions{Getenv: env.getenv, RemoteCmd: *remoteCmd, Timeout: *timeout, Logger: logger(env)})
		if err != nil {
			fmt.Fprintf(env.stderr, "toolsrv 9p: %v%s\n", err, interrupted(ctx, *addr))
			return 1
		}
		defer c.Close()
		cl = c.Client
	} else {
		var opts []ninep.ClientOption
		if a, err := ninep.ParseAddr(*addr); err == nil && a.Net == "tcp" {
			tok, err := clientToken(env, *tokenFile)
			if err != nil {
				fmt.Fprintf(env.stderr, "toolsrv 9p: %v\n", err)
				return 1
			}
			opts = append(opts, ninep.WithToken(tok))
		} else if *tokenFile != "" {
			return usageError(fs, "--token-file is for a tcp: address only (a Unix socket takes no token, and ssh: reaches one)")
		}
		c, err := ninep.Connect(ctx, *addr, opts...)
		if err != nil {
			hint := ""
			if errors.Is(err, linux.EACCES) {
				hint = "; give the server's token with --token-file FILE or $" + NinePTokenEnv + " (a server of yours with neither keeps it in " + stateFile(env, ninePTokenName) + ")"
			}
			fmt.Fprintf(env.stderr, "toolsrv 9p: %v%s%s\n", err, hint, interrupted(ctx, *addr))
			return 1
		}
		defer c.Close()
		cl = c
	}
	var err error

	switch op {
	case "ls":
		var ents []ninep.Entry
		if ents, err = cl.List(p); err == nil {
			for _, e := range ents {
				if e.Dir {
					fmt.Fprintln(env.stdout, e.Name+"/")
				} else {
					fmt.Fprintln(env.stdout, e.Name)
				}
			}
		}
	case "cat":
		var b []byte
		if b, err = cl.Read(p); err == nil {
			env.stdout.Write(b)
		}
	case "write":
		if ninep.IsSent(p) {
			err = cl.Send(p, data)
		} else if ninep.IsTransaction(p) {
			var ans []byte
			if ans, err = cl.Transact(p, data); err == nil {
				env.stdout.Write(ans)
			}
		} else {
			err = cl.Write(p, data)
		}
	case "mkdir":
		err = cl.Mkdir(p)
	case "rm":
		err = cl.Remove(p)
	}
	if err != nil {
		var r *ninep.RefusedError
		if errors.As(err, &r) && r.Reason != "" {
			fmt.Fprintf(env.stderr, "toolsrv 9p %s %s: %s (%v)\n", op, strings.TrimPrefix(p, "/"), r.Reason, r.Errno)
		} else {
			fmt.Fprintf(env.stderr, "toolsrv 9p: %v%s\n", err, interrupted(ctx, *addr))
		}
		return 1
	}
	return 0
}

// interrupted says, after a failure, that the command was stopped while
// waiting for the server.
func interrupted(ctx context.Context, addr string) string {
	if ctx.Err() == nil {
		return ""
	}
	return " (interrupted while waiting for the server at " + addr + ")"
}
