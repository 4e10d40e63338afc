package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsrv/toolsrv/usage"
)

// listen follows the namespace's channel on a connection of its own: each
// notification (another instance's commit) wakes the readers (Notify). A
// lost connection is made again every retryEvery; once back, the readers
// are woken and the spool flushed (what happened meanwhile is not told).
func (s *store) listen(ctx context.Context) {
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, s.cfg.ConnConfig.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize())
			if err == nil {
				if s.down.Load() {
					s.down.Store(false)
				}
				s.signal(s.wake)
				s.signal(s.flushNow)
			}
			for err == nil {
				if _, err = conn.WaitForNotification(ctx); err == nil {
					s.signal(s.wake)
				}
			}
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Close(cctx)
			cancel()
		}
		if ctx.Err() == nil && isDown(err) {
			s.down.Store(true)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryEvery):
		}
	}
}

// flushLoop sends the spool when told (flushNow) and every retryEvery
// while it holds events, and moves the events held in memory to the
// spool as soon as it takes them (so that they outlive the process).
func (s *store) flushLoop(ctx context.Context) {
	t := time.NewTicker(retryEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.flushNow:
		case <-t.C:
			if !s.spooling.Load() {
				continue
			}
		}
		if n, _ := s.heldCount(); n > 0 {
			s.spoolHeld(ctx) // an error: held, tried again at the next tick
		}
		s.flush(ctx)
	}
}

// flushBatch is how many spooled events go in one transaction.
const flushBatch = 500

// flush sends the spooled events, the oldest first, a batch a
// transaction; each batch leaves the spool once on the server. An event
// sent whose removal from the spool was lost (a crash in between) is sent
// again and skipped there by its ID: on the server exactly once. The
// events held in memory (recorded after the spool's) follow; while the
// spool cannot be read they go first, and the spool's wait until it can.
func (s *store) flush(ctx context.Context) {
	for ctx.Err() == nil {
		evs, ferr := s.local.spooled(ctx, flushBatch)
		if ferr != nil {
			s.opts.Logger.Debug("the spool of unsent usage calls is unreadable now", "err", ferr)
			evs = nil
		}
		var held []pending
		if len(evs) == 0 {
			if held = s.heldHead(flushBatch); len(held) == 0 {
				if ferr != nil {
					return // tried again at the next tick
				}
				s.spooling.Store(false)
				// A Record may have spooled after the read: look once more.
				if n, _, err := s.local.pending(ctx); err == nil && n > 0 {
					s.spooling.Store(true)
					continue
				}
				if n, _ := s.heldCount(); n > 0 {
					s.spooling.Store(true)
					continue
				}
				return
			}
			for _, p := range held {
				evs = append(evs, p.Event)
			}
		}
		now := s.opts.Now()
		preps := make([]usage.Prepared, 0, len(evs))
		ids := make([]string, 0, len(evs))
		for _, ev := range evs {
			ids = append(ids, ev.ID)
			p, err := usage.Prepare(ev, now)
			if err != nil {
				continue // cannot be: it was prepared before
			}
			preps = append(preps, p)
		}
		err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error { return s.record(ctx, c, preps, now) })
		if err != nil {
			if !isDown(err) && !s.refused.Swap(true) { // said once
				s.opts.Logger.Warn("spooled usage calls refused by the shared store; kept to try again", "store", s.where, "err", err)
			}
			return
		}
		s.refused.Store(false)
		if held != nil {
			s.dropHeld(len(held))
			continue
		}
		if err := s.local.unspool(ctx, ids); err != nil {
			s.opts.Logger.Warn("sent usage calls not removed from the spool (they will be skipped when sent again)", "err", err)
			return
		}
	}
}
