package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsrv/toolsrv/engine"
	"github.com/toolsrv/toolsrv/mcp"
)

// A client closes the server's standard input to shut it down and expects
// it gone soon after (the MCP stdio transport: close, wait, SIGTERM,
// SIGKILL), within a second: "toolsrv mcp" on standard input and output
// first answers the requests it read before the close, for mcpDrain at
// most (a client may pipe a script of requests and close), then gives
// what still runs (a call, an imported MCP server, the watch of the tool
// directories) mcpExitGrace to end once cancelled, and exits anyway. The
// sandbox helpers of calls and servers die with the process that started
// them.
const (
	mcpDrain     = 600 * time.Millisecond
	mcpExitGrace = 300 * time.Millisecond
)

// serveMCPStdio serves srv on standard input and output until the client
// closes standard input, the session ends or ctx does, and then stops bg
// within mcpExitGrace (after mcpDrain at most for the requests read before
// standard input closed).
func serveMCPStdio(ctx context.Context, env *cliEnv, srv *mcp.Server, log *slog.Logger, bg *background) int {
	st := mcp.NewServerStdio(env.stdin, env.stdout, log, mcpDrain)
	ran := make(chan error, 1)
	go func() { ran <- srv.MCP().Run(ctx, st.Transport()) }()
	select {
	case err := <-ran:
		// ctx ended (a signal), or the connection failed.
		failed := err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, sdk.ErrConnectionClosed)
		if !bg.stop(time.Now().Add(mcpExitGrace)) {
			log.Warn("mcp: exiting while the tool watch or an imported MCP server still stops")
		}
		if failed {
			fmt.Fprintln(env.stderr, "toolsrv mcp:", err)
			return 1
		}
		return 0
	case <-st.Closed():
		// The SDK sees the end of the input once the requests read are
		// answered (mcpDrain at most), and cancels the calls still
		// running: the session ends when they have.
		end := time.Now().Add(mcpDrain + mcpExitGrace)
		select {
		case <-ran:
		case <-time.After(time.Until(end)):
			log.Warn("mcp: standard input closed; exiting while calls of the session still end")
		}
		if !bg.stop(end) {
			log.Warn("mcp: standard input closed; exiting while the tool watch or an imported MCP server still stops")
		}
		return 0
	}
}

// background is what runs beside an MCP session under one context: the
// engine's watch, the server's Follow; and the engine, whose providers
// (imported MCP servers) Close stops.
type background struct {
	eng    *engine.Engine
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs f in a goroutine that stop waits for.
func (b *background) start(f func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f()
	}()
}

// stop cancels the context, then waits for the goroutines and closes the
// engine, until deadline at most (the zero time: no limit). It reports
// whether all that ended in time; what did not goes on in the background.
func (b *background) stop(deadline time.Time) bool {
	b.cancel()
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		b.eng.Close()
		close(done)
	}()
	if deadline.IsZero() {
		<-done
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(time.Until(deadline)):
		return false
	}
}
