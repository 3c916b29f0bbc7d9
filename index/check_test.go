package index_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// corruptFixture is a small chunks index: /a (id 1, inode 1:10, content 1)
// holds hashes 0x10, 0x20 (twice) and 0x30, of lengths 17, 33 and 49
// (weight 132); /b (id 2, inode 1:20, content 2) holds 0x20 and 0x40, of
// lengths 33 and 65 (weight 98); /c (id 3, inode 1:30) is a copy of /a and
// shares its content.
func corruptFixture(t *testing.T) *index.Index {
	ix := openMem(t, nil, chunks)
	a := sketchOf(chunks, "a", 100, fingerprint.Feature{Hash: 0x10, Count: 1}, fingerprint.Feature{Hash: 0x20, Count: 2}, fingerprint.Feature{Hash: 0x30, Count: 1})
	b := sketchOf(chunks, "b", 200, fingerprint.Feature{Hash: 0x20, Count: 1}, fingerprint.Feature{Hash: 0x40, Count: 1})
	if r, err := ix.Put(index.FileMeta{Path: "/a", Size: 100, Dev: 1, Ino: 10}, a); err != nil || r.ID != 1 {
		t.Fatalf("put /a: %+v %v", r, err)
	}
	if r, err := ix.Put(index.FileMeta{Path: "/b", Size: 200, Dev: 1, Ino: 20}, b); err != nil || r.ID != 2 {
		t.Fatalf("put /b: %+v %v", r, err)
	}
	if r, err := ix.Put(index.FileMeta{Path: "/c", Size: 100, Dev: 1, Ino: 30}, a); err != nil || r.ID != 3 {
		t.Fatalf("put /c: %+v %v", r, err)
	}
	if rep := mustClean(t, ix); rep.Contents != 2 || rep.Postings != 5 {
		t.Fatalf("fixture: %d contents, %d postings; want 2 and 5", rep.Contents, rep.Postings)
	}
	return ix
}

// hashHead returns the bytes of strongOf(label) a hash key holds.
func hashHead(label string) []byte {
	s := strongOf(label)
	return s[:4]
}

func TestCheckCatchesCorruption(t *testing.T) {
	k := index.FingerprintKey
	fwd := func(es ...index.Entry) []byte {
		slices.SortFunc(es, func(a, b index.Entry) int { return cmp.Compare(a.Key, b.Key) })
		return index.EncodeForward(es)
	}
	rec := func(t *testing.T, ix *index.Index, path string) index.FileRecord {
		r, err := ix.Lookup(path)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, c := range []struct {
		name    string
		corrupt func(t *testing.T, ix *index.Index) error
		want    []string // each must appear in some problem line
	}{
		{"posting of a fingerprint the content does not hold", func(t *testing.T, ix *index.Index) error {
			return ix.RawPosting(k(0x50), 1, 81)
		}, []string{fmt.Sprintf("posting %08x/1: content 1 does not hold %08x", k(0x50), k(0x50))}},
		{"posting of a missing content", func(t *testing.T, ix *index.Index) error {
			return ix.RawPosting(k(0x10), 7, 17)
		}, []string{fmt.Sprintf("posting %08x/7: content 7 has no record", k(0x10))}},
		{"missing posting", func(t *testing.T, ix *index.Index) error {
			return ix.RawPosting(k(0x30), 1, 0)
		}, []string{fmt.Sprintf("content 1: forward entry %08x has no posting", k(0x30))}},
		{"posting with the wrong weight", func(t *testing.T, ix *index.Index) error {
			return ix.RawPosting(k(0x20), 1, 99)
		}, []string{fmt.Sprintf("posting %08x/1: weight 99, the forward list of content 1 says 66", k(0x20))}},
		{"undecodable posting list", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingListKey(k(0x20)), []byte{0x80})
		}, []string{fmt.Sprintf("posting list of bucket %x:", k(0x20)>>16), "corrupt"}},
		{"posting list with trailing bits", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingListKey(k(0x20)), []byte{1, 0, 1, 0b0_1_0_00001})
		}, []string{fmt.Sprintf("posting list of bucket %x:", k(0x20)>>16), "trailing bits"}},
		{"removed posting left in a list", func(t *testing.T, ix *index.Index) error {
			// A list as stored after a merge never holds a tombstone.
			return ix.RawSet(index.PostingListKey(k(0x20)), []byte{1, 0, 1, 0b0_1_11_0000})
		}, []string{fmt.Sprintf("posting list of bucket %x:", k(0x20)>>16), "removed posting"}},
		{"posting list under a malformed key", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte{'P', 1, 2, 3}, []byte{1, 0, 1, 0b0_1_0_00000})
		}, []string{"posting list key 50010203:"}},
		{"missing forward list", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.ForwardKey(2))
		}, []string{"content 2: no forward list"}},
		{"undecodable forward list", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ForwardKey(1), []byte{3, 1})
		}, []string{"forward list of content 1:", "corrupt"}},
		{"forward list of a missing content", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ForwardKey(9), index.EncodeForward(nil))
		}, []string{"forward list of content 9: no content record"}},
		{"forward list that disagrees with the content record", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ForwardKey(2), index.EncodeForward([]index.Entry{{Key: k(0x20), Weight: 33}}))
		}, []string{"content 2: record weight 98, forward list gives 33", "record says 2 features, forward list holds 1",
			fmt.Sprintf("posting %08x/2: content 2 does not hold", k(0x40))}},
		{"key of format version 1's file-counts", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte{'d', 0, 0, 0, 0, 0, 0, 0, 0x20}, []byte{2})
		}, []string{"key 640000000000000020: unknown prefix"}},
		{"missing path key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.PathKey("/a"))
		}, []string{"file id 1 (\"/a\"): no path key"}},
		{"path key of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PathKey("/d"), []byte{0, 0, 0, 5})
		}, []string{"path \"/d\": file id 5 has no record"}},
		{"path key naming another file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PathKey("/d"), []byte{0, 0, 0, 2})
		}, []string{"path \"/d\": file id 2's record has path \"/b\"", "path \"/d\": file id 2 is named by path \"/b\" too"}},
		{"undecodable path key value", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PathKey("/b"), []byte{1})
		}, []string{"path \"/b\":", "file id 2 (\"/b\"): no path key"}},
		{"missing record", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.RecordKey(2))
		}, []string{"path \"/b\": file id 2 has no record", "content 2: no file holds it",
			"copy key 2/2: file id 2 has no record"}},
		{"missing record of a copy", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.RecordKey(3))
		}, []string{"path \"/c\": file id 3 has no record", "copy key 1/3: file id 3 has no record"}},
		{"undecodable record", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.RecordKey(1), []byte{1, 5})
		}, []string{"file id 1: record:", "corrupt"}},
		{"record naming a missing content", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.RecordKey(2), index.EncodeRecord(rec(t, ix, "/b"), 8))
		}, []string{"file id 2 (\"/b\"): content 8 has no record", "content 2: no file holds it",
			"copy key 2/2: the record of file id 2 (\"/b\") names content 8"}},
		{"missing content record", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.ContentKey(1))
		}, []string{"file id 1 (\"/a\"): content 1 has no record", "file id 3 (\"/c\"): content 1 has no record",
			"forward list of content 1: no content record", fmt.Sprintf("posting %08x/1: content 1 has no record", k(0x10)),
			fmt.Sprintf("hash key %x/1: content 1 has no record", hashHead("a"))}},
		{"undecodable content record", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ContentKey(2), []byte{1, 5})
		}, []string{"content 2: record:", "corrupt"}},
		{"content record with the wrong weight", func(t *testing.T, ix *index.Index) error {
			r := rec(t, ix, "/a")
			r.Weight++
			return ix.RawSet(index.ContentKey(1), index.EncodeContent(r))
		}, []string{"content 1: record weight 133, forward list gives 132"}},
		{"content no file holds", func(t *testing.T, ix *index.Index) error {
			r := rec(t, ix, "/b")
			if err := ix.RawSet(index.ContentKey(5), index.EncodeContent(r)); err != nil {
				return err
			}
			return ix.RawSet(index.ForwardKey(5), fwd(index.Entry{Key: k(0x20), Weight: 33}, index.Entry{Key: k(0x40), Weight: 65}))
		}, []string{"content 5: no file holds it", fmt.Sprintf("content 5: forward entry %08x has no posting", k(0x20))}},
		{"two equal contents", func(t *testing.T, ix *index.Index) error {
			// /c moved to a content of its own, equal to /a's.
			r := rec(t, ix, "/c")
			for _, kv := range [][2][]byte{
				{index.ContentKey(6), index.EncodeContent(r)},
				{index.ForwardKey(6), fwd(index.Entry{Key: k(0x10), Weight: 17}, index.Entry{Key: k(0x20), Weight: 66}, index.Entry{Key: k(0x30), Weight: 49})},
				{index.RecordKey(3), index.EncodeRecord(r, 6)},
				{index.CopyKey(6, 3), nil},
				{index.HashKey(strongOf("a"), 6), nil},
			} {
				if err := ix.RawSet(kv[0], kv[1]); err != nil {
					return err
				}
			}
			for _, e := range []index.Entry{{Key: k(0x10), Weight: 17}, {Key: k(0x20), Weight: 66}, {Key: k(0x30), Weight: 49}} {
				if err := ix.RawPosting(e.Key, 6, e.Weight); err != nil {
					return err
				}
			}
			return ix.RawDelete(index.CopyKey(1, 3))
		}, []string{fmt.Sprintf("content 6: equal to content 1 (strong hash %x): identical files must share one", strongOf("a"))}},
		{"missing copy key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.CopyKey(1, 1))
		}, []string{"file id 1 (\"/a\"): no copy key 1/1"}},
		{"copy key naming another content", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.CopyKey(1, 2), nil)
		}, []string{"copy key 1/2: the record of file id 2 (\"/b\") names content 2"}},
		{"copy key of a missing content", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.CopyKey(4, 1), nil)
		}, []string{"copy key 4/1: the record of file id 1 (\"/a\") names content 1"}},
		{"copy key of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.CopyKey(1, 7), nil)
		}, []string{"copy key 1/7: file id 7 has no record"}},
		{"copy key with a value", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.CopyKey(1, 3), []byte{7})
		}, []string{"copy key 1/3: value 07, want empty"}},
		{"malformed copy key", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte{'s', 0, 0, 0, 1}, nil)
		}, []string{"copy key 7300000001:", "corrupt"}},
		{"missing hash key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.HashKey(strongOf("b"), 2))
		}, []string{fmt.Sprintf("content 2: no hash key %x/2", hashHead("b"))}},
		{"hash key with the wrong strong hash", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.HashKey(strongOf("zz"), 2), nil)
		}, []string{fmt.Sprintf("hash key %x/2: content 2 has strong hash %x", hashHead("zz"), strongOf("b"))}},
		{"hash key of a missing content", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.HashKey(strongOf("a"), 4), nil)
		}, []string{fmt.Sprintf("hash key %x/4: content 4 has no record", hashHead("a"))}},
		{"hash key with a value", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.HashKey(strongOf("a"), 1), []byte{7})
		}, []string{fmt.Sprintf("hash key %x/1: value 07, want empty", hashHead("a"))}},
		{"malformed hash key", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte{'h', 0, 0, 0, 1}, nil)
		}, []string{"hash key 6800000001:", "corrupt"}},
		{"missing inode key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.InodeKey(1, 10, 1))
		}, []string{"file id 1 (\"/a\"): no inode key 1:10"}},
		{"inode key of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.InodeKey(1, 40, 7), nil)
		}, []string{"inode key 1:40/7: file id 7 has no record"}},
		{"inode key with the wrong device and inode", func(t *testing.T, ix *index.Index) error {
			if err := ix.RawDelete(index.InodeKey(1, 20, 2)); err != nil {
				return err
			}
			return ix.RawSet(index.InodeKey(2, 21, 2), nil)
		}, []string{"inode key 2:21/2: the record of file id 2 (\"/b\") has inode 1:20", "file id 2 (\"/b\"): no inode key 1:20"}},
		{"inode key with a value", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.InodeKey(1, 10, 1), []byte{1})
		}, []string{"inode key 1:10/1: value 01, want empty"}},
		{"malformed inode key", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte{'i', 0, 0, 0, 1}, nil)
		}, []string{"inode key 6900000001:", "corrupt"}},
		{"unknown key prefix", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte("Zebra"), nil)
		}, []string{"key 5a65627261: unknown prefix"}},
		{"garbled parameters", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.MetaParamsKey, []byte("{"))
		}, []string{"meta: fingerprint parameters \"{\" do not decode"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix := corruptFixture(t)
			if err := c.corrupt(t, ix); err != nil {
				t.Fatal(err)
			}
			rep, err := ix.Check()
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Fatal("check found nothing wrong")
			}
			all := strings.Join(rep.Problems, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("no problem mentions %q; problems:\n%s", w, all)
				}
			}
		})
	}
}

func TestCheckCapsProblems(t *testing.T) {
	ix := corruptFixture(t)
	for i := 0; i < index.MaxProblems+20; i++ {
		if err := ix.RawPosting(uint32(0x1000+i), 9, 5); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ix.Check()
	if err != nil {
		t.Fatal(err)
	}
	// Each bad posting gives one problem: no content record.
	if len(rep.Problems) != index.MaxProblems || rep.More != 20 {
		t.Fatalf("%d problems and %d more, want %d and 20", len(rep.Problems), rep.More, index.MaxProblems)
	}
	if rep.Postings != uint64(5+index.MaxProblems+20) || rep.Fingerprints != uint64(4+index.MaxProblems+20) || rep.Files != 3 || rep.Contents != 2 {
		t.Fatalf("report counts %+v", rep)
	}
}

// TestCorruptionIsAnError: reads of undecodable values fail with ErrCorrupt,
// never panic.
func TestCorruptionIsAnError(t *testing.T) {
	ix := corruptFixture(t)
	if err := ix.RawSet(index.RecordKey(1), []byte{1, 200}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Lookup("/a"); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("lookup of a corrupt record: %v", err)
	}
	if _, err := ix.Put(index.FileMeta{Path: "/a"}, sketchOf(chunks, "x", 1)); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("put over a corrupt record: %v", err)
	}
	if err := ix.RawSet(index.PostingListKey(index.FingerprintKey(0x40)), []byte{0}); err != nil {
		t.Fatal(err)
	}
	q := sketchOf(chunks, "q", 100, fingerprint.Feature{Hash: 0x40, Count: 1})
	if _, err := ix.Similar(context.Background(), index.Query{Sketch: q}, index.QueryOptions{MinFeatures: 1}); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("query over a corrupt posting: %v", err)
	}
	if _, err := ix.Groups(context.Background(), index.GroupOptions{}); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("groups over a corrupt record: %v", err)
	}
}
