package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolsrv/toolsrv/usage"
)

// maxHeld is how many events a store holds in memory while neither the
// server nor the spool takes them; beyond, Record fails (the caller
// warns). A full disk is a fault to fix, not a place to live: 10,000
// calls is hours of an agent's work.
const maxHeld = 10_000

// keep puts preps (recorded at now) in the spool, to be sent when the
// server is back. When the spool cannot take them (its file cannot be
// opened or written: a full disk, an I/O error; never set aside for
// that), they are held in memory, after any held before (the order
// recorded), and go to the spool or the server as soon as either takes
// them (flushLoop, Close). A full spool or memory is an error: these
// calls are not recorded.
func (s *store) keep(ctx context.Context, preps []usage.Prepared, now time.Time) error {
	ps := make([]pending, len(preps))
	for i, p := range preps {
		ps[i] = pending{Prepared: p, at: now}
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if len(s.held) == 0 {
		err := s.local.spool(ctx, ps, maxSpool)
		if err == nil || errors.Is(err, errSpoolFull) {
			if err != nil {
				return fmt.Errorf("usage store %s is unreachable, and %w", s.where, err)
			}
			s.spooling.Store(true)
			s.signal(s.flushNow)
			return nil
		}
		if !s.heldSaid {
			s.heldSaid = true
			s.opts.Logger.Warn("usage calls the shared store cannot take now are held in memory: the local spool cannot take them",
				"store", s.where, "err", err)
		}
	}
	if len(s.held)+len(ps) > maxHeld {
		return fmt.Errorf("usage store %s is unreachable, its local spool cannot take calls, and %d are held in memory already: these calls are not recorded", s.where, len(s.held))
	}
	s.held = append(s.held, ps...)
	s.spooling.Store(true)
	s.signal(s.flushNow)
	return nil
}

// spoolHeld moves the events held in memory to the spool, if it takes
// them now; the error says how many it could not keep.
func (s *store) spoolHeld(ctx context.Context) error {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if len(s.held) == 0 {
		return nil
	}
	err := s.local.spool(ctx, s.held, maxSpool)
	if err != nil {
		return fmt.Errorf("usage store %s: the calls held in memory (%d) could not be spooled: %w", s.where, len(s.held), err)
	}
	s.held, s.heldSaid = nil, false
	return nil
}

// heldHead is up to n of the events held, the oldest first.
func (s *store) heldHead(n int) []pending {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return append([]pending(nil), s.held[:min(n, len(s.held))]...)
}

// dropHeld removes the n oldest events held (sent).
func (s *store) dropHeld(n int) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	s.held = s.held[min(n, len(s.held)):]
	if len(s.held) == 0 {
		s.held, s.heldSaid = nil, false
	}
}

// heldCount is how many events are held, and since when.
func (s *store) heldCount() (int64, time.Time) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if len(s.held) == 0 {
		return 0, time.Time{}
	}
	return int64(len(s.held)), s.held[0].at
}
