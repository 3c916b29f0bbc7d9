//go:build unix

package index_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sif-dev/sif/index"
)

// TestNoLogPreallocation: the write-ahead log, on the real filesystem,
// takes no more disk blocks than its contents need; Pebble would
// reserve 17.6 MiB for it from its first write.
func TestNoLogPreallocation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	ix, err := index.Open(dir, &index.Options{Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 50 {
		sk := randSketch(rng, manber, 50, 100000)
		if _, err := ix.Put(metaFor(fmt.Sprintf("/%d", i), sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := 0
	for _, de := range names {
		if !strings.HasSuffix(de.Name(), ".log") {
			continue
		}
		logs++
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		allocated := fi.Sys().(*syscall.Stat_t).Blocks * 512
		if slack := int64(allocated) - fi.Size(); slack > 1<<20 {
			t.Errorf("%s: %d bytes allocated to %d bytes of log", de.Name(), allocated, fi.Size())
		}
	}
	if logs == 0 {
		t.Fatalf("no write-ahead log in %s", dir)
	}
}
