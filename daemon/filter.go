package daemon

import (
	"path/filepath"

	"github.com/sif-dev/sif/watcher"
)

// filter is what decides which files are indexed; it changes on reload.
type filter struct {
	exclude          *watcher.Exclude
	minSize, maxSize int64 // maxSize negative: no limit
}

func (f *filter) excluded(root, path string, isDir bool) bool {
	if f.exclude == nil || path == root {
		return false
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return f.exclude.Match(filepath.ToSlash(rel), isDir)
}

// tooLarge reports whether a file of size bytes is above the maximum size.
func (f *filter) tooLarge(size int64) bool { return f.maxSize >= 0 && size > f.maxSize }

func (d *Daemon) filter() *filter { return d.filt.Load() }

func newFilter(c Config) (*filter, error) {
	ex, err := watcher.NewExclude(c.Exclude)
	if err != nil {
		return nil, err
	}
	return &filter{exclude: ex, minSize: c.MinFileSize, maxSize: c.MaxFileSize}, nil
}
