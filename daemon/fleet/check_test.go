package fleet

import (
	"context"
	"fmt"
	"testing"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
)

// Check finds a content that lost a posting on one server, where it
// probes each posting of the signatures in the primary key.
func TestCheckFindsLostPostings(t *testing.T) {
	srv := pgtest.Start(t, nil)
	pool := newPool(t, srv.URL("postgres"))
	a := newTestHost(t, pool, "alpha", "/a")
	for i := range 12 {
		a.put(t, fmt.Sprintf("/a/f%02d", i), fmt.Sprintf("c%02d", i))
	}
	a.drain(t)
	a.mustMatch(t, pool)

	var k, w int32
	if err := pool.QueryRow(context.Background(),
		`DELETE FROM sif_postings WHERE ctid = (SELECT ctid FROM sif_postings WHERE content_id = $1 LIMIT 1) RETURNING key, weight`,
		labelID("c03")).Scan(&k, &w); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), pool, "alpha", a.ix, []string{"/a"})
	if err != nil || rep.OK || rep.BadContents != 1 || rep.Missing != 0 {
		t.Fatalf("Check with a posting lost: %+v, %v; want one bad content", rep, err)
	}
	if _, err := pool.Exec(context.Background(), `INSERT INTO sif_postings VALUES ($1, $2, $3)`, k, labelID("c03"), w); err != nil {
		t.Fatal(err)
	}
	a.mustMatch(t, pool)
}
