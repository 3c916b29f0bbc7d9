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

// Check on a damaged table: the check stops with Damaged and one more
// problem that names the table and says what was wrong, plainly (not
// Pebble's "<corruption detail carrier>"); Verify's error says the same.
func TestCheckDamagedTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	buildOnDisk(t, dir, 300)
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) != 1 {
		t.Fatalf("tables %v, want one", tables)
	}
	ix, err := index.Open(dir, &index.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ix.Check()
	ix.Close()
	if err != nil || !rep.OK() || rep.Damaged {
		t.Fatalf("check before the damage: %v %+v", err, rep)
	}
	damage(t, dir, "*.sst")
	ix, err = index.Open(dir, &index.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer ix.Close()
	rep, err = ix.Check()
	if err != nil {
		t.Fatalf("Check of a damaged table returned an error, not a report: %v", err)
	}
	if !rep.Damaged || rep.OK() {
		t.Fatalf("report %+v, want Damaged", rep)
	}
	last := rep.Problems[len(rep.Problems)-1]
	t.Logf("problem: %s", last)
	want := "damaged table " + tables[0] + ": "
	if !strings.HasPrefix(last, want) || !strings.Contains(last, "checksum mismatch") || strings.Contains(last, "carrier") || strings.Contains(last, "\n") {
		t.Errorf("problem %q, want one line starting %q saying what was wrong", last, want)
	}
	err = ix.Verify(context.Background())
	if !index.IsCorrupt(err) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "carrier") {
		t.Errorf("Verify: %q, want a corruption error starting %q", err, want)
	}
}

// IsDamaged tells damage from the errors moving the index aside would not
// cure.
func TestIsDamaged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	buildOnDisk(t, dir, 20)
	ix, err := index.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = index.Open(dir, nil)
	ix.Close()
	if err == nil || index.IsDamaged(err) {
		t.Errorf("a locked index: %v, IsDamaged %v", err, index.IsDamaged(err))
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	b, _ := os.ReadFile(names[0])
	os.WriteFile(names[0], b[:len(b)/2], 0o644) // cut short
	_, err = index.Open(dir, &index.Options{ReadOnly: true})
	if !index.IsDamaged(err) {
		t.Errorf("a table cut short: %v, IsDamaged false", err)
	}
	if index.IsDamaged(index.ErrOldFormat) || index.IsDamaged(index.ErrNewFormat) || index.IsDamaged(nil) {
		t.Error("another format is not damage")
	}
}
