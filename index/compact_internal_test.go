package index

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index/fingerprint"
)

// TestCompactLoneTableZstd: an index small enough to stay in the
// memtables is compacted into one table, which Pebble moves to the bottom
// level as it was flushed: it is written with zstd, as the bottom level's
// are, and later flushes with the fastest compression again.
func TestCompactLoneTableZstd(t *testing.T) {
	ix, err := Open("/db", &Options{FS: vfs.NewMem(), Params: fingerprint.DefaultParams()})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	put := func(from int) {
		for i := from; i < from+1000; i++ {
			if err := ix.db.Set([]byte(fmt.Sprintf("%c/some/path/%06d", prefixPath, i)), []byte("a record of a file"), pebble.NoSync); err != nil {
				t.Fatal(err)
			}
		}
	}
	// zstdTables returns the number of tables, and of those compressed
	// with zstd.
	zstdTables := func() (n, zstd int) {
		levels, err := ix.db.SSTables(pebble.WithProperties())
		if err != nil {
			t.Fatal(err)
		}
		for _, tables := range levels {
			for _, tb := range tables {
				n++
				if strings.Contains(strings.ToLower(tb.Properties.CompressionName), "zstd") {
					zstd++
				}
			}
		}
		return n, zstd
	}
	put(0)
	if err := ix.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, zstd := zstdTables(); n != 1 || zstd != 1 {
		t.Fatalf("after Compact: %d tables, %d with zstd; want 1 with zstd", n, zstd)
	}
	put(1000)
	if err := ix.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, zstd := zstdTables(); n != 2 || zstd != 1 {
		t.Errorf("after a flush outside Compact: %d tables, %d with zstd; want 2, 1 with zstd", n, zstd)
	}
}
