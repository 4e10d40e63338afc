package registry

import "github.com/toolsrv/toolsrv/internal/fileio"

// openSnapshotLocked starts reading the catalog snapshot for the first
// Load, beside the listing of the directories (snapshotLocked waits for
// it).
func (r *Registry) openSnapshotLocked() {
	if r.opts.CatalogCache == "" || !r.snapSince.IsZero() { // read once
		return
	}
	r.snapSince = r.now()
	r.snapRead = make(chan snapshot, 1)
	go func() {
		s, err := readSnapshot(r.opts.CatalogCache, fileio.ExecutableID())
		if err != nil {
			r.log.Info("the catalog snapshot is unusable: every .meta file is read", "file", r.opts.CatalogCache, "err", err)
		}
		if s == nil {
			s = snapshot{}
		}
		r.snapRead <- s
	}()
}

// snapshotLocked is the catalog snapshot during the first Load (nil
// otherwise).
func (r *Registry) snapshotLocked() snapshot {
	if r.snapRead != nil {
		r.snap, r.snapRead = <-r.snapRead, nil
	}
	return r.snap
}

// saveSnapshot writes the catalog snapshot after the first Load, unless
// it holds what the file it read held, or nearly: while fewer than one
// file in snapSlack changed since it was written (read afresh, or gone),
// those few are read at each start, which costs less than rewriting (and
// syncing) the whole snapshot after every edit of one tool. A snapshot
// that cannot be written is logged: it only costs the next start time.
func (r *Registry) saveSnapshot() {
	r.mu.Lock()
	old := r.snapshotLocked()
	r.snap = nil
	if old == nil {
		r.mu.Unlock()
		return
	}
	// Counted before anything is gathered: a warm start writes nothing
	// and allocates nothing here.
	kept, fromOld := 0, 0
	for _, fe := range r.files {
		if fe.keepable(r.snapSince) {
			kept++
			if fe.snapped {
				fromOld++
			}
		}
	}
	// Files read afresh (edited or new) and entries not used (edited or
	// gone): an edit is both, so the larger of the two counts the changes.
	if changed := max(kept-fromOld, len(old)-fromOld); len(old) > 0 && changed*snapSlack < kept || changed == 0 {
		r.mu.Unlock()
		return
	}
	files := make([]snapFile, 0, kept)
	for p, fe := range r.files {
		if fe.keepable(r.snapSince) {
			files = append(files, snapFile{path: p, key: fe.key, sum: fe.sum, meta: fe.meta})
		}
	}
	r.mu.Unlock()
	if err := writeSnapshot(r.opts.CatalogCache, fileio.ExecutableID(), files); err != nil {
		r.log.Warn("cannot write the catalog snapshot; until it can be, every start reads every .meta file (is the cache directory writable?)", "file", r.opts.CatalogCache, "err", err)
	}
}
