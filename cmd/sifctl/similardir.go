package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

// `sifctl similar DIR`: the directories that hold a good part of DIR,
// found by package ipc/dirsim; this file holds its answer's shape, its
// progress line and its printing.

// dirProgressAfter is how long a directory query runs before it shows
// its progress on a terminal.
const dirProgressAfter = time.Second

// dirLine is the answer of `sifctl similar --json DIR`: the shape of
// similarLine, for a directory.
type dirLine struct {
	Query    string `json:"query"`
	QueryRaw string `json:"query_raw,omitempty"`
	Dir      bool   `json:"dir"`
	Size     int64  `json:"size"`  // bytes of the files compared
	Files    int    `json:"files"` // the files compared
	// Skipped counts the files not compared: empty ones, symlinks,
	// fifos, sockets and devices, and those that could not be read.
	Empty      int            `json:"empty,omitempty"`
	Special    int            `json:"special,omitempty"`
	Unreadable int            `json:"unreadable,omitempty"`
	Matches    []dirsim.Match `json:"matches"`
	ElapsedNs  int64          `json:"elapsed_ns"`
}

// isDir reports whether file names a directory (following a symlink).
func isDir(file string) bool {
	if file == "-" {
		return false
	}
	st, err := os.Stat(file)
	return err == nil && st.IsDir()
}

// similarDir answers `sifctl similar DIR` for one directory: it prints
// the answer and reports whether anything was found and whether some
// files could not be read. An error is one the whole command fails with.
func similarDir(ctx context.Context, g *globals, c *ipc.Client, p fingerprint.Params, f *similarFlags, prefix, dir string) (found, unreadable bool, err error) {
	start := time.Now()
	var done atomic.Int64
	stop := func() {}
	defer func() { stop() }()
	o := &dirsim.Options{Threshold: &f.threshold, Limit: f.limit, SizeRatio: f.sizeRatio, SameExt: f.sameExt,
		SameType: f.sameType, MaxDF: f.maxDF, Prefix: prefix, Params: &p,
		Progress: func(n, total int) {
			if n == 0 {
				stop = showProgress(g, dir, total, func() int { return int(done.Load()) })
			}
			done.Store(int64(n))
			if n == total {
				stop()
			}
		},
		Skipped: func(path string, err error) { fmt.Fprintf(g.stderr, "sifctl: %s: %v (skipped)\n", path, err) }}
	r, err := dirsim.Similar(ctx, c, dir, o)
	if err != nil {
		return false, false, err
	}
	line := dirLine{Dir: true, Size: r.Size, Files: r.Files, Empty: r.Empty, Special: r.Special,
		Unreadable: r.Unreadable, Matches: r.Matches, ElapsedNs: time.Since(start).Nanoseconds()}
	line.Query, line.QueryRaw = ipc.PathFields(r.Dir)
	if g.json {
		if err := g.printJSON(line); err != nil {
			return false, false, err
		}
	} else {
		printSimilarDir(g.stdout, dir, &line, f.threshold)
	}
	return len(r.Matches) > 0, r.Unreadable > 0, nil
}

// showProgress writes "DIR: n/total files" to stderr, when it is a
// terminal, every 200 ms once dirProgressAfter has passed, until the
// returned stop is called (more than once is fine); stop clears the line.
func showProgress(g *globals, dir string, total int, done func() int) (stop func()) {
	f, ok := g.stderr.(*os.File)
	if !ok {
		return func() {}
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTimer(dirProgressAfter)
		defer t.Stop()
		shown := false
		for {
			select {
			case <-quit:
				if shown {
					fmt.Fprint(f, "\r\033[K")
				}
				return
			case <-t.C:
				fmt.Fprintf(f, "\r\033[Ksifctl: %s: %d/%d files", dir, done(), total)
				shown = true
				t.Reset(200 * time.Millisecond)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-finished }) }
}

// printSimilarDir prints a directory's answer as text: its matches, one
// line each, as for a file, with what became of its files there.
func printSimilarDir(w io.Writer, dir string, l *dirLine, threshold float64) {
	fmt.Fprintf(w, "%s (directory, %d files, %d bytes", dir, l.Files, l.Size)
	if n := l.Empty + l.Special + l.Unreadable; n > 0 {
		fmt.Fprintf(w, "; %d skipped: %d empty, %d not regular, %d unreadable", n, l.Empty, l.Special, l.Unreadable)
	}
	fmt.Fprintln(w, "):")
	switch {
	case l.Files == 0:
		fmt.Fprintln(w, "  no file to compare")
		return
	case len(l.Matches) == 0:
		fmt.Fprintf(w, "  no directory holds %g%% or more of it\n", threshold)
		return
	}
	for _, m := range l.Matches {
		rev := "?"
		if m.ReverseContainment != nil {
			rev = fmt.Sprintf("%.0f%%", *m.ReverseContainment)
		}
		fmt.Fprintf(w, "  %3.0f%%  %s  %d  %d identical, %d similar, %d missing; reverse %s\n",
			m.Containment, m.Exact(), m.Size, m.Files.Identical, m.Files.Similar, m.Files.Missing, rev)
	}
}
