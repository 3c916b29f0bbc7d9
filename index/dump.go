package index

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
)

// Dump writes to w one line per indexed file in the directory tree prefix
// (by whole path components, as InTree; "" for all), in path order (bytewise), as of one consistent view of the index. A line
// depends only on what the index says of the file, not on its file id nor
// on the writes that led there, so two indexes of one tree (a live
// daemon's, and a fresh full scan's) can be compared with diff. Each line
// is, separated by single spaces:
//
//	"PATH" size=N mtime=NS dev=N ino=N mode=0OCTAL type=T strong=HEX weight=N features=N fwd=HEX
//
// PATH is quoted as strconv.Quote does, so bytes that are not UTF-8 show
// as escapes; size is the file's size (FileMeta.Size) and mtime its
// modification time in Unix nanoseconds; dev, ino and mode are decimal,
// decimal and octal; type is text, binary or unknown; strong is the
// SHA-256 of the content in hex (all zeros when unknown); weight and
// features are the file's total weight and number of fingerprint keys (see
// doc.go). fwd is the 64-bit FNV-1a hash, as 16 hex digits, of the file's
// forward list (its content's: identical copies share one): per entry, in
// fingerprint-key order, the key as 4 bytes and the weight as 8 bytes, both
// big-endian. Files with equal fingerprints have equal fwd. Identical
// copies share one content in the index, but each has its own line.
//
// Dump buffers its output and returns the first error of reading the index
// or of writing to w.
func (ix *Index) Dump(prefix string, w io.Writer) error {
	if err := ix.dump(prefix, w); err != nil {
		return fmt.Errorf("index.Dump %q: %w", prefix, err)
	}
	return nil
}

func (ix *Index) dump(prefix string, w io.Writer) error {
	if err := ix.acquire(); err != nil {
		return err
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()

	bw := bufio.NewWriter(w)
	var line []byte
	hashes := make(map[uint32]uint64) // content id → forwardHash, for copies
	err := scanFiles(snap, prefix, func(rec FileRecord, cid uint32) error {
		if !InTree(rec.Path, prefix) {
			return nil
		}
		sum, ok := hashes[cid]
		if !ok {
			fwd, found, err := getValue(snap, forwardKey(cid))
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%w: content %d of file id %d (%q) has no forward list", ErrCorrupt, cid, rec.ID, rec.Path)
			}
			if sum, err = forwardHash(fwd); err != nil {
				return fmt.Errorf("forward list of content %d (%q): %w", cid, rec.Path, err)
			}
			hashes[cid] = sum
		}
		line = appendDumpLine(line[:0], &rec, sum)
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

// appendDumpLine appends the line of rec, whose forward list hashes to fwd,
// to dst, in the format documented on Dump.
func appendDumpLine(dst []byte, rec *FileRecord, fwd uint64) []byte {
	dst = strconv.AppendQuote(dst, rec.Path)
	dst = append(dst, " size="...)
	dst = strconv.AppendInt(dst, rec.FileMeta.Size, 10)
	dst = append(dst, " mtime="...)
	dst = strconv.AppendInt(dst, rec.MtimeNs, 10)
	dst = append(dst, " dev="...)
	dst = strconv.AppendUint(dst, rec.Dev, 10)
	dst = append(dst, " ino="...)
	dst = strconv.AppendUint(dst, rec.Ino, 10)
	dst = append(dst, " mode=0"...)
	dst = strconv.AppendUint(dst, uint64(rec.Mode), 8)
	dst = append(dst, " type="...)
	dst = append(dst, rec.Type.String()...)
	dst = fmt.Appendf(dst, " strong=%x", rec.Strong)
	dst = append(dst, " weight="...)
	dst = strconv.AppendUint(dst, rec.Weight, 10)
	dst = append(dst, " features="...)
	dst = strconv.AppendUint(dst, uint64(rec.Features), 10)
	dst = fmt.Appendf(dst, " fwd=%016x\n", fwd)
	return dst
}

// forwardHash returns the hash Dump prints of an encoded forward list:
// FNV-1a over each entry's fingerprint key (4 bytes) and weight (8 bytes),
// big-endian, in key order. It hashes entries, not the stored bytes, so it
// does not depend on how the forward list is encoded.
func forwardHash(v []byte) (uint64, error) {
	h := fnv.New64a()
	r := newForwardReader(v)
	var buf [12]byte
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		binary.BigEndian.PutUint32(buf[:4], e.key)
		binary.BigEndian.PutUint64(buf[4:], e.weight)
		h.Write(buf[:])
	}
	if err := r.err(); err != nil {
		return 0, err
	}
	return h.Sum64(), nil
}
