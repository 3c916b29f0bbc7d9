package daemon

import (
	"context"
	"fmt"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc/server"
)

// Answers leave out the files under missing roots: the index keeps them,
// so a root that comes back costs no read, but they are not on disk now.

// answers is the index as the socket serves it (server.Backend.Query):
// the daemon's current index (see ixHandle), without the files under
// missing roots.
type answers struct{ d *Daemon }

var (
	_ index.Querier      = answers{}
	_ index.DirTotaler   = answers{}
	_ server.SimiFinder  = answers{}
	_ server.SimiGrouper = answers{}
)

func (a answers) Params() fingerprint.Params { return a.d.ix.Params() }
func (a answers) Stats() (index.Stats, error) {
	st, _, err := a.d.stats()
	return st, err
}

// Similar leaves the files under missing roots out as the index's own
// filters do, before the limit and the count of candidates.
func (a answers) Similar(ctx context.Context, q index.Query, o index.QueryOptions) (*index.Result, error) {
	defer a.d.first.enter()()
	o.Visible = a.d.present(o.Visible)
	return a.d.ix.Similar(ctx, q, o)
}

// EachGroup leaves the files under missing roots out as if they were not
// indexed: they neither appear nor link the files they resemble, and a
// file identical to one of them is answered in its own right.
func (a answers) EachGroup(ctx context.Context, o index.GroupOptions, fn func(index.Group) error) (err error) {
	o.Visible = a.d.present(o.Visible)
	whole(func() { err = a.d.ix.EachGroup(ctx, o, fn) })
	return err
}

// SimiHash reports whether the index keeps SimiHash keys.
func (a answers) SimiHash() bool { return a.d.ix.SimiHash() }

// SimiFind leaves the files under missing roots out, as Similar does.
func (a answers) SimiFind(ctx context.Context, q index.SimiQuery) (*index.SimiResult, error) {
	defer a.d.first.enter()()
	q.Visible = a.d.present(q.Visible)
	return call(a.d.ix, "query", func(ix *index.Index) (*index.SimiResult, error) { return ix.SimiFind(ctx, q) })
}

// SimiGroups leaves the files under missing roots out as EachGroup does.
// An error of fn is returned as is, and is not the index's.
func (a answers) SimiGroups(ctx context.Context, o index.SimiGroupOptions, fn func(index.SimiGroup) error) (*index.SimiGroupStats, error) {
	o.Visible = a.d.present(o.Visible)
	var fnErr error
	each := func(g index.SimiGroup) error {
		fnErr = fn(g)
		return fnErr
	}
	var st *index.SimiGroupStats
	var err error
	whole(func() {
		st, err = call(a.d.ix, "query", func(ix *index.Index) (*index.SimiGroupStats, error) {
			st, err := ix.SimiGroups(ctx, o, each)
			if fnErr != nil {
				return nil, nil // not the index's, and not to be tried again
			}
			return st, err
		})
	})
	if fnErr != nil {
		return nil, fnErr
	}
	return st, err
}

func (a answers) Dupes(ctx context.Context, prefix string) (ds []index.DupeSet, err error) {
	whole(func() { ds, err = a.d.ix.Dupes(ctx, prefix) })
	return a.d.presentDupes(ds), err
}

// DirTotals counts the files under missing roots out, as if they were
// not indexed.
func (a answers) DirTotals(ctx context.Context, dirs []string, o *index.DirTotalsOptions) ([]index.DirTotal, error) {
	var opts index.DirTotalsOptions
	if o != nil {
		opts = *o
	}
	opts.Visible = a.d.present(opts.Visible)
	return call(a.d.ix, "dir totals", func(ix *index.Index) ([]index.DirTotal, error) { return ix.DirTotals(ctx, dirs, &opts) })
}

// present returns vis (nil: every file) narrowed to the files not under a
// missing root: the Visible filter of an answer that leaves them out as if
// they were not indexed.
func (d *Daemon) present(vis func(*index.FileMeta) bool) func(*index.FileMeta) bool {
	hide := d.hidden()
	if hide == nil {
		return vis
	}
	return func(m *index.FileMeta) bool { return !hide(m.Path) && (vis == nil || vis(m)) }
}

// hidden returns a predicate true for paths under a missing root, or nil
// when no root is missing.
func (d *Daemon) hidden() func(string) bool {
	prefixes := append(d.missingPrefixes(), d.forgettingPrefixes()...)
	if len(prefixes) == 0 {
		return nil
	}
	return func(p string) bool { return isUnder(p, prefixes) }
}

func (d *Daemon) presentDupes(ds []index.DupeSet) []index.DupeSet {
	hide := d.hidden()
	if hide == nil {
		return ds
	}
	out := ds[:0]
	for _, s := range ds {
		files := s.Files[:0]
		for _, f := range s.Files {
			if !hide(f.Path) {
				files = append(files, f)
			}
		}
		if s.Files = files; len(files) >= 2 {
			out = append(out, s)
		}
	}
	return out
}

// markMissing records that root r is missing, for why (err, if not nil,
// is what showed it). The first time, it logs it once at Warn, notes it
// among the last errors and drops the root's watches; until the root is
// back (checkRoots logs that at Info), later calls change nothing. It is
// called by the fault loop and by workers that found a path gone.
func (d *Daemon) markMissing(r *rootState, why string, err error) {
	r.mu.Lock()
	was := r.missing
	if was == "" {
		r.missing = why
	}
	r.mu.Unlock()
	if was != "" {
		return
	}
	args := []any{"root", r.path, "why", why}
	if err != nil {
		args = append(args, "err", err)
	}
	d.log.Warn("root is missing: its files are kept but not answered until it is back", args...)
	d.errs.add(fmt.Sprintf("root %s missing: %s", r.path, why))
	if d.watch != nil {
		d.watch.RemoveRoot(r.path)
	}
}
