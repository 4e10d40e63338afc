package exec

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/toolsrv/toolsrv/registry"
)

// capBuffer keeps the first max bytes written to it and counts the rest.
// It never fails a write, so the tool is never blocked or killed by a full
// pipe: the excess is read and dropped.
type capBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.max - len(c.buf); room > 0 {
		if len(p) > room {
			c.buf = append(c.buf, p[:room]...)
		} else {
			c.buf = append(c.buf, p...)
		}
	}
	return len(p), nil
}

// bytes returns the kept bytes and whether anything was dropped.
func (c *capBuffer) bytes() ([]byte, bool, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf, c.total > int64(len(c.buf)), c.total
}

// agentWeight is the weight of an exclusive call on its agent's semaphore;
// every other call of the agent weighs 1, so an exclusive call waits for
// all of them and keeps out all of them. (semaphore.Weighted is FIFO, so a
// waiting exclusive call is not starved by a stream of parallel ones.)
const agentWeight = 1 << 30

// gates implements the tools' concurrency classes (registry.Concurrency):
//   - parallel: no limit of its own;
//   - serial: one call of this tool at a time (across all sessions);
//   - exclusive: no other call of the same agent (session + agent) runs
//     meanwhile.
//
// A serial call takes its tool's gate first and then a share of its agent's
// gate; an exclusive call takes the whole agent gate. Waiting respects the
// call's context.
type gates struct {
	mu     sync.Mutex
	tools  map[string]*refSem
	agents map[string]*refSem
}

type refSem struct {
	sem  *semaphore.Weighted
	refs int
}

func newGates() *gates {
	return &gates{tools: map[string]*refSem{}, agents: map[string]*refSem{}}
}

func (g *gates) get(m map[string]*refSem, key string, size int64) *semaphore.Weighted {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := m[key]
	if r == nil {
		r = &refSem{sem: semaphore.NewWeighted(size)}
		m[key] = r
	}
	r.refs++
	return r.sem
}

func (g *gates) put(m map[string]*refSem, key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := m[key]; r != nil {
		if r.refs--; r.refs == 0 {
			delete(m, key)
		}
	}
}

// acquire waits until the call may run under t's concurrency class and
// returns the function that releases it.
func (g *gates) acquire(ctx context.Context, t *registry.Tool, cc CallContext) (func(), error) {
	var releases []func()
	release := func() {
		for i := len(releases) - 1; i >= 0; i-- {
			releases[i]()
		}
	}
	if t.Concurrency == registry.Serial {
		sem := g.get(g.tools, t.Name, 1)
		if err := sem.Acquire(ctx, 1); err != nil {
			g.put(g.tools, t.Name)
			return nil, fmt.Errorf("waiting for the previous call of serial tool %s: %w", t.Name, err)
		}
		releases = append(releases, func() { sem.Release(1); g.put(g.tools, t.Name) })
	}
	key := cc.Session + "\x00" + cc.Agent
	w := int64(1)
	if t.Concurrency == registry.Exclusive {
		w = agentWeight
	}
	sem := g.get(g.agents, key, agentWeight)
	if err := sem.Acquire(ctx, w); err != nil {
		g.put(g.agents, key)
		release()
		return nil, fmt.Errorf("waiting for this agent's exclusive call to finish: %w", err)
	}
	releases = append(releases, func() { sem.Release(w); g.put(g.agents, key) })
	return release, nil
}
