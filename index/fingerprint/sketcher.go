package fingerprint

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// ErrFinished is returned by [Sketcher.Write] after [Sketcher.Finish] and
// before [Sketcher.Reset].
var ErrFinished = errors.New("fingerprint: write after Finish")

// scanner is a scheme's pass over a stream: it is written the stream in
// pieces and emits fingerprints in stream order.
type scanner interface {
	write(b []byte) // scans b, which continues the stream; never keeps b
	finish()        // ends the stream
	reset()         // readies the scanner for a new stream, keeping buffers
}

// writeBlock is the piece of a Write that every pass reads in turn, so the
// bytes stay in cache from one pass to the next.
const writeBlock = 64 << 10

// Sketcher fingerprints one stream at a time in a single pass: the scheme's
// fingerprints, and the [Summary] (size, SHA-256, type, SimiHash sum table
// and key) that every stream gets.
//
// Bytes are written with Write, in any number of calls of any size; the
// fingerprints and the Summary depend only on the concatenated bytes. Finish
// ends the stream and Reset starts the next. A Sketcher holds at most about
// MaxChunk bytes (chunks) or 2·Window bytes (manber) of the stream plus a few
// KiB of state, however long the stream is.
//
// Create Sketchers with NewSketcher; the zero Sketcher is not usable. A
// Sketcher is not safe for concurrent use; distinct Sketchers are independent
// and may run on different goroutines (the tables they share, about 512 KiB
// built when the package is initialized, are read-only).
type Sketcher struct {
	params Params
	scan   scanner // nil when there is no emit callback
	strong hash.Hash
	typ    typer
	simi   simiHash
	noSimi bool // SkipSimiHash was called
	size   int64
	done   bool
	sum    Summary // valid when done
}

// NewSketcher returns a Sketcher for p, which is normalized first
// ([Params.Normalize]; its error is returned as is).
//
// emit is called for every fingerprint the scheme keeps, in stream order
// (increasing offsets), synchronously from Write or Finish on the calling
// goroutine. The Fingerprint is a value: emit may keep it, and the Sketcher
// keeps nothing of it. emit must not call the Sketcher's methods. emit may be
// nil, in which case only the Summary is computed and the scheme's pass is
// skipped.
func NewSketcher(p Params, emit func(Fingerprint)) (*Sketcher, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, err
	}
	s := &Sketcher{params: p, strong: sha256.New()}
	if emit != nil {
		switch p.Scheme {
		case Manber:
			s.scan = newManber(p, emit)
		case Chunks:
			s.scan = newChunker(p, emit)
		}
	}
	return s, nil
}

// SkipSimiHash makes s leave the SimiHash sum table and skew key of its
// Summaries zero, for callers that use neither: it spares their pass over
// the bytes, which takes about as long as the scheme's. It holds for the
// rest of s's life, across Resets; call it before the first Write.
func (s *Sketcher) SkipSimiHash() { s.noSimi = true }

// Params returns the normalized parameters of s.
func (s *Sketcher) Params() Params { return s.params }

// Write fingerprints b, which continues the stream. It implements io.Writer:
// it consumes all of b and returns len(b), nil, or 0, [ErrFinished] after
// Finish. It does not keep b after returning and does not allocate, except
// for a chunk that spans Writes, which is gathered in a buffer that grows to
// at most MaxChunk bytes once per Sketcher.
func (s *Sketcher) Write(b []byte) (int, error) {
	if s.done {
		return 0, ErrFinished
	}
	n := len(b)
	s.size += int64(n)
	for len(b) > 0 {
		blk := b[:min(len(b), writeBlock)]
		b = b[len(blk):]
		s.strong.Write(blk)
		s.typ.write(blk)
		if !s.noSimi {
			s.simi.write(blk)
		}
		if s.scan != nil {
			s.scan.write(blk)
		}
	}
	return n, nil
}

// Finish ends the stream and returns its Summary. With the chunks scheme it
// emits the last chunk, if the stream does not end on a cut. Calling Finish
// again returns the same Summary and emits nothing; Reset must be called
// before the Sketcher is written again.
func (s *Sketcher) Finish() Summary {
	if s.done {
		return s.sum
	}
	s.done = true
	if s.scan != nil {
		s.scan.finish()
	}
	sum := Summary{Size: s.size, Type: s.typ.typ()}
	if !s.noSimi {
		sum.Sum = s.simi.sum()
		sum.Key = SkewKey(sum.Sum)
	}
	s.strong.Sum(sum.Strong[:0])
	s.sum = sum
	return sum
}

// Reset forgets the current stream, finished or not, and readies s for a new
// one with the same parameters and emit callback, reusing its buffers.
func (s *Sketcher) Reset() {
	if s.scan != nil {
		s.scan.reset()
	}
	s.strong.Reset()
	s.typ.reset()
	s.simi.reset()
	s.size = 0
	s.done = false
	s.sum = Summary{}
}

// readBufSize is the size of SketchReader's reads.
const readBufSize = 256 << 10

var readBufs = sync.Pool{New: func() any { return new([readBufSize]byte) }}

// maxEmptyReads is how many reads in a row may return no bytes and no error
// before SketchReader gives up with io.ErrNoProgress (as bufio does).
const maxEmptyReads = 100

// SketchReader reads r to EOF through a [Sketcher] and returns the stream's
// sketch: its features (each distinct fingerprint with its count, sorted by
// hash, collected by a [Collector]), its Summary and the normalized p. A
// parameter error is returned as is; a read error is wrapped as
// "fingerprint: read: %w". The caller owns the returned Sketch. SketchReader
// is safe for concurrent use.
func SketchReader(r io.Reader, p Params) (*Sketch, error) { return sketchReader(r, p, false) }

// SketchQuery is SketchReader without the SimiHash sum table and skew key
// (see [Sketcher.SkipSimiHash]), which a query to the index does not
// carry: the sketch of a file to look up, at a tenth less CPU.
func SketchQuery(r io.Reader, p Params) (*Sketch, error) { return sketchReader(r, p, true) }

func sketchReader(r io.Reader, p Params, noSimi bool) (*Sketch, error) {
	var c Collector
	s, err := NewSketcher(p, c.Add)
	if err != nil {
		return nil, err
	}
	if noSimi {
		s.SkipSimiHash()
	}
	buf := readBufs.Get().(*[readBufSize]byte)
	defer readBufs.Put(buf)
	for empty := 0; ; {
		n, err := r.Read(buf[:])
		if n < 0 || n > len(buf) {
			return nil, fmt.Errorf("fingerprint: read: reader returned %d bytes for a %d-byte buffer", n, len(buf))
		}
		s.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("fingerprint: read: %w", err)
		}
		if n > 0 {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			return nil, fmt.Errorf("fingerprint: read: %w", io.ErrNoProgress)
		}
	}
	return &Sketch{Summary: s.Finish(), Params: s.params, Features: c.Features()}, nil
}
