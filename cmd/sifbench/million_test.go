package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPlanMillion checks the plan of a million files against its
// documented shape: the same from the same seed, the shares of copies,
// near-copies, binary files and size classes, about 4 GB in all, and a
// directory tree with a heavy-tailed fan-out and file count.
func TestPlanMillion(t *testing.T) {
	const n = 1_000_000
	p := planMillion(n, 7)
	if q := planMillion(n, 7); !reflect.DeepEqual(p, q) {
		t.Fatal("two plans from one seed differ")
	}
	if q := planMillion(n, 8); reflect.DeepEqual(p.Files, q.Files) {
		t.Fatal("plans from seeds 7 and 8 are the same")
	}
	var kinds [4]int
	var small, medium, large, fresh int
	var total int64
	for i, f := range p.Files {
		kinds[f.Kind]++
		total += int64(f.Size)
		switch f.Kind {
		case mCopy, mNear:
			o := p.Files[f.Origin]
			if int(f.Origin) >= i || (o.Kind != mText && o.Kind != mBinary) || o.Size != f.Size {
				t.Fatalf("file %d copies file %d, not an earlier new file of its size: %+v of %+v", i, f.Origin, f, o)
			}
			if f.Kind == mNear && f.Edit > mEditInsert {
				t.Fatalf("file %d: edit %d", i, f.Edit)
			}
			continue
		}
		fresh++
		if int(f.Origin) != i {
			t.Fatalf("new file %d names %d as its origin", i, f.Origin)
		}
		switch s := int(f.Size); {
		case s >= mSmallLo && s < mSmallHi:
			small++
		case s >= mMediumLo && s < mMediumHi:
			medium++
		case s >= mLargeLo && s <= mLargeHi:
			large++
		default:
			t.Fatalf("file %d: size %d in no class", i, s)
		}
	}
	near := func(what string, got, want, tol float64) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s: %.5f, want %.5f ± %.5f", what, got, want, tol)
		}
	}
	near("identical copies", float64(kinds[mCopy])/n, mShareCopy, 0.005)
	near("near-copies", float64(kinds[mNear])/n, mShareNear, 0.005)
	near("binary among new files", float64(kinds[mBinary])/float64(fresh), mShareBinary, 0.005)
	near("8 KiB-1 MiB among new files", float64(medium)/float64(fresh), mShareMedium, 0.0008)
	// 75 expected: three standard deviations either side.
	near("1-8 MiB among new files", float64(large)/float64(fresh), mShareLarge, 0.00004)
	if small+medium+large != fresh {
		t.Errorf("%d + %d + %d new files by size, want %d", small, medium, large, fresh)
	}
	near("GB in all (copies at their original's size)", float64(total)/1e9, 4.2, 0.4)

	// The directories.
	if len(p.Dirs) != n/mFilesPerDir || p.Dirs[0] != "" {
		t.Fatalf("%d directories, the first %q; want %d, the root first", len(p.Dirs), p.Dirs[0], n/mFilesPerDir)
	}
	index := map[string]int{}
	subdirs := make([]int, len(p.Dirs))
	for j, d := range p.Dirs {
		index[d] = j
		if j == 0 {
			continue
		}
		parent, ok := index[filepath.Dir(d)]
		if filepath.Dir(d) == "." {
			parent, ok = 0, true
		}
		if !ok || p.Depth[j] != p.Depth[parent]+1 || p.Depth[j] > mMaxDepth || strings.Count(d, "/")+1 != int(p.Depth[j]) {
			t.Fatalf("directory %d %q (depth %d) does not lie under an earlier one", j, d, p.Depth[j])
		}
		subdirs[parent]++
	}
	if len(index) != len(p.Dirs) {
		t.Fatalf("%d distinct directories of %d", len(index), len(p.Dirs))
	}
	perDir := make([]int, len(p.Dirs))
	for _, f := range p.Files {
		perDir[f.Dir]++
	}
	slices.Sort(subdirs)
	slices.Sort(perDir)
	leaves := 0
	for _, s := range subdirs {
		if s == 0 {
			leaves++
		}
	}
	maxDepth := slices.Max(p.Depth)
	t.Logf("%d files: %d new (%d small, %d medium, %d large), %d copies, %d near-copies, %.2f GB; %d directories, deepest %d, most subdirectories %d, %d without any, files per directory median %d, most %d",
		n, fresh, small, medium, large, kinds[mCopy], kinds[mNear], float64(total)/1e9, len(p.Dirs), maxDepth, subdirs[len(subdirs)-1], leaves, perDir[len(perDir)/2], perDir[len(perDir)-1])
	if maxFan := subdirs[len(subdirs)-1]; maxFan < 100 || leaves < len(p.Dirs)/3 {
		t.Errorf("fan-out: at most %d subdirectories, %d of %d directories without any; want a heavy tail", maxFan, leaves, len(p.Dirs))
	}
	if med, top := perDir[len(perDir)/2], perDir[len(perDir)-1]; med > mFilesPerDir || top < 1000 {
		t.Errorf("files per directory: median %d, most %d; want most directories small, a few with thousands", med, top)
	}
}

// TestMillionContent checks the bytes of a small plan: the same each time,
// copies equal to their original, near-copies edited as their kind says,
// text without NULs and binary with them.
func TestMillionContent(t *testing.T) {
	p := planMillion(3000, 11)
	var edits [3]int
	for i, f := range p.Files {
		b := p.content(i)
		if !bytes.Equal(b, p.content(i)) {
			t.Fatalf("file %d: two contents", i)
		}
		o := p.content(int(f.Origin))
		switch f.Kind {
		case mText:
			if len(b) != int(f.Size) || bytes.IndexByte(b, 0) >= 0 {
				t.Fatalf("text file %d: %d bytes (want %d), NUL at %d", i, len(b), f.Size, bytes.IndexByte(b, 0))
			}
		case mBinary:
			if len(b) != int(f.Size) || !bytes.HasPrefix(b, []byte("\x7fBIN\x00")) {
				t.Fatalf("binary file %d: %d bytes (want %d), header %q", i, len(b), f.Size, b[:5])
			}
		case mCopy:
			if !bytes.Equal(b, o) {
				t.Fatalf("copy %d differs from file %d", i, f.Origin)
			}
		case mNear:
			edits[f.Edit]++
			if bytes.Equal(b, o) {
				t.Fatalf("near-copy %d equals file %d", i, f.Origin)
			}
			switch f.Edit {
			case mEditSubstitute:
				diff := 0
				for k := range b {
					if b[k] != o[k] {
						diff++
					}
				}
				if len(b) != len(o) || diff > len(o)*30/100+50 {
					t.Fatalf("near-copy %d: %d of %d bytes changed, want at most 30 %% (+ a piece)", i, diff, len(o))
				}
			case mEditTruncate:
				k := len(o) * 40 / 100
				if !bytes.Equal(b[:k], o[:k]) || len(b) > len(o)*90/100+len(o)/4+2 {
					t.Fatalf("near-copy %d: not a 40-90 %% prefix of file %d and a quarter more", i, f.Origin)
				}
			case mEditInsert:
				if grew := len(b) - len(o); grew < 1 || grew > len(o)/5+3 {
					t.Fatalf("near-copy %d: %d bytes inserted into %d, want 2-20 %%", i, grew, len(o))
				}
				// The original's bytes stay in order around the runs.
				rest := o
				for _, c := range b {
					if len(rest) > 0 && c == rest[0] {
						rest = rest[1:]
					}
				}
				if len(rest) != 0 {
					t.Fatalf("near-copy %d: file %d is not a subsequence of it", i, f.Origin)
				}
			}
		}
	}
	for e, k := range edits {
		if k == 0 {
			t.Errorf("no near-copy made by edit %d", e)
		}
	}
}

// TestMillionTreeDir writes a small tree, checks every file on disk against
// the plan, reuses it, and refuses it for another plan.
func TestMillionTreeDir(t *testing.T) {
	dir := t.TempDir()
	p := planMillion(2000, 5)
	root, size, created, err := millionTreeDir(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if created <= 0 {
		t.Errorf("a new tree took %v s to write", created)
	}
	var want int64
	for i := range p.Files {
		b, err := os.ReadFile(filepath.Join(root, p.rel(i)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, p.content(i)) {
			t.Fatalf("file %d on disk differs from its plan", i)
		}
		want += int64(len(b))
	}
	if got := len(regularFiles(root, 0, 1<<62)); got != len(p.Files) || size != want || dirSize(root) != want {
		t.Fatalf("%d files, %d bytes reported, %d on disk; want %d files of %d bytes", got, size, dirSize(root), len(p.Files), want)
	}
	root2, size2, created2, err := millionTreeDir(dir, planMillion(2000, 5))
	if err != nil || root2 != root || size2 != size || created2 != 0 {
		t.Fatalf("reuse: %q, %d bytes, written in %v s, %v; want %q, %d bytes, not written", root2, size2, created2, err, root, size)
	}
	if _, _, _, err := millionTreeDir(dir, planMillion(2000, 6)); err == nil || !strings.Contains(err.Error(), "complete.json") {
		t.Fatalf("a tree of another seed was reused: %v", err)
	}
	// A tree left unfinished is refused.
	dir2 := t.TempDir()
	os.MkdirAll(filepath.Join(dir2, "tree"), 0o755)
	if _, _, _, err := millionTreeDir(dir2, p); err == nil || !strings.Contains(err.Error(), "not finished") {
		t.Fatalf("an unfinished tree was reused: %v", err)
	}
}
