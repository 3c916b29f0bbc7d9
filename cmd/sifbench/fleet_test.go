package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFleetMultinode: a small fleet on the multi-node database goes
// through every phase: publishing, the sizes counting the shards'
// partitions (not the coordinator's empty partitioned table), queries in
// the grouped form, an outage of every server with files changing,
// and the check of every host after it.
func TestFleetMultinode(t *testing.T) {
	work := t.TempDir()
	t.Chdir(filepath.Join("..", "..")) // sifbench runs from the repository root
	ff := &fleetFlags{hosts: 3, files: 300, outage: 2 * time.Second, churn: 5, seed: 1994, queries: 20, multinode: true}
	res, err := benchFleet(t.Context(), &common{workDir: work, json: true}, ff)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.OutageCheck, "OK") || len(res.Unexpected) > 0 {
		t.Fatalf("check after the outage: %s; unexpected: %q", res.OutageCheck, res.Unexpected)
	}
	if res.OutageChanges == 0 || res.ConvergeSecs == 0 {
		t.Fatalf("outage: %d changes, converged after %.1f s", res.OutageChanges, res.ConvergeSecs)
	}
	if !strings.HasPrefix(res.Database, "3 PostgreSQL") {
		t.Fatalf("database: %s", res.Database)
	}
	if _, ok := res.Tables["sif_postings"]; ok {
		t.Fatalf("the coordinator's partitioned sif_postings counted among the tables: %v", res.Tables)
	}
	var sum int64
	for name, n := range res.Tables {
		sum += n
		if n == 0 {
			t.Errorf("%s: 0 bytes", name)
		}
	}
	if sum != res.DBBytes {
		t.Errorf("the tables sum to %d bytes, the database is %d", sum, res.DBBytes)
	}
	for _, name := range []string{"sif_files", "sif_contents", "sif_postings_0", "sif_postings_1"} {
		if res.DBRows[name] == 0 {
			t.Errorf("%s: no rows (tables %v, rows %v)", name, res.Tables, res.DBRows)
		}
	}
	if !res.QueryGroup || res.Query.N != ff.queries || res.QueryMatch == 0 {
		t.Errorf("queries: grouped %v, %d of %d, %.1f matches each", res.QueryGroup, res.Query.N, ff.queries, res.QueryMatch)
	}
}
