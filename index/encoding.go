package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sif-dev/sif/index/fingerprint"
)

// formatVersion is the layout version stored under the meta key "version".
// Open refuses a database with another version. Version 1 had 64-bit
// fingerprint hashes in posting keys, counts and lengths in postings and
// forward lists, and a keyspace of fingerprint file-counts kept by a merge
// operator. Version 2 had no inode keys. Version 3 sampled every file at one
// density, stored hashes shifted by Bits rather than MinBits, and had records
// of version 1, without levels.
const formatVersion = 4

// recordVersion is the first byte of every encoded file record.
const recordVersion = 2

// decoder reads varints from a value and remembers the first error, so a
// decoding function can read every field and check once. It never panics on
// short or malformed input.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrCorrupt, what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32(what string) uint32 {
	v := d.uvarint(what)
	if v > math.MaxUint32 {
		d.fail(what)
		return 0
	}
	return uint32(v)
}

func (d *decoder) bytes(n uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.fail(what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte(what string) byte {
	v := d.bytes(1, what)
	if v == nil {
		return 0
	}
	return v[0]
}

// done returns the first error, or an error if bytes are left over.
func (d *decoder) done(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes after %s", ErrCorrupt, len(d.b), what)
	}
	return d.err
}

// encodeRecord appends the value of r's record key to dst. r.ID is not
// encoded: it is the key.
//
// Layout (version 2): version byte; path (uvarint length, bytes); size,
// mtime (varints); dev, ino, mode (uvarints); summary size (varint); strong
// hash (32 bytes); type (1 byte); 16 sum-table entries and the key
// (uvarints); total weight and number of features, that is of forward
// entries (uvarints); level (1 byte); the number of level weights and each
// of them (uvarints).
func encodeRecord(dst []byte, r *FileRecord) []byte {
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(len(r.Path)))
	dst = append(dst, r.Path...)
	dst = binary.AppendVarint(dst, r.FileMeta.Size)
	dst = binary.AppendVarint(dst, r.MtimeNs)
	dst = binary.AppendUvarint(dst, r.Dev)
	dst = binary.AppendUvarint(dst, r.Ino)
	dst = binary.AppendUvarint(dst, uint64(r.Mode))
	dst = binary.AppendVarint(dst, r.Summary.Size)
	dst = append(dst, r.Strong[:]...)
	dst = append(dst, byte(r.Type))
	for _, s := range r.Sum {
		dst = binary.AppendUvarint(dst, uint64(s))
	}
	dst = binary.AppendUvarint(dst, uint64(r.Key))
	dst = binary.AppendUvarint(dst, r.Weight)
	dst = binary.AppendUvarint(dst, uint64(r.Features))
	dst = append(dst, r.Level)
	dst = binary.AppendUvarint(dst, uint64(len(r.LevelWeights)))
	for _, w := range r.LevelWeights {
		dst = binary.AppendUvarint(dst, w)
	}
	return dst
}

// decodeRecord decodes a record value. The returned record does not alias v.
// Errors wrap ErrCorrupt.
func decodeRecord(id uint32, v []byte) (FileRecord, error) {
	r := FileRecord{ID: id}
	d := decoder{b: v}
	if ver := d.byte("record version"); d.err == nil && ver != recordVersion {
		return r, fmt.Errorf("%w: record version %d, want %d", ErrCorrupt, ver, recordVersion)
	}
	n := d.uvarint("path length")
	r.Path = string(d.bytes(n, "path"))
	r.FileMeta.Size = d.varint("size")
	r.MtimeNs = d.varint("mtime")
	r.Dev = d.uvarint("dev")
	r.Ino = d.uvarint("ino")
	r.Mode = d.uint32("mode")
	r.Summary.Size = d.varint("summary size")
	copy(r.Strong[:], d.bytes(32, "strong hash"))
	r.Type = fingerprint.Type(d.byte("type"))
	for i := range r.Sum {
		r.Sum[i] = d.uint32("sum table")
	}
	r.Key = d.uint32("key")
	r.Weight = d.uvarint("weight")
	r.Features = d.uint32("feature count")
	r.Level = d.byte("level")
	if n := d.uvarint("level weights"); n > 0 && d.err == nil {
		if n > 64 {
			d.fail("level weights")
		} else {
			r.LevelWeights = make([]uint64, n)
			for i := range r.LevelWeights {
				r.LevelWeights[i] = d.uvarint("level weight")
			}
		}
	}
	if err := d.done("record"); err != nil {
		return FileRecord{ID: id}, err
	}
	return r, nil
}

// encodeForward appends the forward list of es (canonical entries) to dst:
// the number of entries, then per entry its fingerprint key as a delta from
// the previous one (the first from 0) and its weight, all uvarints.
func encodeForward(dst []byte, es []entry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	var prev uint32
	for _, e := range es {
		dst = binary.AppendUvarint(dst, uint64(e.key-prev))
		prev = e.key
		dst = binary.AppendUvarint(dst, e.weight)
	}
	return dst
}

// forwardReader decodes a forward list one entry at a time, without
// allocating.
type forwardReader struct {
	d     decoder
	left  uint64 // entries not yet read
	prev  uint64
	first bool
}

func newForwardReader(v []byte) forwardReader {
	r := forwardReader{d: decoder{b: v}, first: true}
	r.left = r.d.uvarint("forward list length")
	// Each entry takes at least two bytes; a larger count is corrupt.
	if r.d.err == nil && r.left > uint64(len(r.d.b))/2 {
		r.d.fail("forward list length")
		r.left = 0
	}
	return r
}

// len returns the number of entries the list says it holds.
func (r *forwardReader) len() uint64 { return r.left }

// next returns the next entry; ok is false at the end or on error (see err).
func (r *forwardReader) next() (e entry, ok bool) {
	if r.left == 0 || r.d.err != nil {
		return e, false
	}
	r.left--
	delta := r.d.uvarint("forward key")
	key := r.prev + delta
	if !r.first && delta == 0 || delta > math.MaxUint32 || key > math.MaxUint32 {
		r.d.fail("forward list order")
	}
	r.first = false
	r.prev = key
	e.key = uint32(key)
	e.weight = r.d.uvarint("forward weight")
	if r.d.err == nil && e.weight == 0 {
		r.d.fail("forward weight (0)")
	}
	if r.d.err != nil {
		return entry{}, false
	}
	return e, true
}

// err returns the decoding error, including trailing bytes once the list has
// been read to its end.
func (r *forwardReader) err() error {
	if r.d.err == nil && r.left == 0 {
		return r.d.done("forward list")
	}
	return r.d.err
}

// decodeForward decodes a whole forward list. Errors wrap ErrCorrupt.
func decodeForward(v []byte) ([]entry, error) {
	r := newForwardReader(v)
	out := make([]entry, 0, r.len())
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		out = append(out, e)
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// encodePosting appends a posting value to dst: nothing when weight is 1
// (every manber posting of a fingerprint seen once in its file), else the
// weight as a uvarint.
func encodePosting(dst []byte, weight uint64) []byte {
	if weight == 1 {
		return dst
	}
	return binary.AppendUvarint(dst, weight)
}

// decodePosting decodes a posting value into its weight. A weight of 0, or
// of 1 not stored as the empty value, is corrupt. Errors wrap ErrCorrupt.
func decodePosting(v []byte) (uint64, error) {
	if len(v) == 0 {
		return 1, nil
	}
	w, n := binary.Uvarint(v)
	if n != len(v) || w < 2 {
		return 0, fmt.Errorf("%w: posting weight %x", ErrCorrupt, v)
	}
	return w, nil
}
