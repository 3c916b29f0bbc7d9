package index

import (
	"context"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Test hooks: raw access to the keyspaces, so tests can corrupt an index on
// purpose and see Check catch it.

// RawSet writes one key, bypassing every invariant.
func (ix *Index) RawSet(key, value []byte) error { return ix.db.Set(key, value, pebble.NoSync) }

// RawDelete deletes one key, bypassing every invariant.
func (ix *Index) RawDelete(key []byte) error { return ix.db.Delete(key, pebble.NoSync) }

// RawMergeCount adds delta to the file-count of hash.
func (ix *Index) RawMergeCount(hash uint64, delta int64) error {
	return ix.db.Merge(appendDFKey(nil, hash), encodeCount(nil, delta), pebble.NoSync)
}

// RawGet reads one key.
func (ix *Index) RawGet(key []byte) ([]byte, bool, error) { return getValue(ix.db, key) }

// ForwardList returns the stored forward list of the file at path.
func (ix *Index) ForwardList(path string) ([]fingerprint.Feature, error) {
	_, fs, found, err := ix.loadFile(ix.db, path)
	if err == nil && !found {
		err = ErrNotFound
	}
	return fs, err
}

// Compact compacts the whole keyspace, so merge operands are folded.
func (ix *Index) Compact() error {
	if err := ix.db.Flush(); err != nil {
		return err
	}
	return ix.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true)
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

// RawKeys counts the keys (as readers see them) starting with prefix.
func (ix *Index) RawKeys(prefix byte) (int, error) {
	n := 0
	lo, hi := keyspace(prefix)
	err := scan(ix.db, lo, hi, func(k, v []byte) error { n++; return nil })
	return n, err
}

// Key builders.
func PostingKey(hash uint64, id uint32) []byte { return appendPostingKey(nil, hash, id) }
func DFKey(hash uint64) []byte                 { return appendDFKey(nil, hash) }
func RecordKey(id uint32) []byte               { return recordKey(id) }
func ForwardKey(id uint32) []byte              { return forwardKey(id) }
func PathKey(path string) []byte               { return pathKey(path) }
func StrongKey(strong [32]byte, id uint32) []byte {
	return strongKey(strong, id)
}

// PostingValue encodes a posting value.
func PostingValue(count, length uint32, knowsLengths bool) []byte {
	return encodePosting(nil, fingerprint.Feature{Count: count, Len: length}, knowsLengths)
}

// EncodeRecord encodes a record value.
func EncodeRecord(r FileRecord) []byte { return encodeRecord(nil, &r) }

// EncodeForward encodes a forward list.
func EncodeForward(fs []fingerprint.Feature, knowsLengths bool) []byte {
	return encodeForward(nil, fs, knowsLengths)
}

// MetaParamsKey is the key of the stored parameters.
var MetaParamsKey = metaParamsKey
