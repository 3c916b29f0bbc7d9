package index

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/sif-dev/sif/index/fingerprint"
)

// formatVersion is the layout version stored under the meta key "version".
// Open refuses a database with another version.
const formatVersion = 1

// recordVersion is the first byte of every encoded file record.
const recordVersion = 1

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
// Layout (version 1): version byte; path (uvarint length, bytes); size,
// mtime (varints); dev, ino, mode (uvarints); summary size (varint); strong
// hash (32 bytes); type (1 byte); 16 sum-table entries and the key
// (uvarints); total weight and number of features (uvarints).
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
	if err := d.done("record"); err != nil {
		return FileRecord{ID: id}, err
	}
	return r, nil
}

// encodeForward appends the forward list of features (sorted by hash, no
// hash twice) to dst: the number of features, then per feature the hash as
// a delta from the previous one (the first from 0), the count, and the
// length when knowsLengths.
func encodeForward(dst []byte, features []fingerprint.Feature, knowsLengths bool) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(features)))
	var prev uint64
	for _, f := range features {
		dst = binary.AppendUvarint(dst, f.Hash-prev)
		prev = f.Hash
		dst = binary.AppendUvarint(dst, uint64(f.Count))
		if knowsLengths {
			dst = binary.AppendUvarint(dst, uint64(f.Len))
		}
	}
	return dst
}

// forwardReader decodes a forward list one feature at a time, without
// allocating.
type forwardReader struct {
	d            decoder
	left         uint64 // features not yet read
	prev         uint64
	first        bool
	knowsLengths bool
}

func newForwardReader(v []byte, knowsLengths bool) forwardReader {
	r := forwardReader{d: decoder{b: v}, first: true, knowsLengths: knowsLengths}
	r.left = r.d.uvarint("forward list length")
	// Each feature takes at least two bytes; a larger count is corrupt.
	if r.d.err == nil && r.left > uint64(len(r.d.b)) {
		r.d.fail("forward list length")
		r.left = 0
	}
	return r
}

// len returns the number of features the list says it holds.
func (r *forwardReader) len() uint64 { return r.left }

// next returns the next feature; ok is false at the end or on error (see
// err).
func (r *forwardReader) next() (f fingerprint.Feature, ok bool) {
	if r.left == 0 || r.d.err != nil {
		return f, false
	}
	r.left--
	delta := r.d.uvarint("forward hash")
	if !r.first && delta == 0 || r.prev+delta < r.prev {
		r.d.fail("forward list order")
	}
	r.first = false
	f.Hash = r.prev + delta
	r.prev = f.Hash
	f.Count = r.d.uint32("forward count")
	if r.d.err == nil && f.Count == 0 {
		r.d.fail("forward count (0)")
	}
	if r.knowsLengths {
		f.Len = r.d.uint32("forward length")
	}
	if r.d.err != nil {
		return fingerprint.Feature{}, false
	}
	return f, true
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
func decodeForward(v []byte, knowsLengths bool) ([]fingerprint.Feature, error) {
	r := newForwardReader(v, knowsLengths)
	out := make([]fingerprint.Feature, 0, r.len())
	for {
		f, ok := r.next()
		if !ok {
			break
		}
		out = append(out, f)
	}
	if err := r.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// encodePosting appends a posting value: the feature's count in the file,
// and its length when knowsLengths (so all-against-all runs can weigh a
// posting without reading forward lists).
func encodePosting(dst []byte, f fingerprint.Feature, knowsLengths bool) []byte {
	dst = binary.AppendUvarint(dst, uint64(f.Count))
	if knowsLengths {
		dst = binary.AppendUvarint(dst, uint64(f.Len))
	}
	return dst
}

// decodePosting decodes a posting value into the Count and Len of a feature
// (Hash is left 0). Errors wrap ErrCorrupt.
func decodePosting(v []byte, knowsLengths bool) (f fingerprint.Feature, err error) {
	d := decoder{b: v}
	f.Count = d.uint32("posting count")
	if d.err == nil && f.Count == 0 {
		d.fail("posting count (0)")
	}
	if knowsLengths {
		f.Len = d.uint32("posting length")
	}
	if err := d.done("posting"); err != nil {
		return fingerprint.Feature{}, err
	}
	return f, nil
}

// encodeCount encodes a fingerprint file-count or a delta of one: a signed
// varint.
func encodeCount(dst []byte, n int64) []byte { return binary.AppendVarint(dst, n) }

// decodeCount decodes a file-count value. Errors wrap ErrCorrupt.
func decodeCount(v []byte) (int64, error) {
	n, k := binary.Varint(v)
	if k <= 0 || k != len(v) {
		return 0, fmt.Errorf("%w: file count %x", ErrCorrupt, v)
	}
	return n, nil
}
