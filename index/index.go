package index

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index/fingerprint"
)

// DefaultCacheSize is the memory of Pebble's block cache and memtables when
// Options.CacheSize is 0: 64 MiB, of which the memtables take up to 32 MiB
// (the one being filled, and one kept for reuse, of 16 MiB each) once a
// bulk load has grown them to full size.
const DefaultCacheSize = 64 << 20

// Index is a Pebble-backed sif index. All its methods are safe for
// concurrent use: reads run in parallel, writes are serialized, and each
// write is one atomic batch. Writes are not synced as they commit (the index
// is a cache of the disk); Sync and Close make them durable.
type Index struct {
	db           *pebble.DB
	lock         *pebble.Lock
	dir          string
	params       fingerprint.Params
	knowsLengths bool
	simihash     bool // the index keeps SimiHash keys (Options.SimiHash)
	readOnly     bool
	log          *slog.Logger
	movedAside   string
	moveReason   string
	guard        *guard // between Pebble and the filesystem; nil when read-only
	// zstdFlush is set while Compact runs: the memtables it flushes are
	// written with the bottom level's compression.
	zstdFlush *atomic.Bool

	// mu guards closed and inflight: every operation counts itself in
	// inflight, and Close waits for them to end before closing Pebble.
	mu       sync.Mutex
	idle     sync.Cond // signalled when inflight drops to 0 after closing
	closed   bool
	inflight int

	// wmu serializes writes: a write reads the old state of a file and
	// commits its batch while holding it.
	wmu     sync.Mutex
	nextID  uint64  // guarded by wmu; > math.MaxUint32 when file ids are exhausted
	nextCID uint64  // guarded by wmu; > math.MaxUint32 when content ids are exhausted
	pend    pending // guarded by wmu: the postings deferred puts left to write (pending.go)
	// contentGen counts the contents made or rewritten in place since
	// Open, for Bulk. Guarded by wmu.
	contentGen uint64
	// journal is whether batches note the files they change, and
	// journalSeq the last sequence number given to a note (journal.go).
	journal    atomic.Bool
	journalSeq atomic.Uint64
	// bulk is the Bulk whose filter every path given a record is added
	// to, or nil. Guarded by wmu.
	bulk *Bulk
	// pendingN is len(pend.postings), for readers that do not take wmu.
	pendingN atomic.Int64

	countsMu sync.Mutex
	counts   counts // guarded by countsMu

	// copies counts the files of every content held by two or more (the
	// others hold one), for document frequencies, which count files. It is
	// built from the copy keys at Open and kept current by every write,
	// after its batch commits.
	copiesMu sync.RWMutex
	copies   map[uint32]uint32 // guarded by copiesMu

	// postingWrites counts the posting keys set or deleted since Open, so
	// tests can tell a write that touches no posting.
	postingWrites atomic.Uint64
	// contentSearches counts the searches for an equal content, so tests
	// can tell a write that made none (Bulk).
	contentSearches atomic.Uint64
	// pathLookups counts the lookups of a file's old record by its path
	// that writes make, so tests can tell one a Bulk spared.
	pathLookups atomic.Uint64
}

var _ Querier = (*Index)(nil)
var _ Writer = (*Index)(nil)

// Open opens the index in dir, creating it (and dir) unless opts.ReadOnly.
// Errors name dir.
// A nil opts means the defaults. It fails with an error wrapping ErrLocked
// when another process (or another Open in this process) holds the
// database, and ErrParamsMismatch when opts.Params are set and differ from
// the parameters the index was built with. The caller must Close the index.
func Open(dir string, opts *Options) (*Index, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	ix, err := open(dir, o)
	err = plainCorruption(err)
	if err != nil && errors.Is(err, ErrOldFormat) && o.MoveAsideOldFormat && !o.ReadOnly {
		var aside string
		if aside, err = moveAside(o.FS, dir); err == nil {
			if ix, err = open(dir, o); err == nil {
				ix.movedAside = aside
			}
		}
	} else if err != nil && o.MoveAsideCorrupt && !o.ReadOnly && isUnopenable(err) {
		reason := err.Error()
		var aside string
		if aside, err = MoveAside(o.FS, dir, "corrupt"); err == nil {
			if ix, err = open(dir, o); err == nil {
				ix.movedAside, ix.moveReason = aside, reason
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index.Open %s: %w", dir, err)
	}
	return ix, nil
}

// moveAside renames dir to a free name beside it and returns that name.
func moveAside(fsys vfs.FS, dir string) (string, error) {
	if fsys == nil {
		fsys = vfs.Default
	}
	aside := dir + ".old-format"
	if _, err := fsys.Stat(aside); err == nil {
		aside += "-" + time.Now().UTC().Format("20060102T150405")
	}
	if err := fsys.Rename(dir, aside); err != nil {
		return "", fmt.Errorf("moving the old-format index aside: %w", err)
	}
	return aside, nil
}

// MovedAside returns where Open moved an index of an older format (see
// Options.MoveAsideOldFormat), or "".
func (ix *Index) MovedAside() string { return ix.movedAside }

func open(dir string, o Options) (_ *Index, err error) {
	var want fingerprint.Params
	if o.Params != (fingerprint.Params{}) {
		if want, err = o.Params.Normalize(); err != nil {
			return nil, err
		}
	}
	fsys := o.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	if o.ReadOnly {
		// Nothing may be written to a directory that is not an index, not
		// even Pebble's LOCK file: it may be anything, a watched root
		// among them.
		if err := checkIsIndex(fsys, dir); err != nil {
			return nil, err
		}
	} else if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	lock, err := pebble.LockDirectory(dir, fsys)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err // could not create the LOCK file: not a lock conflict
		}
		return nil, fmt.Errorf("%w: %v", ErrLocked, err)
	}
	defer func() {
		if err != nil {
			_ = lock.Close()
		}
	}()

	// A database of format version 1 to 5 was written with another
	// comparer (and without the posting-list merge operator); Pebble would
	// refuse it with a message about comparer names.
	if name, err := storedComparer(fsys, dir); err != nil {
		return nil, err
	} else if name == comparerNameV1 || name == comparerNameV2 {
		old := "1"
		if name == comparerNameV2 {
			old = "2 to 5"
		}
		return nil, fmt.Errorf("%w: index format version %s (written by an older sif), this program reads version %d: move the index aside and rebuild it",
			ErrOldFormat, old, formatVersion)
	}
	var g *guard
	pfs := fsys
	if !o.ReadOnly {
		if o.OnDiskFull != nil {
			pfs = vfs.OnDiskFull(pfs, o.OnDiskFull)
		}
		g = newGuard(o.OnUnwritable, o.Logger)
		pfs = guardFS{FS: pfs, g: g}
	}
	zstdFlush := new(atomic.Bool)
	db, err := pebble.Open(dir, pebbleOptions(o, pfs, lock, zstdFlush))
	if err != nil {
		if errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fmt.Errorf("%w (open it read-write once to create one): %w", ErrNotIndex, err)
		}
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = db.Close()
		}
	}()

	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ix := &Index{db: db, lock: lock, dir: dir, readOnly: o.ReadOnly, log: log, guard: g, zstdFlush: zstdFlush}
	ix.idle.L = &ix.mu
	if ix.params, err = ix.initMeta(want, o.SimiHash); err != nil {
		return nil, err
	}
	ix.knowsLengths = ix.params.KnowsLengths()
	if err := ix.loadState(); err != nil {
		return nil, err
	}
	if err := ix.recoverPending(); err != nil {
		return nil, err
	}
	// Sequence numbers must differ from every one a note kept from an
	// earlier run holds: they start from the clock.
	ix.journalSeq.Store(uint64(time.Now().UnixNano()))
	ix.journal.Store(o.Journal && !o.ReadOnly)
	if !o.Journal && !o.ReadOnly {
		if err := ix.dropJournal(); err != nil {
			return nil, err
		}
	}
	log.Debug("index opened", "dir", dir, "params", ix.params.String(),
		"files", ix.counts.Files, "read_only", o.ReadOnly)
	return ix, nil
}

// checkIsIndex fails with an error wrapping ErrNotIndex unless dir holds a
// Pebble database: a manifest and the marker (or, for older Pebble
// versions, the CURRENT file) naming it. It only reads the directory's
// listing.
func checkIsIndex(fsys vfs.FS, dir string) error {
	st, err := fsys.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w (the directory does not exist): %w", ErrNotIndex, err)
		}
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%w: not a directory", ErrNotIndex)
	}
	names, err := fsys.List(dir)
	if err != nil {
		return err
	}
	var manifest, marker bool
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "MANIFEST-"):
			manifest = true
		case n == "CURRENT" || strings.HasPrefix(n, "marker.manifest."):
			marker = true
		}
	}
	if !manifest || !marker {
		return fmt.Errorf("%w (no database manifest in the directory; it was left untouched)", ErrNotIndex)
	}
	return nil
}

// initMeta checks the format version, the fingerprint parameters and the
// SimiHash choice of an existing database, or writes them into a new one,
// sets ix.simihash and returns the parameters. want is zero, and simi nil,
// when the caller takes whatever is stored.
func (ix *Index) initMeta(want fingerprint.Params, simi *bool) (fingerprint.Params, error) {
	ver, found, err := getValue(ix.db, metaVersionKey)
	if err != nil {
		return fingerprint.Params{}, err
	}
	if !found {
		return ix.initNew(want, simi)
	}
	if v, err := strconv.Atoi(string(ver)); err != nil || v != formatVersion {
		by, kind := "", ErrCorrupt
		switch {
		case err == nil && v < formatVersion:
			by, kind = " (written by an older sif)", ErrOldFormat
		case err == nil && v > formatVersion:
			by, kind = " (written by a newer sif)", ErrNewFormat
		}
		return fingerprint.Params{}, fmt.Errorf("%w: index format version %q%s, this program reads version %d: move the index aside and rebuild it",
			kind, ver, by, formatVersion)
	}
	raw, found, err := getValue(ix.db, metaParamsKey)
	if err != nil {
		return fingerprint.Params{}, err
	}
	if !found {
		return fingerprint.Params{}, fmt.Errorf("%w: no fingerprint parameters stored", ErrCorrupt)
	}
	var stored fingerprint.Params
	if err := json.Unmarshal(raw, &stored); err != nil {
		return fingerprint.Params{}, fmt.Errorf("%w: fingerprint parameters %q: %v", ErrCorrupt, raw, err)
	}
	if stored, err = stored.Normalize(); err != nil {
		return fingerprint.Params{}, fmt.Errorf("%w: stored fingerprint parameters: %v", ErrCorrupt, err)
	}
	if want != (fingerprint.Params{}) && want != stored {
		return fingerprint.Params{}, fmt.Errorf("%w: the index was built with %s, asked for %s: rebuild the index or use its parameters",
			ErrParamsMismatch, stored, want)
	}
	if err := ix.checkSimiHash(simi); err != nil {
		return fingerprint.Params{}, err
	}
	return stored, nil
}

// checkSimiHash reads whether an existing index keeps SimiHash keys into
// ix.simihash, and fails with ErrParamsMismatch when want says otherwise.
func (ix *Index) checkSimiHash(want *bool) error {
	v, found, err := getValue(ix.db, metaSimiHashKey)
	if err != nil {
		return err
	}
	if found && string(v) != "on" {
		return fmt.Errorf("%w: simihash setting %q: want \"on\"", ErrCorrupt, v)
	}
	ix.simihash = found
	if want != nil && *want != found {
		return fmt.Errorf("%w: the index was built with simihash %s, asked for %s: rebuild the index (move it aside) to change it, or use its setting",
			ErrParamsMismatch, onOff(found), onOff(*want))
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// initNew stores the format version, parameters and SimiHash choice in a
// new, empty database.
func (ix *Index) initNew(want fingerprint.Params, simi *bool) (fingerprint.Params, error) {
	if want == (fingerprint.Params{}) {
		want = fingerprint.DefaultParams()
	}
	empty, err := isEmpty(ix.db)
	if err != nil {
		return fingerprint.Params{}, err
	}
	if !empty {
		return fingerprint.Params{}, fmt.Errorf("%w: the database holds keys but no sif format version: not a sif index?", ErrCorrupt)
	}
	if ix.readOnly {
		return fingerprint.Params{}, fmt.Errorf("%w (an empty database: open it read-write once to create one)", ErrNotIndex)
	}
	raw, err := json.Marshal(want)
	if err != nil {
		return fingerprint.Params{}, err
	}
	b := ix.db.NewBatch()
	defer b.Close()
	_ = b.Set(metaParamsKey, raw, nil)
	ix.simihash = DefaultSimiHash
	if simi != nil {
		ix.simihash = *simi
	}
	if ix.simihash {
		_ = b.Set(metaSimiHashKey, []byte("on"), nil)
	}
	_ = b.Set(metaVersionKey, []byte(strconv.Itoa(formatVersion)), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fingerprint.Params{}, err
	}
	return want, nil
}

// loadState computes the next file and content ids and the counts from the
// database.
func (ix *Index) loadState() (err error) {
	if ix.nextID, err = nextKeyID(ix.db, prefixRecord); err != nil {
		return err
	}
	if ix.nextCID, err = nextKeyID(ix.db, prefixContent); err != nil {
		return err
	}
	if ix.copies, err = scanCopies(ix.db); err != nil {
		return err
	}
	c, err := scanCounts(ix.db)
	if err != nil {
		return err
	}
	ix.counts = c
	return nil
}

// nextKeyID returns one more than the greatest id of the keyspace of
// prefix (record or content keys), or 1 when it is empty.
func nextKeyID(r pebble.Reader, prefix byte) (uint64, error) {
	lo, hi := keyspace(prefix)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	next := uint64(1)
	if it.Last() {
		id, err := parseIDKey(it.Key(), prefix)
		if err != nil {
			return 0, err
		}
		next = uint64(id) + 1
	}
	return next, it.Error()
}

// Params returns the fingerprint parameters of the index. Queries must be
// fingerprinted with them.
func (ix *Index) Params() fingerprint.Params { return ix.params }

// SimiHash reports whether the index keeps SimiHash keys (Options.SimiHash):
// whether its writers must sketch with SimiHash, and SimiFind can answer.
func (ix *Index) SimiHash() bool { return ix.simihash }

// acquire counts an operation in, or returns ErrClosed. Every acquire must
// be paired with a release.
func (ix *Index) acquire() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return ErrClosed
	}
	ix.inflight++
	return nil
}

func (ix *Index) release() {
	ix.mu.Lock()
	ix.inflight--
	if ix.inflight == 0 && ix.closed {
		ix.idle.Broadcast()
	}
	ix.mu.Unlock()
}

// Sync makes every write committed so far durable.
func (ix *Index) Sync() error {
	if err := ix.acquire(); err != nil {
		return fmt.Errorf("index.Sync: %w", err)
	}
	defer ix.release()
	if ix.readOnly {
		return nil
	}
	// A synced write of nothing syncs the write-ahead log up to it, and so
	// every earlier write.
	if err := ix.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("index.Sync: %w", err)
	}
	return nil
}

// Compact rewrites the whole database into its most compact form: it
// flushes the memtables and compacts every level into the bottom one,
// dropping deleted keys and overwritten values. Call it after a bulk load
// (such as the first scan of a root); correctness never needs it. It blocks
// until done, or until ctx is done (a compaction under way then runs to its end
// in the background). It is safe to call concurrently with reads and writes, which
// go on meanwhile; Close waits for it to end.
func (ix *Index) Compact(ctx context.Context) error {
	if err := ix.acquire(); err != nil {
		return fmt.Errorf("index.Compact: %w", err)
	}
	defer ix.release()
	if ix.readOnly {
		return fmt.Errorf("index.Compact: %w", ErrReadOnly)
	}
	if err := ix.writePending(); err != nil {
		return fmt.Errorf("index.Compact %s: %w", ix.dir, err)
	}
	// Pebble moves a lone table to the bottom level as it is, without
	// rewriting it: the whole index, when the first scan of a small tree
	// fits in the memtables, and the table flushed here is then the index
	// for good. So it is written with zstd, as the bottom level is (Python
	// 3.11's library, 52 MB: 1.28 MB after the compaction with the fastest
	// compression, 1.10 MB with zstd).
	ix.zstdFlush.Store(true)
	defer ix.zstdFlush.Store(false)
	// Every key starts with a keyspace byte below 0xff. The compaction is
	// not parallelized: Pebble would split it by the key ranges in use, and
	// move each table flushed from a lone memtable to the bottom level as it
	// is, without the rewrite that zeroes sequence numbers and recompresses
	// (a fifth of the size after a bulk load); and Pebble runs one
	// compaction at a time anyway.
	if err := ix.dropEmptyLists(); err != nil {
		return fmt.Errorf("index.Compact %s: %w", ix.dir, err)
	}
	if err := ix.db.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
		return fmt.Errorf("index.Compact %s: %w", ix.dir, err)
	}
	return nil
}

// dropEmptyLists deletes the posting lists that removals left empty (the
// merge operator keeps them: see listMerger.Finish). It finds them without
// the write lock, then checks each again under it, so that no merge comes
// between the read that finds a list empty and its deletion.
func (ix *Index) dropEmptyLists() error {
	var empty [][]byte
	lo, hi := keyspace(prefixPosting)
	err := scan(ix.db, lo, hi, func(k, v []byte) error {
		if len(v) == 0 {
			empty = append(empty, bytes.Clone(k))
		}
		return nil
	})
	if err != nil || len(empty) == 0 {
		return err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	b := ix.db.NewBatch()
	defer b.Close()
	for _, k := range empty {
		v, found, err := getValue(ix.db, k)
		if err != nil {
			return err
		}
		if found && len(v) == 0 {
			if err := b.Delete(k, nil); err != nil {
				return err
			}
		}
	}
	return b.Commit(pebble.NoSync)
}

// Close waits for the operations in progress, flushes and closes the index.
// Calls after the first return ErrClosed, as do all other methods. It must
// not be called from a callback of the index (as in Files). When a write
// waits for a filesystem that does not take it (Options.OnUnwritable),
// Close waits for it at most 10 s, then returns an error wrapping
// ErrWedged: only a new process can open the index again.
func (ix *Index) Close() error {
	if !ix.markClosed() {
		return fmt.Errorf("index.Close: %w", ErrClosed)
	}
	if ix.guard == nil {
		return ix.close()
	}
	done := make(chan error, 1)
	go func() { done <- ix.close() }()
	return ix.awaitClose("index.Close", done)
}

// markClosed marks the index closed, so that every later call returns
// ErrClosed, and reports whether it was open: of Close and Abandon, only
// the first goes on to close it.
func (ix *Index) markClosed() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.closed {
		return false
	}
	ix.closed = true
	return true
}

// close waits for the operations in progress, writes what is pending and
// closes Pebble and the lock; closed is set.
func (ix *Index) close() error {
	ix.mu.Lock()
	for ix.inflight > 0 {
		ix.idle.Wait()
	}
	ix.mu.Unlock()

	var errs []error
	if !ix.readOnly {
		// Postings left pending and not written now are written by the
		// next Open, from the forward lists.
		if err := ix.writePending(); err != nil {
			errs = append(errs, fmt.Errorf("writing the pending postings: %w", err))
		}
		if err := ix.db.Flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ix.db.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := ix.lock.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("index.Close %s: %w", ix.dir, err)
	}
	ix.log.Debug("index closed", "dir", ix.dir)
	return nil
}

// getValue returns a copy of the value of key, and whether it exists.
func getValue(r pebble.Reader, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// isEmpty reports whether the database holds no keys.
func isEmpty(r pebble.Reader) (bool, error) {
	it, err := r.NewIter(nil)
	if err != nil {
		return false, err
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, err
	}
	return !found, nil
}
