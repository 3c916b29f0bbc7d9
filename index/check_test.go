package index_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

// corruptFixture is a small chunks index: /a (id 1, inode 1:10) holds
// hashes 0x10, 0x20 (twice) and 0x30, of lengths 17, 33 and 49 (weight
// 132); /b (id 2, inode 1:20) holds 0x20 and 0x40, of lengths 33 and 65
// (weight 98).
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
	mustClean(t, ix)
	return ix
}

func TestCheckCatchesCorruption(t *testing.T) {
	pv := index.PostingValue
	k := index.FingerprintKey
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
		{"posting of a fingerprint the file does not hold", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingKey(k(0x50), 1), pv(81))
		}, []string{fmt.Sprintf("posting %08x/1: file id 1 (\"/a\") does not hold %08x", k(0x50), k(0x50))}},
		{"posting of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingKey(k(0x10), 7), pv(17))
		}, []string{fmt.Sprintf("posting %08x/7: file id 7 has no record", k(0x10))}},
		{"missing posting", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.PostingKey(k(0x30), 1))
		}, []string{fmt.Sprintf("file id 1 (\"/a\"): forward entry %08x has no posting", k(0x30))}},
		{"posting with the wrong weight", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingKey(k(0x20), 1), pv(99))
		}, []string{fmt.Sprintf("posting %08x/1: weight 99, the forward list of \"/a\" says 66", k(0x20))}},
		{"undecodable posting", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingKey(k(0x20), 2), []byte{0x80})
		}, []string{fmt.Sprintf("posting %08x/2:", k(0x20)), "corrupt"}},
		{"posting of weight 1 not stored empty", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PostingKey(k(0x20), 2), []byte{1})
		}, []string{fmt.Sprintf("posting %08x/2:", k(0x20)), "corrupt"}},
		{"missing forward list", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.ForwardKey(2))
		}, []string{"file id 2 (\"/b\"): no forward list"}},
		{"undecodable forward list", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ForwardKey(1), []byte{3, 1})
		}, []string{"forward list of file id 1 (\"/a\")", "corrupt"}},
		{"forward list of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ForwardKey(9), index.EncodeForward(nil))
		}, []string{"forward list of file id 9: no record"}},
		{"forward list that disagrees with the record", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.ForwardKey(2), index.EncodeForward([]index.Entry{{Key: k(0x20), Weight: 33}}))
		}, []string{"file id 2 (\"/b\"): record weight 98, forward list gives 33", "record says 2 features, forward list holds 1",
			fmt.Sprintf("posting %08x/2: file id 2 (\"/b\") does not hold", k(0x40))}},
		{"key of format version 1's file-counts", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet([]byte{'d', 0, 0, 0, 0, 0, 0, 0, 0x20}, []byte{2})
		}, []string{"key 640000000000000020: unknown prefix"}},
		{"missing path key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.PathKey("/a"))
		}, []string{"file id 1 (\"/a\"): no path key"}},
		{"path key of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PathKey("/c"), []byte{0, 0, 0, 5})
		}, []string{"path \"/c\": file id 5 has no record"}},
		{"path key naming another file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PathKey("/c"), []byte{0, 0, 0, 2})
		}, []string{"path \"/c\": file id 2's record has path \"/b\"", "path \"/c\": file id 2 is named by path \"/b\" too"}},
		{"undecodable path key value", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.PathKey("/b"), []byte{1})
		}, []string{"path \"/b\":", "file id 2 (\"/b\"): no path key"}},
		{"missing record", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.RecordKey(2))
		}, []string{"path \"/b\": file id 2 has no record", "forward list of file id 2: no record",
			fmt.Sprintf("posting %08x/2: file id 2 has no record", k(0x40))}},
		{"undecodable record", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.RecordKey(1), []byte{1, 5})
		}, []string{"file id 1: record:", "corrupt"}},
		{"record with the wrong weight", func(t *testing.T, ix *index.Index) error {
			r := rec(t, ix, "/a")
			r.Weight++
			return ix.RawSet(index.RecordKey(1), index.EncodeRecord(r))
		}, []string{"file id 1 (\"/a\"): record weight 133, forward list gives 132"}},
		{"missing identical-content key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.StrongKey(strongOf("a"), 1))
		}, []string{"file id 1 (\"/a\"): no identical-content key"}},
		{"orphan identical-content key", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.StrongKey(strongOf("zz"), 2), nil)
		}, []string{fmt.Sprintf("identical-content key %x/2: the record of file id 2 (\"/b\") has strong hash", strongOf("zz"))}},
		{"missing inode key", func(t *testing.T, ix *index.Index) error {
			return ix.RawDelete(index.InodeKey(1, 10, 1))
		}, []string{"file id 1 (\"/a\"): no inode key 1:10"}},
		{"inode key of a missing file", func(t *testing.T, ix *index.Index) error {
			return ix.RawSet(index.InodeKey(1, 30, 7), nil)
		}, []string{"inode key 1:30/7: file id 7 has no record"}},
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
		if err := ix.RawSet(index.PostingKey(uint32(0x1000+i), 9), index.PostingValue(5)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ix.Check()
	if err != nil {
		t.Fatal(err)
	}
	// Each bad posting gives one problem: no record.
	if len(rep.Problems) != index.MaxProblems || rep.More != 20 {
		t.Fatalf("%d problems and %d more, want %d and 20", len(rep.Problems), rep.More, index.MaxProblems)
	}
	if rep.Postings != uint64(5+index.MaxProblems+20) || rep.Fingerprints != uint64(4+index.MaxProblems+20) || rep.Files != 2 {
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
	if err := ix.RawSet(index.PostingKey(index.FingerprintKey(0x40), 2), []byte{0}); err != nil {
		t.Fatal(err)
	}
	q := sketchOf(chunks, "q", 100, fingerprint.Feature{Hash: 0x40, Count: 1})
	if _, err := ix.Similar(index.Query{Sketch: q}, index.QueryOptions{MinFeatures: 1}); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("query over a corrupt posting: %v", err)
	}
	if _, err := ix.Groups(index.GroupOptions{}); !errors.Is(err, index.ErrCorrupt) {
		t.Fatalf("groups over a corrupt record: %v", err)
	}
}
