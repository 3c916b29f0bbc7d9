package ipc

import (
	"compress/flate"
	"context"
	"io"

	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/index/fingerprint"
)

// QueryData is what a client sends besides a query's fingerprints so the
// daemon can check its candidates against the query's bytes: the bytes
// themselves (Content) for a query of at most MaxContent bytes, else a
// signature of its windows (Windows), and optionally its compressed size
// (for /v1/basis).
//
// On the wire, Content costs 1,366 bytes per KiB of query (base64) and a
// signature at level L about 10,923 / 2^L bytes per KiB (8-byte hashes of
// one window in 2^L, base64): 683 at the least level, 4, and at most about
// 700 KB whatever the size (exact.SignatureLevel).
type QueryData struct {
	Content    []byte
	Windows    *Windows
	Compressed int64 // 0 when not computed
}

// ReadOptions shape ReadQuery.
type ReadOptions struct {
	// Signature makes a signature even for a query small enough to send
	// as bytes (a client that does not want to send the bytes).
	Signature bool
	// Compressed computes the compressed size (exact.CompressedSize).
	Compressed bool
	// SimiHash computes the SimiHash sum table and key, for a query by
	// SimiHash (SimiHashOf); other queries do without.
	SimiHash bool
}

// ReadQuery reads r to its end and returns the query's sketch under p and
// what the daemon needs to check it (QueryData), in one pass.
func ReadQuery(r io.Reader, p fingerprint.Params, o ReadOptions) (*fingerprint.Sketch, *QueryData, error) {
	return ReadQueryContext(context.Background(), r, p, o)
}

// ReadQueryContext is ReadQuery, stopping with ctx's error once ctx is
// done (checked between reads).
func ReadQueryContext(ctx context.Context, r io.Reader, p fingerprint.Params, o ReadOptions) (*fingerprint.Sketch, *QueryData, error) {
	var col fingerprint.Collector
	sk, err := fingerprint.NewSketcher(p, col.Add)
	if err != nil {
		return nil, nil, err
	}
	if !o.SimiHash {
		sk.SkipSimiHash() // a query by fingerprints does not carry it
	}
	qc := &queryCollector{keep: !o.Signature, level: exact.MinSignatureLevel}
	var cw countWriter
	var fw *flate.Writer
	if o.Compressed {
		fw, _ = flate.NewWriter(&cw, flate.DefaultCompression)
	}
	// The sketch is made as the bytes are read; the window sample and
	// the compressed size on another goroutine, so a large query costs
	// the time of the slower of the two rather than of both.
	free, work, done := make(chan []byte, 2), make(chan []byte, 1), make(chan struct{})
	free <- make([]byte, 256<<10)
	free <- make([]byte, 256<<10)
	go func() {
		defer close(done)
		for b := range work {
			qc.write(b)
			if fw != nil {
				fw.Write(b)
			}
			free <- b[:cap(b)]
		}
	}()
	err = func() error {
		defer func() { close(work); <-done }()
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			buf := <-free
			n, err := r.Read(buf)
			if n > 0 {
				sk.Write(buf[:n])
				work <- buf[:n]
			} else {
				free <- buf
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}()
	if err != nil {
		return nil, nil, err
	}
	sum := sk.Finish()
	d := &QueryData{}
	if fw != nil {
		fw.Close()
		d.Compressed = cw.n + 18
	}
	if qc.keep {
		d.Content = qc.content
		if d.Content == nil {
			d.Content = []byte{}
		}
	} else {
		level := signatureLevel(qc.level, sum.Size)
		d.Windows = NewWindows(level, exact.SignatureOf(qc.hashes, level))
	}
	return &fingerprint.Sketch{Summary: sum, Params: sk.Params(), Features: col.Features()}, d, nil
}

// QueryFile reads the regular file at path as SketchFile does (refusing
// directories and special files at once) and returns its sketch and
// QueryData. A file that changed while it was read is an error wrapping
// ErrChanged (see QueryFileContext).
func QueryFile(path string, p fingerprint.Params, o ReadOptions) (*fingerprint.Sketch, *QueryData, error) {
	return QueryFileContext(context.Background(), path, p, o)
}

// Attach adds d to a similar request.
func (r *SimilarRequest) Attach(d *QueryData) {
	if d != nil {
		r.Content, r.Windows = d.Content, d.Windows
	}
}

// queryCollector keeps a query's bytes while they fit in MaxContent, and
// past that hashes its windows into a sample whose level rises
// (hierarchically: a level L+1 sample is part of the level L one) so that
// it holds at most about 2 × exact.MaxSamples distinct hashes however long
// the stream. Only distinct hashes count towards that bound: a stream of
// few distinct windows (zeros, one repeated byte, a short pattern) keeps
// its level low, whatever its length.
type queryCollector struct {
	keep    bool // still keeping the bytes
	content []byte
	h       exact.Hasher
	hashes  []uint64 // kept at level, with repeats until compacted
	level   int
	bound   int // compact when hashes grows past this
	scratch []uint64
}

// compactAt is the least number of hashes, repeats included, a collector
// holds before it compacts them.
const compactAt = 4 * exact.MaxSamples

func (c *queryCollector) write(p []byte) {
	if c.keep && len(c.content)+len(p) <= MaxContent {
		c.content = append(c.content, p...)
		return
	}
	if c.keep { // past MaxContent: from bytes to a signature
		c.keep = false
		old := c.content
		c.content = nil
		c.add(old)
	}
	c.add(p)
}

func (c *queryCollector) add(p []byte) {
	c.scratch = c.h.Append(c.scratch[:0], p)
	mask := uint64(1)<<c.level - 1 // exact.Keep's test, hoisted
	last := ^uint64(0)             // never kept: its low bits are ones
	if n := len(c.hashes); n > 0 {
		last = c.hashes[n-1]
	}
	for _, h := range c.scratch {
		// A run of equal windows (zeros, one repeated byte) is kept once
		// here; other repeats go when the hashes are compacted.
		if h&mask == 0 && h != last {
			c.hashes = append(c.hashes, h)
			last = h
		}
	}
	if len(c.hashes) > max(c.bound, compactAt) {
		c.compact()
	}
}

// compact sorts the hashes and drops repeats, then raises the level while
// more than 2 × exact.MaxSamples distinct hashes remain, up to
// exact.MaxLevel. The next compaction waits until the hashes have at
// least doubled, so that sorting costs O(log n) per hash kept.
func (c *queryCollector) compact() {
	c.hashes = exact.SignatureOf(c.hashes, c.level)
	for len(c.hashes) > 2*exact.MaxSamples && c.level < exact.MaxLevel {
		c.level++
		c.hashes = exact.SignatureOf(c.hashes, c.level)
	}
	c.bound = 2 * len(c.hashes)
}

// signatureLevel is the level of the signature of a query of size bytes
// whose windows were sampled at level: exact.SignatureLevel's for its
// size, at least level, at most exact.MaxLevel.
func signatureLevel(level int, size int64) int {
	return min(max(level, exact.SignatureLevel(size)), exact.MaxLevel)
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }
