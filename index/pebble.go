package index

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Pebble tuning, for bulk indexing (the first scan of a root writes the
// whole index at once) without write stalls, within the daemon's memory
// budget, and for a small index on disk.
const (
	// memTableSize: Pebble starts with a 256 KiB memtable and doubles it up
	// to this size (the default is 4 MiB). Pebble charges memtables to the
	// block cache (DefaultCacheSize). A scan of Go's source tree (11,000
	// files, 128 MB) takes about two memtables.
	memTableSize = 16 << 20
	// memTableStopWrites: writes stall only when the memtables waiting to be
	// flushed hold this many times memTableSize (64 MiB; the default is 2),
	// which happens only when the disk cannot keep up.
	memTableStopWrites = 4
	// l0CompactionThreshold starts compacting L0 when it holds this many
	// sublevels; l0StopWrites stalls writes at this many, well above it, so
	// a burst of flushes does not stall a scan while compactions catch up.
	// A first scan's flushes each span the whole key range; compacting
	// them every 12 rather than every 4 rewrites the posting lists less
	// often: on a million files, 0.86× the CPU of the first scan and 0.94×
	// its time to ready (medians of 3, against 4 and 24 in turn; 8 and 16
	// did as well, 32 worse), the peak RSS unchanged. The index is
	// compacted whole once the first scan is done.
	l0CompactionThreshold = 12
	l0StopWrites          = 48
	// bottomBlockSize is the data block size of the bottom level, which
	// holds nearly all the data once compacted: larger blocks compress a
	// little better (the block cache holds them uncompressed).
	bottomBlockSize = 8 << 10
)

// pebbleOptions returns the Pebble options of an index. fsys must not be
// nil. While zstdFlush (when not nil) is set, level 0's new tables are
// compressed with zstd as the bottom level's are (see Index.Compact).
func pebbleOptions(o Options, fsys vfs.FS, lock *pebble.Lock, zstdFlush *atomic.Bool) *pebble.Options {
	cacheSize := o.CacheSize
	if cacheSize <= 0 {
		cacheSize = DefaultCacheSize
	}
	popts := &pebble.Options{
		FS:                          fsys,
		CacheSize:                   cacheSize,
		Comparer:                    comparer,
		Merger:                      postingMerger,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      pebbleLogger{o.Logger},
		EventListener:               eventListener(o.Logger, o.OnBackgroundError),
		ReadOnly:                    o.ReadOnly,
		Lock:                        lock,
		MemTableSize:                memTableSize,
		MemTableStopWritesThreshold: memTableStopWrites,
		L0CompactionThreshold:       l0CompactionThreshold,
		L0StopWritesThreshold:       l0StopWrites,
		Cleaner:                     deleteCleaner{},
	}
	// Block compression. Posting keys, forward lists and identical-content
	// keys are mostly random bytes; paths and records compress. Measured on
	// Go's source tree after Compact (everything in the bottom level): 8.7 MB
	// uncompressed, 7.9 MB with Snappy or MinLZ, 6.3 MB with zstd level 3,
	// which shrinks even the columnar posting blocks by a quarter. So the
	// upper levels, rewritten often and soon, use the fastest compressor
	// (MinLZ, Snappy on arm64), and the bottom level zstd.
	for i := range popts.Levels {
		l := &popts.Levels[i]
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.Compression = func() *sstable.CompressionProfile { return sstable.FastestCompression }
	}
	if zstdFlush != nil {
		popts.Levels[0].Compression = func() *sstable.CompressionProfile {
			if zstdFlush.Load() {
				return sstable.ZstdCompression
			}
			return sstable.FastestCompression
		}
	}
	bottom := &popts.Levels[len(popts.Levels)-1]
	bottom.Compression = func() *sstable.CompressionProfile { return sstable.ZstdCompression }
	bottom.BlockSize = bottomBlockSize
	return popts
}

// deleteCleaner deletes obsolete files, as pebble.DeleteCleaner does, and
// keeps Pebble from recycling write-ahead logs. Pebble keeps up to
// MemTableStopWritesThreshold+1 obsolete logs for reuse, each as large as a
// memtable: several times the size of a small index, on disk for good.
// Recycling saves file-system work on synced writes; the index's writes do
// not sync. Pebble recycles logs unless its cleaner needs the contents of
// the files it cleans, which it learns from an unexported method of
// pebble.ArchiveCleaner; archiveMarker embeds one two levels down, so its
// Clean and String are shadowed by DeleteCleaner's and only that method
// shows. TestNoLogRecycling checks that it works.
type deleteCleaner struct {
	pebble.DeleteCleaner
	archiveMarker
}

type archiveMarker struct{ pebble.ArchiveCleaner }

// storedComparer returns the name of the comparer recorded in the newest
// OPTIONS file of the database in dir, or "" when there is none.
func storedComparer(fsys vfs.FS, dir string) (string, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return "", err
	}
	var (
		newest    string
		newestNum uint64
	)
	for _, n := range names {
		num, ok := strings.CutPrefix(n, "OPTIONS-")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(num, 10, 64); err == nil && (newest == "" || v > newestNum) {
			newest, newestNum = n, v
		}
	}
	if newest == "" {
		return "", nil
	}
	f, err := fsys.Open(fsys.PathJoin(dir, newest))
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "comparer="); ok {
			return name, nil
		}
	}
	return "", nil
}

// Backlogged reports whether Pebble is halfway to stalling writes: its
// memtables waiting to be flushed, or the sublevels of level 0 waiting to
// be compacted, past half of what stalls them. A writer that can wait (a
// tree being forgotten, RemovePaths after RemovePaths) waits until it is
// not, so that the writes that cannot wait (a file changed, a query's
// view) never meet a stall of its making.
func (ix *Index) Backlogged() (bool, error) {
	if err := ix.acquire(); err != nil {
		return false, fmt.Errorf("index.Backlogged: %w", err)
	}
	defer ix.release()
	m := ix.db.Metrics()
	return m.MemTable.Size > memTableStopWrites/2*memTableSize ||
		m.Levels[0].Sublevels >= l0StopWrites/2, nil
}

// backlogPoll is how often WaitBacklog looks again.
const backlogPoll = 10 * time.Millisecond

// WaitBacklog returns once Pebble is not Backlogged, or with ctx's error.
func (ix *Index) WaitBacklog(ctx context.Context) error {
	for {
		busy, err := ix.Backlogged()
		if err != nil || !busy {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backlogPoll):
		}
	}
}
