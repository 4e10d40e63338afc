package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every bad line gets its JSON-RPC error and the session goes on; the
// end of the input closes Closed and ends the session.
func TestStdioBadLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	st := newServerStdio(inR, outW, slog.New(slog.DiscardHandler), 200, 0)
	srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx, st.Transport()) }()
	answers := make(chan string)
	go func() {
		out := bufio.NewScanner(outR)
		for out.Scan() {
			answers <- out.Text()
		}
	}()
	next := func() map[string]any {
		t.Helper()
		var line string
		select {
		case line = <-answers:
		case <-ctx.Done():
			t.Fatal("no answer")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		return m
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	if m := next(); m["id"] != 1.0 || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\r\n")
	for i, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{"this is not JSON", -32700, nil},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"`, -32700, nil},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"} {}`, -32700, nil},
		{"\x00\xff", -32700, nil},
		{strings.Repeat(" ", 150) + `"` + strings.Repeat("x", 100) + `"`, -32700, nil},
		{`42`, -32600, nil},
		{`null`, -32600, nil},
		{`[]`, -32600, nil},
		{`[{"jsonrpc":"2.0","id":6,"method":"ping"},7]`, -32600, nil},
		{`{"id":8,"method":"ping"}`, -32600, 8.0},
		{`{"jsonrpc":"1.0","id":"x","method":"ping"}`, -32600, "x"},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, nil},
	} {
		send(tc.line + "\n")
		m := next()
		e, _ := m["error"].(map[string]any)
		if id, ok := m["id"]; !ok || id != tc.id || e == nil || e["code"] != tc.code {
			t.Errorf("%q: answer %v, want error %v with id %v", tc.line, m, tc.code, tc.id)
		}
		// Blank lines are skipped, as JSON's white space between values.
		send(fmt.Sprintf("\n  \r\n{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", 100+i))
		if m := next(); m["id"] != float64(100+i) || m["result"] == nil {
			t.Errorf("ping after %q: %v", tc.line, m)
		}
	}
	// The last line needs no '\n'.
	send(`not JSON either`)
	inW.Close()
	if m := next(); m["error"] == nil || m["error"].(map[string]any)["code"] != -32700.0 {
		t.Errorf("the last line: %v", m)
	}
	select {
	case <-st.Closed():
	case <-ctx.Done():
		t.Fatal("Closed is still open after the end of the input")
	}
	select {
	case err := <-ran:
		t.Logf("the session ended: %v", err)
	case <-ctx.Done():
		t.Fatal("the session goes on after the end of the input")
	}
}

// At the end of the input, the requests read before it are answered
// before the session ends, a slow one included; one that never ends does
// not keep the session past the drain.
func TestStdioAnswersBeforeTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sleep    time.Duration // the tool's
		answered bool
	}{
		{"slow", 100 * time.Millisecond, true},
		{"hangs", time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
			defer cancel()
			srv := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
			sdk.AddTool(srv, &sdk.Tool{Name: "nap"},
				func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
					select {
					case <-time.After(tc.sleep):
					case <-ctx.Done():
						return nil, nil, ctx.Err()
					}
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "rested"}}}, nil, nil
				})
			script := strings.Join([]string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nap","arguments":{}}}`,
			}, "\n") + "\n"
			var out lockedBuffer
			st := newServerStdio(strings.NewReader(script), &out, slog.New(slog.DiscardHandler), MaxLineLength, 2*time.Second)
			ran := make(chan error, 1)
			go func() { ran <- srv.Run(ctx, st.Transport()) }()
			select {
			case <-ran:
			case <-ctx.Done():
				t.Fatal("the session goes on after the end of the input")
			}
			got := out.String()
			for _, want := range []string{`"id":1,"result"`, `"id":2,"result"`} {
				if !strings.Contains(got, want) {
					t.Errorf("no %s in the output:\n%s", want, got)
				}
			}
			if answered := strings.Contains(got, "rested"); answered != tc.answered {
				t.Errorf("the call's answer written: %v, want %v; output:\n%s", answered, tc.answered, got)
			}
		})
	}
}

// lockedBuffer is an output written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
