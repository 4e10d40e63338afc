package usage

import (
	"context"
	"database/sql"
	"fmt"
	"os"
)

func (s *fileStore) Snapshot(ctx context.Context) ([]Entry, int64, error) {
	var (
		entries []Entry
		version int64
	)
	err := s.read(ctx, "snapshot", func(tx *sql.Tx) error {
		entries, version = nil, 0 // a second try starts afresh
		if tx == nil {
			return nil
		}
		var err error
		if version, err = metaValue(ctx, tx, "version"); err != nil {
			return err
		}
		n, err := metaValue(ctx, tx, "entries")
		if err != nil {
			return err
		}
		entries, err = scanEntries(ctx, tx, make([]Entry, 0, n), `SELECT rec FROM entries`)
		if err == nil && int64(len(entries)) != n {
			// Pages lost to damage that SQLite did not notice.
			err = fmt.Errorf("%d entries read, %d kept: %w", len(entries), n, errDamaged)
		}
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return entries, version, nil
}

func (s *fileStore) Changes(ctx context.Context, after int64) ([]Entry, []Key, int64, error) {
	var (
		changed []Entry
		removed []Key
		version int64
	)
	err := s.read(ctx, "changes", func(tx *sql.Tx) error {
		changed, removed, version = nil, nil, 0 // a second try starts afresh
		if tx == nil {
			if after != 0 {
				return ErrResnapshot // the store is gone
			}
			return nil
		}
		var err error
		if version, err = metaValue(ctx, tx, "version"); err != nil {
			return err
		}
		horizon, err := metaValue(ctx, tx, "horizon")
		if err != nil {
			return err
		}
		if after < horizon || after > version {
			return ErrResnapshot
		}
		if after == version {
			return nil
		}
		if changed, err = scanEntries(ctx, tx, nil, `SELECT rec FROM entries WHERE version > ?`, after); err != nil {
			return err
		}
		// A key removed and then added again is a change, not a removal.
		rows, err := tx.QueryContext(ctx, `SELECT DISTINCT r.norm, r.tool, r.agent, r.principal FROM removed r WHERE r.version > ?
			AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.hash = r.hash)`, after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k Key
			if err := rows.Scan(&k.Request, &k.Tool, &k.Agent, &k.Principal); err != nil {
				return err
			}
			removed = append(removed, k)
		}
		return rows.Err()
	})
	if err == ErrResnapshot {
		return nil, nil, version, err
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return changed, removed, version, nil
}

func (s *fileStore) Version(ctx context.Context) (int64, error) {
	var version int64
	err := s.read(ctx, "version", func(tx *sql.Tx) error {
		version = 0 // a second try starts afresh
		if tx == nil {
			return nil
		}
		var err error
		version, err = metaValue(ctx, tx, "version")
		return err
	})
	if err != nil {
		return 0, err
	}
	return version, nil
}

func (s *fileStore) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.read(ctx, "stats", func(tx *sql.Tx) error {
		st = Stats{Where: s.path, Sources: map[string]int64{}, Options: s.opts} // a second try starts afresh
		if tx == nil {
			return nil
		}
		var err error
		if st.Version, err = metaValue(ctx, tx, "version"); err != nil {
			return err
		}
		entries, err := scanEntries(ctx, tx, nil, `SELECT rec FROM entries`)
		if err != nil {
			return err
		}
		tools, agents, principals := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for i, e := range entries {
			st.Events += e.Count
			st.Failed += e.Failed
			tools[e.Key.Tool], agents[e.Key.Agent], principals[e.Key.Principal] = true, true, true
			if i == 0 || e.First.Before(st.Oldest) {
				st.Oldest = e.First
			}
			if e.Last.After(st.Newest) {
				st.Newest = e.Last
			}
		}
		st.Entries, st.Tools, st.Agents, st.Principals = len(entries), len(tools), len(agents), len(principals)
		rows, err := tx.QueryContext(ctx, `SELECT source, events FROM sources`)
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
	if err != nil {
		return Stats{}, err
	}
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			st.Size += fi.Size()
		}
	}
	return st, nil
}

// scanEntries appends the entries query selects (their rec) to out.
func scanEntries(ctx context.Context, tx *sql.Tx, out []Entry, query string, args ...any) ([]Entry, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		rec sql.RawBytes
		a   arena
	)
	for rows.Next() {
		if err := rows.Scan(&rec); err != nil {
			return nil, err
		}
		out = append(out, Entry{})
		if _, err := decodeEntry(rec, &out[len(out)-1], &a); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}
