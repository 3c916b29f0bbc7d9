package watcher

import (
	"cmp"
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
	Info fs.FileInfo // for Regular entries, unless WalkOptions.NoInfo
	Err  error       // for Unreadable and Vanished entries
}

// WalkOptions configure a Walk. The zero value walks everything.
type WalkOptions struct {
	// Root is the directory the Exclude patterns are relative to: the root
	// that the walked directory lies under (or is), spelled the same way,
	// both absolute or both relative. "" means the walked directory.
	Root string
	// Exclude says what to skip: an excluded directory is not descended
	// into, an excluded file is not reported. nil excludes nothing.
	Exclude *Exclude
	// OnDir, if set, is called with every directory the walk enters (dir
	// itself first), before the walk lists it, from the calling goroutine:
	// a caller watching the tree as it walks it (Watcher.WatchDir) sees
	// an entry made before the watch in the listing, and one made after
	// as an event. Returning fs.SkipDir leaves the directory out; any
	// other error ends the walk, which returns it.
	OnDir func(dir string) error
	// NoInfo leaves Info nil on Regular entries: their kind is taken
	// from the directory listing (d_type) without an lstat, for a caller
	// that stats each file itself once it has it open. A file replaced
	// by something else after the listing is then the caller's to tell.
	NoInfo bool
}

// Walk calls fn for every non-directory entry under dir, and for every
// directory it cannot list, in lexical order, from the calling goroutine. It
// does not follow symlinks, and silently skips what o excludes (all of it,
// if dir itself is excluded). It stops when ctx is done (returning
// ctx.Err()) or when fn returns an error (returning it). An error about dir
// itself is returned, not reported.
func Walk(ctx context.Context, dir string, o WalkOptions, fn func(Entry) error) error {
	// excluded reports whether the entry at p is to be skipped.
	excluded := func(p string, isDir bool) bool { return false }
	if o.Exclude != nil {
		root := filepath.Clean(cmp.Or(o.Root, dir))
		dirRel, ok := relPath(root, filepath.Clean(dir))
		if !ok {
			return fmt.Errorf("watcher: walk %s: not under root %s", dir, o.Root)
		}
		excluded = func(p string, isDir bool) bool {
			if p == dir {
				return o.Exclude.Match(dirRel, isDir)
			}
			// Below dir, paths are clean (filepath.Join), and their parents
			// were not excluded, or the walk would not have entered them.
			rel, _ := relPath(root, p)
			return o.Exclude.matchEntry(rel, isDir)
		}
	}
	return walkTree(ctx, dir, o, excluded, fn)
}

// walkPortable is Walk on filepath.WalkDir, for the systems without a walk
// of their own (walk_linux.go), and as the reference the Linux walk is
// tested against.
func walkPortable(ctx context.Context, dir string, o WalkOptions, excluded func(p string, isDir bool) bool, fn func(Entry) error) error {
	return filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if path == dir {
				return err
			}
			isDir := de != nil && de.IsDir()
			if excluded(path, isDir) {
				return skip(isDir)
			}
			kind := Unreadable
			if os.IsNotExist(err) {
				kind = Vanished
			}
			if ferr := fn(Entry{Path: path, Kind: kind, Err: unwrapPathErr(err)}); ferr != nil {
				return ferr
			}
			return skip(isDir)
		}
		t := de.Type()
		if excluded(path, t.IsDir()) {
			return skip(t.IsDir())
		}
		switch {
		case t.IsDir():
			if o.OnDir != nil {
				return o.OnDir(path)
			}
			return nil
		case t&fs.ModeSymlink != 0:
			return fn(Entry{Path: path, Kind: Symlink})
		case !t.IsRegular():
			return fn(Entry{Path: path, Kind: Special})
		case o.NoInfo:
			return fn(Entry{Path: path, Kind: Regular})
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

// skip is what a WalkDir callback returns to go past an entry: SkipDir not
// to enter a directory, nil for anything else (SkipDir would skip the rest
// of its parent).
func skip(isDir bool) error {
	if isDir {
		return fs.SkipDir
	}
	return nil
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
