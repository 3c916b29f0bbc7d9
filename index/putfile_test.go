package index_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// PutFile makes the choice a writer used to: a copy of a content the index
// holds joins it without being sketched, a new file is sketched once (or
// not at all when it comes with its sketch), a load's new contents leave
// their postings pending, and a load's copies join their content by id,
// with neither a search nor a path lookup.
func TestPutFile(t *testing.T) {
	sk := func(label string, f ...int) *fingerprint.Sketch { return sketchOf(manber, label, 1000, feats(f...)...) }
	a, c := sk("A", 1, 2, 3, 4), sk("C", 5, 6, 7, 8)
	ino := uint64(0)
	type want struct {
		sketches int    // calls of MakeSketch
		content  uint32 // the file's content, if not 0
		pending  bool   // postings left pending
	}
	put := func(what string, ix *index.Index, path string, s *fingerprint.Sketch, given bool, b *index.Bulk, w want) index.FileRecord {
		t.Helper()
		ino++
		made := 0
		fw := index.FileWrite{
			Meta:       index.FileMeta{Path: path, Size: s.Size, Dev: 1, Ino: ino},
			Strong:     s.Strong,
			MakeSketch: func() *fingerprint.Sketch { made++; return s },
			Bulk:       b,
			Deferred:   b != nil,
		}
		if given {
			fw.Sketch = s
		}
		rec, err := ix.PutFile(fw)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if made != w.sketches {
			t.Errorf("%s: sketched %d times, want %d", what, made, w.sketches)
		}
		if w.content != 0 && rec.Content != w.content {
			t.Errorf("%s: content %d, want %d", what, rec.Content, w.content)
		}
		if got := ix.PendingPostings() > 0; got != w.pending {
			t.Errorf("%s: postings pending %v, want %v", what, got, w.pending)
		}
		return rec
	}

	t.Run("live", func(t *testing.T) {
		ix := openMem(t, nil, manber)
		ra := put("new bytes", ix, "/a1", a, false, nil, want{sketches: 1})
		put("a copy", ix, "/a2", a, false, nil, want{content: ra.Content})
		rc := put("new bytes with their sketch", ix, "/c1", c, true, nil, want{})
		if rc.Content == ra.Content {
			t.Errorf("C joined A's content %d", ra.Content)
		}
		put("a file changed into a copy", ix, "/a1", c, false, nil, want{content: rc.Content})
		if rep := mustClean(t, ix); rep.Files != 3 || rep.Contents != 2 {
			t.Errorf("%d files, %d contents; want 3, 2", rep.Files, rep.Contents)
		}
		_, err := ix.PutFile(index.FileWrite{Meta: index.FileMeta{Path: "/none", Size: 10}})
		if err == nil || !strings.Contains(err.Error(), `"/none"`) || !strings.Contains(err.Error(), "no sketch") {
			t.Errorf("PutFile with no sketch: %v, want an error naming the path", err)
		}
	})

	t.Run("load", func(t *testing.T) {
		ix, b := openBulk(t, vfs.NewMem())
		t.Cleanup(func() {
			if err := ix.Close(); err != nil && !errors.Is(err, index.ErrClosed) {
				t.Error(err)
			}
		})
		searches, lookups := ix.ContentSearches(), ix.PathLookups()
		ra := put("bytes met first", ix, "/a1", a, false, b, want{sketches: 1, pending: true})
		put("a copy of bytes met", ix, "/a2", a, false, b, want{content: ra.Content, pending: true})
		put("new bytes with their sketch", ix, "/c1", c, true, b, want{pending: true})
		if n := ix.ContentSearches() - searches; n != 0 {
			t.Errorf("%d searches for an equal content, want 0", n)
		}
		if n := ix.PathLookups() - lookups; n != 0 {
			t.Errorf("%d path lookups, want 0", n)
		}
		if rep := flushAndCheck(t, ix); !rep.OK() || rep.Files != 3 || rep.Contents != 2 {
			t.Errorf("%d files, %d contents, problems %q; want 3, 2", rep.Files, rep.Contents, rep.Problems)
		}
	})
}
