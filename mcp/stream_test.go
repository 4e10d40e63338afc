package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsrv/toolsrv/exec"
)

// droppingServer is a streamable HTTP MCP server (written by hand: the
// wire, as the spec has it) whose tools/call answers on an SSE stream
// that it drops after its first event, as a server restarting or a proxy
// cutting long requests does:
//
//	resume  the first event has an ID and a retry field; a GET with that
//	        ID as Last-Event-ID gets the call's result (the stream
//	        resumed)
//	drop    every stream, the resumed ones too, sends the same event and
//	        is dropped: the client makes no progress
type droppingServer struct {
	retry time.Duration

	mu      sync.Mutex
	dropped time.Time       // when the call's stream was dropped
	resumes []time.Time     // GETs carrying Last-Event-ID, when
	ids     []string        // their Last-Event-ID
	pending json.RawMessage // the call waiting for its result
}

func (s *droppingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Mcp-Session-Id", "s1")
	if r.Method == http.MethodDelete {
		return
	}
	if r.Method == http.MethodGet {
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		s.mu.Lock()
		s.resumes = append(s.resumes, time.Now())
		s.ids = append(s.ids, last)
		id := s.pending
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if last == "drop-1" {
			fmt.Fprintf(w, "id: drop-1\nretry: %d\ndata: \n\n", s.retry.Milliseconds())
			return // dropped again, no progress
		}
		fmt.Fprintf(w, "id: resume-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}
	switch {
	case msg.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "initialize":
		reply(`{"protocolVersion":"2025-11-25","serverInfo":{"name":"dropping","version":"1"},"capabilities":{"tools":{}}}`)
	case msg.Method == "tools/list":
		reply(`{"tools":[{"name":"resume","inputSchema":{"type":"object"}},{"name":"drop","inputSchema":{"type":"object"}}]}`)
	case msg.Method == "tools/call":
		s.mu.Lock()
		s.pending = msg.ID
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: %s-1\nretry: %d\ndata: \n\n", msg.Params.Name, s.retry.Milliseconds())
		w.(http.Flusher).Flush()
		s.mu.Lock()
		s.dropped = time.Now()
		s.mu.Unlock()
		// Returning ends the response: the stream is dropped.
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, msg.ID)
	}
}

// A call whose stream the server drops is resumed as the spec says: after
// the server's retry delay, a GET with the last event's ID as
// Last-Event-ID, which brings the result. A server that drops every
// resumed stream without a new event gets at most streamRetries attempts,
// and the call fails instead of waiting for ever.
func TestStreamResumed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), safetyNet)
	defer cancel()
	s := &droppingServer{retry: 200 * time.Millisecond}
	srv := httptest.NewServer(s)
	defer srv.Close()
	rp := runRemote(t, ctx, ServerConfig{URL: srv.URL}, ProviderOptions{})
	rp.waitTools(t, ctx)

	r, err := rp.Call(ctx, "resume", []byte("{}"), exec.CallContext{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("the call whose stream was dropped: %v", err)
	}
	if got := strings.TrimSpace(string(r.Stdout)); got != "resumed" {
		t.Errorf("result %q, want the one the resumed stream brought", got)
	}
	s.mu.Lock()
	if len(s.ids) != 1 || s.ids[0] != "resume-1" {
		t.Errorf("resumed with Last-Event-ID %q, want once with resume-1", s.ids)
	} else if wait := s.resumes[0].Sub(s.dropped); wait < s.retry {
		t.Errorf("resumed %s after the drop, before the server's retry of %s", wait, s.retry)
	}
	s.ids, s.resumes = nil, nil
	s.retry = 10 * time.Millisecond
	s.mu.Unlock()

	_, err = rp.Call(ctx, "drop", []byte("{}"), exec.CallContext{Timeout: time.Minute})
	if err == nil {
		t.Fatal("a call whose stream never resumes succeeded")
	}
	s.mu.Lock()
	n := len(s.ids)
	s.mu.Unlock()
	t.Logf("%d attempts to resume the stream that makes no progress; the call: %v", n, err)
	if n < 1 || n > streamRetries+1 {
		t.Errorf("%d attempts to resume a stream that makes no progress, want 1 to %d", n, streamRetries+1)
	}
	if strings.Contains(err.Error(), "no answer within") {
		t.Errorf("the call waited for its timeout instead of giving up the stream: %v", err)
	}
}
