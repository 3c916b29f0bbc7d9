package fleet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
)

// partitionedSQL is the operator's setup of a fleet database whose
// postings are spread over shard servers.
var partitionedSQL = filepath.Join("..", "..", "packaging", "fleet", "partitioned-postings.sql")

// multinode is a fleet database on several PostgreSQL servers, set up as
// packaging/fleet/partitioned-postings.sql says: sif_postings on the
// coordinator, hash-partitioned on key, each partition a postgres_fdw
// foreign table on a shard; the other tables on the coordinator.
type multinode struct {
	coord  *pgtest.Server
	shards []*pgtest.Server
	// pool reaches the coordinator's database "fleet" as "sif", an
	// ordinary role, as sifd would.
	pool *pgxpool.Pool
	// shardPools reach each shard's database "fleet" directly.
	shardPools []*pgxpool.Pool
}

// startMultinode starts a coordinator and n shards and runs the operator's
// SQL on each, through psql as an operator would.
func startMultinode(t testing.TB, n int) *multinode {
	t.Helper()
	const pw, shardPW = "sif-coordinator", "sif-shard"
	m := &multinode{coord: pgtest.Start(t, nil)}
	m.coord.CreateRole("sif", pw)
	m.coord.CreateDBOwnedBy("fleet", "sif")
	var conns []string
	for i := range n {
		s := pgtest.Start(t, nil)
		s.CreateRole("sif", shardPW)
		s.CreateDBOwnedBy("fleet", "sif")
		psql(t, s, s.URLFor("sif", shardPW, "fleet"), "-v", "shard="+strconv.Itoa(i))
		m.shards = append(m.shards, s)
		m.shardPools = append(m.shardPools, newPool(t, s.URL("fleet")))
		conns = append(conns, fmt.Sprintf("host=%s port=%d dbname=fleet", s.Dir(), s.Port()))
	}
	psql(t, m.coord, m.coord.URL("fleet"), "-v", "shards="+strings.Join(conns, ", "),
		"-v", "shard_user=sif", "-v", "shard_password="+shardPW, "-v", "fleet_user=sif")
	m.pool = newPool(t, m.coord.URLFor("sif", pw, "fleet"))
	return m
}

// psql runs the operator's SQL file with psql on url.
func psql(t testing.TB, srv *pgtest.Server, url string, args ...string) {
	t.Helper()
	args = append([]string{"-X", "-q", "-f", partitionedSQL}, args...)
	cmd := exec.Command(filepath.Join(srv.Bin(), "psql"), append(args, url)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// shardCounts returns how many postings each shard holds, counted on the
// shard itself, and how many of them belong to content.
func (m *multinode) shardCounts(t *testing.T, content int64) (all, of []int) {
	t.Helper()
	for i, p := range m.shardPools {
		table := fmt.Sprintf("sif_postings_%d", i)
		all = append(all, count(t, p, `SELECT count(*) FROM `+table))
		of = append(of, count(t, p, `SELECT count(*) FROM `+table+` WHERE content_id = $1`, content))
	}
	return all, of
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}

func labelID(label string) int64 { return ContentID(sha256.Sum256([]byte(label))) }

// The fleet on three PostgreSQL servers: two hosts publish through the
// coordinator, their postings land on both shards, removals reach the
// shards, and a shard down makes publishing fail, naming the shard, until
// it is back, when the rows converge.
func TestMultinodePublish(t *testing.T) {
	m := startMultinode(t, 2)
	var kind string
	if err := m.pool.QueryRow(context.Background(), `SELECT relkind::text FROM pg_class WHERE oid = 'sif_postings'::regclass`).Scan(&kind); err != nil || kind != "p" {
		t.Fatalf("sif_postings relkind %q (%v), want p (partitioned)", kind, err)
	}
	a := newTestHost(t, m.pool, "alpha", "/a")
	b := newTestHost(t, m.pool, "beta", "/b")
	for i := range 30 {
		a.put(t, fmt.Sprintf("/a/f%02d", i), fmt.Sprintf("c%02d", i))
	}
	for i := range 5 {
		b.put(t, fmt.Sprintf("/b/copy%d", i), fmt.Sprintf("c%02d", i))
		b.put(t, fmt.Sprintf("/b/own%d", i), fmt.Sprintf("b%d", i))
	}
	a.drain(t)
	b.drain(t)
	a.mustMatch(t, m.pool)
	b.mustMatch(t, m.pool)
	const perContent = 40 // content's signature: 40 sampled keys
	if n := count(t, m.pool, `SELECT count(*) FROM sif_contents`); n != 35 {
		t.Fatalf("%d contents, want 35", n)
	}
	// A query across the shards, in the form Partitioned picks: beta's
	// copy of c03 and alpha's original, identical; and c13 and c23, which
	// content() draws with the same features (its seed is the label's
	// length and last byte) but other bytes.
	grouped, err := Partitioned(context.Background(), m.pool)
	if err != nil || !grouped {
		t.Fatalf("Partitioned = %v, %v; want true", grouped, err)
	}
	res, err := Similar(context.Background(), m.pool, Query{Sketch: content("c03"), Params: testParams, Grouped: grouped})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range res.Matches {
		got = append(got, fmt.Sprintf("%s:%s:%v", m.Host, m.Path, m.Identical))
	}
	if want := []string{"alpha:/a/f03:true", "beta:/b/copy3:true", "alpha:/a/f13:false", "alpha:/a/f23:false"}; !slices.Equal(got, want) {
		t.Fatalf("query across the shards: %v, want %v", got, want)
	}
	all, _ := m.shardCounts(t, 0)
	t.Logf("postings per shard: %v", all)
	if sum(all) != 35*perContent {
		t.Fatalf("the shards hold %v postings, %d in all, want %d", all, sum(all), 35*perContent)
	}
	for i, n := range all {
		if n == 0 {
			t.Fatalf("shard %d holds no postings: %v", i, all)
		}
	}
	if n := count(t, m.pool, `SELECT count(*) FROM sif_postings`); n != sum(all) {
		t.Fatalf("the coordinator sees %d postings, the shards hold %d", n, sum(all))
	}

	// Removals: c10..c19 are alpha's alone and go with their postings, on
	// every shard; c00 stays, beta holds it too.
	for i := 10; i < 20; i++ {
		if err := a.ix.Remove(fmt.Sprintf("/a/f%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.ix.Remove("/a/f00"); err != nil {
		t.Fatal(err)
	}
	a.drain(t)
	a.mustMatch(t, m.pool)
	all, of := m.shardCounts(t, labelID("c15"))
	if sum(all) != 25*perContent || sum(of) != 0 {
		t.Fatalf("after removing 10 contents: shards hold %v postings (want %d in all), %v of c15 (want none)", all, 25*perContent, of)
	}
	if _, of := m.shardCounts(t, labelID("c00")); sum(of) != perContent {
		t.Fatalf("c00, held by beta, has %v postings on the shards, want %d", of, perContent)
	}

	// Shard 1 down: a batch with a new content fails and says which
	// shard; the changes wait in the journal.
	m.shards[1].Stop()
	a.put(t, "/a/fresh", "fresh")
	if err := a.ix.Remove("/a/f20"); err != nil {
		t.Fatal(err)
	}
	_, err = a.pub.round(context.Background())
	if err == nil {
		t.Fatal("publishing with a shard down succeeded")
	}
	a.pub.failed(err)
	t.Logf("with shard 1 down: %v", err)
	if !strings.Contains(err.Error(), `"sif_shard_1"`) {
		t.Fatalf("the error with shard 1 down does not name it: %v", err)
	}
	if st := a.pub.Status(); st.Connected || st.Pending != 2 || !strings.Contains(st.LastError, "sif_shard_1") {
		t.Fatalf("status with shard 1 down: %+v", st)
	}
	// What needs only the coordinator still works: beta's files.
	if n := count(t, m.pool, `SELECT count(*) FROM sif_files WHERE host_id = $1`, HostID("beta")); n != 10 {
		t.Fatalf("beta has %d files with shard 1 down, want 10", n)
	}

	m.shards[1].Start()
	m.shardPools[1].Reset() // the test's own connections to the shard died with it
	a.drain(t)
	a.mustMatch(t, m.pool)
	b.mustMatch(t, m.pool)
	if st := a.pub.Status(); !st.Connected || st.LastError != "" || st.Pending != 0 {
		t.Fatalf("status after shard 1 came back: %+v", st)
	}
	all, of = m.shardCounts(t, labelID("fresh"))
	if sum(of) != perContent || sum(all) != 25*perContent {
		t.Fatalf("after the shard came back: %v postings of the new content (want %d), %v in all (want %d)",
			of, perContent, all, 25*perContent)
	}
	if _, of := m.shardCounts(t, labelID("c20")); sum(of) != 0 {
		t.Fatalf("c20, removed while the shard was down, has %v postings left", of)
	}

	// A posting lost on a shard is a bad content for Check; put back, the
	// rows match again.
	shard := 0
	if of[0] == 0 {
		shard = 1
	}
	table := fmt.Sprintf("sif_postings_%d", shard)
	var k, w int32
	if err := m.shardPools[shard].QueryRow(context.Background(),
		`DELETE FROM `+table+` WHERE ctid = (SELECT ctid FROM `+table+` WHERE content_id = $1 LIMIT 1) RETURNING key, weight`,
		labelID("fresh")).Scan(&k, &w); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), m.pool, "alpha", a.ix, []string{"/a"})
	if err != nil || rep.OK || rep.BadContents != 1 {
		t.Fatalf("Check with a posting lost on shard %d: %+v, %v; want one bad content", shard, rep, err)
	}
	if _, err := m.shardPools[shard].Exec(context.Background(), `INSERT INTO `+table+` VALUES ($1, $2, $3)`, k, labelID("fresh"), w); err != nil {
		t.Fatal(err)
	}
	a.mustMatch(t, m.pool)
}
