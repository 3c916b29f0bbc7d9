package fleet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// newSimiHost is newTestHost with an index that keeps SimiHash keys.
func newSimiHost(t *testing.T, pool *pgxpool.Pool, name string, roots ...string) *testHost {
	t.Helper()
	on := true
	ix, err := index.Open(filepath.Join(t.TempDir(), "db"), &index.Options{Params: testParams, Journal: true, SimiHash: &on})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ix.Close() })
	h := &testHost{name: name, ix: ix, rng: rand.New(rand.NewPCG(uint64(len(name)), 7))}
	h.pub = NewPublisher(PublisherConfig{Host: name, Roots: roots, Pool: pool, Index: func() *index.Index { return h.ix }, BatchFiles: 7})
	return h
}

// simiContent is content(label) with a SimiHash summary drawn from label
// near one of three centres, so that some contents are SimiFind-similar
// and many are key hits that the sizes or sum tables rule out. The same
// label gives the same summary on every host.
func simiContent(label string) *fingerprint.Sketch {
	sk := content(label)
	rng := rand.New(rand.NewPCG(uint64(len(label)), uint64(label[len(label)-1])*31+uint64(label[0])))
	c := rng.IntN(3)
	sk.Size = int64(1000 + 100*c + rng.IntN(80))
	sk.Key = uint32(500 + 30*c + rng.IntN(40))
	for i := range sk.Sum {
		sk.Sum[i] = uint32(10*c + rng.IntN(4))
	}
	if rng.IntN(3) == 0 {
		sk.Sum[rng.IntN(fingerprint.NumTags)] += uint32(rng.IntN(40))
	}
	return sk
}

func (h *testHost) putSimi(t *testing.T, path, label string) *fingerprint.Sketch {
	t.Helper()
	sk := simiContent(label)
	if _, err := h.ix.Put(index.FileMeta{Path: path, Size: sk.Size, MtimeNs: h.rng.Int64()}, sk); err != nil {
		t.Fatal(err)
	}
	return sk
}

// published is every file of the fleet whose content has SimiHash keys,
// as the brute-force judge reads them.
type published struct {
	host, path string
	sum        fingerprint.Summary
}

func allPublished(t *testing.T, pool *pgxpool.Pool) []published {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT h.name, f.path, c.size, c.strong, c.simi_key, c.simi_sum
		FROM sif_files f JOIN sif_hosts h USING (host_id) JOIN sif_contents c USING (content_id)
		WHERE c.simi_key IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all []published
	for rows.Next() {
		var p published
		var path, strong []byte
		var key int64
		var sum []int64
		if err := rows.Scan(&p.host, &path, &p.sum.Size, &strong, &key, &sum); err != nil {
			t.Fatal(err)
		}
		p.path, p.sum.Key = string(path), uint32(key)
		copy(p.sum.Strong[:], strong)
		for i, n := range sum {
			p.sum.Sum[i] = uint32(n)
		}
		all = append(all, p)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// SimiFind in the fleet lists what Judge, applied to every published
// content with SimiHash keys, calls similar on the other hosts, with the
// same verdicts, nearest first; a content published first by a host
// without SimiHash keys gets them from the next host with them that
// publishes it, and is found from then on.
func TestSimiFindMatchesBruteForce(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	ctx := context.Background()
	a := newSimiHost(t, pool, "alpha", "/a")
	b := newSimiHost(t, pool, "beta", "/b")
	g := newTestHost(t, pool, "gamma", "/g") // no SimiHash keys
	queries := map[string]*fingerprint.Sketch{}
	for i := range 60 {
		label := fmt.Sprintf("c%d", i)
		queries["/a/"+label] = a.putSimi(t, "/a/"+label, label)
		if i%2 == 0 {
			b.putSimi(t, "/b/"+label+".copy", label)
		}
		b.putSimi(t, fmt.Sprintf("/b/other%d", i), fmt.Sprintf("o%d", i))
	}
	for i := range 10 {
		g.put(t, fmt.Sprintf("/g/late%d", i), fmt.Sprintf("late%d", i))
	}
	g.drain(t)
	bare := count(t, pool, `SELECT count(*) FROM sif_contents WHERE simi_key IS NULL`)
	if bare != 10 {
		t.Fatalf("%d contents without SimiHash keys after gamma published, want its 10", bare)
	}
	for i := range 5 { // beta publishes half of gamma's contents
		b.putSimi(t, fmt.Sprintf("/b/late%d", i), fmt.Sprintf("late%d", i))
	}
	a.drain(t)
	b.drain(t)
	if n := count(t, pool, `SELECT count(*) FROM sif_contents WHERE simi_key IS NULL`); n != 5 {
		t.Errorf("%d contents without SimiHash keys after beta published 5 of gamma's 10, want 5", n)
	}
	for i := range 5 {
		var key int64
		id := ContentID(simiContent(fmt.Sprintf("late%d", i)).Strong)
		if err := pool.QueryRow(ctx, `SELECT simi_key FROM sif_contents WHERE content_id = $1`, id).Scan(&key); err != nil {
			t.Fatalf("late%d: %v", i, err)
		}
		if want := simiContent(fmt.Sprintf("late%d", i)).Key; uint32(key) != want {
			t.Errorf("late%d: simi_key %d, want %d", i, key, want)
		}
	}
	a.mustMatch(t, pool)
	b.mustMatch(t, pool)

	all := allPublished(t, pool)
	var found, identical int
	for path, sk := range queries {
		q := SimiQuery{Summary: sk.Summary, ExcludeHost: "alpha", Silence: time.Minute}
		res, err := SimiFind(ctx, pool, q)
		if err != nil {
			t.Fatal(err)
		}
		tol, _ := q.Tolerances.Normalize()
		var want, got []string
		keyHits := map[fingerprint.Summary]bool{}
		for _, p := range all {
			v := tol.Judge(&sk.Summary, &p.sum)
			if v.KeyDistance <= v.KeyTolerance {
				keyHits[p.sum] = true
			}
			if p.host != "alpha" && v.Similar {
				want = append(want, fmt.Sprintf("%s:%s %d/%d %v", p.host, p.path, v.KeyDistance, v.SumDistance, v.Identical))
			}
		}
		for _, m := range res.Matches {
			got = append(got, fmt.Sprintf("%s:%s %d/%d %v", m.Host, m.Path, m.KeyDistance, m.SumDistance, m.Identical))
		}
		if !slices.IsSortedFunc(res.Matches, func(x, y SimiMatch) int { return int(x.SumDistance) - int(y.SumDistance) }) {
			t.Errorf("%s: matches not ordered by sum distance: %v", path, got)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: fleet SimiFind %v, brute force %v", path, got, want)
		}
		if res.KeyHits != len(keyHits) || res.Total != len(want) {
			t.Errorf("%s: key hits %d total %d, brute force %d and %d", path, res.KeyHits, res.Total, len(keyHits), len(want))
		}
		found += len(got)
		for _, m := range res.Matches {
			if m.Identical {
				identical++
			}
		}
	}
	// The test means something: copies found identical, and others.
	if identical != 30 || found <= identical {
		t.Errorf("%d matches, %d identical: want 30 identical (beta's copies) and some others", found, identical)
	}

	// Limit keeps the nearest; Total counts all.
	sk := queries["/a/c0"]
	res, err := SimiFind(ctx, pool, SimiQuery{Summary: sk.Summary, ExcludeHost: "alpha", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].Path != "/b/c0.copy" || !res.Matches[0].Identical || res.Total < 1 {
		t.Errorf("limit 1: %+v", res)
	}
	if _, err := SimiFind(ctx, pool, SimiQuery{Summary: sk.Summary, Tolerances: fingerprint.Tolerances{SizeRatio: 2}}); err == nil {
		t.Error("a size ratio of 2 was taken")
	}
}

// A version 1 database with rows published in it migrates to version 2:
// the rows stay, their contents without SimiHash keys until a host with
// them publishes their files again, or compares its rows after the upgrade
// (a host whose index kept keys while its sif published none); a sif that
// knows only version 1 then refuses the database.
func TestMigrateToSimiHash(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	ctx := context.Background()

	// A database as version 1 left it: published by hosts, without the
	// columns and index of version 2, and keyed's journal mark as a sif
	// of version 1 wrote it.
	old := newTestHost(t, pool, "old", "/o")
	for i := range 12 {
		old.putSimi(t, fmt.Sprintf("/o/f%d", i), fmt.Sprintf("f%d", i)) // its index keeps no keys
	}
	old.drain(t)
	keyed := newSimiHost(t, pool, "keyed", "/k")
	for i := range 4 {
		keyed.putSimi(t, fmt.Sprintf("/k/g%d", i), fmt.Sprintf("g%d", i))
	}
	keyed.drain(t)
	mustExec(t, pool, `DROP INDEX sif_contents_simi`)
	mustExec(t, pool, `ALTER TABLE sif_contents DROP COLUMN simi_key`)
	mustExec(t, pool, `ALTER TABLE sif_contents DROP COLUMN simi_sum`)
	mustExec(t, pool, `UPDATE sif_schema SET version = 1`)
	gen, err := keyed.pub.hostGen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := keyed.pub.markFor(keyed.pub.fleetID, gen)
	m.SimiHash = false
	if err := keyed.ix.JournalDone(nil, m.encode()); err != nil {
		t.Fatal(err)
	}
	files := count(t, pool, `SELECT count(*) FROM sif_files`)
	contents := count(t, pool, `SELECT count(*) FROM sif_contents`)
	postings := count(t, pool, `SELECT count(*) FROM sif_postings`)

	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if v, _, _, err := ReadSchema(ctx, pool); err != nil || v != 2 {
		t.Fatalf("version %d (%v) after the migration, want 2", v, err)
	}
	if f, c, p := count(t, pool, `SELECT count(*) FROM sif_files`), count(t, pool, `SELECT count(*) FROM sif_contents WHERE simi_key IS NULL AND simi_sum IS NULL`),
		count(t, pool, `SELECT count(*) FROM sif_postings`); f != files || c != contents || p != postings {
		t.Errorf("after the migration: %d files, %d contents without keys, %d postings; want %d, %d, %d", f, c, p, files, contents, postings)
	}
	if n := count(t, pool, `SELECT count(*) FROM pg_indexes WHERE tablename = 'sif_contents' AND indexname = 'sif_contents_simi' AND indexdef LIKE '%(simi_key)'`); n != 1 {
		t.Error("no index sif_contents_simi on sif_contents (simi_key)")
	}
	old.mustMatch(t, pool)

	// keyed finds its mark without SimiHash, compares its rows and sends
	// its files again: their contents get their keys, nothing else
	// changes.
	keyed.drain(t)
	keyed.mustMatch(t, pool)
	if n := count(t, pool, `SELECT count(*) FROM sif_contents WHERE simi_key IS NULL`); n != contents-4 {
		t.Errorf("%d contents without keys after keyed compared its rows, want %d", n, contents-4)
	}
	if f := count(t, pool, `SELECT count(*) FROM sif_files`); f != files {
		t.Errorf("%d files after keyed compared its rows, want %d", f, files)
	}
	contents -= 4

	// A host with SimiHash keys publishes copies of half the contents:
	// their keys are filled in, and SimiFind finds the old host's files.
	h := newSimiHost(t, pool, "new", "/n")
	for i := range 6 {
		h.putSimi(t, fmt.Sprintf("/n/f%d", i), fmt.Sprintf("f%d", i))
	}
	h.drain(t)
	h.mustMatch(t, pool)
	if n := count(t, pool, `SELECT count(*) FROM sif_contents WHERE simi_key IS NULL`); n != contents-6 {
		t.Errorf("%d contents without keys after the new host published 6 of %d, want %d", n, contents, contents-6)
	}
	sk := simiContent("g2")
	res, err := SimiFind(ctx, pool, SimiQuery{Summary: sk.Summary, ExcludeHost: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) == 0 || res.Matches[0].Path != "/k/g2" || !res.Matches[0].Identical {
		t.Errorf("SimiFind of g2: %+v, want keyed:/k/g2 identical first", res.Matches)
	}
	sk = simiContent("f3")
	res, err = SimiFind(ctx, pool, SimiQuery{Summary: sk.Summary, ExcludeHost: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) == 0 || res.Matches[0].Host != "old" || res.Matches[0].Path != "/o/f3" || !res.Matches[0].Identical {
		t.Errorf("SimiFind of f3 from the new host: %+v, want old:/o/f3 identical first", res.Matches)
	}

	// A sif that knows only version 1 refuses the database.
	withMigrations(t, schemaV1)
	_, err = Migrate(ctx, pool)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema version 2, this sif knows up to 1") {
		t.Errorf("a version 1 sif on the migrated database: %v", err)
	}
}
