package exec

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"
)

// The bypass protocol: toolsrv connects to the Unix socket named by
// OLLIE_BYPASS_SOCKET, writes one BypassRequest as a JSON line and reads one
// BypassAnswer as a JSON line. Only {"allow": true} approves; anything else
// (a denial, malformed JSON, a closed connection, no answer before the
// timeout, no broker) refuses the call. An approval is good for that one
// call only.

// BypassRequest asks a broker whether a tool may run outside the sandbox.
type BypassRequest struct {
	Type      string          `json:"type"` // always "bypass"
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	WorkDir   string          `json:"workdir"`
	Session   string          `json:"session,omitempty"`
	Agent     string          `json:"agent,omitempty"`
	// Command is what will run (arguments go to its standard input).
	Command     []string `json:"command"`
	Description string   `json:"description,omitempty"`
	// TimeoutSeconds is how long toolsrv waits for the answer.
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

// BypassAnswer is a broker's decision.
type BypassAnswer struct {
	Allow  bool   `json:"allow"`
	Reason string `json:"reason,omitempty"`
}

// askBroker sends req to the broker at socket and waits up to timeout for
// its answer. It returns nil only for an explicit approval.
func askBroker(ctx context.Context, socket string, timeout time.Duration, req BypassRequest) error {
	if socket == "" {
		return errors.New("no approval broker: OLLIE_BYPASS_SOCKET is not set and no --bypass-socket was given (start one with \"toolsrv broker --socket PATH\", then pass its PATH to toolsrv serve --bypass-socket PATH or toolsrv call --bypass-socket PATH, or set OLLIE_BYPASS_SOCKET=PATH)")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("no approval broker answering on %s: %w", socket, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()

	req.Type = "bypass"
	req.TimeoutSeconds = timeout.Seconds()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sending the request to the approval broker on %s: %w", socket, err)
	}
	r := bufio.NewReaderSize(conn, 4096)
	answer, err := r.ReadBytes('\n')
	if err != nil && len(answer) == 0 {
		if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("the approval broker on %s did not answer within %s", socket, timeout)
		}
		return fmt.Errorf("the approval broker on %s closed the connection without answering: %w", socket, err)
	}
	if ctx.Err() != nil || time.Now().After(deadline) {
		// Data that arrived after the deadline (a late timer on a busy
		// machine) is not an answer in time.
		return fmt.Errorf("the approval broker on %s did not answer within %s", socket, timeout)
	}
	var a BypassAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("the approval broker on %s answered something that is not {\"allow\": bool}: %w", socket, err)
	}
	if !a.Allow {
		if a.Reason != "" {
			return fmt.Errorf("denied by the approval broker: %s", a.Reason)
		}
		return errors.New("denied by the approval broker")
	}
	return nil
}

// Decider decides one bypass request. ctx ends when the requester stops
// waiting.
type Decider func(ctx context.Context, req BypassRequest) BypassAnswer

// ServeBroker answers bypass requests on ln until ctx ends, calling decide
// for each (one at a time: a person answers them in order). It is the
// server side of the protocol, used by "toolsrv broker" and by tests.
func ServeBroker(ctx context.Context, ln net.Listener, decide Decider, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var one sync.Mutex // one decision at a time
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting bypass requests: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			serveBrokerConn(ctx, conn, decide, &one, log)
		}()
	}
}

func serveBrokerConn(ctx context.Context, conn net.Conn, decide Decider, one *sync.Mutex, log *slog.Logger) {
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReaderSize(conn, 64<<10).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		log.Warn("bypass request unreadable", "err", err)
		return
	}
	var req BypassRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Type != "bypass" {
		log.Warn("bypass request malformed", "err", err)
		json.NewEncoder(conn).Encode(BypassAnswer{Allow: false, Reason: "malformed request"})
		return
	}
	wait := time.Duration(req.TimeoutSeconds * float64(time.Second))
	if wait <= 0 {
		wait = DefaultBypassTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	one.Lock()
	var a BypassAnswer
	if dctx.Err() != nil {
		a = BypassAnswer{Reason: "the request expired before it could be asked"}
	} else {
		a = decide(dctx, req)
		if dctx.Err() != nil && a.Allow {
			// Too late: the requester has given up and must not find an
			// approval it no longer waits for.
			a = BypassAnswer{Reason: "answered after the request expired"}
		}
	}
	one.Unlock()
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewEncoder(conn).Encode(a); err != nil {
		log.Warn("bypass answer not delivered (the requester gave up?)", "tool", req.Tool, "err", err)
	}
}
