//go:build linux

package watcher

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// scanner is a Handler that does what a Handler must: it records the files
// reported changed, and lists the directories reported added (and the root
// after an overflow) on its own goroutine, as the daemon scans them.
type scanner struct {
	root  string
	scans chan string
	mu    sync.Mutex
	seen  map[string]bool
	busy  sync.WaitGroup // a listing queued or under way
}

func newScanner(root string) *scanner {
	s := &scanner{root: root, scans: make(chan string, 1<<16), seen: map[string]bool{}}
	go func() {
		for dir := range s.scans {
			filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
				if err == nil && !de.IsDir() {
					s.mark(p)
				}
				return nil
			})
			s.busy.Done()
		}
	}()
	return s
}

func (s *scanner) mark(p string) {
	s.mu.Lock()
	s.seen[p] = true
	s.mu.Unlock()
}

func (s *scanner) scan(dir string) {
	s.busy.Add(1)
	s.scans <- dir
}

func (s *scanner) Changed(p string)                { s.mark(p) }
func (s *scanner) Removed(string)                  {}
func (s *scanner) DirAdded(dir string)             { s.scan(dir) }
func (s *scanner) Overflow(string)                 { s.scan(s.root) }
func (s *scanner) Unwatched(dir string, err error) { s.scan(dir) }

func (s *scanner) has(p string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[p]
}

// Files written into new trees while their directories are still being
// watched are all found by a Handler that scans what DirAdded reports:
// each is either reported changed or lies below a directory reported
// added after it was written. Trees are made with mkdir -p and filled at
// once, built elsewhere and moved in, from several goroutines.
func TestWatchNewTreesLoseNoFile(t *testing.T) {
	root := tempRoot(t)
	outside := tempRoot(t)
	s := newScanner(root)
	w := startWatcherAt(t, root, WatchOptions{}, s)

	const writers, trees = 4, 25
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range trees {
				top := fmt.Sprintf("g%d-t%d", g, i)
				dir := filepath.Join(root, top)
				if i%5 == 4 { // built elsewhere, then moved in
					dir = filepath.Join(outside, top)
				}
				deep := filepath.Join(dir, "a", "b", "c", "d")
				if err := os.MkdirAll(deep, 0o755); err != nil {
					t.Error(err)
					return
				}
				for d := deep; len(d) >= len(dir); d = filepath.Dir(d) {
					if err := os.WriteFile(filepath.Join(d, "f"), nil, 0o644); err != nil {
						t.Error(err)
					}
					if err := os.Mkdir(filepath.Join(d, "e"), 0o755); err != nil {
						t.Error(err)
					}
					if err := os.WriteFile(filepath.Join(d, "e", "f"), nil, 0o644); err != nil {
						t.Error(err)
					}
				}
				if dir != filepath.Join(root, top) {
					if err := os.Rename(dir, filepath.Join(root, top)); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()

	// Every event of the writes above comes before the marker's; then wait
	// for the directories they made and for the listings.
	marker := filepath.Join(root, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !s.has(marker) {
		if time.Now().After(deadline) {
			t.Fatal("the marker was not reported")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case <-w.Idle():
	case <-time.After(20 * time.Second):
		t.Fatalf("%d directories still pending", w.Pending())
	}
	s.busy.Wait()

	var files, missed int
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if de.IsDir() {
			if w.WatchedUnder(p) == 0 {
				t.Errorf("%s is not watched", p)
			}
			return nil
		}
		files++
		if !s.has(p) {
			missed++
			if missed <= 10 {
				t.Errorf("%s was neither reported changed nor below a directory reported added", p)
			}
		}
		return nil
	})
	if want := writers*trees*10 + 1; files != want {
		t.Errorf("%d files on disk, want %d", files, want)
	}
	if missed > 0 {
		t.Errorf("%d of %d files missed", missed, files)
	}
}

// onDirAdded is a scanner that also calls do with the directory, on the
// watcher's goroutine, once the directory's scan is queued.
type onDirAdded struct {
	*scanner
	do func(dir string)
}

func (h onDirAdded) DirAdded(dir string) {
	h.scanner.DirAdded(dir)
	h.do(dir)
}

// The race behind a new tree's late file: mkdir -p makes d2 after the
// watcher has listed d1, and a file lands in d2 before d2's watch. d1 is
// reported without d2; d2 raises its own creation event, gets its watch and
// its own DirAdded, below which the file lies. Made deterministic by doing
// mkdir's second half inside DirAdded(d1), while the watcher's adder
// goroutine is held.
func TestWatchDirMadeAfterListing(t *testing.T) {
	root := tempRoot(t)
	d1, d2 := filepath.Join(root, "d1"), filepath.Join(root, "d1", "d2")
	early := filepath.Join(d2, "d3", "early.txt")
	added := make(chan string, 16)
	s := newScanner(root)
	h := onDirAdded{s, func(dir string) {
		if dir == d1 {
			// d1 is watched and was listed empty: what is made now is
			// d1's news, not yet d2's or d3's.
			if err := os.MkdirAll(filepath.Dir(early), 0o755); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(early, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
		added <- dir
	}}
	w := startWatcherAt(t, root, WatchOptions{}, h)
	if err := os.Mkdir(d1, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{d1, d2} {
		select {
		case got := <-added:
			if got != want {
				t.Fatalf("DirAdded(%s), want DirAdded(%s)", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no DirAdded(%s)", want)
		}
	}
	s.busy.Wait()
	if !s.has(early) {
		t.Errorf("%s, written before its directory's watch, was not found by the scan of %s", early, d2)
	}
	if n := w.WatchedUnder(d1); n != 3 {
		t.Errorf("%d directories watched under d1, want 3", n)
	}
	// Now the whole tree is watched: a new file raises its own event.
	late := filepath.Join(d2, "d3", "late.txt")
	if err := os.WriteFile(late, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !s.has(late) {
		if time.Now().After(deadline) {
			t.Fatalf("%s was not reported", late)
		}
		time.Sleep(time.Millisecond)
	}
}

// A directory made and removed at once (as builds do) is gone by the time
// its watch is added: it is not reported as unwatched, which would leave
// the daemon rescanning a directory that no longer exists; its removal is
// reported by its parent's watch. The tree it was in is still reported.
func TestWatchVanishedDirectory(t *testing.T) {
	root := tempRoot(t)
	w, err := NewWatcher(WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(rel string) string { return filepath.Join(root, rel) }
	real := w.addWatch
	w.addWatch = func(dir string) error {
		if dir == at("t/tmp") || dir == at("gone") {
			os.RemoveAll(dir) // between the listing and the watch
		}
		return real(dir)
	}
	r := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.AddRoot(ctx, root, r); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- w.Run(ctx, r) }()
	defer func() { cancel(); <-done }()

	// The tree is made elsewhere and moved in whole, so that the removal
	// above does not race its making.
	outside := tempRoot(t)
	mkdirs(t, outside, "t/tmp/x", "t/keep", "gone")
	if err := os.Rename(filepath.Join(outside, "t"), at("t")); err != nil {
		t.Fatal(err)
	}
	heard := r.until(t, "diradded "+at("t"))
	if err := os.Rename(filepath.Join(outside, "gone"), at("gone")); err != nil {
		t.Fatal(err)
	}
	marker := at("marker")
	os.WriteFile(marker, nil, 0o644)
	heard = append(heard, r.until(t, "changed "+marker)...)
	waitIdle(t, w)
	for len(r.ch) > 0 {
		heard = append(heard, <-r.ch)
	}
	for _, h := range heard {
		if strings.HasPrefix(h, "unwatched ") {
			t.Errorf("heard %q for a directory that is gone", h)
		}
	}
	if n := w.WatchedUnder(at("t")); n != 2 {
		t.Errorf("%d directories watched under t, want 2 (t and t/keep)", n)
	}
}
