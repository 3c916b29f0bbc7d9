package index_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
)

// buildOnDisk writes n random files into a new index in dir on the real
// filesystem, compacts it into one table and closes it.
func buildOnDisk(t *testing.T, dir string, n int) {
	t.Helper()
	ix, err := index.Open(dir, &index.Options{Params: manber})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		sk := randSketch(rng, manber, 200, 5000)
		if _, err := ix.Put(metaFor(fmt.Sprintf("/r/f%04d", i), sk, rng), sk); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
}

// damage overwrites 64 bytes in the middle of every file of dir matching
// glob.
func damage(t *testing.T, dir, glob string) {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, glob))
	if len(names) == 0 {
		t.Fatalf("no %s in %s", glob, dir)
	}
	for _, name := range names {
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		junk := make([]byte, 64)
		for i := range junk {
			junk[i] = byte(i*37 + 11)
		}
		if _, err := f.WriteAt(junk, st.Size()/2); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// A damaged table is found by Verify (IsCorrupt); a damaged or missing
// MANIFEST stops Open, and with MoveAsideCorrupt the index is moved to
// DIR.corrupt-TIME and a new one created.
func TestCorruptIndex(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		buildOnDisk(t, dir, 300)
		damage(t, dir, "*.sst")
		ix, err := index.Open(dir, &index.Options{MoveAsideCorrupt: true})
		if err != nil {
			// The damage hit what Open reads: it must have moved it aside.
			t.Fatalf("open: %v", err)
		}
		defer ix.Close()
		if ix.MovedAside() != "" {
			t.Logf("moved aside at open: %s (%s)", ix.MovedAside(), ix.MoveReason())
			return
		}
		err = ix.Verify(context.Background())
		if !index.IsCorrupt(err) {
			t.Fatalf("Verify of a damaged table: %v, want a corruption error", err)
		}
		t.Logf("verify: %v", err)
	})
	for _, c := range []struct {
		name string
		harm func(t *testing.T, dir string)
	}{
		{"damaged manifest", func(t *testing.T, dir string) {
			names, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			for _, n := range names {
				os.WriteFile(n, []byte("this is not a manifest, not at all, not even close"), 0o644)
			}
		}},
		{"missing manifest", func(t *testing.T, dir string) {
			names, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
			for _, n := range names {
				os.Remove(n)
			}
		}},
		{"missing table", func(t *testing.T, dir string) {
			names, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			for _, n := range names {
				os.Remove(n)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			buildOnDisk(t, dir, 50)
			c.harm(t, dir)
			_, err := index.Open(dir, nil)
			if err == nil {
				t.Fatal("open of a damaged index succeeded without MoveAsideCorrupt")
			}
			t.Logf("open: %v", err)
			ix, err := index.Open(dir, &index.Options{MoveAsideCorrupt: true})
			if err != nil {
				t.Fatalf("open with MoveAsideCorrupt: %v", err)
			}
			defer ix.Close()
			if !strings.HasPrefix(ix.MovedAside(), dir+".corrupt-") || ix.MoveReason() == "" {
				t.Fatalf("MovedAside %q, MoveReason %q", ix.MovedAside(), ix.MoveReason())
			}
			if _, err := os.Stat(ix.MovedAside()); err != nil {
				t.Fatal(err)
			}
			if st, _ := ix.Stats(); st.Files != 0 {
				t.Fatalf("new index holds %d files", st.Files)
			}
		})
	}
	// A lock conflict is not damage: nothing is moved.
	t.Run("locked", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "db")
		buildOnDisk(t, dir, 5)
		ix, err := index.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		_, err = index.Open(dir, &index.Options{MoveAsideCorrupt: true})
		if !errors.Is(err, index.ErrLocked) {
			t.Fatalf("second open: %v, want ErrLocked", err)
		}
		if m, _ := filepath.Glob(dir + ".corrupt-*"); len(m) > 0 {
			t.Fatalf("a locked index was moved aside: %v", m)
		}
	})
}
