package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsrv/toolsrv/usage"
)

// Record stores evs on the server in one transaction. When the server is
// down, or events wait in the spool, they go to the spool (a local file)
// and are sent later, in the order recorded: an event is on the server
// exactly once (its ID is recorded with it, in the same transaction, and
// a repeat skipped). Events the spool cannot take (a full disk) are held
// in memory until it or the server can (held.go).
func (s *store) Record(ctx context.Context, evs ...usage.Event) error {
	if len(evs) == 0 {
		return nil
	}
	now := s.opts.Now()
	preps := make([]usage.Prepared, len(evs))
	for i, ev := range evs {
		p, err := usage.Prepare(ev, now)
		if err != nil {
			return fmt.Errorf("usage: event %d: %w", i+1, err)
		}
		evs[i].ID = p.ID
		preps[i] = p
	}
	if !s.spooling.Load() && !s.down.Load() {
		err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) error { return s.record(ctx, c, preps, now) })
		if err == nil || !isDown(err) {
			if err != nil {
				return fmt.Errorf("usage store %s: record: %w", s.where, err)
			}
			return nil
		}
	}
	return s.keep(ctx, preps, now)
}

// maxSpool is how many events the local spool holds; beyond, Record
// fails (the caller warns). At a call a second, a day and more.
const maxSpool = 100_000

// entryState is an entry being merged: as read (or new) and its failures
// in 1/usage.FailScale.
type entryState struct {
	e      usage.Entry
	failed int64
	exists bool
	dirty  bool
}

// record stores preps on conn in one transaction, as the embedded store
// does: each event's ID once, merged into its entry, then the caps. Two
// round trips to the server (each a pipeline of statements): the reads,
// then the writes and the commit.
func (s *store) record(ctx context.Context, conn *pgxpool.Conn, preps []usage.Prepared, now time.Time) (err error) {
	ids := make([]string, len(preps))
	hashes := map[string]bool{}
	var hashList [][]byte
	stored := make([]usage.Prepared, len(preps))
	for i, p := range preps {
		ids[i] = p.ID
		// Stored under this instance's principal (principal.go).
		p.Key = s.in.storedKey(p.Key)
		stored[i] = p
		if h := p.Key.Hash(); !hashes[string(h)] {
			hashes[string(h)] = true
			hashList = append(hashList, h)
		}
	}
	preps = stored
	defer func() {
		if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.Background(), time.Second)
			conn.Exec(rctx, `ROLLBACK`)
			cancel()
		}
	}()
	var reads pgx.Batch
	reads.Queue(`BEGIN`)
	reads.Queue(`INSERT INTO toolsrv_usage_ns (namespace, version, horizon) VALUES ($1, $2, $2) ON CONFLICT DO NOTHING`, s.ns, now.UnixMicro())
	// The namespace's row is the lock its writers take turns on: versions
	// are given in commit order, so that a reader that saw version v has
	// seen every change up to v.
	reads.Queue(`SELECT version, pruned FROM toolsrv_usage_ns WHERE namespace = $1 FOR UPDATE`, s.ns)
	reads.Queue(`INSERT INTO toolsrv_usage_events (namespace, id, at) SELECT $1, x, $3 FROM unnest($2::text[]) x
		ON CONFLICT DO NOTHING RETURNING id`, s.ns, ids, now.UnixNano())
	reads.Queue(`SELECT `+entryCols+`, hash FROM toolsrv_usage_entries WHERE namespace = $1 AND hash = ANY($2) FOR UPDATE`, s.ns, hashList)
	br := conn.SendBatch(ctx, &reads)
	var version, pruned int64
	fresh := map[string]bool{}
	states := map[string]*entryState{}
	err = func() error {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&version, &pruned); err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			fresh[id] = true
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
			var st entryState
			var hash []byte
			seal, err := scanEntry(rows, &st.e, &st.failed, &hash)
			if err != nil {
				return err
			}
			st.exists = true
			h := string(hash)
			// Merged into the counts this instance sealed, not the
			// row's (which anyone with the role can change); a row of
			// this instance's key it did not seal (written by hand,
			// under its key's hash with other columns too) starts anew.
			if c, ok := s.in.unseal(st.e.Key, seal); ok && string(st.e.Key.Hash()) == h {
				st.e.Count, st.failed = c.count, c.failed
				st.e.First, st.e.Last = time.Unix(0, c.first), time.Unix(0, c.last)
			} else {
				st.e, st.failed = usage.Entry{}, 0
			}
			states[h] = &st
		}
		return rows.Err()
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}

	v := version + 1
	cutoff := s.opts.Cutoff(now)
	sources := map[string]int64{}
	merged := 0
	for _, p := range preps {
		if !fresh[p.ID] {
			continue // recorded before
		}
		delete(fresh, p.ID) // the same ID twice in evs counts once
		sources[p.Source] += p.Count
		if !cutoff.IsZero() && p.Time.Before(cutoff) {
			continue // expired already
		}
		h := string(p.Key.Hash())
		st := states[h]
		if st == nil {
			st = &entryState{}
			states[h] = st
		}
		usage.Merge(&st.e, &st.failed, p, s.opts.MaxCount)
		st.e.Version = v
		st.dirty = true
		merged++
	}
	var w pgx.Batch
	grown := map[usage.Key]bool{}
	var added int64
	for h, st := range states {
		if !st.dirty {
			continue
		}
		e := st.e
		offered := e.Offered
		if offered == nil {
			offered = []string{}
		}
		seal := s.in.seal([]byte(h), sealed{count: e.Count, failed: st.failed, first: e.First.UnixNano(), last: e.Last.UnixNano()})
		if st.exists {
			// The key's columns too: a row written by hand under the
			// key's hash may have others.
			w.Queue(`UPDATE toolsrv_usage_entries SET text = $3, count = $4, failed = $5, first = $6, last = $7, offered = $8, version = $9, seal = $10,
				norm = $11, tool = $12, agent = $13, principal = $14
				WHERE namespace = $1 AND hash = $2`,
				s.ns, []byte(h), e.Text, e.Count, st.failed, e.First.UnixNano(), e.Last.UnixNano(), offered, v, seal,
				e.Key.Request, e.Key.Tool, e.Key.Agent, e.Key.Principal)
			continue
		}
		w.Queue(`INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			s.ns, []byte(h), e.Key.Request, e.Text, e.Key.Tool, e.Key.Agent, e.Key.Principal, seal, e.Count, st.failed, e.First.UnixNano(), e.Last.UnixNano(), offered, v)
		grown[usage.Key{Tool: e.Key.Tool, Agent: e.Key.Agent}] = true
		added++
	}
	for src, n := range sources {
		w.Queue(`INSERT INTO toolsrv_usage_sources (namespace, source, events) VALUES ($1, $2, $3)
			ON CONFLICT (namespace, source) DO UPDATE SET events = toolsrv_usage_sources.events + excluded.events`, s.ns, src, n)
	}
	if added > 0 {
		w.Queue(`UPDATE toolsrv_usage_ns SET entries = entries + $2 WHERE namespace = $1`, s.ns, added)
	}
	s.enforce(&w, v, now, grown)
	if now.UnixNano()-pruned >= int64(pruneEvery) {
		s.prune(&w, now)
	}
	// The version moves, and the listeners are told (at commit), when an
	// entry changed or one was removed.
	w.Queue(`UPDATE toolsrv_usage_ns SET version = $2 WHERE namespace = $1
		AND ($3 OR EXISTS (SELECT 1 FROM toolsrv_usage_removed WHERE namespace = $1 AND version = $2))`, s.ns, v, merged > 0)
	w.Queue(`SELECT pg_notify($1, $2) FROM toolsrv_usage_ns WHERE namespace = $3 AND version = $4`, s.channel, fmt.Sprint(v), s.ns, v)
	w.Queue(`COMMIT`)
	return conn.SendBatch(ctx, &w).Close()
}

// bump sets the namespace's version to v and tells the listeners (at
// commit).
func bump(ctx context.Context, tx pgx.Tx, ns, channel string, v int64) error {
	if _, err := tx.Exec(ctx, `UPDATE toolsrv_usage_ns SET version = $2 WHERE namespace = $1`, ns, v); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, channel, fmt.Sprint(v))
	return err
}

// enforce queues the retention and the caps (grown: the (tool, agent)
// pairs that got a new entry), evicting the oldest Last first, each
// evicted key remembered as removed at version v. As in the embedded
// store, the per-tool and total caps evict the owners' entries (an
// instance's owner: ID/owner) last.
func (s *store) enforce(w *pgx.Batch, v int64, now time.Time, grown map[usage.Key]bool) {
	o := s.opts
	evict := func(cond string, args ...any) {
		w.Queue(`WITH gone AS (DELETE FROM toolsrv_usage_entries WHERE namespace = $1 AND `+cond+`
				RETURNING hash, norm, tool, agent, principal, seal),
			kept AS (INSERT INTO toolsrv_usage_removed (namespace, version, hash, norm, tool, agent, principal, seal)
				SELECT $1, $2, hash, norm, tool, agent, principal, seal FROM gone)
			UPDATE toolsrv_usage_ns SET entries = entries - (SELECT count(*) FROM gone)
			WHERE namespace = $1 AND EXISTS (SELECT 1 FROM gone)`, append([]any{s.ns, v}, args...)...)
	}
	if c := o.Cutoff(now); !c.IsZero() {
		evict(`last < $3`, c.UnixNano())
	}
	if len(grown) == 0 {
		return
	}
	tools := map[string]bool{}
	for k := range grown {
		tools[k.Tool] = true
		if o.PerAgentTool > 0 {
			evict(`hash IN (SELECT hash FROM toolsrv_usage_entries WHERE namespace = $1 AND tool = $3 AND agent = $4
				ORDER BY last DESC, id DESC OFFSET $5)`, k.Tool, k.Agent, o.PerAgentTool)
		}
	}
	if o.PerTool > 0 {
		for t := range tools {
			evict(`hash IN (SELECT hash FROM toolsrv_usage_entries WHERE namespace = $1 AND tool = $3
				ORDER BY principal ~ '^[^/]*/owner$' DESC, last DESC, id DESC OFFSET $4)`, t, o.PerTool)
		}
	}
	if o.Total > 0 {
		evict(`hash IN (SELECT hash FROM toolsrv_usage_entries WHERE namespace = $1 ORDER BY principal ~ '^[^/]*/owner$', last, id
			LIMIT greatest(0, (SELECT entries FROM toolsrv_usage_ns WHERE namespace = $1) - $3))`, o.Total)
	}
}

// maxTombstones is how many removed keys a namespace remembers for
// Changes (as the embedded store).
const maxTombstones = 10_000

// pruneEvery is how often a namespace's event IDs and removed keys are
// pruned, rather than at every Record: counting back IDCap IDs or
// maxTombstones keys costs a scan of them.
const pruneEvery = time.Minute

// prune queues the pruning: the IDs recorded before the ID window and the
// oldest beyond IDCap forgotten; the latest maxTombstones removed keys
// kept, the horizon raised past those dropped (Changes from before it is
// unknown).
func (s *store) prune(w *pgx.Batch, now time.Time) {
	if s.opts.IDWindow > 0 {
		w.Queue(`DELETE FROM toolsrv_usage_events WHERE namespace = $1 AND at < $2`, s.ns, now.Add(-s.opts.IDWindow).UnixNano())
	}
	if s.opts.IDCap > 0 {
		w.Queue(`DELETE FROM toolsrv_usage_events WHERE namespace = $1 AND seq <=
			(SELECT seq FROM toolsrv_usage_events WHERE namespace = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`, s.ns, s.opts.IDCap)
	}
	w.Queue(`UPDATE toolsrv_usage_ns SET horizon = greatest(horizon,
			(SELECT version FROM toolsrv_usage_removed WHERE namespace = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1))
		WHERE namespace = $1`, s.ns, maxTombstones)
	w.Queue(`DELETE FROM toolsrv_usage_removed WHERE namespace = $1 AND seq <=
		(SELECT seq FROM toolsrv_usage_removed WHERE namespace = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`, s.ns, maxTombstones)
	w.Queue(`UPDATE toolsrv_usage_ns SET pruned = $2 WHERE namespace = $1`, s.ns, now.UnixNano())
}

// entryCols are the columns scanEntry reads.
const entryCols = `norm, text, tool, agent, principal, seal, count, failed, first, last, offered, version`

// scanEntry reads a row of entryCols (and the columns after them into
// more) into e, its key as stored (failed: its failures in
// 1/usage.FailScale), and returns its seal.
func scanEntry(row pgx.Row, e *usage.Entry, failed *int64, more ...any) (string, error) {
	var first, last int64
	var seal string
	if err := row.Scan(append([]any{&e.Key.Request, &e.Text, &e.Key.Tool, &e.Key.Agent, &e.Key.Principal, &seal, &e.Count, failed, &first, &last, &e.Offered, &e.Version}, more...)...); err != nil {
		return "", err
	}
	e.Failed = (*failed + usage.FailScale/2) / usage.FailScale
	e.First, e.Last = time.Unix(0, first), time.Unix(0, last)
	wordingOfKey(e)
	if len(e.Offered) == 0 {
		e.Offered = nil
	}
	return seal, nil
}

// wordingOfKey makes e's text a wording of its key: a row's text is
// anyone's with the role to change, and the ranking votes with the text
// (an entry keeps its key; one whose text another instance changed to
// other words votes with its key's).
func wordingOfKey(e *usage.Entry) {
	if usage.Normalize(e.Text) != e.Key.Request {
		e.Text = e.Key.Request
	}
}
