package index

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Test hooks: raw access to the keyspaces, so tests can corrupt an index on
// purpose and see Check catch it.

// RawSet writes one key, bypassing every invariant.
func (ix *Index) RawSet(key, value []byte) error { return ix.db.Set(key, value, pebble.NoSync) }

// RawDelete deletes one key, bypassing every invariant.
func (ix *Index) RawDelete(key []byte) error { return ix.db.Delete(key, pebble.NoSync) }

// RawGet reads one key.
func (ix *Index) RawGet(key []byte) ([]byte, bool, error) { return getValue(ix.db, key) }

func exportEntries(es []entry) []Entry {
	var out []Entry
	for _, e := range es {
		out = append(out, Entry{e.key, e.weight})
	}
	return out
}

func importEntries(es []Entry) []entry {
	var out []entry
	for _, e := range es {
		out = append(out, entry{key: e.Key, weight: e.Weight})
	}
	return out
}

// ForwardList returns the stored forward list of the file at path (nil when
// empty).
func (ix *Index) ForwardList(path string) ([]Entry, error) {
	rec, cid, found, err := ix.lookup(ix.db, path)
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	es, found, err := readForward(ix.db, cid)
	if err == nil && !found {
		err = fmt.Errorf("%w: content %d of file id %d (%q) has no forward list", ErrCorrupt, cid, rec.ID, path)
	}
	if err != nil {
		return nil, err
	}
	return exportEntries(es), nil
}

// EntriesOf returns the canonical entries of features under p.
func EntriesOf(p fingerprint.Params, fs []fingerprint.Feature) []Entry {
	return exportEntries(entriesOf(p, fs, 0))
}

// FingerprintKey is fingerprintKey.
func FingerprintKey(hash uint64) uint32 { return fingerprintKey(hash) }

// HashWithKey returns a fingerprint hash whose fingerprint key is key: the
// first, from low·2^16 on, whose mix has key in its high half and that
// value in its low half, and that has its low 8 bits zero (with manber, a
// hash of the top level, which files of every size keep). Distinct lows
// give distinct hashes with one key.
func HashWithKey(key, low uint32) uint64 {
	for l := uint64(low) << 16; ; l++ {
		if h := unmix(uint64(key)<<32 | l&0xffffffff); h&0xff == 0 {
			return h
		}
	}
}

// unmix inverts the fmix64 finalizer of fingerprintKey.
func unmix(h uint64) uint64 {
	h ^= h >> 33
	h *= inverse(0xc4ceb9fe1a85ec53)
	h ^= h >> 33
	h *= inverse(0xff51afd7ed558ccd)
	h ^= h >> 33
	return h
}

// inverse returns the multiplicative inverse of odd a modulo 2^64, by
// Newton's iteration (each step doubles the correct low bits).
func inverse(a uint64) uint64 {
	x := a // correct to 3 bits for odd a
	for range 5 {
		x *= 2 - a*x
	}
	return x
}

// TableKeyRanges returns the smallest and largest user keys of every
// sstable.
func (ix *Index) TableKeyRanges() ([][2][]byte, error) {
	levels, err := ix.db.SSTables()
	if err != nil {
		return nil, err
	}
	var out [][2][]byte
	for _, l := range levels {
		for _, t := range l {
			out = append(out, [2][]byte{t.Smallest.UserKey, t.Largest.UserKey})
		}
	}
	return out, nil
}

// RawDigest returns every key and value (in hex) of the keyspace of prefix,
// one line each.
func (ix *Index) RawDigest(prefix byte) (string, error) {
	var b []byte
	lo, hi := keyspace(prefix)
	err := scan(ix.db, lo, hi, func(k, v []byte) error {
		b = fmt.Appendf(b, "%x=%x\n", k, v)
		return nil
	})
	return string(b), err
}

// PostingWrites returns the number of posting keys set or deleted since
// Open.
func (ix *Index) PostingWrites() uint64 { return ix.postingWrites.Load() }

// ContentSearches is the number of searches for an equal content since
// Open.
func (ix *Index) ContentSearches() uint64 { return ix.contentSearches.Load() }

// PathLookups is the number of lookups of a file's old record by its path
// that writes made since Open.
func (ix *Index) PathLookups() uint64 { return ix.pathLookups.Load() }

// RawKeys counts the keys (as readers see them) starting with prefix.
func (ix *Index) RawKeys(prefix byte) (int, error) {
	n := 0
	lo, hi := keyspace(prefix)
	err := scan(ix.db, lo, hi, func(k, v []byte) error { n++; return nil })
	return n, err
}

// Key builders.
func RecordKey(id uint32) []byte                 { return recordKey(id) }
func ContentKey(cid uint32) []byte               { return contentKey(cid) }
func ForwardKey(cid uint32) []byte               { return forwardKey(cid) }
func PathKey(path string) []byte                 { return pathKey(path) }
func CopyKey(cid, id uint32) []byte              { return copyKey(cid, id) }
func HashKey(strong [32]byte, cid uint32) []byte { return hashKey(strong, cid) }
func InodeKey(dev, ino uint64, id uint32) []byte { return inodeKey(dev, ino, id) }

// RawPosting merges into the index the posting of fingerprint key key in
// content cid with weight weight, or its removal when weight is 0,
// bypassing every invariant.
func (ix *Index) RawPosting(key, cid uint32, weight uint64) error {
	v, _ := encodePostingList(nil, []postingEntry{{key, cid, weight}}, nil)
	return ix.db.Merge(appendBucketKey(nil, bucketOf(key)), v, pebble.NoSync)
}

// PostingListKey returns the key of the posting list holding fingerprint
// key key.
func PostingListKey(key uint32) []byte { return appendBucketKey(nil, bucketOf(key)) }

// EncodeRecord encodes a file record value: r's metadata and content cid.
func EncodeRecord(r FileRecord, cid uint32) []byte { return encodeRecord(nil, &r.FileMeta, cid) }

// EncodeContent encodes a content record value: r's content fields.
func EncodeContent(r FileRecord) []byte { return encodeContent(nil, &r) }

// EncodeForward encodes a forward list of canonical entries.
func EncodeForward(es []Entry) []byte { return encodeForward(nil, importEntries(es)) }

// Metadata keys.
var (
	MetaParamsKey  = metaParamsKey
	MetaVersionKey = metaVersionKey
)

// Comparer names, for building old databases.
const (
	ComparerName   = comparerName
	ComparerNameV1 = comparerNameV1
	ComparerNameV2 = comparerNameV2
)

// SetMaxPending bounds the postings PutDeferred keeps pending, until the
// returned function restores the bound.
func SetMaxPending(n int) (restore func()) {
	old := maxPending
	maxPending = n
	return func() { maxPending = old }
}

// SetAbandonWait bounds Abandon's wait, until the returned function
// restores it.
func SetAbandonWait(d time.Duration) (restore func()) {
	old := abandonWait
	abandonWait = d
	return func() { abandonWait = old }
}

// BeginOperation counts an operation in, as every method does, until the
// returned function counts it out: a test's stand-in for an operation
// stuck inside Pebble.
func (ix *Index) BeginOperation() (end func(), err error) {
	if err := ix.acquire(); err != nil {
		return nil, err
	}
	return ix.release, nil
}

// PathFilter is the filter of a Bulk's paths.
type PathFilter struct{ f pathFilter }

func (f *PathFilter) Add(path string)          { f.f.add(pathHash(path)) }
func (f *PathFilter) MayHold(path string) bool { return f.f.mayHold(pathHash(path)) }
func (f *PathFilter) Filters() int             { return len(f.f.filters) }

// WALBytesIn returns the bytes written to Pebble's write-ahead log since it
// opened: what the index's batches have put through the memtables.
func (ix *Index) WALBytesIn() uint64 { return ix.db.Metrics().WAL.BytesIn }

// FlushMemtables writes Pebble's memtables to tables and waits until it has.
func (ix *Index) FlushMemtables() error { return ix.db.Flush() }
