package daemon

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// With a scan's files waiting for the worker and a query being answered,
// the worker takes no file of the scan until the query is answered; and
// when a query outlasts maxQueryYield, the scan goes on all the same. In a
// synctest bubble: the worker is held on the rescan's first file, a query
// is held in its Visible filter, and the worker let go.
func TestQueriesBeforeScanFiles(t *testing.T) {
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("outlasting=%v", long), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				if !long {
					old := maxQueryYield
					maxQueryYield = time.Hour
					defer func() { maxQueryYield = old }()
				}
				root := t.TempDir()
				known := words(7, 2000)
				writeFiles(t, map[string][]byte{filepath.Join(root, "known.txt"): known})
				d, _ := bubbleDaemon(t, Config{Roots: []string{root}, Workers: 1})
				d.first.cores = 1

				var mu sync.Mutex
				var order []string
				note := func(s string) {
					mu.Lock()
					order = append(order, s)
					mu.Unlock()
				}
				hold := make(chan struct{})
				first := true
				testHookIndexFile = func(path string) {
					note(filepath.Base(path))
					if first {
						first = false
						<-hold
					}
				}
				t.Cleanup(func() { testHookIndexFile = nil })

				files := map[string][]byte{}
				for i := range 20 {
					files[filepath.Join(root, fmt.Sprintf("scan-%02d.txt", i))] = words(uint64(100+i), 200)
				}
				writeFiles(t, files)
				if _, err := d.Rescan(root); err != nil {
					t.Fatal(err)
				}
				synctest.Wait() // the worker holds the rescan's first file

				sk, err := fingerprint.SketchQuery(bytes.NewReader(known), d.ix.Params())
				if err != nil {
					t.Fatal(err)
				}
				inQuery, letQueryGo := make(chan struct{}), make(chan struct{})
				var once sync.Once
				go func() {
					_, err := answers{d}.Similar(context.Background(), index.Query{Sketch: sk}, index.QueryOptions{
						Visible: func(*index.FileMeta) bool {
							once.Do(func() { close(inQuery); <-letQueryGo })
							return true
						},
					})
					if err != nil {
						t.Error(err)
					}
					note("query answered")
				}()
				<-inQuery
				close(hold) // the worker finishes its file and would take the next
				synctest.Wait()
				if long {
					time.Sleep(maxQueryYield + time.Millisecond)
					synctest.Wait()
				}
				mu.Lock()
				n := len(order)
				mu.Unlock()
				close(letQueryGo)
				synctest.Wait()

				mu.Lock()
				defer mu.Unlock()
				if long {
					if n < 2 {
						t.Errorf("the scan stopped for a query longer than %v: %q", maxQueryYield, order)
					}
					return
				}
				if n != 1 || len(order) != len(files)+1 || order[1] != "query answered" || !strings.HasPrefix(order[0], "scan-") {
					t.Errorf("order %q (%d before the query was let go): want the held file, the query, then the other files of the scan", order, n)
				}
				if d.count.snapshot().ScanYields == 0 {
					t.Error("no yield counted")
				}
			})
		})
	}
}

// The gate is work-conserving: a query holds one processor, and the scan
// takes the others. With 2 processors and a query being answered, one
// worker scans and a second waits until the first is done or the query
// is; a scanning worker stops between its pieces when a second query
// comes, and goes on when one of them ends; and no worker waits longer
// than maxQueryYield.
func TestScanTakesTheProcessorsQueriesLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		q := &queryFirst{cores: 2}
		returned := func(f func()) chan struct{} {
			c := make(chan struct{})
			go func() { f(); close(c) }()
			return c
		}
		isDone := func(c chan struct{}) bool {
			synctest.Wait()
			select {
			case <-c:
				return true
			default:
				return false
			}
		}
		exit1 := q.enter()
		var done1, done2 func()
		if !isDone(returned(func() { done1 = q.scan(ctx) })) {
			t.Fatal("with one query on 2 processors, the first worker waits")
		}
		second := returned(func() { done2 = q.scan(ctx) })
		if isDone(second) {
			t.Fatal("with one query and one worker scanning on 2 processors, a second worker scans too")
		}
		done1()
		if !isDone(second) {
			t.Fatal("the first worker done, the second still waits")
		}
		exit2 := q.enter()
		paused := returned(func() { q.yield(ctx) })
		if isDone(paused) {
			t.Fatal("with 2 queries, a scanning worker goes on past a piece")
		}
		exit2()
		if !isDone(paused) {
			t.Fatal("one query left, the worker still waits between pieces")
		}
		done2()
		exit3 := q.enter()
		start := time.Now()
		late := q.scan(ctx) // 2 queries on 2 processors, and they do not end
		if waited := time.Since(start); waited != maxQueryYield {
			t.Errorf("a worker waited %v for queries that did not end, want maxQueryYield (%v)", waited, maxQueryYield)
		}
		late()
		exit1()
		exit3()
		if q.active != 0 || q.scanning != 0 {
			t.Errorf("all done: %d queries and %d workers counted", q.active, q.scanning)
		}
	})
}
