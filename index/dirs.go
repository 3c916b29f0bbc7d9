package index

import (
	"context"
	"fmt"
	"os"
)

// Directory totals: how many indexed files, and how many bytes, lie in a
// directory tree. A directory is not a thing the index stores; its totals
// are a prefix scan of the path keys, so they cost one record read per
// file and are bounded (DirTotalsOptions.MaxFiles).

// DirTotal is what the index holds in one directory tree.
type DirTotal struct {
	Path  string // the directory, as asked
	Files int64  // indexed files in the tree (visible ones, with Visible)
	Bytes int64  // their total size
	// Truncated is set when the scan stopped after MaxFiles files: Files
	// and Bytes are then lower bounds.
	Truncated bool
}

// DirTotalsOptions bound and filter DirTotals. A nil or zero value means
// the defaults.
type DirTotalsOptions struct {
	// MaxFiles caps the files counted per directory; the scan of a tree
	// holding more stops there and its total is Truncated. 0 means
	// DefaultDirMaxFiles.
	MaxFiles int
	// Visible, when set, counts only the files whose record it accepts, as
	// if the others were not indexed (as QueryOptions.Visible). It is
	// called on the caller's goroutine, once per file scanned; files it
	// refuses count toward MaxFiles, which bounds the work.
	Visible func(m *FileMeta) bool
}

// DefaultDirMaxFiles is DirTotalsOptions.MaxFiles's default.
const DefaultDirMaxFiles = 200_000

// DirTotaler answers directory totals (*Index implements it). It is a
// role of its own, beside Querier, so a caller that only needs totals
// takes only this.
type DirTotaler interface {
	DirTotals(ctx context.Context, dirs []string, o *DirTotalsOptions) ([]DirTotal, error)
}

var _ DirTotaler = (*Index)(nil)

// DirTotals returns, for each directory of dirs (absolute paths; trailing
// separators ignored), the indexed files in its tree, matched by whole
// path components as InTree does ("/a/b" holds "/a/b/x", not "/a/bc"),
// in the order asked. A directory nothing is indexed under has zero
// totals; a path that is an indexed file is not a directory and counts
// nothing. The records are read in batches (MetasAfter), each a
// consistent view of the index, which is not held between them. It
// stops when ctx is done, between batches, with an error wrapping ctx's
// (see cancel.go). Safe for concurrent use; the caller owns the result.
func (ix *Index) DirTotals(ctx context.Context, dirs []string, o *DirTotalsOptions) ([]DirTotal, error) {
	out, err := ix.dirTotals(ctx, dirs, o)
	if err != nil {
		return nil, fmt.Errorf("index.DirTotals: %w", err)
	}
	return out, nil
}

func (ix *Index) dirTotals(ctx context.Context, dirs []string, o *DirTotalsOptions) ([]DirTotal, error) {
	var opts DirTotalsOptions
	if o != nil {
		opts = *o
	}
	if opts.MaxFiles < 0 {
		return nil, fmt.Errorf("%w: max files %d: want 0 (the default) or more", ErrBadQuery, opts.MaxFiles)
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = DefaultDirMaxFiles
	}
	out := make([]DirTotal, len(dirs))
	var batch []FileMeta
	for i, dir := range dirs {
		t := &out[i]
		t.Path = dir
		prefix, after, scanned := dirPrefix(dir), "", 0
		for {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := min(dirBatch, opts.MaxFiles+1-scanned) // one more: is there more?
			var err error
			if batch, err = ix.metasAfter(prefix, after, n, batch[:0]); err != nil {
				return nil, fmt.Errorf("%q: %w", dir, err)
			}
			for _, m := range batch {
				if scanned == opts.MaxFiles {
					t.Truncated = true
					break
				}
				scanned++
				if opts.Visible == nil || opts.Visible(&m) {
					t.Files++
					t.Bytes += m.Size
				}
			}
			if t.Truncated || len(batch) < n {
				break
			}
			after = batch[len(batch)-1].Path
		}
	}
	return out, nil
}

// dirBatch is how many records DirTotals reads per view of the index.
const dirBatch = 4096

// dirPrefix is the path-key prefix of the files under dir: dir with one
// trailing separator, so that "/a/b" selects "/a/b/x" and not "/a/bc".
func dirPrefix(dir string) string {
	for len(dir) > 0 && isSep(dir[len(dir)-1]) {
		dir = dir[:len(dir)-1]
	}
	return dir + string(os.PathSeparator)
}
