package index

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/sif-dev/sif/index/fingerprint"
)

// formatVersion is the layout version stored under the meta key "version".
// Open refuses a database with another version. Version 1 had 64-bit
// fingerprint hashes in posting keys, counts and lengths in postings and
// forward lists, and a keyspace of fingerprint file-counts kept by a merge
// operator. Version 2 had no inode keys. Version 3 sampled every file at one
// density, stored hashes shifted by Bits rather than MinBits, and had records
// of version 1, without levels. Version 4 had no contents: every file had
// its own forward list and postings, and its record held its summary.
// Version 5 had one Pebble key per posting ('P', fingerprint key, content
// id) rather than posting lists. Version 6 had copy keys of the whole
// strong hash, the content id and the file id, no hash keys, and forward
// lists of uvarints (key deltas and weights).
const formatVersion = 7

// recordVersion is the first byte of every encoded file record, and
// contentVersion of every content record.
// Records of version 3 were written before sif kept the status change
// time, and are read with FileMeta.CtimeNs 0.
const (
	recordVersion  = 4
	contentVersion = 1

	recordVersionNoCtime = 3
)

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

// encodeRecord appends the value of a file record to dst: the file's
// metadata and its content id. The file id is not encoded: it is the key.
//
// Layout (version 4): version byte; path (uvarint length, bytes); size,
// mtime (varints); dev, ino, mode, content id (uvarints); ctime (varint).
// Version 3 had no ctime.
func encodeRecord(dst []byte, m *FileMeta, cid uint32) []byte {
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(len(m.Path)))
	dst = append(dst, m.Path...)
	dst = binary.AppendVarint(dst, m.Size)
	dst = binary.AppendVarint(dst, m.MtimeNs)
	dst = binary.AppendUvarint(dst, m.Dev)
	dst = binary.AppendUvarint(dst, m.Ino)
	dst = binary.AppendUvarint(dst, uint64(m.Mode))
	dst = binary.AppendUvarint(dst, uint64(cid))
	return binary.AppendVarint(dst, m.CtimeNs)
}

// decodeRecord decodes a file record value into the file's metadata and
// content id. The result does not alias v. Errors wrap ErrCorrupt.
func decodeRecord(v []byte) (m FileMeta, cid uint32, err error) {
	d := decoder{b: v}
	ver := d.byte("record version")
	if d.err == nil && ver != recordVersion && ver != recordVersionNoCtime {
		return m, 0, fmt.Errorf("%w: record version %d, want %d", ErrCorrupt, ver, recordVersion)
	}
	n := d.uvarint("path length")
	m.Path = string(d.bytes(n, "path"))
	m.Size = d.varint("size")
	m.MtimeNs = d.varint("mtime")
	m.Dev = d.uvarint("dev")
	m.Ino = d.uvarint("ino")
	m.Mode = d.uint32("mode")
	cid = d.uint32("content id")
	if ver == recordVersion {
		m.CtimeNs = d.varint("ctime")
	}
	if err := d.done("record"); err != nil {
		return FileMeta{}, 0, err
	}
	return m, cid, nil
}

// parseRecord reads a record key k and its value v: the file's id,
// metadata and content id. An error of v names the file id. Errors wrap
// ErrCorrupt.
func parseRecord(k, v []byte) (id uint32, m FileMeta, cid uint32, err error) {
	if id, err = parseIDKey(k, prefixRecord); err != nil {
		return 0, FileMeta{}, 0, err
	}
	if m, cid, err = decodeRecord(v); err != nil {
		return 0, FileMeta{}, 0, fmt.Errorf("file id %d: %w", id, err)
	}
	return id, m, cid, nil
}

// encodeContent appends the value of the content record of r's content to
// dst: what r says of its content, and r.ID as the content's holder hint,
// the file that created it: a query that finds the content held by one
// file tries that file first, and looks for the others only when it has
// left (FileMeta is left out).
//
// Layout (version 1): version byte; holder hint (uvarint); summary size
// (varint); strong hash (32 bytes); type (1 byte); 16 sum-table entries and
// the key (uvarints); total weight and number of features, that is of
// forward entries (uvarints); level (1 byte); the number of level weights
// and each of them (uvarints).
func encodeContent(dst []byte, r *FileRecord) []byte {
	dst = append(dst, contentVersion)
	dst = binary.AppendUvarint(dst, uint64(r.ID))
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

// decodeContent decodes a content record value into r's content fields
// (Summary, Weight, Features, Level, LevelWeights), leaving the others as
// they are, and returns its holder hint. The result does not alias v.
// Errors wrap ErrCorrupt.
func decodeContent(v []byte, r *FileRecord) (holder uint32, err error) {
	d := decoder{b: v}
	if ver := d.byte("content version"); d.err == nil && ver != contentVersion {
		return 0, fmt.Errorf("%w: content record version %d, want %d", ErrCorrupt, ver, contentVersion)
	}
	holder = d.uint32("holder")
	var c FileRecord
	c.Summary.Size = d.varint("summary size")
	copy(c.Strong[:], d.bytes(32, "strong hash"))
	c.Type = fingerprint.Type(d.byte("type"))
	for i := range c.Sum {
		c.Sum[i] = d.uint32("sum table")
	}
	c.Key = d.uint32("key")
	c.Weight = d.uvarint("weight")
	c.Features = d.uint32("feature count")
	c.Level = d.byte("level")
	if n := d.uvarint("level weights"); n > 0 && d.err == nil {
		if n > 64 {
			d.fail("level weights")
		} else {
			c.LevelWeights = make([]uint64, n)
			for i := range c.LevelWeights {
				c.LevelWeights[i] = d.uvarint("level weight")
			}
		}
	}
	if err := d.done("content record"); err != nil {
		return 0, err
	}
	r.Summary, r.Weight, r.Features, r.Level, r.LevelWeights = c.Summary, c.Weight, c.Features, c.Level, c.LevelWeights
	return holder, nil
}

// sameContent reports whether a and b say the same of their content.
func sameContent(a, b *FileRecord) bool {
	return a.Summary == b.Summary && a.Weight == b.Weight && a.Features == b.Features &&
		a.Level == b.Level && slices.Equal(a.LevelWeights, b.LevelWeights)
}

// Forward lists. A forward list is:
//
//	uvarint  n, the number of entries (none: nothing follows)
//	byte     the Rice parameter k of the key gaps (0..32) in the low 6
//	         bits; the top bit (forwardOnes) set when every weight is 1
//	bits     per entry, in key order, packed as posting lists are: the gap
//	         from the previous key minus one (for the first, the key
//	         itself) Rice-coded with k, then, unless every weight is 1,
//	         the weight in Elias gamma (z zero bits, then the weight in
//	         z+1 bits); zero bits up to the byte boundary.
//
// Keys are random bits: a gap costs about log2(2^32/n)+1.5 bits, 3.3 bytes
// for a list of 30 entries, where a uvarint delta took 4 to 5. Manber's
// weights are mostly 1, and then take no bit at all.
const (
	forwardOnes  = 0x80
	forwardKMask = 0x3f
	forwardMaxK  = 32
)

// encodeForward appends the forward list of es (canonical entries) to dst.
func encodeForward(dst []byte, es []entry) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(es)))
	if len(es) == 0 {
		return dst
	}
	// The gaps sum to the last key less the gaps' minus ones.
	last := es[len(es)-1].key
	k := riceFromMean(uint64(last)-uint64(len(es)-1), uint64(len(es)))
	ones := true
	for _, e := range es {
		ones = ones && e.weight == 1
	}
	hdr := byte(k)
	if ones {
		hdr |= forwardOnes
	}
	w := bitWriter{buf: append(dst, hdr)}
	for i, e := range es {
		g := e.key
		if i > 0 {
			g = e.key - es[i-1].key - 1
		}
		w.rice(uint64(g), k)
		if !ones {
			w.gamma(e.weight)
		}
	}
	return w.flush()
}

// riceFromMean returns the Rice parameter of n gaps summing to sum, taken
// to be spread as the gaps between random keys are (geometrically): the
// largest k with 2^k at most 31/32 of the mean gap. A parameter of one
// more or one less costs up to half a bit per gap more.
func riceFromMean(sum, n uint64) uint {
	return uint(max(bits.Len64(sum/n*31/32), 1) - 1)
}

// forwardReader decodes a forward list one entry at a time, without
// allocating. It reads v in place: v must not change while it is in use.
type forwardReader struct {
	r     bitReader
	left  uint64 // entries not yet read
	n     uint64
	k     uint
	ones  bool // every weight is 1
	prev  uint64
	first bool
	e     error
}

func newForwardReader(v []byte) forwardReader {
	f := forwardReader{first: true}
	n, m := binary.Uvarint(v)
	if m <= 0 {
		f.fail("length")
		return f
	}
	body := v[m:]
	f.r = bitReader{b: body[:len(body):len(body)]}
	if n == 0 {
		return f
	}
	if len(body) == 0 {
		f.fail("header")
		return f
	}
	hdr := body[0]
	f.r.pos = 8
	f.k, f.ones = uint(hdr&forwardKMask), hdr&forwardOnes != 0
	if f.k > forwardMaxK || hdr&^(forwardOnes|forwardKMask) != 0 {
		f.fail("header")
		return f
	}
	// Each entry takes at least k+1 bits, and one more for a weight.
	least := uint64(f.k) + 1
	if !f.ones {
		least++
	}
	if n > uint64(f.r.left())/least {
		f.fail("length")
		return f
	}
	f.n, f.left = n, n
	return f
}

func (f *forwardReader) fail(what string) {
	if f.e == nil {
		f.e = fmt.Errorf("%w: forward list: bad %s", ErrCorrupt, what)
	}
	f.left = 0
}

// len returns the number of entries the list says it holds.
func (f *forwardReader) len() uint64 { return f.n }

// next returns the next entry; ok is false at the end or on error (see err).
func (f *forwardReader) next() (e entry, ok bool) {
	if f.left == 0 || f.e != nil {
		return e, false
	}
	f.left--
	key, ok := f.r.rice(f.k, math.MaxUint32>>f.k)
	if !ok {
		f.fail("key gap")
		return e, false
	}
	if !f.first {
		key += f.prev + 1
	}
	if key > math.MaxUint32 {
		f.fail("key (past 32 bits)")
		return e, false
	}
	f.first, f.prev = false, key
	e.key, e.weight = uint32(key), 1
	if !f.ones {
		if e.weight, ok = f.r.gamma(); !ok {
			f.fail("weight")
			return entry{}, false
		}
	}
	return e, true
}

// err returns the decoding error, including trailing bits once the list
// has been read to its end.
func (f *forwardReader) err() error {
	if f.e == nil && f.left == 0 {
		r := &f.r
		if r.left() >= 8 || r.pos%8 != 0 && r.b[len(r.b)-1]&(1<<(8-r.pos%8)-1) != 0 {
			f.e = fmt.Errorf("%w: forward list: trailing bits", ErrCorrupt)
		}
	}
	return f.e
}

// decodeForward decodes a whole forward list. Errors wrap ErrCorrupt.
func decodeForward(v []byte) ([]entry, error) {
	r := newForwardReader(v)
	out := make([]entry, 0, min(r.len(), uint64(len(v))))
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
