package ninep

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/hugelgupf/p9/linux"
)

// The audit's hole 5: a tool held 255 of the 256 connections and the
// owner's own client got "too many users". Tools of many agents (and
// connections the server denies) open as many connections as they can,
// with the default limits; the owner then still connects and works.
func TestToolsCannotTakeEveryConnection(t *testing.T) {
	e, next := accessEnv(t, nil)
	owner := e.client()
	mustMkdir(t, owner, "session/s")
	max := e.srv.opts.Limits.MaxConns
	held := 1 // the owner's
	tools := map[string]int{}
	// connectAll opens connections as acc until the server refuses one
	// (or every slot is taken) and returns how many it got.
	connectAll := func(acc Access) int {
		next.Store(&acc)
		n := 0
		for held < max {
			cl, err := Connect(e.ctx, e.addr)
			if err != nil {
				if !errors.Is(err, linux.EUSERS) {
					t.Fatalf("connection %d as %v: %v, want EUSERS", n+1, acc, err)
				}
				break
			}
			t.Cleanup(func() { cl.Close() })
			n++
			held++
		}
		return n
	}
	for i := 0; i < e.srv.opts.Limits.MaxAgents; i++ {
		agent := fmt.Sprintf("t%02d", i)
		mustMkdir(t, owner, "session/s/agent/"+agent)
		n := connectAll(Access{Session: "s", Agent: agent})
		if n == 0 {
			break // the tools' share is taken
		}
		tools[agent] = n
	}
	denied := connectAll(Access{Denied: "refused: a tool of another toolsrv"})
	t.Logf("tool connections held: %d agents %v, %d denied; %d connections in all (limit %d)", len(tools), tools, denied, held, max)

	next.Store(&Access{})
	cl, err := Connect(e.ctx, e.addr)
	if err != nil {
		t.Fatalf("the owner's client, with tools holding every connection they can: %v", err)
	}
	defer cl.Close()
	mustMkdir(t, cl, "session/o")
	if got := entryNames(t, cl, "session/o"); !reflect.DeepEqual(got, []string{"agent", "ctl", "err", "errors", "meta", "revision", "tools", "tools.json"}) {
		t.Errorf("ls session/o = %v", got)
	}
	if len(names(mustRead(t, cl, "tools"))) == 0 {
		t.Error("the owner's client reads an empty catalog")
	}
}
