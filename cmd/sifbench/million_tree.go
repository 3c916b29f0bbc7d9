package main

// The tree of the million benchmark: a synthetic file server, planned from
// a seed and written file by file, each file's bytes a function of the
// seed and its number alone, so that any file can be made again (a copy's
// bytes are its original's) and the tree is the same on every machine.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The kinds of file in a million tree.
const (
	mText   = iota // new random text
	mBinary        // new random binary data
	mCopy          // an identical copy of an earlier new file
	mNear          // an edited copy of an earlier new file
)

// The shares of the tree, in files. A new file is text or binary; its size
// is drawn log-uniformly from one of three classes. Copies and near-copies
// pick their original uniformly among the new files before them, so they
// follow the same size mix.
const (
	mShareCopy   = 0.15 // identical copies
	mShareNear   = 0.10 // near-copies
	mShareBinary = 0.25 // of the new files, binary; the rest text

	mShareMedium = 0.008  // of the new files: 8 KiB to 1 MiB
	mShareLarge  = 0.0001 // of the new files: 1 MiB to 8 MiB; the rest 200 B to 8 KiB

	mSmallLo, mSmallHi   = 200, 8 << 10
	mMediumLo, mMediumHi = 8 << 10, 1 << 20
	mLargeLo, mLargeHi   = 1 << 20, 8 << 20

	// mFilesPerDir is the mean number of files per directory, and
	// mMaxDepth the deepest a directory lies below the root.
	mFilesPerDir = 16
	mMaxDepth    = 12
)

// The edits that make a near-copy from its original.
const (
	mEditSubstitute = iota // 2-30 % of its bytes overwritten in 50-byte pieces
	mEditTruncate          // a 40-90 % prefix, then new text of a quarter of its size
	mEditInsert            // 1-3 runs of new text inserted, 2-20 % of its size in all
)

// mFile is one planned file.
type mFile struct {
	Dir    int32 // index in millionTree.Dirs
	Kind   uint8
	Edit   uint8 // mNear: how it is edited
	Size   int32 // mText, mBinary: its size; mCopy, mNear: the original's
	Origin int32 // mCopy, mNear: the new file it copies; else its own number
}

// millionTree is the plan of a tree: its directories, each a path relative
// to the root ("" for the root itself) under a parent listed before it,
// and its files.
type millionTree struct {
	Seed  uint64
	Dirs  []string
	Depth []uint8 // of each directory; the root is 0
	Files []mFile
}

// planMillion plans a tree of files files from seed. The directories
// (about one per mFilesPerDir files) form a tree grown by preferential
// attachment: each new directory's parent is drawn with a weight of one
// plus the subdirectories it already has, below mMaxDepth, which gives a
// few directories with many subdirectories and many with none, as on a
// file server. A file's directory is drawn with a density that falls as a
// power of its rank (rank = D·u^2.5 for u uniform): a few directories hold
// thousands of files, most a handful.
func planMillion(files int, seed uint64) *millionTree {
	r := rand.New(rand.NewPCG(seed, 0x6d696c6c))
	t := &millionTree{Seed: seed, Files: make([]mFile, files)}
	nd := max(1, files/mFilesPerDir)
	t.Dirs = make([]string, 1, nd)
	t.Depth = make([]uint8, 1, nd)
	weighted := []int32{0} // each directory once, and once more per subdirectory
	children := []int32{0}
	for j := 1; j < nd; j++ {
		p := weighted[r.IntN(len(weighted))]
		for t.Depth[p] >= mMaxDepth {
			p = weighted[r.IntN(len(weighted))]
		}
		children[p]++
		name := fmt.Sprintf("d%d", children[p])
		t.Dirs = append(t.Dirs, filepath.Join(t.Dirs[p], name))
		t.Depth = append(t.Depth, t.Depth[p]+1)
		children = append(children, 0)
		weighted = append(weighted, p, int32(j))
	}
	rank := r.Perm(nd)
	logUniform := func(lo, hi int) int32 {
		return int32(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	}
	var fresh []int32
	for i := range t.Files {
		f := &t.Files[i]
		f.Dir = int32(rank[min(nd-1, int(float64(nd)*math.Pow(r.Float64(), 2.5)))])
		x := r.Float64()
		switch {
		case x < mShareCopy && len(fresh) > 0:
			f.Kind, f.Origin = mCopy, fresh[r.IntN(len(fresh))]
			f.Size = t.Files[f.Origin].Size
		case x < mShareCopy+mShareNear && len(fresh) > 0:
			f.Kind, f.Origin = mNear, fresh[r.IntN(len(fresh))]
			f.Size = t.Files[f.Origin].Size
			// Substitute one time in two, truncate or insert one in four.
			f.Edit = [4]uint8{mEditSubstitute, mEditSubstitute, mEditTruncate, mEditInsert}[r.IntN(4)]
		default:
			f.Kind, f.Origin = mText, int32(i)
			if r.Float64() < mShareBinary {
				f.Kind = mBinary
			}
			switch y := r.Float64(); {
			case y < mShareLarge:
				f.Size = logUniform(mLargeLo, mLargeHi)
			case y < mShareLarge+mShareMedium:
				f.Size = logUniform(mMediumLo, mMediumHi)
			default:
				f.Size = logUniform(mSmallLo, mSmallHi)
			}
			fresh = append(fresh, int32(i))
		}
	}
	return t
}

// rel is the path of file i relative to the root.
func (t *millionTree) rel(i int) string {
	ext := ".txt"
	if t.Files[t.Files[i].Origin].Kind == mBinary {
		ext = ".bin"
	}
	return filepath.Join(t.Dirs[t.Files[i].Dir], "f"+strconv.Itoa(i)+ext)
}

// content returns the bytes of file i.
func (t *millionTree) content(i int) []byte {
	f := t.Files[i]
	r := rand.New(rand.NewPCG(t.Seed, uint64(i)))
	switch f.Kind {
	case mText:
		return randomText(r, int(f.Size))
	case mBinary:
		b := make([]byte, f.Size)
		for j := 0; j < len(b); j += 8 {
			x := r.Uint64()
			for k := j; k < min(j+8, len(b)); k++ {
				b[k] = byte(x)
				x >>= 8
			}
		}
		copy(b, "\x7fBIN\x00\x00\x01\x00") // a header with NULs, as binary formats have
		return b
	case mCopy:
		return t.content(int(f.Origin))
	}
	b := t.content(int(f.Origin))
	switch f.Edit {
	case mEditSubstitute:
		return substitute(r, b, 0.02+0.28*r.Float64())
	case mEditTruncate:
		k := len(b) * (40 + r.IntN(51)) / 100
		return append(b[:k:k], randomText(r, 1+len(b)/4)...)
	}
	runs := 1 + r.IntN(3)
	add := max(1, int(float64(len(b))*(0.02+0.18*r.Float64()))/runs)
	for range runs {
		at := r.IntN(len(b) + 1)
		b = append(b[:at:at], append(randomText(r, add), b[at:]...)...)
	}
	return b
}

// millionMark is written beside a finished tree, so that a later run reuses
// it only if it was planned alike.
type millionMark struct {
	Seed    uint64    `json:"seed"`
	Files   int       `json:"files"`
	Dirs    int       `json:"dirs"`
	Bytes   int64     `json:"bytes"`
	Created time.Time `json:"created"`
	Secs    float64   `json:"create_seconds"`
}

// millionTreeDir returns the root of the tree of plan t in dir (kept there
// for later runs) and its size in bytes, writing the tree first unless
// dir holds a finished one of the same plan. created is how long writing
// took, 0 when the tree was reused.
func millionTreeDir(dir string, t *millionTree) (root string, bytes int64, created float64, err error) {
	root, markPath := filepath.Join(dir, "tree"), filepath.Join(dir, "complete.json")
	if b, err := os.ReadFile(markPath); err == nil {
		var m millionMark
		if err := json.Unmarshal(b, &m); err != nil {
			return "", 0, 0, fmt.Errorf("%s: %w", markPath, err)
		}
		if m.Seed != t.Seed || m.Files != len(t.Files) {
			return "", 0, 0, fmt.Errorf("%s: the tree there has %d files from seed %d, not %d from seed %d: give another --dir or remove it",
				markPath, m.Files, m.Seed, len(t.Files), t.Seed)
		}
		return root, m.Bytes, 0, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", 0, 0, err
	}
	if _, err := os.Stat(root); err == nil {
		return "", 0, 0, fmt.Errorf("--dir %s: holds a tree that was not finished (no %s): remove it first", dir, markPath)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, 0, err
	}
	var want int64
	for _, f := range t.Files {
		want += int64(f.Size)
	}
	// The tree and room to spare for the indexes.
	if free, err := freeBytes(dir); err == nil && free < uint64(want)*3/2 {
		return "", 0, 0, fmt.Errorf("%s: %.1f GB free, want at least %.1f GB for a tree of about %.1f GB; give another --dir",
			dir, float64(free)/1e9, 1.5*float64(want)/1e9, float64(want)/1e9)
	}
	fmt.Fprintf(os.Stderr, "sifbench: writing %d files (about %.1f GB) in %d directories into %s\n", len(t.Files), float64(want)/1e9, len(t.Dirs), root)
	start := time.Now()
	if bytes, err = t.write(root, runtime.NumCPU()); err != nil {
		return "", 0, 0, err
	}
	created = since(start)
	m := millionMark{Seed: t.Seed, Files: len(t.Files), Dirs: len(t.Dirs), Bytes: bytes, Created: time.Now().UTC(), Secs: created}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(markPath, append(b, '\n'), 0o644); err != nil {
		return "", 0, 0, err
	}
	return root, bytes, created, nil
}

// write writes the tree under root with workers goroutines and returns its
// size in bytes. It reports progress on stderr every 50,000 files.
func (t *millionTree) write(root string, workers int) (int64, error) {
	for _, d := range t.Dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return 0, err
		}
	}
	var total, done atomic.Int64
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(t.Files) {
					return
				}
				b := t.content(i)
				if err := os.WriteFile(filepath.Join(root, t.rel(i)), b, 0o644); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(len(t.Files)))
					return
				}
				total.Add(int64(len(b)))
				if n := done.Add(1); n%50_000 == 0 {
					fmt.Fprintf(os.Stderr, "sifbench: wrote %d/%d files, %.0f MB (%.0f s)\n", n, len(t.Files), mb(total.Load()), since(start))
				}
			}
		})
	}
	wg.Wait()
	return total.Load(), firstErr
}
