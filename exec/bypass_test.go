package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testBroker serves the bypass protocol with a fixed policy and records
// the requests.
type testBroker struct {
	socket string
	reqs   chan BypassRequest
}

func startBroker(t *testing.T, decide Decider) *testBroker {
	t.Helper()
	// Unix socket paths are short; t.TempDir() can be too long.
	dir, err := os.MkdirTemp("", "brk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &testBroker{socket: filepath.Join(dir, "s"), reqs: make(chan BypassRequest, 8)}
	ln, err := net.Listen("unix", b.socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ServeBroker(ctx, ln, func(ctx context.Context, req BypassRequest) BypassAnswer {
			b.reqs <- req
			return decide(ctx, req)
		}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

func TestBypass(t *testing.T) {
	f := newFixture(t)
	// The tool proves it ran unsandboxed by reading outside its workdir.
	secret := filepath.Join(f.outside, "secret")
	os.WriteFile(secret, []byte("outside-data"), 0o644)
	marker := filepath.Join(f.work, "ran")
	f.add("installer", `{"description":"needs the whole machine","bypass":true,"args":{"type":"object","properties":{"pkg":{"type":"string"}}}}`,
		fmt.Sprintf("#!/bin/sh\ntouch %s\ncat %s\n", marker, secret))
	args := `{"pkg":"jq"}`

	t.Run("approved: runs unsandboxed once", func(t *testing.T) {
		os.Remove(marker)
		b := startBroker(t, func(context.Context, BypassRequest) BypassAnswer { return BypassAnswer{Allow: true} })
		r := f.runner(func(o *Options) { o.BypassSocket = b.socket })
		res := f.mustOK(f.call(r, "installer", args))
		if string(res.Stdout) != "outside-data" || !res.Unsandboxed {
			t.Errorf("stdout %q unsandboxed %v", res.Stdout, res.Unsandboxed)
		}
		req := <-b.reqs
		if req.Type != "bypass" || req.Tool != "installer" || string(req.Arguments) != args || req.WorkDir != f.work ||
			req.Session != "s1" || req.Agent != "a1" || len(req.Command) != 1 || req.TimeoutSeconds <= 0 {
			t.Errorf("request %+v", req)
		}
	})
	refused := []struct {
		name   string
		socket func(t *testing.T) string
		want   string
	}{
		{"denied", func(t *testing.T) string {
			return startBroker(t, func(context.Context, BypassRequest) BypassAnswer {
				return BypassAnswer{Reason: "not today"}
			}).socket
		}, "denied by the approval broker: not today"},
		{"never answers", func(t *testing.T) string {
			return startBroker(t, func(ctx context.Context, _ BypassRequest) BypassAnswer {
				<-ctx.Done() // a person who never types anything
				return BypassAnswer{Allow: true}
			}).socket
		}, "did not answer within 300ms"},
		{"no broker configured", func(*testing.T) string { return "" }, "OLLIE_BYPASS_SOCKET is not set"},
		{"nobody listening", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.sock") }, "no approval broker answering"},
		{"garbage answer", func(t *testing.T) string { return rawBroker(t, "yes please\n") }, "not {\"allow\": bool}"},
		{"hangs up", func(t *testing.T) string { return rawBroker(t, "") }, "closed the connection"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			r := f.runner(func(o *Options) {
				o.BypassSocket = tc.socket(t)
				o.BypassTimeout = 300 * time.Millisecond
			})
			_, err := f.call(r, "installer", args)
			ce := wantKind(t, err, ErrBypassRefused)
			if !strings.Contains(ce.Error(), tc.want) {
				t.Errorf("message %q lacks %q", ce.Error(), tc.want)
			}
			if exists(marker) {
				t.Fatal("the tool ran although the bypass was refused")
			}
		})
	}
	t.Run("invalid arguments are refused before asking", func(t *testing.T) {
		b := startBroker(t, func(context.Context, BypassRequest) BypassAnswer { return BypassAnswer{Allow: true} })
		r := f.runner(func(o *Options) { o.BypassSocket = b.socket })
		wantKind(t, errOf(f.call(r, "installer", `{"pkg":1}`)), ErrInvalidArgs)
		select {
		case req := <-b.reqs:
			t.Errorf("broker was asked: %+v", req)
		default:
		}
	})
}

// rawBroker answers every connection with reply (after reading the
// request line) and hangs up.
func rawBroker(t *testing.T, reply string) string {
	dir, _ := os.MkdirTemp("", "brk")
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(c).ReadBytes('\n')
			c.Write([]byte(reply))
			c.Close()
		}
	}()
	return sock
}

func TestServeBrokerRejectsMalformed(t *testing.T) {
	b := startBroker(t, func(context.Context, BypassRequest) BypassAnswer { return BypassAnswer{Allow: true} })
	c, err := net.Dial("unix", b.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(`{"type":"something else","tool":"x"}` + "\n"))
	var a BypassAnswer
	if err := json.NewDecoder(c).Decode(&a); err != nil || a.Allow {
		t.Fatalf("answer %+v, %v", a, err)
	}
}
