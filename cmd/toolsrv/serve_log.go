package main

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsrv/toolsrv/registry"
)

// What "toolsrv serve -v" logs at Info: the tools loaded, connections, rank
// requests, calls, agent profiles applied, reloads and catalog changes.
// With -v -v the packages' Debug records (the registry watcher, the index,
// the sandbox runner, the 9P sessions) come too.

// loggedListener logs each 9P connection as it is accepted and closed.
type loggedListener struct {
	net.Listener
	log *slog.Logger
	n   atomic.Int64
}

func (l *loggedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	id := l.n.Add(1)
	l.log.Info("9P client connected", "conn", id, "on", l.Addr().String(), "from", c.RemoteAddr().String())
	return &loggedConn{Conn: c, log: l.log, id: id, start: time.Now()}, nil
}

type loggedConn struct {
	net.Conn
	log   *slog.Logger
	id    int64
	start time.Time
	once  sync.Once
}

// NetConn is the connection it wraps (exec.Runner.Identify looks through
// wrappers to the socket).
func (c *loggedConn) NetConn() net.Conn { return c.Conn }

func (c *loggedConn) Close() error {
	c.once.Do(func() {
		c.log.Info("9P client disconnected", "conn", c.id, "after", time.Since(c.start).Round(time.Millisecond))
	})
	return c.Conn.Close()
}

// loggedSource logs the root ctl's "reload".
type loggedSource struct {
	*registry.Registry
	log *slog.Logger
}

func (s loggedSource) Load(ctx context.Context) error {
	err := s.Registry.Load(ctx)
	cat := s.Catalog()
	s.log.Info("reload requested", "revision", cat.Revision, "tools", len(cat.Tools), "invalid", len(cat.InvalidFiles()), "problems", len(cat.Problems), "err", err)
	return err
}

// loggedProfiles logs the profile applied to each new agent directory.
func loggedProfiles(load func(string) (*registry.Profile, error), log *slog.Logger) func(string) (*registry.Profile, error) {
	return func(name string) (*registry.Profile, error) {
		p, err := load(name)
		switch {
		case err != nil:
			log.Info("agent profile refused", "agent", name, "err", err)
		case p == nil || p.AllowTools == nil:
			log.Info("agent profile", "agent", name, "autoLoad", p.AutoLoad, "allowTools", "all")
		default:
			log.Info("agent profile", "agent", name, "autoLoad", p.AutoLoad, "allowTools", *p.AllowTools)
		}
		return p, err
	}
}

// logChanges logs every catalog change until changes is closed. "invalid"
// counts the files left out, "problems" what is wrong with them (a file can
// have several).
func logChanges(changes <-chan registry.Change, log *slog.Logger) {
	for ch := range changes {
		log.Info("catalog changed", "revision", ch.Catalog.Revision, "tools", len(ch.Catalog.Tools),
			"updated", ch.Upserted, "removed", ch.Removed, "invalid", len(ch.Catalog.InvalidFiles()), "problems", len(ch.Catalog.Problems))
	}
}
