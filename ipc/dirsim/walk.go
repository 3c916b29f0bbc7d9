package dirsim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// dirWalk is what a walk of the query directory found.
type dirWalk struct {
	rels    []string // regular files of one byte or more, relative to the directory
	sizes   []int64
	empty   int // empty regular files: no content to compare
	special int // symlinks (not followed), fifos, sockets, devices
	// unreadable counts the files and directories that could not be
	// read, each given to skipped.
	unreadable int
}

// walkDir lists the regular files under real (the directory dir names,
// symlinks resolved), not following symlinks. A directory or file that
// cannot be read is given to skipped (as dir joined with its path below
// it) and skipped; dir itself unreadable is an error. The walk stops
// with ctx's error once ctx is done.
func walkDir(ctx context.Context, dir, real string, skipped func(string, error)) (*dirWalk, error) {
	w := &dirWalk{}
	f, err := os.Open(real)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, unwrapPath(err))
	}
	f.Close()
	err = filepath.WalkDir(real, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(real, path)
		if err := ctx.Err(); err != nil {
			return err
		}
		shown := filepath.Join(dir, rel)
		if err != nil {
			if path == real {
				return fmt.Errorf("%s: %w", dir, err)
			}
			skipped(shown, unwrapPath(err))
			w.unreadable++
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case !t.IsRegular():
			w.special++
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // vanished: nothing to compare
				skipped(shown, unwrapPath(err))
				w.unreadable++
			}
			return nil
		}
		if info.Size() == 0 {
			w.empty++
			return nil
		}
		w.rels = append(w.rels, rel)
		w.sizes = append(w.sizes, info.Size())
		return nil
	})
	return w, err
}

// unwrapPath returns the error a *fs.PathError carries, without the path
// and operation the caller names itself.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
