package index

import (
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sif-dev/sif/index/fingerprint"
)

// sizedKeyspaces are the keyspaces BenchmarkKeyspaceSizes weighs, each
// under the unit of its metric.
var sizedKeyspaces = []struct {
	unit     string
	prefixes []byte
}{
	{"postings-B", []byte{prefixPosting}},
	{"forward-B", []byte{prefixForward}},
	{"contents-B", []byte{prefixContent}},
	{"copies-B", []byte{prefixCopy, prefixHash}},
	{"files-B", []byte{prefixRecord, prefixPath, prefixInode}},
}

var benchTree = flag.String("bench.tree", filepath.Join(runtime.GOROOT(), "src"), "the tree BenchmarkKeyspaceSizes indexes")

// BenchmarkKeyspaceSizes indexes a tree (-bench.tree, Go's sources by
// default) in process, as sifd's first scan does (the default parameters,
// no SimiHash), and reports the tables as the writes left them, flushed
// as Compact flushes them (flushed-B: the input of the compaction after a
// first scan, which holds it beside its output until it is done). Then it
// compacts the index and reports the disk space of each keyspace
// (Pebble's EstimateDiskUsage, which counts whole data blocks, so the
// parts add up to a little more than the tables) and of the database's
// tables. It measures the layout, not time: run it with -benchtime 1x.
func BenchmarkKeyspaceSizes(b *testing.B) {
	root := *benchTree
	type file struct {
		meta FileMeta
		sk   *fingerprint.Sketch
	}
	p := fingerprint.DefaultParams()
	var (
		files []file
		c     fingerprint.Collector
		bytes int64
	)
	sketcher, err := fingerprint.NewSketcher(p, c.Add)
	if err != nil {
		b.Fatal(err)
	}
	sketcher.SkipSimiHash()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		c.Reset()
		sketcher.Reset()
		sketcher.Write(data)
		sum := sketcher.Finish()
		mtime := info.ModTime().UnixNano()
		// A fresh copy of the tree: one device, inodes in walk order.
		meta := FileMeta{Path: path, Size: int64(len(data)), MtimeNs: mtime, CtimeNs: mtime,
			Dev: 64769, Ino: 1<<20 + uint64(len(files)), Mode: uint32(info.Mode())}
		files = append(files, file{meta, &fingerprint.Sketch{Summary: sum, Params: sketcher.Params(), Features: c.Features()}})
		bytes += int64(len(data))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(files) < 1000 {
		b.Fatalf("%s: only %d files: the measure needs a tree of at least 1000", root, len(files))
	}
	for b.Loop() {
		ix, err := Open(filepath.Join(b.TempDir(), "db"), &Options{Params: p})
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			if _, err := ix.Put(f.meta, f.sk); err != nil {
				b.Fatal(err)
			}
		}
		if err := ix.writePending(); err != nil {
			b.Fatal(err)
		}
		ix.zstdFlush.Store(true) // as Compact flushes
		err = ix.db.Flush()
		ix.zstdFlush.Store(false)
		if err != nil {
			b.Fatal(err)
		}
		flushed := ix.db.Metrics().Total().TablesSize
		b.ReportMetric(float64(flushed), "flushed-B")
		if err := ix.Compact(context.Background()); err != nil {
			b.Fatal(err)
		}
		st, err := ix.Stats()
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %d files, %d bytes; %d contents, %d postings", root, len(files), bytes, st.Contents, st.Postings)
		for _, ks := range sizedKeyspaces {
			var n uint64
			for _, prefix := range ks.prefixes {
				lo, hi := keyspace(prefix)
				u, err := ix.db.EstimateDiskUsage(lo, hi)
				if err != nil {
					b.Fatal(err)
				}
				n += u
			}
			b.ReportMetric(float64(n), ks.unit)
			b.Logf("%-10s %9d bytes", ks.unit, n)
		}
		tables := ix.db.Metrics().Total().TablesSize
		b.ReportMetric(float64(tables), "tables-B")
		b.ReportMetric(100*float64(tables)/float64(bytes), "%corpus")
		if err := ix.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
