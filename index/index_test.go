package index_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

func TestOpenStoresParams(t *testing.T) {
	fs := vfs.NewMem()
	ix, err := index.Open("/db", &index.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Params() != fingerprint.DefaultParams() {
		t.Fatalf("new index with zero params has %s, want the defaults %s", ix.Params(), fingerprint.DefaultParams())
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	// Zero params on an existing index: whatever is stored. Equal params
	// (after normalization): fine.
	for _, p := range []fingerprint.Params{{}, {Scheme: fingerprint.Manber}, fingerprint.DefaultParams()} {
		ix, err := index.Open("/db", &index.Options{FS: fs, Params: p})
		if err != nil {
			t.Fatalf("reopen with %+v: %v", p, err)
		}
		if ix.Params() != fingerprint.DefaultParams() {
			t.Fatalf("reopened index has %s", ix.Params())
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// Other params: a clear error naming both.
	want := fingerprint.Params{Scheme: fingerprint.Manber, Window: 32}
	_, err = index.Open("/db", &index.Options{FS: fs, Params: want})
	if !errors.Is(err, index.ErrParamsMismatch) {
		t.Fatalf("open with other params: %v, want ErrParamsMismatch", err)
	}
	msg := err.Error()
	for _, s := range []string{"/db", fingerprint.DefaultParams().String(), mustParams(want).String(), "rebuild"} {
		if !strings.Contains(msg, s) {
			t.Errorf("params mismatch error %q does not mention %q", msg, s)
		}
	}
	// The failed open released the lock.
	ix, err = index.Open("/db", &index.Options{FS: fs})
	if err != nil {
		t.Fatalf("open after a failed open: %v", err)
	}
	ix.Close()

	// Invalid params are rejected before anything is opened.
	if _, err := index.Open("/other", &index.Options{FS: fs, Params: fingerprint.Params{Scheme: "nope"}}); !errors.Is(err, fingerprint.ErrParams) {
		t.Fatalf("open with an invalid scheme: %v", err)
	}
}

func TestChunksParamsPersist(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, chunks)
	sk := sketchOf(chunks, "a", 100, fingerprint.Feature{Hash: 1, Count: 2, Len: 40})
	if _, err := ix.Put(index.FileMeta{Path: "/a"}, sk); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix2, err := index.Open("/db", &index.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	if ix2.Params() != chunks {
		t.Fatalf("reopened chunks index has %s", ix2.Params())
	}
	if r, err := ix2.Lookup("/a"); err != nil || r.Weight != 80 {
		t.Fatalf("lookup after reopen: %+v, %v; want weight 80", r, err)
	}
	fwd, _ := ix2.ForwardList("/a")
	if len(fwd) != 1 || fwd[0] != (index.Entry{Key: index.FingerprintKey(1), Weight: 80}) {
		t.Fatalf("forward list after reopen: %v", fwd)
	}
	mustClean(t, ix2)
}

func TestLocked(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		fs := vfs.NewMem()
		ix := openMem(t, fs, manber)
		_, err := index.Open("/db", &index.Options{FS: fs})
		if !errors.Is(err, index.ErrLocked) || !strings.Contains(err.Error(), "/db") {
			t.Fatalf("second open: %v, want ErrLocked naming /db", err)
		}
		ix.Close()
		ix2, err := index.Open("/db", &index.Options{FS: fs})
		if err != nil {
			t.Fatalf("open after close: %v", err)
		}
		ix2.Close()
	})
	t.Run("disk", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		ix, err := index.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = index.Open(dir, nil)
		if !errors.Is(err, index.ErrLocked) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("second open: %v, want ErrLocked naming %s", err, dir)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ix, err = index.Open(dir, &index.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open after close: %v", err)
		}
		ix.Close()
	})
}

func TestReadOnly(t *testing.T) {
	fs := vfs.NewMem()
	if _, err := index.Open("/missing", &index.Options{FS: fs, ReadOnly: true}); err == nil ||
		!errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "/missing") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("read-only open of a missing directory: %v", err)
	}
	if err := fs.MkdirAll("/empty", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := index.Open("/empty", &index.Options{FS: fs, ReadOnly: true}); !errors.Is(err, index.ErrNotIndex) {
		t.Fatalf("read-only open of an empty directory: %v", err)
	}
	// A directory that is not an index is refused without a write, not
	// even Pebble's LOCK file.
	if err := fs.MkdirAll("/tree/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := fs.Create("/tree/a.txt", vfs.WriteCategoryUnspecified); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	if _, err := index.Open("/tree", &index.Options{FS: fs, ReadOnly: true}); !errors.Is(err, index.ErrNotIndex) || !strings.Contains(err.Error(), "/tree") {
		t.Fatalf("read-only open of a plain directory: %v", err)
	}
	if names, _ := fs.List("/tree"); len(names) != 2 {
		t.Errorf("after a refused read-only open, /tree holds %q, want a.txt and sub only", names)
	}

	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	sk := sketchOf(manber, "a", 10, fingerprint.Feature{Hash: 1, Count: 1})
	if _, err := ix.Put(index.FileMeta{Path: "/a"}, sk); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ro, err := index.Open("/db", &index.Options{FS: fs, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Put(index.FileMeta{Path: "/b"}, sk); !errors.Is(err, index.ErrReadOnly) {
		t.Fatalf("put on a read-only index: %v", err)
	}
	if err := ro.Remove("/a"); !errors.Is(err, index.ErrReadOnly) {
		t.Fatalf("remove on a read-only index: %v", err)
	}
	if _, err := ro.Lookup("/a"); err != nil {
		t.Fatal(err)
	}
	if err := ro.Sync(); err != nil {
		t.Fatal(err)
	}
	mustClean(t, ro)
}

func TestClosed(t *testing.T) {
	ix := openMem(t, nil, manber)
	if err := ix.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	sk := sketchOf(manber, "a", 10)
	checks := map[string]error{
		"close":  ix.Close(),
		"sync":   ix.Sync(),
		"remove": ix.Remove("/a"),
		"rename": ix.Rename("/a", index.FileMeta{Path: "/b"}),
		"files":  ix.Files("", func(index.FileRecord) error { return nil }),
	}
	_, checks["put"] = ix.Put(index.FileMeta{Path: "/a"}, sk)
	_, checks["lookup"] = ix.Lookup("/a")
	_, checks["similar"] = ix.Similar(context.Background(), index.Query{Sketch: sk}, index.QueryOptions{})
	_, checks["groups"] = ix.Groups(context.Background(), index.GroupOptions{})
	_, checks["dupes"] = ix.Dupes(context.Background(), "")
	_, checks["stats"] = ix.Stats()
	_, checks["check"] = ix.Check()
	for op, err := range checks {
		if !errors.Is(err, index.ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", op, err)
		}
	}
	if ix.Params() != manber {
		t.Errorf("params after close: %s", ix.Params())
	}
}

// TestCloseWaitsForReaders: Close waits for a Files callback to return, and
// calls made from the callback after Close began fail with ErrClosed rather
// than deadlocking.
func TestCloseWaitsForReaders(t *testing.T) {
	ix := openMem(t, nil, manber)
	sk := sketchOf(manber, "a", 10, fingerprint.Feature{Hash: 1, Count: 1})
	ix.Put(index.FileMeta{Path: "/a"}, sk)
	ix.Put(index.FileMeta{Path: "/b"}, sk)
	inside := make(chan struct{})
	closed := make(chan error)
	n := 0
	err := ix.Files("", func(index.FileRecord) error {
		n++
		if n == 1 {
			go func() { close(inside); closed <- ix.Close() }()
			<-inside
			for { // wait until Close has begun
				if _, err := ix.Stats(); errors.Is(err, index.ErrClosed) {
					break
				}
			}
			select {
			case err := <-closed:
				t.Errorf("Close returned (%v) while Files was running", err)
			default:
			}
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("files: %v after %d calls", err, n)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestLoggerReceivesPebbleLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fs := vfs.NewMem()
	ix, err := index.Open("/db", &index.Options{FS: fs, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if !strings.Contains(buf.String(), "index opened") {
		t.Fatalf("log: %q", buf.String())
	}
}

// TestStatsCountsSurviveReopen: the counts computed at Open equal those kept
// by the writes.
func TestStatsCountsSurviveReopen(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, chunks)
	for i, label := range []string{"a", "b", "c"} {
		sk := sketchOf(chunks, label, int64(100*(i+1)),
			fingerprint.Feature{Hash: 1, Count: 1}, fingerprint.Feature{Hash: uint64(10 + i), Count: 2})
		if _, err := ix.Put(index.FileMeta{Path: "/" + label, Size: int64(100 * (i + 1))}, sk); err != nil {
			t.Fatal(err)
		}
	}
	ix.Remove("/b")
	before, _ := ix.Stats()
	ix.Close()
	ix2, err := index.Open("/db", &index.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	after, _ := ix2.Stats()
	before.DiskBytes, after.DiskBytes = 0, 0
	if before != after || after.Files != 2 || after.Bytes != 400 || after.Features != 4 || after.Fingerprints != 0 {
		t.Fatalf("stats before close %+v, after reopen %+v", before, after)
	}
}

// TestOpenRefusesOldFormat: a database of format version 1 (another
// comparer, a merge operator, 64-bit posting keys) or one whose stored
// format version is not this program's is refused with ErrCorrupt and
// advice, and left as it was.
func TestOpenRefusesOldFormat(t *testing.T) {
	t.Run("version 1", func(t *testing.T) {
		fs := vfs.NewMem()
		cmp := *pebble.DefaultComparer
		cmp.Name = index.ComparerNameV1
		cmp.Split = func(k []byte) int {
			if len(k) >= 9 && k[0] == 'P' {
				return 9
			}
			return len(k)
		}
		merger := *pebble.DefaultMerger
		merger.Name = "sif.count.v1"
		db, err := pebble.Open("/db", &pebble.Options{FS: fs, Comparer: &cmp, Merger: &merger, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"mversion": "1", "mparams": `{"scheme":"manber"}`, "d\x00\x00\x00\x00\x00\x00\x00\x01": "\x02"} {
			if err := db.Set([]byte(k), []byte(v), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{false, true} {
			_, err := index.Open("/db", &index.Options{FS: fs, ReadOnly: ro})
			if !errors.Is(err, index.ErrCorrupt) {
				t.Fatalf("open (read-only %v) of a version 1 index: %v, want ErrCorrupt", ro, err)
			}
			for _, s := range []string{"/db", "version 1", "move the index aside and rebuild it"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		}
		// The refusal released the lock and left the database alone.
		db, err = pebble.Open("/db", &pebble.Options{FS: fs, Comparer: &cmp, Merger: &merger, Logger: quietLogger{}})
		if err != nil {
			t.Fatalf("reopen of the old database: %v", err)
		}
		db.Close()
	})
	// Format 5 stored one Pebble key per posting, with the comparer
	// "sif.keys.v2" and Pebble's default merger: it is refused as old
	// before Pebble sees it, and moved aside and rebuilt on request.
	t.Run("version 5", func(t *testing.T) {
		fs := vfs.NewMem()
		cmp := *pebble.DefaultComparer
		cmp.Name = index.ComparerNameV2
		cmp.Split = func(k []byte) int {
			if len(k) >= 5 && k[0] == 'P' {
				return 5
			}
			return len(k)
		}
		db, err := pebble.Open("/db", &pebble.Options{FS: fs, Comparer: &cmp, Logger: quietLogger{}})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range map[string]string{"mversion": "5", "mparams": `{"scheme":"manber"}`, "P\x01\x02\x03\x04\x00\x01": ""} {
			if err := db.Set([]byte(k), []byte(v), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = index.Open("/db", &index.Options{FS: fs})
		if !errors.Is(err, index.ErrOldFormat) || !strings.Contains(err.Error(), "version 2 to 5") {
			t.Fatalf("open of a version 5 index: %v, want ErrOldFormat", err)
		}
		ix, err := index.Open("/db", &index.Options{FS: fs, MoveAsideOldFormat: true, Params: manber})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		if got := ix.MovedAside(); got != "/db.old-format" {
			t.Fatalf("MovedAside() = %q", got)
		}
		sk := sketchOf(manber, "a", 1000, feats(1, 2, 3)...)
		if _, err := ix.Put(index.FileMeta{Path: "/a", Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
		if rep := mustClean(t, ix); rep.Files != 1 || rep.Postings != 3 {
			t.Fatalf("rebuilt index: %+v", rep)
		}
	})
	// Format 6 had the same comparer and merge operator, and copy keys
	// of the whole strong hash: it is refused as old by its stored
	// version, and moved aside and rebuilt on request.
	t.Run("version 6", func(t *testing.T) {
		fs := vfs.NewMem()
		ix := openMem(t, fs, manber)
		sk := sketchOf(manber, "a", 1000, feats(1, 2, 3)...)
		if _, err := ix.Put(index.FileMeta{Path: "/a", Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
		strong := strongOf("a")
		old := append(append([]byte{'s'}, strong[:]...), 0, 0, 0, 1, 0, 0, 0, 1)
		for k, v := range map[string]string{"mversion": "6", string(old): ""} {
			if err := ix.RawSet([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range [][]byte{index.CopyKey(1, 1), index.HashKey(strong, 1)} {
			if err := ix.RawDelete(k); err != nil {
				t.Fatal(err)
			}
		}
		ix.Close()
		_, err := index.Open("/db", &index.Options{FS: fs})
		if !errors.Is(err, index.ErrOldFormat) || !strings.Contains(err.Error(), `format version "6" (written by an older sif)`) {
			t.Fatalf("open of a version 6 index: %v, want ErrOldFormat", err)
		}
		ix, err = index.Open("/db", &index.Options{FS: fs, MoveAsideOldFormat: true, Params: manber})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		if got := ix.MovedAside(); got != "/db.old-format" {
			t.Fatalf("MovedAside() = %q", got)
		}
		if st, _ := ix.Stats(); st.Files != 0 {
			t.Fatalf("the rebuilt index holds %d files", st.Files)
		}
		if _, err := ix.Put(index.FileMeta{Path: "/a", Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := ix.PutCopy(index.FileMeta{Path: "/b", Size: sk.Size}, sk.Size, strong); err != nil || !ok {
			t.Fatalf("PutCopy in the rebuilt index: %v, %v", ok, err)
		}
		if rep := mustClean(t, ix); rep.Files != 2 || rep.Contents != 1 || rep.Postings != 3 {
			t.Fatalf("rebuilt index: %+v", rep)
		}
	})
	t.Run("stored version", func(t *testing.T) {
		for _, c := range []struct{ version, by string }{
			{"1", " (written by an older sif)"},
			{"2", " (written by an older sif)"}, // no inode keys
			{"99", " (written by a newer sif)"},
			{"x", ", this program reads version"},
		} {
			fs := vfs.NewMem()
			ix := openMem(t, fs, manber)
			if err := ix.RawSet(index.MetaVersionKey, []byte(c.version)); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			_, err := index.Open("/db", &index.Options{FS: fs})
			if !errors.Is(err, index.ErrCorrupt) || !strings.Contains(err.Error(), `format version "`+c.version+`"`+c.by) ||
				!strings.Contains(err.Error(), "move the index aside and rebuild it") {
				t.Fatalf("open of an index with format version %s: %v, want ErrCorrupt with advice", c.version, err)
			}
			if old := strings.Contains(c.by, "older"); errors.Is(err, index.ErrOldFormat) != old {
				t.Errorf("format version %s: errors.Is(ErrOldFormat) = %v, want %v", c.version, !old, old)
			}
		}
	})
	// With MoveAsideOldFormat, an older index is renamed and a new one
	// made; a newer or unreadable one is still refused.
	t.Run("move aside", func(t *testing.T) {
		for _, c := range []struct {
			version string
			moved   bool
		}{{"2", true}, {"99", false}} {
			fs := vfs.NewMem()
			ix := openMem(t, fs, manber)
			if err := ix.RawSet(index.MetaVersionKey, []byte(c.version)); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			for round := range 2 { // the second time, .old-format exists
				ix, err := index.Open("/db", &index.Options{FS: fs, MoveAsideOldFormat: true})
				if !c.moved {
					if err == nil || errors.Is(err, index.ErrOldFormat) {
						t.Fatalf("version %s: %v, want a refusal", c.version, err)
					}
					break
				}
				if err != nil {
					t.Fatalf("version %s, round %d: %v", c.version, round, err)
				}
				want := "/db.old-format"
				if got := ix.MovedAside(); (round == 0 && got != want) || (round == 1 && !strings.HasPrefix(got, want+"-")) {
					t.Errorf("round %d: MovedAside() = %q", round, got)
				}
				if st, _ := ix.Stats(); st.Files != 0 {
					t.Errorf("the new index holds %d files", st.Files)
				}
				if err := ix.RawSet(index.MetaVersionKey, []byte(c.version)); err != nil {
					t.Fatal(err)
				}
				ix.Close()
				if _, err := fs.Stat(ix.MovedAside()); err != nil {
					t.Errorf("the old index is not where MovedAside says: %v", err)
				}
			}
		}
	})
}

// quietLogger drops Pebble's log lines.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(string, ...any)          {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// TestNoLogRecycling: obsolete write-ahead logs are deleted, not kept for
// reuse, so a small index stays small on disk.
func TestNoLogRecycling(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, manber)
	rng := rand.New(rand.NewPCG(4, 4))
	for round := 0; round < 5; round++ {
		for i := 0; i < 50; i++ {
			sk := randSketch(rng, manber, 50, 100000)
			if _, err := ix.Put(metaFor(fmt.Sprintf("/%d/%d", round, i), sk, rng), sk); err != nil {
				t.Fatal(err)
			}
		}
		if err := ix.Compact(context.Background()); err != nil { // flushes, so the log rotates
			t.Fatal(err)
		}
	}
	names, err := fs.List("/db")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			logs = append(logs, n)
		}
	}
	if len(logs) > 1 {
		t.Fatalf("%d write-ahead logs %q, want only the current one", len(logs), logs)
	}
	mustClean(t, ix)
}

// TestCompact: Compact keeps every key and runs alongside reads and writes;
// it fails after Close and on a read-only index.
func TestCompact(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, chunks)
	rng := rand.New(rand.NewPCG(6, 6))
	m := model{}
	put := func(i int) {
		sk := randSketch(rng, chunks, 30, 2000)
		path := fmt.Sprintf("/f%03d", i)
		meta := metaFor(path, sk, rng)
		if _, err := ix.Put(meta, sk); err != nil {
			t.Fatal(err)
		}
		m[path] = modelFile{meta, sk}
	}
	for i := 0; i < 200; i++ {
		put(i)
	}
	done := make(chan error)
	go func() { done <- ix.Compact(context.Background()) }()
	for i := 200; i < 300; i++ { // writes go on meanwhile
		put(i % 250)
		if i%10 == 0 {
			if _, err := ix.Similar(context.Background(), index.Query{Sketch: m["/f001"].sk}, index.QueryOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	verifyModel(t, ix, m)
	mustClean(t, ix)
	ix.Close()
	if err := ix.Compact(context.Background()); !errors.Is(err, index.ErrClosed) {
		t.Fatalf("compact after close: %v, want ErrClosed", err)
	}
	ro, err := index.Open("/db", &index.Options{FS: fs, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Compact(context.Background()); !errors.Is(err, index.ErrReadOnly) {
		t.Fatalf("compact of a read-only index: %v, want ErrReadOnly", err)
	}
}
