package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// callTool is the tool the call benchmark calls: it reads its arguments
// and says ok, so that what is measured is the way to it.
const callTool = "cat >/dev/null; echo ok"

// CallResult holds the figures of one tool call made every way, measured
// in one run: the rounds alternate the ways, so each sees the same load.
type CallResult struct {
	Calls  int `json:"calls"`
	Warmup int `json:"warmup"`
	// MCP is a warm `toolsrv mcp`'s call_tool over stdio (the server
	// started once, its calls on helpers prepared for them).
	MCP Latency `json:"mcp"`
	// CLICall is `toolsrv call`, a new process each time; CLIShow is
	// `toolsrv show` of the same tool, the same start without the call.
	CLICall Latency `json:"cliCall"`
	CLIShow Latency `json:"cliShow"`
	// Bwrap is bubblewrap running the same command in its sandbox
	// (--ro-bind / / --dev /dev --proc /proc --unshare-all
	// --die-with-parent); BwrapNote says why not, when it is not there.
	Bwrap     *Latency `json:"bwrap,omitempty"`
	BwrapNote string   `json:"bwrapNote,omitempty"`
	// Bare is the command itself, forked and executed from Go.
	Bare Latency `json:"bare"`
}

// callWay is one way to run the tool: run makes one call and returns
// its output.
type callWay struct {
	name string
	run  func(ctx context.Context) ([]byte, error)
	out  *[]time.Duration
}

// runCalls measures the call path (cfg.Calls calls after cfg.CallWarmup,
// every way in turn each round) with the toolsrv binary cfg.Binary.
func runCalls(ctx context.Context, cfg Config) (*CallResult, error) {
	dir, err := os.MkdirTemp(cfg.WorkDir, "calls-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tools, work, home := filepath.Join(dir, "tools"), filepath.Join(dir, "work"), filepath.Join(dir, "home")
	for _, d := range []string{tools, work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	meta, _ := json.Marshal(map[string]string{"description": "reads its input and says ok", "cmd": callTool})
	if err := os.WriteFile(filepath.Join(tools, "okcat.meta"), meta, 0o644); err != nil {
		return nil, err
	}
	// toolsrv's own files (caches, the usage history) in a home of the
	// benchmark's: the user's are left alone.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	input := []byte("{}")
	command := func(name string, args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, name, args...)
		c.Env, c.Dir, c.Stdin = env, work, bytes.NewReader(input)
		return c
	}

	srv, err := startMCP(ctx, cfg.Binary, env, tools, work)
	if err != nil {
		return nil, err
	}
	defer srv.close()

	cr := &CallResult{Calls: cfg.Calls, Warmup: cfg.CallWarmup}
	var mcpT, callT, showT, bwrapT, bareT []time.Duration
	ways := []callWay{
		{"toolsrv mcp call_tool", func(ctx context.Context) ([]byte, error) { return srv.callTool(ctx, "okcat") }, &mcpT},
		{"toolsrv call", func(ctx context.Context) ([]byte, error) {
			return command(cfg.Binary, "call", "--tools", tools, "okcat", "{}").Output()
		}, &callT},
		{"toolsrv show", func(ctx context.Context) ([]byte, error) {
			out, err := command(cfg.Binary, "show", "--tools", tools, "okcat").Output()
			if err == nil && bytes.Contains(out, []byte("okcat")) {
				out = []byte("ok\n")
			}
			return out, err
		}, &showT},
	}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		ways = append(ways, callWay{"bwrap", func(ctx context.Context) ([]byte, error) {
			return command(bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-all", "--die-with-parent",
				"/bin/sh", "-c", callTool).Output()
		}, &bwrapT})
	} else {
		cr.BwrapNote = "bwrap is not installed"
	}
	ways = append(ways, callWay{"the bare command", func(ctx context.Context) ([]byte, error) {
		return command("/bin/sh", "-c", callTool).Output()
	}, &bareT})

	for round := range cfg.CallWarmup + cfg.Calls {
		for _, w := range ways {
			start := time.Now()
			out, err := w.run(ctx)
			d := time.Since(start)
			if err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
				}
				return nil, fmt.Errorf("%s: %w", w.name, err)
			}
			if strings.TrimSpace(string(out)) != "ok" {
				return nil, fmt.Errorf("%s said %q, want ok", w.name, out)
			}
			if round >= cfg.CallWarmup {
				*w.out = append(*w.out, d)
			}
		}
	}
	cr.MCP, cr.CLICall, cr.CLIShow, cr.Bare = Summarize(mcpT), Summarize(callT), Summarize(showT), Summarize(bareT)
	if bwrapT != nil {
		l := Summarize(bwrapT)
		cr.Bwrap = &l
	}
	return cr, nil
}

// mcpClient is a `toolsrv mcp` over stdio and a client of its: JSON-RPC
// messages, one a line.
type mcpClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startMCP(ctx context.Context, bin string, env []string, tools, work string) (*mcpClient, error) {
	cmd := exec.CommandContext(ctx, bin, "mcp", "--tools", tools, "--workdir", work)
	cmd.Env, cmd.Dir = env, work
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting toolsrv mcp: %w", err)
	}
	c := &mcpClient{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if _, err := c.request(ctx, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]string{"name": "toolsrv bench", "version": "1"}}); err != nil {
		c.close()
		return nil, fmt.Errorf("toolsrv mcp: %w (it said: %s)", err, bytes.TrimSpace(stderr.Bytes()))
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *mcpClient) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// request sends a request and returns its result (the messages between,
// notifications, are passed over).
func (c *mcpClient) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.id++
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for ctx.Err() == nil {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the answer to %s: %w", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != c.id {
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	}
	return nil, ctx.Err()
}

// callTool calls tool through call_tool and returns its text.
func (c *mcpClient) callTool(ctx context.Context, tool string) ([]byte, error) {
	res, err := c.request(ctx, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": tool, "arguments": map[string]any{}}})
	if err != nil {
		return nil, err
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	if r.IsError {
		return nil, fmt.Errorf("call_tool failed: %s", b.String())
	}
	return []byte(b.String()), nil
}

func (c *mcpClient) close() {
	c.in.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}
