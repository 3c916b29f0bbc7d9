package index

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// countMergerName is the name of the merge operator of fingerprint
// file-counts. Pebble records it in the database and refuses to open the
// database with a merger of another name, so it must never change; a new
// operator needs a new name and a new format version.
const countMergerName = "sif.count.v1"

// countMerger is the Pebble merge operator of the 'd' keyspace: every operand
// is a signed varint delta and the merged value is their sum. A sum of 0
// means "no file holds this fingerprint": readers treat it as absent, and a
// merge that includes the oldest operand of the key (includesBase) asks
// Pebble to drop the key. A partial merge (!includesBase) is never dropped,
// whatever its sum, since older operands still have to be added to it.
//
// Writers keep the full sum of a key from ever reaching 0 through merges:
// the first file to gain a fingerprint Sets its count to 1, the last to lose
// it deletes the key, and only the changes in between are merge operands
// (see batch.changeCount). So zero counts are never stored, a count's key
// vanishes when its tombstone is compacted away, and the deleting path of
// DeletableFinish is never taken for sif's own writes. That matters: in
// Pebble v2.1.7 a compaction whose merge consumes a SET or DEL of the key
// and then reports "delete" corrupts the compaction iterator
// (cockroachdb/pebble#6168: a panic, or an old value resurrected).
var countMerger = &pebble.Merger{
	Name: countMergerName,
	Merge: func(key, value []byte) (pebble.ValueMerger, error) {
		n, err := decodeCount(value)
		if err != nil {
			return nil, err
		}
		return &countValueMerger{sum: n}, nil
	},
}

type countValueMerger struct {
	sum int64
	buf [10]byte
}

var _ pebble.DeletableValueMerger = (*countValueMerger)(nil)

func (m *countValueMerger) add(value []byte) error {
	n, err := decodeCount(value)
	if err != nil {
		return err
	}
	m.sum += n
	return nil
}

// MergeNewer adds a newer operand.
func (m *countValueMerger) MergeNewer(value []byte) error { return m.add(value) }

// MergeOlder adds an older operand.
func (m *countValueMerger) MergeOlder(value []byte) error { return m.add(value) }

// Finish returns the sum.
func (m *countValueMerger) Finish(includesBase bool) ([]byte, io.Closer, error) {
	return encodeCount(m.buf[:0], m.sum), nil, nil
}

// DeletableFinish returns the sum, and asks for the key to be deleted when
// the sum is 0 and includes the oldest operand.
func (m *countValueMerger) DeletableFinish(includesBase bool) ([]byte, bool, io.Closer, error) {
	if includesBase && m.sum == 0 {
		return nil, true, nil, nil
	}
	v, c, err := m.Finish(includesBase)
	return v, false, c, err
}
