package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
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
type reader struct {
	params  fingerprint.Params
	maxSize int64   // negative: no limit
	bufp    *[]byte // from bufPool; returned by close
	buf     []byte
	col     fingerprint.Collector
	sk      *fingerprint.Sketcher
	// afterRead, if set, runs between reading a file and the second stat
	// (tests use it to change a file mid-read).
	afterRead func(path string)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func newReader(p fingerprint.Params, maxSize int64) (*reader, error) {
	r := &reader{params: p, maxSize: maxSize}
	sk, err := fingerprint.NewSketcher(p, r.col.Add)
	if err != nil {
		return nil, err
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
	f, err := openNoFollow(path)
	if err != nil {
		return index.FileMeta{}, nil, classifyOpen(path, err)
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return index.FileMeta{}, nil, fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
	}
	if !before.Mode().IsRegular() {
		return index.FileMeta{}, nil, fmt.Errorf("%s: %w (%s)", path, errSpecial, before.Mode().Type())
	}
	if r.maxSize >= 0 && before.Size() > r.maxSize {
		return index.FileMeta{}, nil, fmt.Errorf("%s: %w (%d > %d bytes)", path, errTooLarge, before.Size(), r.maxSize)
	}
	r.sk.Reset()
	r.col.Reset()
	for {
		if err := ctx.Err(); err != nil {
			return index.FileMeta{}, nil, err
		}
		n, err := f.Read(r.buf)
		if n > 0 {
			r.sk.Write(r.buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return index.FileMeta{}, nil, fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
		}
	}
	sum := r.sk.Finish()
	if r.afterRead != nil {
		r.afterRead(path)
	}
	after, err := f.Stat()
	if err != nil {
		return index.FileMeta{}, nil, fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) || sum.Size != after.Size() {
		return index.FileMeta{}, nil, fmt.Errorf("%s: %w", path, errChanged)
	}
	dev, ino := fileID(after)
	meta := index.FileMeta{
		Path:    path,
		Size:    after.Size(),
		MtimeNs: after.ModTime().UnixNano(),
		Dev:     dev,
		Ino:     ino,
		Mode:    uint32(after.Mode()),
	}
	sk := &fingerprint.Sketch{Summary: sum, Params: r.params, Features: r.col.Features()}
	return meta, sk, nil
}

// close returns the reader's buffer to the pool; the reader must not be
// used afterwards.
func (r *reader) close() {
	if r.bufp != nil {
		bufPool.Put(r.bufp)
		r.bufp, r.buf = nil, nil
	}
}

func classifyOpen(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", path, errVanished)
	case isSymlinkErr(err):
		return fmt.Errorf("%s: %w", path, errSymlink)
	default:
		return fmt.Errorf("%s: %w: %v", path, errUnreadable, unwrapPathErr(err))
	}
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
