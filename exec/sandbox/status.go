package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"syscall"
)

// Status is what the helper reports on its status pipe (StatusFD) when it
// ends: either why the sandbox could not be applied or the tool not
// started (Error), or how the tool ended (Exit, or Signal when a signal
// killed it). One JSON object a line; nothing written means the helper
// itself was killed. A prepared helper writes one line before (Ready).
type Status struct {
	Error  string `json:"error,omitempty"`
	Exit   int    `json:"exit"`
	Signal int    `json:"signal,omitempty"`
	// Killed: the helper ended the tool on the server's request (timeout,
	// cancellation) rather than the tool ending on its own.
	Killed bool `json:"killed,omitempty"`
	// SharedProc says why the call's PID namespace could not get a /proc
	// of its own (the tool saw the host's, where PIDs are not its own);
	// empty when it had one, or had no PID namespace.
	SharedProc string `json:"sharedProc,omitempty"`
	// Ready: a prepared helper has prepared its call and waits for its Go
	// (a line before the one that reports how the tool ended).
	Ready bool `json:"ready,omitempty"`
}

// ReadStatus parses what the helper wrote; ok is false when it wrote
// nothing. It returns as soon as the helper has written its line (one JSON
// object and a newline), without waiting for the helper to exit.
func ReadStatus(r io.Reader) (st Status, ok bool, err error) {
	b, err := bufio.NewReaderSize(io.LimitReader(r, 64<<10), 512).ReadBytes('\n')
	if err != nil && err != io.EOF {
		return Status{}, false, err
	}
	if len(b) == 0 {
		return Status{}, false, nil
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return Status{}, false, fmt.Errorf("the sandbox helper reported %q: %w", b, err)
	}
	return st, true, nil
}

// statusOf turns a wait status into a Status.
func statusOf(ws syscall.WaitStatus) Status {
	if ws.Signaled() {
		return Status{Exit: -1, Signal: int(ws.Signal())}
	}
	return Status{Exit: ws.ExitStatus()}
}
