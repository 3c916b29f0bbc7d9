package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// diskBackend answers from a real index and reads candidates from disk.
type diskBackend struct{ *index.Index }

func (diskBackend) OpenIndexed(path string) (io.ReadCloser, index.FileMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, index.FileMeta{}, ErrGone
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, index.FileMeta{}, err
	}
	return f, index.FileMeta{Path: path, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}, nil
}

// BenchmarkCheckedQuery indexes Go's own sources and asks, through the
// server's handler, for the matches of 50 of its files of 10–100 KB, with
// the check (content sent) and without it (fast); MB/s is query bytes per
// second. It reports the median time in the handler and, for the checked
// query, its ratio to the unchecked one's median measured in the same run.
func BenchmarkCheckedQuery(b *testing.B) {
	src := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("no Go sources at %s", src)
	}
	ix, err := index.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	p := ix.Params()
	var queries []string
	filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		sk, err := fingerprint.SketchReader(bytes.NewReader(data), p)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := d.Info()
		if _, err := ix.Put(index.FileMeta{Path: path, Size: int64(len(data)), MtimeNs: st.ModTime().UnixNano()}, sk); err != nil {
			b.Fatal(err)
		}
		if len(data) >= 10_000 && len(data) <= 100_000 && strings.HasSuffix(path, ".go") {
			queries = append(queries, path)
		}
		return nil
	})
	if err := ix.Compact(context.Background()); err != nil {
		b.Fatal(err)
	}
	// 50 queries spread over the tree, as sifbench latency picks them.
	var picked []string
	for i := range 50 {
		picked = append(picked, queries[i*len(queries)/50])
	}
	type prepared struct {
		body []byte
		size int64
	}
	prep := func(fast bool) []prepared {
		var out []prepared
		for _, q := range picked {
			sk, d, err := ipc.QueryFile(q, p, ipc.ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			req := ipc.NewSimilarRequest(q, sk)
			if !fast {
				req.Attach(d)
			}
			body, _ := json.Marshal(req)
			out = append(out, prepared{body, sk.Size})
		}
		return out
	}
	srv := New(backendOf(diskBackend{ix}), Options{Version: "bench"})
	medians := map[string]time.Duration{}
	for _, mode := range []string{"fast", "checked"} {
		reqs := prep(mode == "fast")
		b.Run(mode, func(b *testing.B) {
			var total int64
			for _, r := range reqs {
				total += r.size
			}
			b.SetBytes(total / int64(len(reqs)))
			var times []time.Duration
			var checked, matches int
			i := 0
			for b.Loop() {
				r := reqs[i%len(reqs)]
				rec := httptest.NewRecorder()
				start := time.Now()
				srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/similar", bytes.NewReader(r.body)))
				times = append(times, time.Since(start))
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				var resp ipc.SimilarResponse
				json.Unmarshal(rec.Body.Bytes(), &resp)
				checked += resp.Checked
				matches += len(resp.Matches)
				i++
			}
			slices.Sort(times)
			med := times[len(times)/2]
			medians[mode] = med
			b.ReportMetric(float64(med.Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(checked)/float64(i), "checked/op")
			b.ReportMetric(float64(matches)/float64(i), "matches/op")
			if mode == "checked" && medians["fast"] > 0 {
				b.ReportMetric(float64(med)/float64(medians["fast"]), "x-fast")
			}
		})
	}
}
