package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsrv/toolsrv/usage"
)

// Snapshot returns the namespace's entries: the store's view brought up
// to date from the server (what changed since it was read; everything
// when the server cannot tell). When the server is down it returns the
// view as it was last read (saved locally, so across restarts too).
func (s *store) Snapshot(ctx context.Context) ([]usage.Entry, int64, error) {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if err := s.catchUp(ctx); err != nil && !isDown(err) {
		return nil, 0, fmt.Errorf("usage store %s: snapshot: %w", s.where, err)
	}
	out := make([]usage.Entry, 0, len(s.view))
	for _, e := range s.view {
		out = append(out, e)
	}
	return out, s.viewVersion, nil
}

// catchUp brings the view up to date from the server and saves what
// changed locally. viewMu is held.
func (s *store) catchUp(ctx context.Context) error {
	changed, removed, version, err := s.changes(ctx, s.viewVersion)
	full := false
	if errors.Is(err, usage.ErrResnapshot) {
		full = true
		changed, version, err = s.snapshot(ctx)
	}
	if err != nil {
		return err
	}
	s.apply(ctx, full, changed, removed, version)
	return nil
}

// apply puts what changed into the view (all of it when full) and saves
// it locally. viewMu is held.
func (s *store) apply(ctx context.Context, full bool, changed []usage.Entry, removed []usage.Key, version int64) {
	if full {
		s.view = make(map[usage.Key]usage.Entry, len(changed))
	}
	for _, k := range removed {
		delete(s.view, k)
		delete(s.view, s.in.alternative(k))
	}
	for _, e := range changed {
		delete(s.view, s.in.alternative(e.Key))
		s.view[e.Key] = e
		delete(s.seen, e.Key)
	}
	old := s.viewVersion
	s.viewVersion = version
	if full || len(changed) > 0 || len(removed) > 0 || old != version {
		if err := s.local.saveView(ctx, full, changed, removed, version); err != nil {
			s.opts.Logger.Warn("the local copy of the shared usage history was not saved", "err", err)
		}
	}
}

// snapshot reads every entry of the namespace from the server.
func (s *store) snapshot(ctx context.Context) ([]usage.Entry, int64, error) {
	var (
		entries []usage.Entry
		version int64
	)
	err := s.tx(ctx, readTx, func(tx pgx.Tx) error {
		entries, version = nil, 0
		var n int64
		err := tx.QueryRow(ctx, `SELECT version, entries FROM toolsrv_usage_ns WHERE namespace = $1`, s.ns).Scan(&version, &n)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // nothing recorded yet
		}
		if err != nil {
			return err
		}
		entries, err = s.scanEntries(ctx, tx, make([]usage.Entry, 0, n), ``)
		return err
	})
	return entries, version, err
}

// scanEntries appends the namespace's entries (and cond) to out.
func (s *store) scanEntries(ctx context.Context, tx pgx.Tx, out []usage.Entry, cond string, args ...any) ([]usage.Entry, error) {
	rows, err := tx.Query(ctx, `SELECT `+entryCols+` FROM toolsrv_usage_entries WHERE namespace = $1`+cond, append([]any{s.ns}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var e usage.Entry
		var failed int64
		seal, err := scanEntry(rows, &e, &failed)
		if err != nil {
			return nil, err
		}
		if !s.in.read(&e, &failed, seal) {
			s.dated(&e)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Changes asks the server what changed after version after (by the
// namespace's change counter). The server down is an error. Asked after
// the view's version (a reader following the store), what changed goes
// into the view too, so that what is read of other instances keeps the
// time this instance first read it (dated).
func (s *store) Changes(ctx context.Context, after int64) ([]usage.Entry, []usage.Key, int64, error) {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	changed, removed, version, err := s.changes(ctx, after)
	if err != nil {
		if !errors.Is(err, usage.ErrResnapshot) {
			err = fmt.Errorf("usage store %s: changes: %w", s.where, err)
		}
		return changed, removed, version, err
	}
	if after == s.viewVersion {
		s.apply(ctx, false, changed, removed, version)
	}
	return changed, removed, version, nil
}

// changes reads what changed after version after. viewMu is held (the
// entries of other instances are dated).
func (s *store) changes(ctx context.Context, after int64) ([]usage.Entry, []usage.Key, int64, error) {
	var (
		changed []usage.Entry
		removed []usage.Key
		version int64
	)
	// One round trip: a read-only transaction of one snapshot, whose
	// answers are let go when the counters say the reader must take a
	// snapshot instead.
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		var b pgx.Batch
		b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
		b.Queue(`SELECT version, horizon FROM toolsrv_usage_ns WHERE namespace = $1`, s.ns)
		b.Queue(`SELECT `+entryCols+` FROM toolsrv_usage_entries WHERE namespace = $1 AND version > $2`, s.ns, after)
		// A key removed and then added again is a change, not a removal.
		b.Queue(`SELECT DISTINCT r.norm, r.tool, r.agent, r.principal, r.seal FROM toolsrv_usage_removed r
			WHERE r.namespace = $1 AND r.version > $2
			AND NOT EXISTS (SELECT 1 FROM toolsrv_usage_entries e WHERE e.namespace = $1 AND e.hash = r.hash)`, s.ns, after)
		b.Queue(`COMMIT`)
		br := c.SendBatch(ctx, &b)
		err := func() error {
			if _, err := br.Exec(); err != nil {
				return err
			}
			var horizon int64
			switch err := br.QueryRow().Scan(&version, &horizon); {
			case errors.Is(err, pgx.ErrNoRows):
				if after != 0 {
					return usage.ErrResnapshot // made anew (or forgotten whole)
				}
				return nil
			case err != nil:
				return err
			case after < horizon || after > version:
				return usage.ErrResnapshot
			}
			rows, err := br.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				var e usage.Entry
				var failed int64
				seal, err := scanEntry(rows, &e, &failed)
				if err != nil {
					rows.Close()
					return err
				}
				if !s.in.read(&e, &failed, seal) {
					s.dated(&e)
				}
				changed = append(changed, e)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if rows, err = br.Query(); err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var k usage.Key
				var seal string
				if err := rows.Scan(&k.Request, &k.Tool, &k.Agent, &k.Principal, &seal); err != nil {
					return err
				}
				k.Principal = s.in.presented(k, seal)
				removed = append(removed, k)
			}
			return rows.Err()
		}()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil && c.Conn().PgConn().TxStatus() != 'I' {
			c.Exec(ctx, `ROLLBACK`)
		}
		return err
	})
	if errors.Is(err, usage.ErrResnapshot) {
		return nil, nil, version, usage.ErrResnapshot
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return changed, removed, version, nil
}

// Version is the namespace's change counter on the server; while the
// server is down, the version of the local copy of its last read (what
// Snapshot then returns): a reader that has it keeps what it has, and one
// that has nothing yet (a one-off rank) reads the local copy, rather than
// ranking without the history.
func (s *store) Version(ctx context.Context) (int64, error) {
	var v int64
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		err := c.QueryRow(ctx, `SELECT version FROM toolsrv_usage_ns WHERE namespace = $1`, s.ns).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			v = 0
			return nil
		}
		return err
	})
	if isDown(err) {
		s.viewMu.Lock()
		defer s.viewMu.Unlock()
		return s.viewVersion, nil
	}
	if err != nil {
		return 0, fmt.Errorf("usage store %s: version: %w", s.where, err)
	}
	return v, nil
}

// Stats describes the namespace on the server and the events spooled
// here. While the server is down it describes the local copy, and Where
// says so.
func (s *store) Stats(ctx context.Context) (usage.Stats, error) {
	st := usage.Stats{Where: s.where, Sources: map[string]int64{}, Options: s.opts}
	st.Options.Namespace = s.ns
	n, since, err := s.local.pending(ctx)
	if err != nil {
		st.Where += " (its local spool unreadable now: " + firstLine(err) + ")"
	}
	hn, hsince := s.heldCount()
	if hn > 0 && (since.IsZero() || hsince.Before(since)) {
		since = hsince
	}
	st.Pending, st.PendingSince = n+hn, since
	err = s.tx(ctx, readTx, func(tx pgx.Tx) error {
		var oldest, newest *int64
		err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(count), 0), coalesce(sum((failed + $2) / $3), 0),
			count(DISTINCT tool), count(DISTINCT agent), count(DISTINCT principal), min(first), max(last)
			FROM toolsrv_usage_entries WHERE namespace = $1`, s.ns, usage.FailScale/2, usage.FailScale).
			Scan(&st.Entries, &st.Events, &st.Failed, &st.Tools, &st.Agents, &st.Principals, &oldest, &newest)
		if err != nil {
			return err
		}
		if oldest != nil {
			st.Oldest = time.Unix(0, *oldest)
		}
		if newest != nil {
			st.Newest = time.Unix(0, *newest)
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT version FROM toolsrv_usage_ns WHERE namespace = $1), 0)`, s.ns).Scan(&st.Version); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT source, events FROM toolsrv_usage_sources WHERE namespace = $1`, s.ns)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var src string
			var n int64
			if err := rows.Scan(&src, &n); err != nil {
				return err
			}
			st.Sources[src] = n
		}
		return rows.Err()
	})
	if err == nil {
		return st, nil
	}
	if !isDown(err) {
		return usage.Stats{}, fmt.Errorf("usage store %s: stats: %w", s.where, err)
	}
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	tools, agents, principals := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range s.view {
		st.Events += e.Count
		st.Failed += e.Failed
		tools[e.Key.Tool], agents[e.Key.Agent], principals[e.Key.Principal] = true, true, true
		if st.Oldest.IsZero() || e.First.Before(st.Oldest) {
			st.Oldest = e.First
		}
		if e.Last.After(st.Newest) {
			st.Newest = e.Last
		}
	}
	st.Entries, st.Tools, st.Agents, st.Principals, st.Version = len(s.view), len(tools), len(agents), len(principals), s.viewVersion
	st.Where += " unreachable (" + firstLine(err) + "): the local copy"
	return st, nil
}

func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// Forget removes the entries f matches from the namespace on the server
// (and from the local copy and spool). The server down is an error: what
// it holds cannot be forgotten without it.
func (s *store) Forget(ctx context.Context, f usage.Filter) (int, error) {
	if err := f.Check(); err != nil {
		return 0, err
	}
	var n int64
	err := s.tx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
		now := s.opts.Now()
		if _, err := tx.Exec(ctx, `INSERT INTO toolsrv_usage_ns (namespace, version, horizon) VALUES ($1, $2, $2) ON CONFLICT DO NOTHING`,
			s.ns, now.UnixMicro()); err != nil {
			return err
		}
		var version int64
		if err := tx.QueryRow(ctx, `SELECT version FROM toolsrv_usage_ns WHERE namespace = $1 FOR UPDATE`, s.ns).Scan(&version); err != nil {
			return err
		}
		cond, args := []string{"namespace = $1"}, []any{s.ns}
		if !f.All {
			if f.Tool != "" {
				args = append(args, f.Tool)
				cond = append(cond, fmt.Sprintf("tool = $%d", len(args)))
			}
			if f.Agent != "" {
				args = append(args, f.Agent)
				cond = append(cond, fmt.Sprintf("agent = $%d", len(args)))
			}
			if f.Principal != "" {
				args = append(args, s.in.storedPrincipal(f.Principal))
				cond = append(cond, fmt.Sprintf("principal = $%d", len(args)))
			}
			if !f.Before.IsZero() {
				args = append(args, f.Before.UnixNano())
				cond = append(cond, fmt.Sprintf("last < $%d", len(args)))
			}
		}
		where := strings.Join(cond, " AND ")
		if !f.All && f.Principal != "" {
			// Exactly the rows presented under that name: a row stored
			// under this instance's ID is its own or another's by its
			// seal (principal.go), and forgetting one must not take
			// the other.
			hashes, err := s.presentedAs(ctx, tx, f.Principal, where, args)
			if err != nil {
				return err
			}
			args = []any{s.ns, hashes}
			where = "namespace = $1 AND hash = ANY($2)"
		}
		tag, err := tx.Exec(ctx, `DELETE FROM toolsrv_usage_entries WHERE `+where, args...)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		// Removed keys hold requests too; Changes answers ErrResnapshot
		// instead.
		tables := []string{"toolsrv_usage_removed"}
		if f.All {
			tables = append(tables, "toolsrv_usage_events", "toolsrv_usage_sources")
		}
		for _, t := range tables {
			if _, err := tx.Exec(ctx, `DELETE FROM `+t+` WHERE namespace = $1`, s.ns); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE toolsrv_usage_ns SET entries = entries - $2, horizon = $3 WHERE namespace = $1`, s.ns, n, version+1); err != nil {
			return err
		}
		return bump(ctx, tx, s.ns, s.channel, version+1)
	})
	if err != nil {
		return 0, fmt.Errorf("usage store %s: forget: %w", s.where, err)
	}
	// The server's dead rows go at its next vacuum; a role owning the
	// tables starts it now (for another, VACUUM only warns).
	vctx, cancel := context.WithTimeout(ctx, opTimeout)
	for _, t := range []string{"toolsrv_usage_entries", "toolsrv_usage_removed"} {
		if _, err := s.pool.Exec(vctx, `VACUUM `+t); err != nil {
			s.opts.Logger.Debug("vacuum after forget", "table", t, "err", err)
		}
	}
	cancel()
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	for k, e := range s.view {
		if matches(f, e.Key, e.Last) {
			delete(s.view, k)
		}
	}
	s.heldMu.Lock()
	kept := s.held[:0]
	for _, p := range s.held {
		if !matches(f, p.Key, p.Time) {
			kept = append(kept, p)
		}
	}
	clear(s.held[len(kept):]) // no copy of a forgotten request left behind
	s.held = kept
	s.heldMu.Unlock()
	if err := s.local.forget(ctx, f, s.view, s.viewVersion); err != nil {
		return int(n), fmt.Errorf("usage store %s: forgot %d entries on the server, but the local copy: %w", s.where, n, err)
	}
	return int(n), nil
}

// presentedAs are the hashes of the entries (of the condition where, with
// args) presented under principal p.
func (s *store) presentedAs(ctx context.Context, tx pgx.Tx, p, where string, args []any) ([][]byte, error) {
	rows, err := tx.Query(ctx, `SELECT hash, norm, tool, agent, principal, seal FROM toolsrv_usage_entries WHERE `+where+` FOR UPDATE`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := [][]byte{}
	for rows.Next() {
		var h []byte
		var k usage.Key
		var seal string
		if err := rows.Scan(&h, &k.Request, &k.Tool, &k.Agent, &k.Principal, &seal); err != nil {
			return nil, err
		}
		if s.in.presented(k, seal) == p {
			out = append(out, h)
		}
	}
	return out, rows.Err()
}

// matches reports whether f matches an entry or event of key k last used
// at last.
func matches(f usage.Filter, k usage.Key, last time.Time) bool {
	if f.All {
		return true
	}
	return (f.Tool == "" || k.Tool == f.Tool) && (f.Agent == "" || k.Agent == f.Agent) && (f.Principal == "" || k.Principal == f.Principal) &&
		(f.Before.IsZero() || last.Before(f.Before))
}
