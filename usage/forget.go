package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// check says what is wrong with f, or nil.
func (f Filter) check() error {
	switch {
	case f.All && (f.Tool != "" || f.Agent != "" || !f.Before.IsZero()):
		return errors.New("usage: Filter.All forgets everything; set nothing else with it")
	case !f.All && f.Tool == "" && f.Agent == "" && f.Before.IsZero():
		return errors.New("usage: an empty Filter matches nothing (set All to forget everything)")
	}
	return nil
}

// Forget deletes what f matches, then rewrites the file (VACUUM) and
// empties the write-ahead log (checkpoint TRUNCATE), so that no copy of a
// forgotten request is left in free pages or in the log. Forget All also
// forgets the recorded IDs and per-source counts, and removes the copies
// of damaged stores set aside.
func (s *fileStore) Forget(ctx context.Context, f Filter) (int, error) {
	if err := f.check(); err != nil {
		return 0, err
	}
	n := 0
	err := s.write(ctx, "forget", false, func(tx *sql.Tx) error {
		n = 0 // a retry on a new store starts again
		version, err := metaValue(ctx, tx, "version")
		if err != nil {
			return err
		}
		var res sql.Result
		if f.All {
			for _, t := range []string{"removed", "seen", "sources"} {
				if _, err := tx.ExecContext(ctx, `DELETE FROM `+t); err != nil {
					return err
				}
			}
			res, err = tx.ExecContext(ctx, `DELETE FROM entries`)
		} else {
			var cond []string
			var args []any
			if f.Tool != "" {
				cond, args = append(cond, "tool = ?"), append(args, f.Tool)
			}
			if f.Agent != "" {
				cond, args = append(cond, "agent = ?"), append(args, f.Agent)
			}
			if !f.Before.IsZero() {
				cond, args = append(cond, "last < ?"), append(args, f.Before.UnixNano())
			}
			res, err = tx.ExecContext(ctx, `DELETE FROM entries WHERE `+strings.Join(cond, " AND "), args...)
			if err == nil {
				// Removed keys hold requests too; Changes answers
				// ErrResnapshot instead.
				_, err = tx.ExecContext(ctx, `DELETE FROM removed`)
			}
		}
		if err != nil {
			return err
		}
		m, _ := res.RowsAffected()
		n = int(m)
		if err := addMeta(ctx, tx, "entries", -m); err != nil {
			return err
		}
		if err := setMeta(ctx, tx, "version", version+1); err != nil {
			return err
		}
		return setMeta(ctx, tx, "horizon", version+1)
	})
	if err != nil {
		return 0, err
	}
	if err := removeDerived(s.path); err != nil {
		return n, fmt.Errorf("usage store: forgot %d entries, but could not remove what was derived from them: %w", n, err)
	}
	if err := s.scrub(ctx); err != nil {
		return n, fmt.Errorf("usage store: forgot %d entries, but %w", n, err)
	}
	if f.All {
		for _, p := range damagedCopies(s.path) {
			if err := os.Remove(p); err != nil {
				return n, fmt.Errorf("usage store: forgot %d entries, but could not remove %s: %w", n, p, err)
			}
		}
	}
	return n, nil
}

// scrub rewrites the store without free pages (VACUUM) and empties its
// write-ahead log, which still holds the pages as they were. The log can
// only be emptied when no reader uses it.
func (s *fileStore) scrub(ctx context.Context) error {
	return s.file.Exclusive(ctx, func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("could not rewrite the store without them (VACUUM): %w", err)
		}
		// The checkpoint waits for readers (busy_timeout) before it
		// answers busy; a reader that holds on longer is let finish and
		// tried again.
		var err error
		for try := 0; try < 3; try++ {
			var busy, logged, done int
			err = db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done)
			if err == nil && busy == 0 {
				return nil
			}
			if err == nil {
				err = errors.New("busy")
			}
			select {
			case <-ctx.Done():
				err = ctx.Err()
				try = 3
			case <-time.After(100 * time.Millisecond):
			}
		}
		return fmt.Errorf("the write-ahead log, which still holds them, could not be emptied while other processes read it (%w); it will be at the next checkpoint", err)
	})
}
