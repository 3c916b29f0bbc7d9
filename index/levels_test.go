package index_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestLevelFilesKeptByWrites: the files counted per level, kept by every
// write (new files, changed contents that change level, copies, renames
// over other files, removals), equal those counted from the records, and
// those computed again at Open.
func TestLevelFilesKeptByWrites(t *testing.T) {
	fs := vfs.NewMem()
	ix := openMem(t, fs, manber)
	rng := rand.New(rand.NewPCG(7, 8))
	sizes := []int64{100, 300, 700, 1500, 3000, 9000, 40000}
	paths := make([]string, 30)
	for i := range paths {
		paths[i] = fmt.Sprintf("/f%02d", i)
	}
	for step := range 600 {
		p := paths[rng.IntN(len(paths))]
		switch rng.IntN(6) {
		case 0:
			if err := ix.Remove(p); err != nil && !errors.Is(err, index.ErrNotFound) {
				t.Fatal(err)
			}
		case 1:
			q := paths[rng.IntN(len(paths))]
			if err := ix.Rename(p, index.FileMeta{Path: q, Size: 1}); err != nil && !errors.Is(err, index.ErrNotFound) {
				t.Fatal(err)
			}
		default:
			// Few labels, so files share contents (copies) and a file's
			// content moves between levels.
			label := fmt.Sprint(rng.IntN(8))
			size := sizes[rng.IntN(len(sizes))]
			sk := sketchOf(manber, label+fmt.Sprint(size), size, fingerprint.Feature{Hash: uint64(1 + rng.IntN(50)), Count: 1})
			if _, err := ix.Put(index.FileMeta{Path: p, Size: size}, sk); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if step%50 != 49 {
			continue
		}
		want := make([]uint64, len(ix.LevelFiles()))
		_ = ix.Files("", func(r index.FileRecord) error { want[r.Level]++; return nil })
		if got := ix.LevelFiles(); !slices.Equal(got, want) {
			t.Fatalf("step %d: files per level %v, the records say %v", step, got, want)
		}
	}
	before := ix.LevelFiles()
	ix.Close()
	ix2, err := index.Open("/db", &index.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer ix2.Close()
	if after := ix2.LevelFiles(); !slices.Equal(before, after) {
		t.Fatalf("files per level %v before close, %v after reopen", before, after)
	}
	var levels int
	for _, n := range before {
		if n > 0 {
			levels++
		}
	}
	if levels < 3 {
		t.Fatalf("files per level %v: the test should spread files over several levels", before)
	}
}
