package index_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index"
)

func openJournal(t *testing.T, fs vfs.FS, on bool) *index.Index {
	t.Helper()
	ix, err := index.Open("/db", &index.Options{FS: fs, Params: manber, Journal: on})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

func journalIDs(t *testing.T, ix *index.Index) []index.JournalEntry {
	t.Helper()
	es, err := ix.Journal(0, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func ids(es []index.JournalEntry) []uint32 {
	var out []uint32
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// Every change to a file record leaves a note with the record's id; taking
// the notes removes only those not noted again since.
func TestJournalNotesChanges(t *testing.T) {
	fs := vfs.NewMem()
	ix := openJournal(t, fs, true)
	defer ix.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	a, err := ix.Put(index.FileMeta{Path: "/r/a", Size: 10}, randSketch(rng, manber, 20, 100))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ix.Put(index.FileMeta{Path: "/r/b", Size: 10}, randSketch(rng, manber, 20, 100))
	if err != nil {
		t.Fatal(err)
	}
	es := journalIDs(t, ix)
	if got, want := ids(es), []uint32{a.ID, b.ID}; !slices.Equal(got, want) {
		t.Fatalf("notes %v, want %v", got, want)
	}
	// a changes after the notes were read: its note must survive.
	if _, err := ix.Put(index.FileMeta{Path: "/r/a", Size: 11}, randSketch(rng, manber, 20, 100)); err != nil {
		t.Fatal(err)
	}
	if err := ix.JournalDone(es, []byte("mark 1")); err != nil {
		t.Fatal(err)
	}
	if got := ids(journalIDs(t, ix)); !slices.Equal(got, []uint32{a.ID}) {
		t.Fatalf("notes after done %v, want only a's (%d)", got, a.ID)
	}
	if m, err := ix.JournalMark(); err != nil || string(m) != "mark 1" {
		t.Fatalf("mark %q, %v", m, err)
	}
	if err := ix.JournalDone(journalIDs(t, ix), nil); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := ix.JournalLen(10); n != 0 {
		t.Fatalf("%d notes left", n)
	}

	// A rename and a removal are changes too; the view shows b gone.
	if err := ix.Rename("/r/a", index.FileMeta{Path: "/r/c", Size: 11}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Remove("/r/b"); err != nil {
		t.Fatal(err)
	}
	if got := ids(journalIDs(t, ix)); !slices.Equal(got, []uint32{a.ID, b.ID}) {
		t.Fatalf("notes after rename and removal %v, want %v", got, []uint32{a.ID, b.ID})
	}
	v, err := ix.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if rec, found, err := v.File(a.ID); err != nil || !found || rec.Path != "/r/c" {
		t.Fatalf("view of a: %+v %v %v", rec.FileMeta, found, err)
	}
	if _, found, err := v.File(b.ID); err != nil || found {
		t.Fatalf("view of removed b: found %v, %v", found, err)
	}
	if n, more, err := ix.JournalLen(1); n != 1 || !more || err != nil {
		t.Fatalf("JournalLen(1) = %d, %v, %v", n, more, err)
	}
	mustClean(t, ix)
}

// Without the journal no note is written, and opening without it drops
// the notes and the mark: nothing would keep them true.
func TestJournalOffDropsNotesAndMark(t *testing.T) {
	fs := vfs.NewMem()
	rng := rand.New(rand.NewPCG(3, 4))
	ix := openJournal(t, fs, true)
	if _, err := ix.Put(index.FileMeta{Path: "/r/a", Size: 10}, randSketch(rng, manber, 20, 100)); err != nil {
		t.Fatal(err)
	}
	if err := ix.JournalDone(nil, []byte("m")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openJournal(t, fs, true) // kept across a reopen with the journal
	if n, _, _ := ix.JournalLen(10); n != 1 {
		t.Fatalf("%d notes after reopen, want 1", n)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = openJournal(t, fs, false)
	if n, _, _ := ix.JournalLen(10); n != 0 {
		t.Fatalf("%d notes with the journal off", n)
	}
	if m, _ := ix.JournalMark(); m != nil {
		t.Fatalf("mark %q kept with the journal off", m)
	}
	if _, err := ix.Put(index.FileMeta{Path: "/r/b", Size: 10}, randSketch(rng, manber, 20, 100)); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := ix.JournalLen(10); n != 0 {
		t.Fatalf("%d notes written with the journal off", n)
	}
	if err := ix.JournalDone(nil, []byte("m")); err == nil {
		t.Fatal("JournalDone with the journal off set a mark")
	}
	if err := ix.SetJournal(true); err != nil {
		t.Fatal(err)
	}
	if err := ix.Remove("/r/b"); err != nil {
		t.Fatal(err)
	}
	if err := ix.JournalDone(nil, []byte("m2")); err != nil {
		t.Fatal(err)
	}
	if err := ix.SetJournal(false); err != nil {
		t.Fatal(err)
	}
	if m, _ := ix.JournalMark(); m != nil {
		t.Fatalf("mark %q kept after SetJournal(false)", m)
	}
	if n, _, _ := ix.JournalLen(10); n != 0 {
		t.Fatalf("%d notes kept after SetJournal(false)", n)
	}
	mustClean(t, ix)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
}

// A view lists files in id order, and a content's signature decodes to the
// entries the index holds of it.
func TestViewFilesAndSignature(t *testing.T) {
	ix := openMem(t, nil, manber)
	rng := rand.New(rand.NewPCG(5, 6))
	var want []uint32
	sks := map[uint32][]index.Entry{}
	for i := range 7 {
		sk := randSketch(rng, manber, 30, 200)
		rec, err := ix.Put(index.FileMeta{Path: "/r/" + string(rune('a'+i)), Size: sk.Size}, sk)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rec.ID)
		sks[rec.ID] = entriesOf(manber, sk)
	}
	if err := ix.Remove("/r/c"); err != nil {
		t.Fatal(err)
	}
	want = slices.Delete(want, 2, 3)
	v, err := ix.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var got []uint32
	after := uint32(0)
	for {
		last, more, err := v.FilesAfter(after, 2, func(rec index.FileRecord) error {
			got = append(got, rec.ID)
			raw, err := v.Signature(rec.Content)
			if err != nil {
				return err
			}
			es, err := index.DecodeSignature(raw, nil)
			if err != nil {
				return err
			}
			if !slices.Equal(es, sks[rec.ID]) {
				t.Errorf("file %d: signature %v, want %v", rec.ID, es, sks[rec.ID])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		after = last
		if !more {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("FilesAfter listed %v, want %v", got, want)
	}
	if _, err := index.DecodeSignature([]byte{5, 0xff}, nil); !index.IsCorrupt(err) {
		t.Fatalf("a bad signature decoded: %v", err)
	}
}
