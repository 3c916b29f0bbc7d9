package index_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// dumpOf returns ix's dump of prefix.
func dumpOf(t *testing.T, ix *index.Index, prefix string) string {
	t.Helper()
	var b bytes.Buffer
	if err := ix.Dump(prefix, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDumpIsCanonical: two indexes that hold the same files dump the same
// bytes, whatever order the files were written in and whatever writes came
// before, though their file ids differ.
func TestDumpIsCanonical(t *testing.T) {
	for _, p := range []fingerprint.Params{manber, chunks} {
		t.Run(p.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(len(p.Scheme))))
			paths := []string{"/t/a.go", "/t/b/c.txt", "/t/\xff\xfe.bin", "/t/d", "/u/e"}
			m := model{}
			for _, path := range paths {
				sk := randSketch(rng, p, 5+rng.IntN(30), 80)
				m[path] = modelFile{metaFor(path, sk, rng), sk}
			}

			// One index gets the files in order.
			ix1 := openMem(t, nil, p)
			for _, path := range paths {
				if _, err := ix1.Put(m[path].meta, m[path].sk); err != nil {
					t.Fatal(err)
				}
			}
			// The other in reverse order, after writes it then undoes:
			// another version of a file, a file removed, and one renamed
			// into place.
			ix2 := openMem(t, nil, p)
			junk := randSketch(rng, p, 20, 80)
			for _, path := range []string{"/t/gone", "/t/a.go"} {
				if _, err := ix2.Put(metaFor(path, junk, rng), junk); err != nil {
					t.Fatal(err)
				}
			}
			for _, path := range slices.Backward(paths) {
				if path == "/t/d" {
					continue
				}
				if _, err := ix2.Put(m[path].meta, m[path].sk); err != nil {
					t.Fatal(err)
				}
			}
			d := m["/t/d"]
			if _, err := ix2.Put(metaFor("/t/moving", d.sk, rng), d.sk); err != nil {
				t.Fatal(err)
			}
			if err := ix2.Rename("/t/moving", d.meta); err != nil {
				t.Fatal(err)
			}
			if err := ix2.Remove("/t/gone"); err != nil {
				t.Fatal(err)
			}
			mustClean(t, ix1)
			mustClean(t, ix2)
			r1, _ := ix1.Lookup("/t/d")
			r2, _ := ix2.Lookup("/t/d")
			if r1.ID == r2.ID {
				t.Fatalf("/t/d has id %d in both indexes; the test wants them to differ", r1.ID)
			}

			dump := dumpOf(t, ix1, "")
			if got := dumpOf(t, ix2, ""); got != dump {
				t.Fatalf("dumps differ:\n%s\nvs\n%s", dump, got)
			}
			// Lines are in the order of the raw paths, not of their quoted
			// forms.
			lines := strings.Split(strings.TrimSuffix(dump, "\n"), "\n")
			var listed []string
			for _, l := range lines {
				q, err := strconv.QuotedPrefix(l)
				if err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				path, _ := strconv.Unquote(q)
				listed = append(listed, path)
			}
			if want := slices.Sorted(maps.Keys(m)); !slices.Equal(listed, want) {
				t.Fatalf("dump lists %q, want %q", listed, want)
			}
			if !strings.Contains(dump, `"/t/\xff\xfe.bin" `) {
				t.Errorf("the non-UTF-8 path is not quoted with escapes:\n%s", dump)
			}
			if got := dumpOf(t, ix1, "/t/b"); got != lines[1]+"\n" {
				t.Errorf("dump of /t/b: %q, want %q", got, lines[1]+"\n")
			}
			if got := dumpOf(t, ix1, "/t"); got != strings.Join(lines[:4], "\n")+"\n" {
				t.Errorf("dump of the tree /t: %q, want every line but /u/e's", got)
			}
			if got := dumpOf(t, ix1, "/t/b/c"); got != "" {
				t.Errorf("dump of the tree /t/b/c: %q, want nothing (/t/b/c.txt is not in it)", got)
			}
			if got := dumpOf(t, ix1, "/none"); got != "" {
				t.Errorf("dump of an empty prefix: %q", got)
			}
		})
	}
}

// TestDumpLine pins the line format, with the forward-list hash computed
// here from the documented definition.
func TestDumpLine(t *testing.T) {
	ix := openMem(t, nil, chunks)
	sk := sketchOf(chunks, "x", 1234, fingerprint.Feature{Hash: 0x10, Count: 1}, fingerprint.Feature{Hash: 0x20, Count: 2})
	meta := index.FileMeta{Path: "/d/x\n", Size: 1234, MtimeNs: -5, Dev: 7, Ino: 1 << 40, Mode: 0o755}
	if _, err := ix.Put(meta, sk); err != nil {
		t.Fatal(err)
	}
	h := fnv.New64a()
	for _, e := range entriesOf(chunks, sk) {
		h.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, e.Key), e.Weight))
	}
	want := fmt.Sprintf("\"/d/x\\n\" size=1234 mtime=-5 dev=7 ino=1099511627776 mode=0755 type=text strong=%x weight=%d features=2 fwd=%016x\n",
		strongOf("x"), sk.Weight(), h.Sum64())
	if got := dumpOf(t, ix, ""); got != want {
		t.Fatalf("dump:\n got %q\nwant %q", got, want)
	}
}

// TestDumpShowsFeatures: a file whose fingerprints change, and nothing else
// (not its weight nor its number of features), gets another line.
func TestDumpShowsFeatures(t *testing.T) {
	ix := openMem(t, nil, manber)
	meta := index.FileMeta{Path: "/f", Size: 100, MtimeNs: 1, Dev: 1, Ino: 2, Mode: 0o644}
	fs := []fingerprint.Feature{{Hash: 1, Count: 1}, {Hash: 2, Count: 1}, {Hash: 3, Count: 1}}
	if _, err := ix.Put(meta, sketchOf(manber, "f", 100, fs...)); err != nil {
		t.Fatal(err)
	}
	before := dumpOf(t, ix, "")
	fs[2].Hash = 4
	if _, err := ix.Put(meta, sketchOf(manber, "f", 100, fs...)); err != nil {
		t.Fatal(err)
	}
	after := dumpOf(t, ix, "")
	fwdOf := func(line string) string {
		_, fwd, _ := strings.Cut(line, " fwd=")
		return fwd
	}
	if before == after || fwdOf(before) == fwdOf(after) {
		t.Fatalf("a changed feature left the line alone: %q", after)
	}
	if strings.Split(before, " fwd=")[0] != strings.Split(after, " fwd=")[0] {
		t.Fatalf("more than the forward-list hash changed:\n%q\n%q", before, after)
	}
}
