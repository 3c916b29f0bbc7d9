package watcher

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Kind classifies an entry found by a walk.
type Kind int

const (
	// Regular is a regular file; Entry.Info is its lstat.
	Regular Kind = iota
	// Symlink is a symbolic link; it is not followed.
	Symlink
	// Special is a fifo, socket or device.
	Special
	// Unreadable is a file or directory that could not be examined or
	// listed; Entry.Err says why.
	Unreadable
	// Vanished is an entry that disappeared while the walk looked at it.
	Vanished
)

func (k Kind) String() string {
	switch k {
	case Regular:
		return "regular"
	case Symlink:
		return "symlink"
	case Special:
		return "special"
	case Unreadable:
		return "unreadable"
	case Vanished:
		return "vanished"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Entry is one thing a walk found.
type Entry struct {
	Path string
	Kind Kind
	Info fs.FileInfo // for Regular entries
	Err  error       // for Unreadable and Vanished entries
}

// Walk calls fn for every non-directory entry under root, and for every
// directory it cannot list, in lexical order, from the calling goroutine. It
// does not follow symlinks. It stops when ctx is done (returning ctx.Err())
// or when fn returns an error (returning it). An error about root itself is
// returned, not reported.
func Walk(ctx context.Context, root string, fn func(Entry) error) error {
	return filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if path == root {
				return err
			}
			kind := Unreadable
			if os.IsNotExist(err) {
				kind = Vanished
			}
			if ferr := fn(Entry{Path: path, Kind: kind, Err: unwrapPathErr(err)}); ferr != nil {
				return ferr
			}
			if de != nil && de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		t := de.Type()
		switch {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			return fn(Entry{Path: path, Kind: Symlink})
		case !t.IsRegular():
			return fn(Entry{Path: path, Kind: Special})
		}
		info, err := de.Info()
		if err != nil {
			return fn(Entry{Path: path, Kind: Vanished, Err: unwrapPathErr(err)})
		}
		if !info.Mode().IsRegular() { // replaced since the directory was listed
			return fn(Entry{Path: path, Kind: Special})
		}
		return fn(Entry{Path: path, Kind: Regular, Info: info})
	})
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
