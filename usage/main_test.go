package usage

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"
	"time"
)

// The test binary doubles as a process that records into a store, for the
// tests of several processes at once and of kill -9:
//
//	USAGE_CHILD=burst USAGE_DB=PATH USAGE_N=M USAGE_NAME=NAME: waits for
//	standard input to close (so that every child starts at once), then
//	records M events one at a time and exits.
//	USAGE_CHILD=loop USAGE_DB=PATH USAGE_NAME=NAME: records events one at a
//	time until killed, printing each one's number on standard output
//	once Record has returned (committed).
func TestMain(m *testing.M) {
	if mode := os.Getenv("USAGE_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	os.Exit(m.Run())
}

// childRequest is the request of a child's event i: a few distinct ones,
// so that events merge.
func childRequest(i int) string { return fmt.Sprintf("Show the  status %d", i%5) }

func child(mode string) int {
	ctx := context.Background()
	path, name := os.Getenv("USAGE_DB"), os.Getenv("USAGE_NAME")
	s, _, err := Open(ctx, path, uncapped)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer s.Close()
	switch mode {
	case "burst":
		n, _ := strconv.Atoi(os.Getenv("USAGE_N"))
		io.Copy(io.Discard, os.Stdin) // the start signal
		for i := range n {
			ev := Event{Request: childRequest(i), Tool: "tool_" + strconv.Itoa(i%3), OK: i%4 != 0, Agent: name,
				Source: SourceCLI, ID: fmt.Sprintf("%s-%d", name, i)}
			if err := s.Record(ctx, ev); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
		}
		return 0
	case "loop":
		out := bufio.NewWriter(os.Stdout)
		for i := 0; ; i++ {
			// Each event is an entry of its own, a long request so that
			// the child writes pages, not just a few bytes.
			ev := Event{Request: fmt.Sprintf("%s request %d %0500d", name, i, i), Tool: "tool", OK: true, Agent: name,
				Source: SourceCLI, Time: time.Now()}
			if err := s.Record(ctx, ev); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
			fmt.Fprintln(out, i)
			out.Flush()
		}
	}
	return 2
}
