package fleet

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// testHost is one host of a test fleet: its own index and publisher.
type testHost struct {
	name string
	ix   *index.Index
	pub  *Publisher
	rng  *rand.Rand
}

var testParams = func() fingerprint.Params {
	p, err := fingerprint.Params{Scheme: fingerprint.Manber, Bits: 8, Target: 8}.Normalize()
	if err != nil {
		panic(err)
	}
	return p
}()

func newPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func newTestHost(t *testing.T, pool *pgxpool.Pool, name string, roots ...string) *testHost {
	t.Helper()
	ix, err := index.Open(filepath.Join(t.TempDir(), "db"), &index.Options{Params: testParams, Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	h := &testHost{name: name, ix: ix, rng: rand.New(rand.NewPCG(uint64(len(name)), 7))}
	h.pub = NewPublisher(PublisherConfig{Host: name, Roots: roots, Pool: pool, Index: func() *index.Index { return h.ix }, BatchFiles: 7})
	return h
}

// content makes the sketch of a content named label: the same label gives
// the same content on every host.
func content(label string) *fingerprint.Sketch {
	rng := rand.New(rand.NewPCG(uint64(len(label)), uint64(label[len(label)-1])))
	sk := &fingerprint.Sketch{Params: testParams}
	seen := map[uint64]bool{}
	for len(sk.Features) < 40 {
		h := (rng.Uint64() % 5000) << 8
		if !seen[h] {
			seen[h] = true
			sk.Features = append(sk.Features, fingerprint.Feature{Hash: h, Count: 1, Len: uint32(testParams.Window)})
		}
	}
	slices.SortFunc(sk.Features, func(a, b fingerprint.Feature) int { return cmp.Compare(a.Hash, b.Hash) })
	sk.Size = 4000
	sk.Strong = sha256.Sum256([]byte(label))
	sk.Type = fingerprint.TypeText
	return sk
}

func (h *testHost) put(t *testing.T, path, label string) {
	t.Helper()
	if _, err := h.ix.Put(index.FileMeta{Path: path, Size: 4000, MtimeNs: h.rng.Int64()}, content(label)); err != nil {
		t.Fatal(err)
	}
}

// drain runs publishing rounds until nothing is left to do.
func (h *testHost) drain(t *testing.T) {
	t.Helper()
	for range 1000 {
		busy, err := h.pub.round(context.Background())
		if err != nil {
			h.pub.failed(err)
			t.Fatalf("%s: publishing: %v", h.name, err)
		}
		if n, _, _ := h.ix.JournalLen(1); !busy && n == 0 {
			return
		}
	}
	t.Fatalf("%s: publishing did not end", h.name)
}

func (h *testHost) mustMatch(t *testing.T, pool *pgxpool.Pool) *ipc.FleetCheck {
	t.Helper()
	rep, err := Check(context.Background(), pool, h.name, h.ix, h.pub.cfg.Roots)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK {
		t.Fatalf("%s: fleet rows differ from the index: %+v", h.name, rep)
	}
	return rep
}

func count(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two hosts publish into one database: each host's rows equal its
// published files, a content held by both is stored once, and a content
// no file holds any more is dropped with its postings.
func TestPublishTwoHosts(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a/pub")
	b := newTestHost(t, pool, "beta", "/b")
	for i := range 20 {
		a.put(t, fmt.Sprintf("/a/pub/f%02d", i), fmt.Sprintf("c%02d", i))
	}
	a.put(t, "/a/private/secret", "secret")
	b.put(t, "/b/copy", "c03")
	b.put(t, "/b/own", "b-own")
	a.drain(t)
	b.drain(t)
	if rep := a.mustMatch(t, pool); rep.Files != 20 || rep.Rows != 20 {
		t.Fatalf("alpha: %d files, %d rows, want 20 each", rep.Files, rep.Rows)
	}
	b.mustMatch(t, pool)
	if n := count(t, pool, `SELECT count(*) FROM sif_files WHERE path = $1`, []byte("/a/private/secret")); n != 0 {
		t.Fatal("a file outside the published roots was published")
	}
	if n := count(t, pool, `SELECT count(*) FROM sif_contents`); n != 21 {
		t.Fatalf("%d contents, want 21 (c03 once)", n)
	}
	sig := len(content("c03").Features)
	if n := count(t, pool, `SELECT count(*) FROM sif_postings WHERE content_id = $1`, ContentID(sha256.Sum256([]byte("c03")))); n != sig {
		t.Fatalf("c03 has %d postings, want %d", n, sig)
	}

	// Changes: a removal of one of two holders keeps the content; a rename;
	// a new content; the last holder gone drops the content.
	if err := a.ix.Remove("/a/pub/f03"); err != nil {
		t.Fatal(err)
	}
	if err := a.ix.Rename("/a/pub/f04", index.FileMeta{Path: "/a/pub/renamed", Size: 4000}); err != nil {
		t.Fatal(err)
	}
	if err := a.ix.Remove("/a/pub/f05"); err != nil {
		t.Fatal(err)
	}
	a.put(t, "/a/pub/new", "fresh")
	a.put(t, "/a/pub/f06", "c06-edited")
	a.drain(t)
	a.mustMatch(t, pool)
	c := func(label string) int {
		return count(t, pool, `SELECT count(*) FROM sif_contents WHERE content_id = $1`, ContentID(sha256.Sum256([]byte(label))))
	}
	if c("c03") != 1 || c("c05") != 0 || c("c06") != 0 || c("fresh") != 1 || c("c06-edited") != 1 {
		t.Fatalf("contents c03 %d (held by beta), c05 %d, c06 %d (held by none), fresh %d, c06-edited %d",
			c("c03"), c("c05"), c("c06"), c("fresh"), c("c06-edited"))
	}
	if n := count(t, pool, `SELECT count(*) FROM sif_postings WHERE content_id = $1`, ContentID(sha256.Sum256([]byte("c05")))); n != 0 {
		t.Fatalf("%d postings of a dropped content left", n)
	}
	if err := b.ix.Remove("/b/copy"); err != nil {
		t.Fatal(err)
	}
	b.drain(t)
	if c("c03") != 0 {
		t.Fatal("c03, held by no file, was kept")
	}
	b.mustMatch(t, pool)

	// Forgetting beta removes its one file and its own content, and
	// leaves alpha as it was.
	files, contents, err := Forget(context.Background(), pool, "beta")
	if err != nil || files != 1 || contents != 1 {
		t.Fatalf("Forget(beta) = %d files, %d contents, %v; want 1, 1", files, contents, err)
	}
	if c("b-own") != 0 || count(t, pool, `SELECT count(*) FROM sif_hosts WHERE name = 'beta'`) != 0 {
		t.Fatal("beta's content or host row left after Forget")
	}
	a.mustMatch(t, pool)
	if _, _, err := Forget(context.Background(), pool, "beta"); !errors.Is(err, ErrNoHost) {
		t.Fatalf("forgetting beta twice: %v, want ErrNoHost", err)
	}
}

// A database restored from an older dump has the host's rows as they were:
// the publisher sees the batch number go back, compares the whole index
// with them, and converges, republishing only what differs.
func TestPublishAfterRestore(t *testing.T) {
	srv := pgtest.Start(t, nil)
	srv.CreateDB("fleet")
	pool := newPool(t, srv.URL("fleet"))
	a := newTestHost(t, pool, "alpha", "/a")
	for i := range 30 {
		a.put(t, fmt.Sprintf("/a/f%02d", i), fmt.Sprintf("c%02d", i))
	}
	a.drain(t)
	dump := filepath.Join(t.TempDir(), "fleet.dump")
	srv.Dump("fleet", dump)
	for i := range 10 {
		if err := a.ix.Remove(fmt.Sprintf("/a/f%02d", i)); err != nil {
			t.Fatal(err)
		}
		a.put(t, fmt.Sprintf("/a/g%02d", i), fmt.Sprintf("g%02d", i))
	}
	a.drain(t)
	a.mustMatch(t, pool)
	pool.Reset()
	srv.Restore(dump, "fleet")
	if rep, err := Check(context.Background(), pool, "alpha", a.ix, []string{"/a"}); err != nil || rep.OK {
		t.Fatalf("the restored database matches the index (%+v, %v): the test restored nothing", rep, err)
	}
	before := a.pub.Status().Published
	a.drain(t)
	a.mustMatch(t, pool)
	if sent := a.pub.Status().Published - before; sent != 20 {
		t.Fatalf("republished %d files after the restore, want the 20 that differ", sent)
	}
}

// The database down: changes wait in the journal, the status says so, and
// once it is back the rows converge.
func TestPublishDatabaseDown(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	a.put(t, "/a/one", "one")
	a.drain(t)
	srv.Stop()
	a.put(t, "/a/two", "two")
	if _, err := a.pub.round(context.Background()); err == nil {
		t.Fatal("a round with the database down succeeded")
	} else {
		a.pub.failed(err)
	}
	st := a.pub.Status()
	if st.Connected || st.LastError == "" || st.Pending != 1 {
		t.Fatalf("status with the database down: %+v", st)
	}
	srv.Start()
	a.drain(t)
	a.mustMatch(t, pool)
	if st := a.pub.Status(); !st.Connected || st.LastError != "" || st.Pending != 0 {
		t.Fatalf("status after the database came back: %+v", st)
	}
}

// A first publication compares the whole index with the fleet's rows
// (none) and sends every file; the journal's notes go with the comparison,
// so no file is sent a second time from the journal. A change made after
// it is noted and sent.
func TestFirstPublicationTakesTheNotes(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	for i := range 30 {
		a.put(t, fmt.Sprintf("/a/f%02d", i), fmt.Sprintf("c%02d", i))
	}
	a.put(t, "/elsewhere", "private")
	if _, err := a.pub.round(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.ix.JournalLen(100); err != nil || n != 0 {
		t.Fatalf("%d notes left after the first publication (%v): their files would be sent again", n, err)
	}
	a.mustMatch(t, pool)
	a.drain(t)
	if sent := a.pub.Status().Published; sent != 30 {
		t.Fatalf("%d files sent for 30", sent)
	}
	a.put(t, "/a/later", "later")
	if n, _, _ := a.ix.JournalLen(100); n != 1 {
		t.Fatalf("%d notes after a change, want 1", n)
	}
	a.drain(t)
	a.mustMatch(t, pool)
	if sent := a.pub.Status().Published; sent != 31 {
		t.Fatalf("%d files sent for 31", sent)
	}
}

// A content goes in in two transactions, its record and then its
// postings. A publisher that stopped between them leaves the record marked
// as without postings: the next host to publish a file of it finishes it,
// without waiting for a publisher that is adding its postings at that
// moment, and so does the publisher that stopped when it sends its batch
// again.
func TestPublishStoppedBetweenContentsAndPostings(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	ctx := context.Background()
	a := newTestHost(t, pool, "alpha", "/a")
	b := newTestHost(t, pool, "beta", "/b")
	a.put(t, "/a/first", "first")
	a.drain(t) // joins and creates the schema

	// alpha stops after inserting the records of its next batch.
	stopped := func(h *testHost, label string) int64 {
		t.Helper()
		v, err := h.ix.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		var recs []index.FileRecord
		if _, _, err := v.FilesAfter(0, 1000, func(rec index.FileRecord) error {
			recs = append(recs, rec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.pub.insertContents(ctx, v, recs); err != nil {
			t.Fatal(err)
		}
		return ContentID(sha256.Sum256([]byte(label)))
	}
	a.put(t, "/a/half", "half")
	half := stopped(a, "half")
	pending := func(id int64) (marked bool, postings int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT features < 0 FROM sif_contents WHERE content_id = $1`, id).Scan(&marked); err != nil {
			t.Fatal(err)
		}
		return marked, count(t, pool, `SELECT count(*) FROM sif_postings WHERE content_id = $1`, id)
	}
	if marked, n := pending(half); !marked || n != 0 {
		t.Fatalf("after the records only: marked %v, %d postings; want marked, none", marked, n)
	}

	// Another publisher holds the record as if adding its postings: beta,
	// publishing a copy, neither waits for it nor adds them.
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT 1 FROM sif_contents WHERE content_id = $1 FOR NO KEY UPDATE`, half); err != nil {
		t.Fatal(err)
	}
	b.put(t, "/b/copy", "half")
	b.drain(t)
	if marked, n := pending(half); !marked || n != 0 {
		t.Fatalf("beta with the record held elsewhere: marked %v, %d postings; want marked, none", marked, n)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The next publication of a file of it finishes it: beta's new copy.
	b.put(t, "/b/copy2", "half")
	b.drain(t)
	if marked, n := pending(half); marked || n != len(content("half").Features) {
		t.Fatalf("after beta's next batch: marked %v, %d postings; want unmarked, %d", marked, n, len(content("half").Features))
	}
	b.mustMatch(t, pool)

	// alpha sends its batch again and finds nothing left to do; a record
	// it alone left marked is finished by that batch.
	a.put(t, "/a/alone", "alone")
	alone := stopped(a, "alone")
	a.drain(t)
	if marked, n := pending(alone); marked || n != len(content("alone").Features) {
		t.Fatalf("after alpha's batch sent again: marked %v, %d postings", marked, n)
	}
	a.mustMatch(t, pool)
	b.mustMatch(t, pool)
	if n := count(t, pool, `SELECT count(*) FROM sif_contents WHERE features < 0`); n != 0 {
		t.Fatalf("%d contents left marked", n)
	}
}
