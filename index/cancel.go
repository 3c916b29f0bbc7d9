package index

import "context"

// Cancellation. The queries (Similar, EachGroup and Groups, Dupes,
// DirTotals) take a context and stop soon after it is done, returning an
// error that wraps its error (context.Canceled when a client hung up). They
// look at it between pieces of work that each take microseconds: a posting
// list, a record read, a few hundred keys of a scan, a fingerprint key's
// pairs.

// pollEvery is how many ticks of a poller pass between two looks at its
// context: enough that a loop doing little per tick pays nothing
// measurable, few enough that it stops within a millisecond.
const pollEvery = 256

// poller looks at a context now and then, for a loop whose rounds are too
// cheap to look at it every time. The zero value, or one without a
// context, never stops.
type poller struct {
	ctx context.Context
	n   uint32
}

// tick counts a round, and every pollEvery rounds returns the context's
// error.
func (p *poller) tick() error {
	if p.n++; p.n%pollEvery != 0 || p.ctx == nil {
		return nil
	}
	return p.ctx.Err()
}

// now returns the context's error at once.
func (p *poller) now() error {
	if p.ctx == nil {
		return nil
	}
	return p.ctx.Err()
}

// tickN counts n rounds at once, looking at the context when they cross a
// multiple of pollEvery.
func (p *poller) tickN(n int) error {
	before := p.n
	p.n += uint32(n)
	if p.n/pollEvery == before/pollEvery && n < pollEvery || p.ctx == nil {
		return nil
	}
	return p.ctx.Err()
}
