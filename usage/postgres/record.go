package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsrv/toolsrv/usage"
)

// Record stores evs on the server in one transaction. When the server is
// down, or events wait in the spool, they go to the spool (a local file)
// and are sent later, in the order recorded: an event is on the server
// exactly once (its ID is recorded with it, in the same transaction, and
// a repeat skipped).
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
		err := s.tx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error { return s.record(ctx, tx, preps, now) })
		if err == nil || !isDown(err) {
			if err != nil {
				return fmt.Errorf("usage store %s: record: %w", s.where, err)
			}
			return nil
		}
	}
	if err := s.local.spool(ctx, preps, now, maxSpool); err != nil {
		return fmt.Errorf("usage store %s is unreachable, and %w", s.where, err)
	}
	s.spooling.Store(true)
	s.signal(s.flushNow)
	return nil
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

// record stores preps in tx, as the embedded store does: each event's ID
// once, merged into its entry, then the caps.
func (s *store) record(ctx context.Context, tx pgx.Tx, preps []usage.Prepared, now time.Time) error {
	if _, err := tx.Exec(ctx, `INSERT INTO toolsrv_usage_ns (namespace, version, horizon) VALUES ($1, $2, $2) ON CONFLICT DO NOTHING`,
		s.ns, now.UnixMicro()); err != nil {
		return err
	}
	var version, pruned int64
	// The namespace's row is the lock its writers take turns on: versions
	// are given in commit order, so that a reader that saw version v has
	// seen every change up to v.
	if err := tx.QueryRow(ctx, `SELECT version, pruned FROM toolsrv_usage_ns WHERE namespace = $1 FOR UPDATE`, s.ns).Scan(&version, &pruned); err != nil {
		return err
	}
	v := version + 1
	ids := make([]string, len(preps))
	for i, p := range preps {
		ids[i] = p.ID
	}
	rows, err := tx.Query(ctx, `INSERT INTO toolsrv_usage_events (namespace, id, at) SELECT $1, x, $3 FROM unnest($2::text[]) x
		ON CONFLICT DO NOTHING RETURNING id`, s.ns, ids, now.UnixNano())
	if err != nil {
		return err
	}
	fresh := map[string]bool{}
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
	cutoff := s.opts.Cutoff(now)
	sources := map[string]int64{}
	var todo []usage.Prepared
	hashes := map[string]bool{}
	var hashList [][]byte
	for _, p := range preps {
		if !fresh[p.ID] {
			continue // recorded before
		}
		delete(fresh, p.ID) // the same ID twice in evs counts once
		sources[p.Source] += p.Count
		if !cutoff.IsZero() && p.Time.Before(cutoff) {
			continue // expired already
		}
		todo = append(todo, p)
		if h := keyHash(p.Key); !hashes[string(h)] {
			hashes[string(h)] = true
			hashList = append(hashList, h)
		}
	}
	states := map[string]*entryState{}
	if len(hashList) > 0 {
		rows, err := tx.Query(ctx, `SELECT `+entryCols+` FROM toolsrv_usage_entries WHERE namespace = $1 AND hash = ANY($2) FOR UPDATE`, s.ns, hashList)
		if err != nil {
			return err
		}
		for rows.Next() {
			var st entryState
			if err := scanEntry(rows, &st.e, &st.failed); err != nil {
				rows.Close()
				return err
			}
			st.exists = true
			states[string(keyHash(st.e.Key))] = &st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	grown := map[usage.Key]bool{}
	var added int64
	for _, p := range todo {
		h := string(keyHash(p.Key))
		st := states[h]
		if st == nil {
			st = &entryState{}
			states[h] = st
		}
		usage.Merge(&st.e, &st.failed, p, s.opts.MaxCount)
		st.e.Version = v
		st.dirty = true
	}
	var b pgx.Batch
	for h, st := range states {
		if !st.dirty {
			continue
		}
		e := st.e
		offered := e.Offered
		if offered == nil {
			offered = []string{}
		}
		if st.exists {
			b.Queue(`UPDATE toolsrv_usage_entries SET text = $3, count = $4, failed = $5, first = $6, last = $7, offered = $8, version = $9
				WHERE namespace = $1 AND hash = $2`,
				s.ns, []byte(h), e.Text, e.Count, st.failed, e.First.UnixNano(), e.Last.UnixNano(), offered, v)
			continue
		}
		b.Queue(`INSERT INTO toolsrv_usage_entries (namespace, hash, norm, text, tool, agent, count, failed, first, last, offered, version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			s.ns, []byte(h), e.Key.Request, e.Text, e.Key.Tool, e.Key.Agent, e.Count, st.failed, e.First.UnixNano(), e.Last.UnixNano(), offered, v)
		grown[usage.Key{Tool: e.Key.Tool, Agent: e.Key.Agent}] = true
		added++
	}
	for src, n := range sources {
		b.Queue(`INSERT INTO toolsrv_usage_sources (namespace, source, events) VALUES ($1, $2, $3)
			ON CONFLICT (namespace, source) DO UPDATE SET events = toolsrv_usage_sources.events + excluded.events`, s.ns, src, n)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return err
		}
	}
	if added > 0 {
		if _, err := tx.Exec(ctx, `UPDATE toolsrv_usage_ns SET entries = entries + $2 WHERE namespace = $1`, s.ns, added); err != nil {
			return err
		}
	}
	removed, err := s.enforce(ctx, tx, v, now, grown)
	if err != nil {
		return err
	}
	if err := s.pruneEvents(ctx, tx, now, pruned); err != nil {
		return err
	}
	if len(todo) > 0 || removed > 0 {
		return bump(ctx, tx, s.ns, s.channel, v)
	}
	return nil
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

// enforce applies the retention and the caps (grown: the (tool, agent)
// pairs that got a new entry), evicting the oldest Last first, and
// remembers the evicted keys as removed at version v.
func (s *store) enforce(ctx context.Context, tx pgx.Tx, v int64, now time.Time, grown map[usage.Key]bool) (int64, error) {
	o := s.opts
	var removed int64
	evict := func(cond string, args ...any) error {
		tag, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM toolsrv_usage_entries WHERE namespace = $1 AND `+cond+`
			RETURNING hash, norm, tool, agent)
			INSERT INTO toolsrv_usage_removed (namespace, version, hash, norm, tool, agent)
			SELECT $1, $2, hash, norm, tool, agent FROM gone`, append([]any{s.ns, v}, args...)...)
		if err != nil {
			return fmt.Errorf("evicting: %w", err)
		}
		removed += tag.RowsAffected()
		return nil
	}
	if c := o.Cutoff(now); !c.IsZero() {
		if err := evict(`last < $3`, c.UnixNano()); err != nil {
			return removed, err
		}
	}
	if len(grown) > 0 {
		tools := map[string]bool{}
		for k := range grown {
			tools[k.Tool] = true
			if o.PerAgentTool > 0 {
				if err := evict(`hash IN (SELECT hash FROM toolsrv_usage_entries WHERE namespace = $1 AND tool = $3 AND agent = $4
					ORDER BY last DESC, id DESC OFFSET $5)`, k.Tool, k.Agent, o.PerAgentTool); err != nil {
					return removed, err
				}
			}
		}
		if o.PerTool > 0 {
			for t := range tools {
				if err := evict(`hash IN (SELECT hash FROM toolsrv_usage_entries WHERE namespace = $1 AND tool = $3
					ORDER BY last DESC, id DESC OFFSET $4)`, t, o.PerTool); err != nil {
					return removed, err
				}
			}
		}
		if o.Total > 0 {
			var n int64
			if err := tx.QueryRow(ctx, `SELECT entries - $2 FROM toolsrv_usage_ns WHERE namespace = $1`, s.ns, removed).Scan(&n); err != nil {
				return removed, err
			}
			if n > int64(o.Total) {
				if err := evict(`hash IN (SELECT hash FROM toolsrv_usage_entries WHERE namespace = $1 ORDER BY last, id LIMIT $3)`,
					n-int64(o.Total)); err != nil {
					return removed, err
				}
			}
		}
	}
	if removed == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE toolsrv_usage_ns SET entries = entries - $2 WHERE namespace = $1`, s.ns, removed); err != nil {
		return removed, err
	}
	return removed, pruneTombstones(ctx, tx, s.ns)
}

// maxTombstones is how many removed keys a namespace remembers for
// Changes (as the embedded store).
const maxTombstones = 10_000

// pruneTombstones keeps the latest maxTombstones removed keys, raising the
// horizon past those it drops: Changes from before it is unknown.
func pruneTombstones(ctx context.Context, tx pgx.Tx, ns string) error {
	var seq, ver int64
	err := tx.QueryRow(ctx, `SELECT seq, version FROM toolsrv_usage_removed WHERE namespace = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1`,
		ns, maxTombstones).Scan(&seq, &ver)
	if err == pgx.ErrNoRows {
		return nil
	}
	if err == nil {
		_, err = tx.Exec(ctx, `DELETE FROM toolsrv_usage_removed WHERE namespace = $1 AND seq <= $2`, ns, seq)
	}
	if err == nil {
		_, err = tx.Exec(ctx, `UPDATE toolsrv_usage_ns SET horizon = greatest(horizon, $2) WHERE namespace = $1`, ns, ver)
	}
	return err
}

// pruneEvery is how often the IDs of recorded events are pruned (the
// window and the cap), rather than at every Record: counting back IDCap
// IDs costs a scan of them.
const pruneEvery = time.Minute

// pruneEvents forgets the IDs recorded before the ID window, and the
// oldest beyond IDCap, once a pruneEvery per namespace (pruned: when last).
func (s *store) pruneEvents(ctx context.Context, tx pgx.Tx, now time.Time, pruned int64) error {
	if now.UnixNano()-pruned < int64(pruneEvery) {
		return nil
	}
	if s.opts.IDWindow > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM toolsrv_usage_events WHERE namespace = $1 AND at < $2`,
			s.ns, now.Add(-s.opts.IDWindow).UnixNano()); err != nil {
			return err
		}
	}
	if s.opts.IDCap > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM toolsrv_usage_events WHERE namespace = $1 AND seq <=
			(SELECT seq FROM toolsrv_usage_events WHERE namespace = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`, s.ns, s.opts.IDCap); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `UPDATE toolsrv_usage_ns SET pruned = $2 WHERE namespace = $1`, s.ns, now.UnixNano())
	return err
}

// keyHash is the column entries are unique by (with the namespace): 16
// bytes of the SHA-256 of the key's fields, as the embedded store's.
func keyHash(k usage.Key) []byte {
	h := sha256.New()
	for _, s := range []string{k.Request, k.Tool, k.Agent} {
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	return h.Sum(nil)[:16]
}

// entryCols are the columns scanEntry reads.
const entryCols = `norm, text, tool, agent, count, failed, first, last, offered, version`

// scanEntry reads a row of entryCols into e (failed: its failures in
// 1/usage.FailScale).
func scanEntry(row pgx.Row, e *usage.Entry, failed *int64) error {
	var first, last int64
	if err := row.Scan(&e.Key.Request, &e.Text, &e.Key.Tool, &e.Key.Agent, &e.Count, failed, &first, &last, &e.Offered, &e.Version); err != nil {
		return err
	}
	e.Failed = (*failed + usage.FailScale/2) / usage.FailScale
	e.First, e.Last = time.Unix(0, first), time.Unix(0, last)
	if len(e.Offered) == 0 {
		e.Offered = nil
	}
	return nil
}
