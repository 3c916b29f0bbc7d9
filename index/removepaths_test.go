package index_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// RemovePaths leaves the index Remove would, path by path: the files
// gone, a content gone with its last file whether its other copies left
// in the same batch or an earlier one, a content kept while a file
// elsewhere holds it, paths not indexed (or given twice) passed over.
// The counts and every invariant (Check) hold after each batch.
func TestRemovePathsAsRemove(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	var sks []*fingerprint.Sketch
	for range 12 {
		sks = append(sks, randSketch(rng, chunks, 20, 100))
	}
	// Under /a: 40 files of the 12 contents in runs of 3 copies, removed
	// 7 at a time, so copies of one content leave in one batch or across
	// two; /b holds copies of contents 0 and 1 and a file of its own.
	m := model{}
	for i := range 40 {
		sk := sks[(i/3)%len(sks)]
		path := fmt.Sprintf("/a/%02d", i)
		m[path] = modelFile{metaFor(path, sk, rng), sk}
	}
	own := randSketch(rng, chunks, 20, 100)
	for path, sk := range map[string]*fingerprint.Sketch{"/b/0": sks[0], "/b/1": sks[1], "/b/own": own} {
		m[path] = modelFile{metaFor(path, sk, rng), sk}
	}
	build := func() *index.Index {
		ix := openMem(t, nil, chunks)
		for _, path := range slices.Sorted(maps.Keys(m)) {
			if _, err := ix.Put(m[path].meta, m[path].sk); err != nil {
				t.Fatal(err)
			}
		}
		return ix
	}
	batched, single := build(), build()
	var under []string
	for path := range m {
		if strings.HasPrefix(path, "/a/") {
			under = append(under, path)
		}
	}
	slices.Sort(under)
	left := m.clone()
	var removed int
	for len(under) > 0 {
		n := min(7, len(under))
		batch := append(slices.Clone(under[:n]), under[0], "/a/none")
		files, bytes, err := batched.RemovePaths(batch)
		if err != nil {
			t.Fatal(err)
		}
		var wantBytes uint64
		for _, p := range under[:n] {
			wantBytes += uint64(left[p].meta.Size)
			delete(left, p)
			if err := single.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		if files != n || bytes != wantBytes {
			t.Fatalf("RemovePaths(%q) = %d files, %d bytes; want %d, %d", batch, files, bytes, n, wantBytes)
		}
		removed += files
		verifyModel(t, batched, left)
		mustClean(t, batched)
		under = under[n:]
	}
	if removed != 40 {
		t.Fatalf("removed %d files, want 40", removed)
	}
	var got, want bytes.Buffer
	if err := batched.Dump("", &got); err != nil {
		t.Fatal(err)
	}
	if err := single.Dump("", &want); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("dump after RemovePaths:\n%s\nafter Remove:\n%s", got.String(), want.String())
	}
	bst, _ := batched.Stats()
	sst, _ := single.Stats()
	if bst.Contents != sst.Contents || bst.Postings != sst.Postings || bst.Contents != 3 {
		t.Fatalf("stats after RemovePaths %+v, after Remove %+v; want 3 contents left", bst, sst)
	}
	for _, keyspace := range []byte("Pcfhs") {
		b, _ := batched.RawKeys(keyspace)
		s, _ := single.RawKeys(keyspace)
		if b != s {
			t.Errorf("%c keys: %d after RemovePaths, %d after Remove", keyspace, b, s)
		}
	}
	if _, _, err := batched.RemovePaths(make([]string, index.MaxRemoveBatch+1)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("RemovePaths of %d paths: %v, want an error naming the limit", index.MaxRemoveBatch+1, err)
	}
}

// heldFlushFS holds the creation of tables until release is closed: Pebble
// cannot flush its memtables meanwhile.
type heldFlushFS struct {
	vfs.FS
	release chan struct{}
}

func (fs heldFlushFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		<-fs.release
	}
	return fs.FS.Create(name, c)
}

// Backlogged is set while Pebble's memtables wait to be flushed, past half
// of what stalls writes, and WaitBacklog waits until they are flushed, or
// returns its context's error.
func TestWaitBacklog(t *testing.T) {
	fs := heldFlushFS{FS: vfs.NewMem(), release: make(chan struct{})}
	ix := openMem(t, fs, chunks)
	ctx := context.Background()
	if busy, err := ix.Backlogged(); err != nil || busy {
		t.Fatalf("Backlogged on a new index: %v, %v", busy, err)
	}
	if err := ix.WaitBacklog(ctx); err != nil {
		t.Fatal(err)
	}
	// 40 MiB of values, written with no table made: the memtables hold them.
	value := bytes.Repeat([]byte{'v'}, 1<<20)
	for i := range 40 {
		if err := ix.RawSet([]byte(fmt.Sprintf("x%03d", i)), value); err != nil {
			t.Fatal(err)
		}
	}
	if busy, err := ix.Backlogged(); err != nil || !busy {
		t.Fatalf("Backlogged with 40 MiB waiting to be flushed: %v, %v", busy, err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := ix.WaitBacklog(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitBacklog while flushes are held: %v, want the context's deadline", err)
	}
	close(fs.release)
	if err := ix.WaitBacklog(ctx); err != nil {
		t.Fatal(err)
	}
	if busy, _ := ix.Backlogged(); busy {
		t.Fatal("Backlogged once WaitBacklog returned")
	}
}
