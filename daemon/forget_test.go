package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sif-dev/sif/index"
)

// removeRootFiles writes root a with n files, one a copy of b/1.txt and
// one much like it, and root b with three files, and returns b/1.txt's
// text.
func removeRootFiles(t *testing.T, a, b string, n int) []byte {
	t.Helper()
	one := words(1, 800)
	files := map[string][]byte{
		filepath.Join(b, "1.txt"):     one,
		filepath.Join(b, "2.txt"):     words(2, 800),
		filepath.Join(b, "sub/3.txt"): words(3, 800),
		filepath.Join(a, "dup.txt"):   one,
		filepath.Join(a, "sim.txt"):   edited(one, 9),
	}
	for i := range n - 2 {
		files[filepath.Join(a, fmt.Sprintf("d%d/%04d.txt", i/100, i))] = words(uint64(100+i), 100)
	}
	writeFiles(t, files)
	return one
}

// holdForget holds a removal before each of its batches numbered in at
// (from 1): it sends the number on held, then waits for a value on release,
// or for the removal's context to be done.
func holdForget(t *testing.T, at ...int) (held chan int, release chan struct{}) {
	held, release = make(chan int), make(chan struct{})
	batches := 0
	testHookForgetBatch = func(ctx context.Context) {
		if batches++; !slices.Contains(at, batches) {
			return
		}
		select {
		case held <- batches:
		case <-ctx.Done():
			return
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	t.Cleanup(func() { testHookForgetBatch = nil })
	return held, release
}

// indexTotals returns the files and bytes the index holds under dir.
func indexTotals(t *testing.T, d *Daemon, dir string) (files, bytes uint64) {
	t.Helper()
	err := d.ix.Files(dirPrefix(dir), func(rec index.FileRecord) error {
		files++
		bytes += uint64(rec.FileMeta.Size)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, bytes
}

// A removed root's files leave the status and every answer as the
// removal returns, while their records are deleted a batch at a time in
// the background; queries and other writes go on between batches; once
// done, nothing of the root is left in the index, and the other root's
// files are intact.
func TestRemoveRootForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
		const n = 2*forgetBatch + 90
		one := removeRootFiles(t, a, b, n)
		d, logs := bubbleDaemon(t, Config{Roots: []string{a, b}})
		filesB, bytesB := indexTotals(t, d, b)
		filesA, bytesA := indexTotals(t, d, a)
		if filesA != n || filesB != 3 {
			t.Fatalf("indexed %d files under a, %d under b; want %d and 3", filesA, filesB, n)
		}
		before := answer(t, d, one, a, b)
		if len(before.mentions(a)) == 0 {
			t.Fatalf("before the removal no answer mentions a: %+v", before)
		}
		held, release := holdForget(t, 1, 2)

		if err := d.RemoveRoot(a); err != nil {
			t.Fatal(err)
		}
		check := func(when string, wantFiles, wantBytes uint64, forgetting bool) {
			t.Helper()
			st := d.Status()
			if st.Index.Files != wantFiles || st.Index.Bytes != wantBytes {
				t.Errorf("%s: status counts %d files, %d bytes; want %d, %d", when, st.Index.Files, st.Index.Bytes, wantFiles, wantBytes)
			}
			if is, err := (answers{d}).Stats(); err != nil || is.Files != wantFiles || is.Bytes != wantBytes {
				t.Errorf("%s: the socket's totals %d files, %d bytes (%v); want %d, %d", when, is.Files, is.Bytes, err, wantFiles, wantBytes)
			}
			if got := len(st.Forgetting) == 1 && st.Forgetting[0].Dir.Exact() == a; got != forgetting {
				t.Errorf("%s: forgetting %+v, want %s listed: %v", when, st.Forgetting, a, forgetting)
			}
			ans := answer(t, d, one, a, b)
			if m := ans.mentions(a); len(m) > 0 {
				t.Errorf("%s: answers mention the removed root: %q", when, m)
			}
			if !slices.Contains(ans.similar, filepath.Join(b, "1.txt")) {
				t.Errorf("%s: similar does not answer b's file: %q", when, ans.similar)
			}
			if len(ans.totals) != 2 || ans.totals[0] != 0 || ans.totals[1] != int64(wantFiles) {
				t.Errorf("%s: directory totals %v, want [0 %d]", when, ans.totals, wantFiles)
			}
		}
		check("as the removal returns", filesB, bytesB, true)
		<-held // before the first batch
		if st := d.Status(); len(st.Forgetting) != 1 || st.Forgetting[0].Files != filesA || st.Forgetting[0].Bytes != bytesA {
			t.Errorf("forgetting as the removal returns: %+v, want %d files, %d bytes", st.Forgetting, filesA, bytesA)
		}

		// Held before its second batch: a query is answered, and a file
		// written under b meanwhile is indexed.
		release <- struct{}{}
		<-held
		if left, _ := indexTotals(t, d, a); left != n-forgetBatch {
			t.Errorf("%d records under a after the first batch, want %d", left, n-forgetBatch)
		}
		if st := d.Status(); len(st.Forgetting) != 1 || st.Forgetting[0].Files != n-forgetBatch {
			t.Errorf("forgetting after the first batch: %+v, want %d files", st.Forgetting, n-forgetBatch)
		}
		check("midway", filesB, bytesB, true)
		extra := words(4, 800)
		writeFiles(t, map[string][]byte{filepath.Join(b, "4.txt"): extra})
		if _, err := d.Rescan(b); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		filesB, bytesB = indexTotals(t, d, b)
		if filesB != 4 {
			t.Errorf("%d files under b after a file was added during the removal, want 4", filesB)
		}

		release <- struct{}{}
		synctest.Wait()
		check("once done", filesB, bytesB, false)
		if left := recordsUnder(d, a); len(left) > 0 {
			t.Errorf("records left under the removed root: %q", left)
		}
		if got, want := recordsUnder(d, b), []string{"1.txt", "2.txt", "4.txt", "3.txt"}; !slices.Equal(got, want) {
			t.Errorf("records under b: %q, want %q", got, want)
		}
		if st, _ := d.ix.Stats(); st.Files != filesB || st.Bytes != bytesB {
			t.Errorf("index totals %d files, %d bytes; want b's %d, %d", st.Files, st.Bytes, filesB, bytesB)
		}
		rep, err := d.ix.cur().Check()
		if err != nil || !rep.OK() {
			t.Fatalf("check after the removal: %v %+v", err, rep)
		}
		if line := fmt.Sprintf(`msg="removed root forgotten" root=%s files=%d`, a, n); !strings.Contains(logs.String(), line) {
			t.Errorf("log lacks %s\n%s", line, logs.String())
		}
	})
}

// A root added again while its removal is forgetting its records stops
// the removal, and its scan finds every file: none is lost, none counted
// twice.
func TestRemoveRootAddedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
		const n = 2*forgetBatch + 90
		removeRootFiles(t, a, b, n)
		d, _ := bubbleDaemon(t, Config{Roots: []string{a, b}})
		all := d.Status().Index
		held, _ := holdForget(t, 2)
		if err := d.RemoveRoot(a); err != nil {
			t.Fatal(err)
		}
		<-held
		if err := d.AddRoot(a); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		st := d.Status()
		if st.Index.Files != all.Files || st.Index.Bytes != all.Bytes || len(st.Forgetting) != 0 {
			t.Errorf("after adding the root back: %d files, %d bytes, forgetting %+v; want %d, %d, none",
				st.Index.Files, st.Index.Bytes, st.Forgetting, all.Files, all.Bytes)
		}
		if files, _ := indexTotals(t, d, a); files != n {
			t.Errorf("%d records under the root added back, want %d", files, n)
		}
	})
}

// A removal a stop interrupts is finished at the next start, before the
// daemon is ready: the removed root's records are gone, the other root's
// kept.
func TestRemoveRootInterrupted(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	const n = 2*forgetBatch + 90
	removeRootFiles(t, a, b, n)
	cfg := Config{Roots: []string{a, b}, DB: filepath.Join(t.TempDir(), "db")}
	t.Run("stopped midway", func(t *testing.T) {
		held, _ := holdForget(t, 2) // its cleanup runs once the daemon has stopped
		d, _ := startDaemon(t, cfg)
		if err := d.RemoveRoot(a); err != nil {
			t.Fatal(err)
		}
		<-held
	})
	d, logs := startDaemon(t, cfg)
	if left := recordsUnder(d, a); len(left) > 0 {
		t.Errorf("%d records left under the removed root after a restart", len(left))
	}
	if got, want := recordsUnder(d, b), []string{"1.txt", "2.txt", "3.txt"}; !slices.Equal(got, want) {
		t.Errorf("records under b: %q, want %q", got, want)
	}
	if st := d.Status(); st.Index.Files != 3 || len(st.Forgetting) != 0 {
		t.Errorf("status after the restart: %d files, forgetting %+v; want 3, none", st.Index.Files, st.Forgetting)
	}
	if line := fmt.Sprintf(`msg="removed files outside the roots" count=%d`, n-forgetBatch); !strings.Contains(logs.String(), line) {
		t.Errorf("log lacks %s\n%s", line, logs.String())
	}
}
