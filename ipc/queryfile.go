package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc/filestat"
)

// ErrChanged is wrapped by the error of a query file that changed while it
// was read: its size, modification time or status change time differ
// after the read from before it, or the bytes read are not its size at
// open (it was truncated, or grew). Its sketch would describe a mix of
// two contents, so none is returned: query it again once it is stable.
var ErrChanged = errors.New("changed while it was read")

// readHook, when set (by tests), runs after each read of a query file
// with the bytes read so far: a test changes the file mid-read with it.
var readHook func(path string, n int64)

// fileStamp is what tells one state of a file from another: its size,
// modification time and status change time (0 where the system does not
// say).
type fileStamp struct {
	size  int64
	mtime time.Time
	ctime int64
}

func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ctime: filestat.Ctime(fi)}
}

// queryReader reads an open query file, stopping with ctx's error once
// ctx is done, and counts the bytes it read.
type queryReader struct {
	ctx  context.Context
	f    *os.File
	path string
	n    int64
}

func (r *queryReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.f.Read(p)
	r.n += int64(n)
	if readHook != nil {
		readHook(r.path, r.n)
	}
	return n, err
}

// readQueryFile opens the regular file at path as openChecked does, reads
// it through read (which reads to EOF), and checks that it did not change
// while it was read: an error wrapping ErrChanged says how it did. Errors
// name the path; a done ctx ends the read with ctx's error.
func readQueryFile(ctx context.Context, path string, read func(io.Reader) error) error {
	f, before, err := openStat(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := &queryReader{ctx: ctx, f: f, path: path}
	if err := read(r); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%s: %w", path, cerr)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := changed(stampOf(before), stampOf(st), r.n); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// changed reports, as an error wrapping ErrChanged, how a file whose
// state was before when it was opened and after once read, n bytes,
// changed meanwhile; nil when it did not.
func changed(before, after fileStamp, n int64) error {
	switch {
	case after.size != before.size || n != before.size:
		return fmt.Errorf("%w (%d bytes at open, %d read, %d now)", ErrChanged, before.size, n, after.size)
	case !after.mtime.Equal(before.mtime):
		return fmt.Errorf("%w (modified after it was opened)", ErrChanged)
	case after.ctime != before.ctime:
		return fmt.Errorf("%w (its status changed after it was opened)", ErrChanged)
	}
	return nil
}

// SketchFileContext is SketchFile, stopping once ctx is done (the error
// then wraps ctx's), and failing with an error wrapping ErrChanged when
// the file changed while it was read.
func SketchFileContext(ctx context.Context, path string, p fingerprint.Params) (*fingerprint.Sketch, error) {
	var sk *fingerprint.Sketch
	err := readQueryFile(ctx, path, func(r io.Reader) (err error) {
		sk, err = fingerprint.SketchQuery(r, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sk, nil
}

// SketchFileSimiHash is SketchFileContext with the SimiHash sum table and
// key in the sketch (SimiHashOf), as a query by SimiHash needs.
func SketchFileSimiHash(ctx context.Context, path string, p fingerprint.Params) (*fingerprint.Sketch, error) {
	var sk *fingerprint.Sketch
	err := readQueryFile(ctx, path, func(r io.Reader) (err error) {
		sk, err = fingerprint.SketchReader(r, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sk, nil
}

// QueryFileContext is QueryFile, stopping once ctx is done (the error
// then wraps ctx's), and failing with an error wrapping ErrChanged when
// the file changed while it was read.
func QueryFileContext(ctx context.Context, path string, p fingerprint.Params, o ReadOptions) (*fingerprint.Sketch, *QueryData, error) {
	var sk *fingerprint.Sketch
	var d *QueryData
	err := readQueryFile(ctx, path, func(r io.Reader) (err error) {
		sk, d, err = ReadQueryContext(ctx, r, p, o)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return sk, d, nil
}

// ctxReader reads r until ctx is done, then fails with ctx's error.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ContextReader returns a reader of r that fails with ctx's error once ctx
// is done, checked before each read: a long read of a large file stops
// within one read of a cancellation.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }
