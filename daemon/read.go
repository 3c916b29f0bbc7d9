package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"sync"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc/filestat"
)

// Reasons a file is not indexed. readFile's errors wrap one of them.
var (
	errVanished   = errors.New("vanished before it was read")
	errSymlink    = errors.New("is a symlink")
	errSpecial    = errors.New("not a regular file")
	errUnreadable = errors.New("unreadable")
	errChanged    = errors.New("changed while it was read")
	errTooLarge   = errors.New("larger than the size limit")
)

// reader reads and fingerprints files. One reader serves one worker; it
// reuses its buffer and collector between files.
//
// A file of at most wholeMax bytes is read whole into the buffer and
// hashed (SHA-256) first, so that a copy of a content the index holds
// already joins it without being fingerprinted (index.Index.PutFile); it is
// sketched from the buffer only when it is new. A larger file is hashed
// and sketched in one pass as it is read.
type reader struct {
	params  fingerprint.Params
	maxSize int64   // negative: no limit
	bufp    *[]byte // from bufPool; returned by close
	buf     []byte
	col     fingerprint.Collector
	sk      *fingerprint.Sketcher
	strong  hash.Hash
	whole   []byte // the file load read whole, until the next load
	// afterRead, if set, runs between reading a file and the second stat
	// (tests use it to change a file mid-read).
	afterRead func(path string)
	// between, if set, runs between the pieces of a file read piece by
	// piece (larger than wholeMax), and between the 64 KiB pieces a file
	// read whole is hashed and fingerprinted in: a scan's read gives way
	// to queries there (queryfirst.go).
	between func()
}

// wholeMax is the size up to which a file is read whole before it is
// sketched.
const wholeMax = 1 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// newReader returns a reader sketching with p; with simi, the sketches
// carry their SimiHash sum tables and keys, for an index that keeps them.
func newReader(p fingerprint.Params, maxSize int64, simi bool) (*reader, error) {
	r := &reader{params: p, maxSize: maxSize, strong: sha256.New()}
	sk, err := fingerprint.NewSketcher(p, r.col.Add)
	if err != nil {
		return nil, err
	}
	if !simi {
		sk.SkipSimiHash() // nothing else the index answers uses it
	}
	r.sk = sk
	r.bufp = bufPool.Get().(*[]byte)
	r.buf = *r.bufp
	return r, nil
}

// read fingerprints the regular file at path. The result is consistent: the
// file's size and modification time were the same before and after the
// read, or read fails with errChanged.
func (r *reader) read(ctx context.Context, path string) (index.FileMeta, *fingerprint.Sketch, error) {
	meta, _, sk, err := r.load(ctx, path, nil)
	if err == nil && sk == nil {
		sk = r.sketch()
	}
	return meta, sk, err
}

// fileStat is what load needs of a file's status.
type fileStat struct {
	size, mtime int64 // mtime in Unix nanoseconds
	ctime       int64 // status change time in Unix nanoseconds; 0 where not known
	mode        fs.FileMode
	dev, ino    uint64
}

// statOf returns the fileStat of fi.
func statOf(fi fs.FileInfo) fileStat {
	dev, ino := fileID(fi)
	return fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: filestat.Ctime(fi), mode: fi.Mode(), dev: dev, ino: ino}
}

// load reads the regular file at path, as consistently as read. A file of
// at most wholeMax bytes is read whole and hashed: load returns its
// metadata and SHA-256 and a nil sketch, and sketch fingerprints it from
// the buffer until the next load. A larger file is sketched as it is read,
// and its sketch returned. Sketches leave SimiHash out
// (fingerprint.Sketcher.SkipSimiHash) unless the index keeps SimiHash keys.
//
// seen, if not nil, is an lstat of path taken before load was called (the
// walk's): the file is then read without a stat before the read, and the
// one after it must match seen in size, mtime, device and inode. When it
// does not (the file changed or was replaced since seen was taken), or
// the read fails, load looks again as if seen were nil: the result is the
// same, at the cost of a second read.
func (r *reader) load(ctx context.Context, path string, seen fs.FileInfo) (meta index.FileMeta, strong [32]byte, sk *fingerprint.Sketch, err error) {
	if seen != nil && seen.Mode().IsRegular() {
		before := statOf(seen)
		meta, strong, sk, err = r.loadFrom(ctx, path, &before)
		if !errors.Is(err, errSeenStale) {
			return meta, strong, sk, err
		}
	}
	return r.loadFrom(ctx, path, nil)
}

// errSeenStale says the file load was given an lstat of is not as it was.
var errSeenStale = errors.New("not as the walk saw it")

// loadFrom is load, with before the file's status before the read, or nil
// to fstat it once open. With before given, a failed read or an fstat
// after it that does not match before fails with errSeenStale.
func (r *reader) loadFrom(ctx context.Context, path string, before *fileStat) (meta index.FileMeta, strong [32]byte, sk *fingerprint.Sketch, err error) {
	r.whole = nil
	f, err := openRead(path)
	if err != nil {
		return meta, strong, nil, classifyOpen(path, err)
	}
	defer f.close()
	seen := before != nil
	if !seen {
		st, err := f.stat()
		if err != nil {
			return meta, strong, nil, fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
		}
		before = &st
	}
	if !before.mode.IsRegular() {
		return meta, strong, nil, fmt.Errorf("%s: %w (%s)", path, errSpecial, before.mode.Type())
	}
	if r.maxSize >= 0 && before.size > r.maxSize {
		return meta, strong, nil, fmt.Errorf("%s: %w (%d > %d bytes)", path, errTooLarge, before.size, r.maxSize)
	}
	readErr := func(err error) error {
		if seen {
			return errSeenStale // perhaps no longer the file seen: look again
		}
		return fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
	}
	var size int64
	if before.size <= wholeMax {
		// One byte more than the size, so that a file that grew fills the
		// buffer. The reads stop once they have the size: a file that
		// grew or shrank since shows in the fstat after them.
		if need := int(before.size) + 1; cap(r.buf) < need {
			r.buf = make([]byte, need)
			*r.bufp = r.buf
		}
		buf := r.buf[:before.size+1]
		n := 0
		for {
			if err := ctx.Err(); err != nil {
				return meta, strong, nil, err
			}
			k, err := f.read(buf[n:])
			if err != nil {
				return meta, strong, nil, readErr(err)
			}
			n += k
			if k == 0 || int64(n) >= before.size {
				break
			}
		}
		r.whole = buf[:n]
		r.strong.Reset()
		r.inPieces(r.whole, r.strong.Write)
		r.strong.Sum(strong[:0])
		size = int64(n)
	} else {
		r.sk.Reset()
		r.col.Reset()
		for {
			if err := ctx.Err(); err != nil {
				return meta, strong, nil, err
			}
			if r.between != nil {
				r.between()
			}
			n, err := f.read(r.buf)
			if err != nil {
				return meta, strong, nil, readErr(err)
			}
			if n == 0 {
				break
			}
			r.sk.Write(r.buf[:n])
		}
		sum := r.sk.Finish()
		strong, size = sum.Strong, sum.Size
		sk = &fingerprint.Sketch{Summary: sum, Params: r.params, Features: r.col.Features()}
	}
	if r.afterRead != nil {
		r.afterRead(path)
	}
	after, err := f.stat()
	if err != nil {
		r.whole = nil
		return meta, strong, nil, fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
	}
	if after.size != before.size || after.mtime != before.mtime || size != after.size ||
		seen && (after.dev != before.dev || after.ino != before.ino || !after.mode.IsRegular()) {
		r.whole = nil
		if seen {
			return meta, strong, nil, errSeenStale
		}
		return meta, strong, nil, fmt.Errorf("%s: %w", path, errChanged)
	}
	meta = index.FileMeta{
		Path:    path,
		Size:    after.size,
		MtimeNs: after.mtime,
		CtimeNs: after.ctime,
		Dev:     after.dev,
		Ino:     after.ino,
		Mode:    uint32(after.mode),
	}
	return meta, strong, sk, nil
}

// piece is how much of a file read whole is hashed or fingerprinted
// between two calls of reader.between.
const piece = 64 << 10

// inPieces hands b to write a piece at a time, calling between before
// each piece after the first, when it is set.
func (r *reader) inPieces(b []byte, write func([]byte) (int, error)) {
	for len(b) > piece {
		write(b[:piece])
		b = b[piece:]
		if r.between != nil {
			r.between()
		}
	}
	write(b)
}

// sketch fingerprints the file the last load read whole. The caller owns
// the sketch.
func (r *reader) sketch() *fingerprint.Sketch {
	r.sk.Reset()
	r.col.Reset()
	r.inPieces(r.whole, r.sk.Write)
	sum := r.sk.Finish()
	return &fingerprint.Sketch{Summary: sum, Params: r.params, Features: r.col.Features()}
}

// close returns the reader's buffer to the pool; the reader must not be
// used afterwards.
func (r *reader) close() {
	if r.bufp != nil {
		bufPool.Put(r.bufp)
		r.bufp, r.buf, r.whole = nil, nil, nil
	}
}

func classifyOpen(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", path, errVanished)
	case isSymlinkErr(err):
		return fmt.Errorf("%s: %w", path, errSymlink)
	default:
		return fmt.Errorf("%s: %w: %w", path, errUnreadable, unwrapPathErr(err))
	}
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
