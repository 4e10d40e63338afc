package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

func (s *fileStore) Record(ctx context.Context, evs ...Event) error {
	if len(evs) == 0 {
		return nil
	}
	now := s.opts.Now()
	preps := make([]prepared, len(evs))
	for i, ev := range evs {
		p, err := prepare(ev, now)
		if err != nil {
			return fmt.Errorf("usage: event %d: %w", i+1, err)
		}
		evs[i].ID = p.ID
		preps[i] = p
	}
	return s.write(ctx, "record", true, func(tx *sql.Tx) error {
		return s.record(ctx, tx, preps, now)
	})
}

// record stores preps in tx, then enforces the caps.
func (s *fileStore) record(ctx context.Context, tx *sql.Tx, preps []prepared, now time.Time) error {
	version, err := metaValue(ctx, tx, "version")
	if err != nil {
		return err
	}
	v := version + 1
	st, err := prepareAll(ctx, tx, map[string]string{
		"seen":   `INSERT OR IGNORE INTO seen (id, at) VALUES (?, ?)`,
		"get":    `SELECT id, rec FROM entries WHERE hash = ?`,
		"insert": `INSERT INTO entries (hash, tool, agent, last, version, rec) VALUES (?, ?, ?, ?, ?, ?)`,
		"update": `UPDATE entries SET last = ?, version = ?, rec = ? WHERE id = ?`,
	})
	if err != nil {
		return err
	}
	defer st.close()
	cutoff := s.opts.cutoff(now)
	sources := map[string]int64{}
	grown := map[Key]bool{} // (tool, agent) that got a new entry
	changed := false
	var added int64
	var buf []byte
	for _, p := range preps {
		res, err := st["seen"].ExecContext(ctx, p.ID, now.UnixNano())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			continue // recorded before
		}
		sources[p.Source] += p.count
		if !cutoff.IsZero() && p.Time.Before(cutoff) {
			continue // expired already
		}
		var (
			id     int64
			rec    []byte
			e      Entry
			failed int64
		)
		hash := p.key.Hash()
		err = st["get"].QueryRowContext(ctx, hash).Scan(&id, &rec)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			merge(&e, &failed, p, s.opts.MaxCount)
			e.Version = v
			buf = encodeEntry(buf[:0], &e, failed)
			_, err = st["insert"].ExecContext(ctx, hash, e.Key.Tool, e.Key.Agent, e.Last.UnixNano(), v, buf)
			grown[Key{Tool: p.key.Tool, Agent: p.key.Agent}] = true
			added++
		case err == nil:
			if failed, err = decodeEntry(rec, &e, nil); err != nil {
				break
			}
			merge(&e, &failed, p, s.opts.MaxCount)
			e.Version = v
			buf = encodeEntry(buf[:0], &e, failed)
			_, err = st["update"].ExecContext(ctx, e.Last.UnixNano(), v, buf, id)
		}
		if err != nil {
			return err
		}
		changed = true
	}
	if added > 0 {
		if err := addMeta(ctx, tx, "entries", added); err != nil {
			return err
		}
	}
	for src, n := range sources {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sources (source, events) VALUES (?, ?)
			ON CONFLICT (source) DO UPDATE SET events = events + excluded.events`, src, n); err != nil {
			return err
		}
	}
	removed, err := s.enforce(ctx, tx, v, now, grown)
	if err != nil {
		return err
	}
	if err := s.pruneSeen(ctx, tx, now); err != nil {
		return err
	}
	if changed || removed > 0 {
		return setMeta(ctx, tx, "version", v)
	}
	return nil
}

// enforce applies the retention and the caps (grown: the (tool, agent)
// pairs that got a new entry), evicting the oldest Last first, and
// remembers the evicted keys as removed at version v.
func (s *fileStore) enforce(ctx context.Context, tx *sql.Tx, v int64, now time.Time, grown map[Key]bool) (int, error) {
	o := s.opts
	removed := 0
	evict := func(query string, args ...any) error {
		n, err := evictWhere(ctx, tx, v, query, args...)
		removed += n
		return err
	}
	if c := o.cutoff(now); !c.IsZero() {
		if err := evict(`last < ?`, c.UnixNano()); err != nil {
			return removed, err
		}
	}
	if len(grown) == 0 {
		return removed, nil
	}
	tools := map[string]bool{}
	for k := range grown {
		tools[k.Tool] = true
		if o.PerAgentTool > 0 {
			if err := evict(`id IN (SELECT id FROM entries WHERE tool = ? AND agent = ? ORDER BY last DESC, id DESC LIMIT -1 OFFSET ?)`,
				k.Tool, k.Agent, o.PerAgentTool); err != nil {
				return removed, err
			}
		}
	}
	if o.PerTool > 0 {
		for t := range tools {
			if err := evict(`id IN (SELECT id FROM entries WHERE tool = ? ORDER BY last DESC, id DESC LIMIT -1 OFFSET ?)`,
				t, o.PerTool); err != nil {
				return removed, err
			}
		}
	}
	if o.Total > 0 {
		n, err := metaValue(ctx, tx, "entries")
		if err != nil {
			return removed, err
		}
		if n > int64(o.Total) {
			if err := evict(`id IN (SELECT id FROM entries ORDER BY last, id LIMIT ?)`, n-int64(o.Total)); err != nil {
				return removed, err
			}
		}
	}
	if removed > 0 {
		if err := pruneTombstones(ctx, tx, o.tombstones); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// evictWhere deletes the entries cond matches, remembering their keys as
// removed at version v, and returns how many.
func evictWhere(ctx context.Context, tx *sql.Tx, v int64, cond string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, `DELETE FROM entries WHERE `+cond+` RETURNING rec`, args...)
	if err != nil {
		return 0, fmt.Errorf("evicting: %w", err)
	}
	var keys []Key
	for rows.Next() {
		var rec []byte
		var e Entry
		if err := rows.Scan(&rec); err != nil {
			rows.Close()
			return 0, fmt.Errorf("evicting: %w", err)
		}
		if _, err := decodeEntry(rec, &e, nil); err != nil {
			rows.Close()
			return 0, fmt.Errorf("evicting: %w", err)
		}
		keys = append(keys, e.Key)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("evicting: %w", err)
	}
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `INSERT INTO removed (version, hash, norm, tool, agent) VALUES (?, ?, ?, ?, ?)`,
			v, k.Hash(), k.Request, k.Tool, k.Agent); err != nil {
			return 0, err
		}
	}
	if len(keys) > 0 {
		if err := addMeta(ctx, tx, "entries", -int64(len(keys))); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// pruneTombstones keeps the latest keep removed keys, raising the horizon
// past those it drops: Changes from before it is unknown.
func pruneTombstones(ctx context.Context, tx *sql.Tx, keep int) error {
	var seq, ver int64
	err := tx.QueryRowContext(ctx, `SELECT seq, version FROM removed WHERE seq <= (SELECT max(seq) FROM removed) - ? ORDER BY seq DESC LIMIT 1`,
		keep).Scan(&seq, &ver)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM removed WHERE seq <= ?`, seq)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE meta SET value = max(value, ?) WHERE key = 'horizon'`, ver)
	}
	if err != nil {
		return err
	}
	return nil
}

// pruneSeen forgets the IDs recorded before the ID window, and the oldest
// beyond IDCap.
func (s *fileStore) pruneSeen(ctx context.Context, tx *sql.Tx, now time.Time) error {
	if s.opts.IDWindow > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM seen WHERE rowid < (SELECT rowid FROM seen WHERE at >= ? ORDER BY rowid LIMIT 1)`,
			now.Add(-s.opts.IDWindow).UnixNano()); err != nil {
			return err
		}
	}
	if s.opts.IDCap > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM seen WHERE rowid <= (SELECT max(rowid) FROM seen) - ?`, s.opts.IDCap); err != nil {
			return err
		}
	}
	return nil
}

// sweep removes what expired (at Open).
func (s *fileStore) sweep(ctx context.Context) error {
	c := s.opts.cutoff(s.opts.Now())
	if c.IsZero() {
		return nil
	}
	expired := false
	err := s.read(ctx, "sweep", func(tx *sql.Tx) error {
		if tx == nil {
			return nil
		}
		return tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM entries WHERE last < ?)`, c.UnixNano()).Scan(&expired)
	})
	if err != nil || !expired {
		return err
	}
	return s.write(ctx, "sweep", false, func(tx *sql.Tx) error {
		version, err := metaValue(ctx, tx, "version")
		if err != nil {
			return err
		}
		n, err := s.enforce(ctx, tx, version+1, s.opts.Now(), nil)
		if err != nil || n == 0 {
			return err
		}
		return setMeta(ctx, tx, "version", version+1)
	})
}

// stmts are a transaction's prepared statements by name.
type stmts map[string]*sql.Stmt

func prepareAll(ctx context.Context, tx *sql.Tx, queries map[string]string) (stmts, error) {
	st := stmts{}
	for name, q := range queries {
		p, err := tx.PrepareContext(ctx, q)
		if err != nil {
			st.close()
			return nil, err
		}
		st[name] = p
	}
	return st, nil
}

func (st stmts) close() {
	for _, p := range st {
		p.Close()
	}
}
