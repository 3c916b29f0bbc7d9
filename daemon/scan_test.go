package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Scan requests merge: one for a directory under a queued scan joins it,
// one for a directory above queued scans absorbs them. Each request's done
// channel is closed, and its epoch released, when the scan covering it
// ends; a root shows scanning while any full scan of it is requested.
func TestScanRequestsMerge(t *testing.T) {
	d, r := waitTestDaemon(t)
	close(r.begun)
	sub := d.requestScan(r, r.path+"/a", false, "new directory")
	subsub := d.requestScan(r, r.path+"/a/b", false, "new directory")
	other := d.requestScan(r, r.path+"/c", false, "new directory")
	if n := d.bulk.size(); n != 2 {
		t.Fatalf("%d scans queued, want 2 (a/b merged into a)", n)
	}
	full := d.requestScan(r, r.path, false, "events lost")
	again := d.requestScan(r, r.path, false, "rescan asked for")
	if n := d.bulk.size(); n != 1 {
		t.Fatalf("%d scans queued, want the root's alone", n)
	}
	if r.fullQueued != 2 {
		t.Errorf("fullQueued %d, want 2", r.fullQueued)
	}
	e := d.track.advance()
	if applied, _ := d.track.appliedEpoch(); applied >= e {
		t.Fatal("requests are not registered with the tracker")
	}
	if n := endQueuedScans(d); n != 1 {
		t.Fatalf("%d scans ended, want 1", n)
	}
	for name, s := range map[string]*scanRun{"a": sub, "a/b": subsub, "c": other, "root": full, "root again": again} {
		if !isClosed(s.done) {
			t.Errorf("request for %s not done once the root's scan ended", name)
		}
	}
	if r.fullQueued != 0 {
		t.Errorf("fullQueued %d after the scans, want 0", r.fullQueued)
	}
	if applied, _ := d.track.appliedEpoch(); applied < e {
		t.Errorf("applied epoch %d < %d: merged requests not released", applied, e)
	}
	// Live and bulk scans queue apart.
	d.requestScan(r, r.path+"/new", true, "new directory")
	if d.live.size() != 1 || d.bulk.size() != 0 {
		t.Errorf("live %d, bulk %d; want the live scan on the live queue", d.live.size(), d.bulk.size())
	}
}

// A root of which nothing is indexed is watched by its first scan's walk,
// directory by directory, before each is listed: a file made in a
// directory before its watch is listed by the walk, one made after is
// reported by the watch, and once ready every directory is watched, so a
// file made later anywhere in the tree is found.
func TestFirstScanWatchesAsItWalks(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "a/x", "a/x/y", "b", "c/z"} {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "old"), bytes.Repeat([]byte("old file in "+d+" "), 200), 0o644)
	}
	dirs := []string{"a", "a/x", "a/x/y", "b", "c", "c/z"}
	var mu sync.Mutex
	var watchedBefore []string // directories the walk had watched so far
	testHookWatchDir = func(dir string) {
		mu.Lock()
		defer mu.Unlock()
		// Made before dir's watch: only the walk can find it.
		os.WriteFile(filepath.Join(dir, "early"), bytes.Repeat([]byte("early in "+dir+" "), 200), 0o644)
		// Made in a directory watched already: only its watch reports it.
		for _, w := range watchedBefore {
			os.WriteFile(filepath.Join(w, "late-"+filepath.Base(dir)), bytes.Repeat([]byte("late in "+w+" for "+dir+" "), 200), 0o644)
		}
		watchedBefore = append(watchedBefore, dir)
	}
	t.Cleanup(func() { testHookWatchDir = nil })
	d, logs := startDaemon(t, Config{Roots: []string{root}})
	testHookWatchDir = nil
	ctx := context.Background()
	if _, err := d.Wait(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(watchedBefore) != len(dirs) {
		t.Fatalf("the walk watched %q, want the %d directories below the root", watchedBefore, len(dirs))
	}
	mu.Unlock()
	if got := d.watch.WatchedUnder(root); got != len(dirs)+1 {
		t.Errorf("%d directories watched, want %d", got, len(dirs)+1)
	}
	// A file made after the first scan in the deepest directory.
	os.WriteFile(filepath.Join(root, "a/x/y/after"), bytes.Repeat([]byte("made after ready "), 200), 0o644)
	if _, err := d.Wait(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var want []string
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() && !isCookie(p) {
			want = append(want, p)
		}
		return nil
	})
	for _, p := range want {
		if _, err := d.ix.Lookup(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if t.Failed() {
		t.Logf("%s", logs.String())
	}
	if !strings.Contains(logs.String(), "removal pass skipped") {
		t.Errorf("the first scan of the root made a removal pass")
	}
}

// A root with files indexed already is watched whole before its scan, as
// a restart needs no walk of its own: the scan's walk watches nothing.
func TestRestartWatchesBeforeTheScan(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a/b"), 0o755)
	os.WriteFile(filepath.Join(root, "a/b/f"), bytes.Repeat([]byte("a file "), 300), 0o644)
	db := filepath.Join(t.TempDir(), "db")
	func() {
		d, err := open(Config{Roots: []string{root}, DB: db, Socket: filepath.Join(t.TempDir(), "s")})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.run(ctx) }()
		<-d.ready
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	var walked atomic.Int32
	testHookWatchDir = func(string) { walked.Add(1) }
	t.Cleanup(func() { testHookWatchDir = nil })
	d, _ := startDaemon(t, Config{Roots: []string{root}, DB: db})
	if n := walked.Load(); n != 0 {
		t.Errorf("the scan of an indexed root watched %d directories itself", n)
	}
	if got := d.watch.WatchedUnder(root); got != 3 {
		t.Errorf("%d directories watched, want 3", got)
	}
}

// A first scan into an empty index takes a file whose bytes it has not
// met as new without asking the index; copies read at once by both
// workers still end up sharing one content, and the index is consistent.
func TestFirstScanCopiesShareContents(t *testing.T) {
	root := t.TempDir()
	const distinct, copies = 20, 6
	for i := range distinct {
		data := bytes.Repeat([]byte(fmt.Sprintf("content number %d ", i)), 200+i)
		for c := range copies {
			dir := filepath.Join(root, fmt.Sprintf("v%d", c))
			os.MkdirAll(dir, 0o755)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	d, logs := startDaemon(t, Config{Roots: []string{root}, Workers: 2})
	rep, err := d.ix.cur().Check()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Files != distinct*copies || rep.Contents != distinct {
		t.Errorf("after the first scan: %d files, %d contents, problems %q; want %d files of %d contents\n%s",
			rep.Files, rep.Contents, rep.Problems, distinct*copies, distinct, logs.String())
	}
}

// A file the first scan's walk has listed, whose change is applied
// before a worker reads it for the scan, ends up with one record, of its
// bytes now: the scan's index writes, which look up no path the index
// cannot hold, look up a path a change gave a record meanwhile.
func TestFirstScanWithChangesKeepsOnePathOneRecord(t *testing.T) {
	root := t.TempDir()
	const dirs, files = 4, 20
	content := func(p, what string) []byte { return bytes.Repeat([]byte(what+" of "+p+" "), 100) }
	for i := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("d%d", i))
		if err := os.MkdirAll(filepath.Join(dir, "aa"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "aa", "f"), content(dir+"/aa/f", "first"), 0o644)
		for j := range files {
			p := filepath.Join(dir, fmt.Sprintf("f%02d", j))
			os.WriteFile(p, content(p, "first"), 0o644)
		}
	}
	// The walk lists each dN, then enters dN/aa before it queues the
	// files of dN (aa sorts first): there, every file of dN is rewritten
	// and a new one made beside each, and the walk goes on only once the
	// changes are in the index.
	var daemon atomic.Pointer[Daemon]
	var hookErr atomic.Value
	testHookWatchDir = func(dir string) {
		if filepath.Base(dir) != "aa" {
			return
		}
		parent := filepath.Dir(dir)
		var paths []string
		for j := range files {
			p := filepath.Join(parent, fmt.Sprintf("f%02d", j))
			os.WriteFile(p, content(p, "second"), 0o644)
			os.WriteFile(p+".new", content(p, "new"), 0o644)
			paths = append(paths, p, p+".new")
		}
		deadline := time.Now().Add(10 * time.Second)
		for _, p := range paths {
			want := int64(len(content(p, "second")))
			if strings.HasSuffix(p, ".new") {
				want = int64(len(content(strings.TrimSuffix(p, ".new"), "new")))
			}
			for {
				if d := daemon.Load(); d != nil {
					if rec, err := d.ix.Lookup(p); err == nil && rec.FileMeta.Size == want {
						break
					}
				}
				if time.Now().After(deadline) {
					hookErr.Store(fmt.Sprintf("%s: its change was not applied within 10 s", p))
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	t.Cleanup(func() { testHookWatchDir = nil })
	// The hook reads the index: the daemon is stored before its scan begins.
	d, logs := startDaemonWith(t, Config{Roots: []string{root}, Workers: 2, SettleDelay: time.Millisecond, MaxSettleDelay: 10 * time.Millisecond},
		func(d *Daemon) { daemon.Store(d) })
	if _, err := d.Wait(context.Background(), 60*time.Second); err != nil {
		t.Fatal(err)
	}
	testHookWatchDir = nil
	if err := hookErr.Load(); err != nil {
		t.Fatal(err)
	}
	var want int
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() || isCookie(p) {
			return nil
		}
		want++
		st, _ := os.Stat(p)
		if rec, err := d.ix.Lookup(p); err != nil || rec.FileMeta.Size != st.Size() {
			t.Errorf("%s: record %+v, %v; want one of its %d bytes", p, rec.FileMeta, err, st.Size())
		}
		return nil
	})
	rep, err := d.ix.cur().Check()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Files != uint64(want) {
		t.Errorf("%d files, problems %q; want %d files", rep.Files, rep.Problems, want)
	}
	if t.Failed() {
		t.Logf("%s", logs.String())
	}
}
