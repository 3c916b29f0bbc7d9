package fleet

import (
	"context"
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
)

// The postings lookups measured by BenchmarkMultinode, each for the keys
// $1 with the document-frequency cut $2 (a key with more postings than
// that is dropped), when it has a $2.
var lookups = []struct{ name, sql string }{
	// Per key, its first $2+1 postings: an index range scan per key on one
	// server, a remote round trip per key through postgres_fdw.
	{"lateral", `SELECT k, p.content_id, p.weight FROM unnest($1::int[]) AS k
		CROSS JOIN LATERAL (SELECT content_id, weight FROM sif_postings WHERE key = k LIMIT $2 + 1) p`},
	// Every posting of the keys, one statement per partition; the cut is
	// left to the caller.
	{"any", `SELECT key, content_id, weight FROM sif_postings WHERE key = ANY($1::int[])`},
	// The postings of the keys grouped by key, with the cut, on each
	// shard (with enable_partitionwise_aggregate): one round trip per
	// shard, at most $2 postings per key back.
	{"agg", `SELECT key, c, w FROM (
			SELECT key, CASE WHEN count(*) <= $2 THEN array_agg(content_id) END AS c,
				CASE WHEN count(*) <= $2 THEN array_agg(weight) END AS w
			FROM sif_postings WHERE key = ANY($1::int[]) GROUP BY key) s
		WHERE c IS NOT NULL`},
	// The same, then summed by content on the coordinator, as a file
	// query does.
	{"agg-by-content", `SELECT u.c, count(*), sum(u.w) FROM (
			SELECT CASE WHEN count(*) <= $2 THEN array_agg(content_id) END AS c,
				CASE WHEN count(*) <= $2 THEN array_agg(weight) END AS w
			FROM sif_postings WHERE key = ANY($1::int[]) GROUP BY key) s
		CROSS JOIN LATERAL unnest(s.c, s.w) AS u(c, w)
		GROUP BY u.c ORDER BY 3 DESC LIMIT 100`},
}

// BenchmarkMultinode compares a fleet database on one PostgreSQL server
// with one whose postings are hash-partitioned over two shards
// (multinode), holding the same postings: the lookup of a query's keys and
// publishing throughput. Each lookup reports its median (ms/median);
// publishing reports files/s, and the files/s of checking the published
// host (Check) and of forgetting it (Forget, which drops its contents
// with their postings). Run with
//
//	go test ./daemon/fleet/ -run '^$' -bench Multinode -benchtime 30x
func BenchmarkMultinode(b *testing.B) {
	const (
		contents = 50_000
		perKey   = 40
		queryN   = 300
		maxDF    = 200
	)
	ctx := context.Background()
	single := pgtest.Start(b, nil)
	single.CreateDB("fleet")
	singlePool := newPool(b, single.URL("fleet"))
	m := startMultinode(b, 2)
	setups := []struct {
		name string
		pool *pgxpool.Pool
	}{{"single", singlePool}, {"partitioned", m.pool}}
	for _, s := range setups {
		if _, err := Migrate(ctx, s.pool); err != nil {
			b.Fatal(err)
		}
	}

	// Keys: most drawn from 400,000 (a few postings each), one in twenty
	// from 200 common ones (some 500 postings each: past the cut).
	key := func(rng *rand.Rand) int32 {
		if rng.IntN(20) == 0 {
			return int32(rng.IntN(200))
		}
		return int32(1000 + rng.IntN(400_000))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var rows [][]any
	for c := range contents {
		seen := map[int32]bool{}
		for len(seen) < perKey {
			k := key(rng)
			if !seen[k] {
				seen[k] = true
				rows = append(rows, []any{k, int64(c)*7919 + 1, int32(1 + rng.IntN(5))})
			}
		}
	}
	for _, s := range setups {
		start := time.Now()
		for chunk := range slices.Chunk(rows, 100_000) {
			keys, ids, ws := make([]int32, len(chunk)), make([]int64, len(chunk)), make([]int32, len(chunk))
			for i, r := range chunk {
				keys[i], ids[i], ws[i] = r[0].(int32), r[1].(int64), r[2].(int32)
			}
			if _, err := s.pool.Exec(ctx, `INSERT INTO sif_postings SELECT * FROM unnest($1::int[], $2::bigint[], $3::int[])`, keys, ids, ws); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.pool.Exec(ctx, `ANALYZE sif_postings`); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d postings loaded in %v", s.name, len(rows), time.Since(start).Round(time.Millisecond))
	}
	for i, p := range m.shardPools {
		if _, err := p.Exec(ctx, fmt.Sprintf("ANALYZE sif_postings_%d", i)); err != nil {
			b.Fatal(err)
		}
	}

	for _, l := range lookups {
		for _, s := range setups {
			b.Run("lookup/"+l.name+"/"+s.name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(3, 4))
				var took []time.Duration
				var got int
				for b.Loop() {
					keys := make([]int32, queryN)
					for i := range keys {
						keys[i] = key(rng)
					}
					start := time.Now()
					args := []any{keys}
					if strings.Contains(l.sql, "$2") {
						args = append(args, maxDF)
					}
					rows, err := s.pool.Query(ctx, l.sql, args...)
					if err != nil {
						b.Fatal(err)
					}
					got = 0
					for rows.Next() {
						got++
					}
					rows.Close()
					if err := rows.Err(); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/median")
				b.ReportMetric(float64(got), "rows")
			})
		}
	}

	for _, s := range setups {
		b.Run("publish/"+s.name, func(b *testing.B) {
			const files = 3000
			var total, check, forget time.Duration
			for i := 0; b.Loop(); i++ {
				ix, err := index.Open(filepath.Join(b.TempDir(), "db"), &index.Options{Params: testParams, Journal: true})
				if err != nil {
					b.Fatal(err)
				}
				host := fmt.Sprintf("bench-%s-%d", s.name, i)
				for f := range files {
					label := fmt.Sprintf("%s/%d", host, f)
					if _, err := ix.Put(index.FileMeta{Path: fmt.Sprintf("/r/%d", f), Size: 4000, MtimeNs: 1}, content(label+"x")); err != nil {
						b.Fatal(err)
					}
				}
				p := NewPublisher(PublisherConfig{Host: host, Roots: []string{"/r"}, Pool: s.pool, Index: func() *index.Index { return ix }})
				start := time.Now()
				for {
					busy, err := p.round(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if n, _, _ := ix.JournalLen(1); !busy && n == 0 {
						break
					}
				}
				total += time.Since(start)
				start = time.Now()
				rep, err := Check(ctx, s.pool, host, ix, []string{"/r"})
				if err != nil || !rep.OK {
					b.Fatalf("check: %+v %v", rep, err)
				}
				check += time.Since(start)
				start = time.Now()
				if _, n, err := Forget(ctx, s.pool, host); err != nil || n != files {
					b.Fatalf("forget: %d contents dropped, %v", n, err)
				}
				forget += time.Since(start)
				ix.Close()
			}
			b.ReportMetric(float64(files*b.N)/total.Seconds(), "files/s")
			b.ReportMetric(float64(files*b.N)/check.Seconds(), "checked-files/s")
			b.ReportMetric(float64(files*b.N)/forget.Seconds(), "forgotten-files/s")
		})
	}
}
