package index

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkPostingLoad weighs the two ways a first scan could write its
// postings into an empty database with the index's options: one batch per
// content, as Put commits them (through the memtable, then flushed), or all
// of them sorted into one table and ingested. The postings are those of a
// tree like the module cache's distinct contents (6,000 contents of 38
// postings on random fingerprint keys). "commit" stops once the batches
// are committed, as the daemon's first scan does; "flushed" also flushes
// the memtable to a table, work the batches leave to the background.
//
// Measured on a 2-core machine shared with other builds: 0.33–0.43 s to
// commit the 228,000 postings in batches, 0.69–0.77 s with the flush, and
// 0.21–0.35 s to sort them, write one table and ingest it.
func BenchmarkPostingLoad(b *testing.B) {
	const contents, perContent = 6000, 38
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]uint32, contents)
	for c := range keys {
		for range perContent {
			keys[c] = append(keys[c], rng.Uint32())
		}
		slices.Sort(keys[c])
	}
	open := func(b *testing.B) *pebble.DB {
		dir := filepath.Join(b.TempDir(), "db")
		db, err := pebble.Open(dir, pebbleOptions(Options{}, vfs.Default, nil, nil))
		if err != nil {
			b.Fatal(err)
		}
		return db
	}
	batches := func(b *testing.B, flush bool) {
		for b.Loop() {
			b.StopTimer()
			db := open(b)
			b.StartTimer()
			var k, v []byte
			for c, ks := range keys {
				w := db.NewBatch()
				for _, key := range ks {
					k = appendBucketKey(k[:0], bucketOf(key))
					v, _ = encodePostingList(v[:0], []postingEntry{{key, uint32(c), 1}}, nil)
					if err := w.Merge(k, v, nil); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Commit(pebble.NoSync); err != nil {
					b.Fatal(err)
				}
				w.Close()
			}
			if flush {
				if err := db.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			db.Close()
			b.StartTimer()
		}
	}
	b.Run("batches/commit", func(b *testing.B) { batches(b, false) })
	b.Run("batches/flushed", func(b *testing.B) { batches(b, true) })
	b.Run("ingest", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db := open(b)
			path := filepath.Join(b.TempDir(), "postings.sst")
			b.StartTimer()
			all := make([]postingEntry, 0, contents*perContent)
			for c, ks := range keys {
				for _, key := range ks {
					all = append(all, postingEntry{key, uint32(c), 1})
				}
			}
			slices.SortFunc(all, comparePostings)
			f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
			if err != nil {
				b.Fatal(err)
			}
			opts := pebbleOptions(Options{}, vfs.Default, nil, nil)
			opts.EnsureDefaults()
			w := sstableWriter(f, opts, db)
			for len(all) > 0 {
				n := 1
				for n < len(all) && bucketOf(all[n].key) == bucketOf(all[0].key) {
					n++
				}
				v, _ := encodePostingList(nil, all[:n], nil)
				if err := w.Set(appendBucketKey(nil, bucketOf(all[0].key)), v); err != nil {
					b.Fatal(err)
				}
				all = all[n:]
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if err := db.Ingest(context.Background(), []string{path}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			db.Close()
			b.StartTimer()
		}
	})
}

// sstableWriter returns a writer of a table in db's format with opts'
// settings for the bottom level, where an ingested table of an empty
// database lands.
func sstableWriter(f vfs.File, opts *pebble.Options, db *pebble.DB) *sstable.Writer {
	return sstable.NewWriter(objstorageprovider.NewFileWritable(f), opts.MakeWriterOptions(len(opts.Levels)-1, db.TableFormat()))
}
