package exact

import (
	"math/bits"
	"sync"
)

// A check prepares a Query and measures a few candidates for each query a
// daemon answers: its buffers, of one to a dozen bytes per window of the
// query and of each candidate, were allocated and dropped every time,
// and allocating, zeroing and collecting them cost about as much as the
// measures. Released Queries give them back to these pools for the next.
var (
	u64Bufs  bufPool[uint64]
	i32Bufs  bufPool[int32]
	boolBufs bufPool[bool]
	byteBufs bufPool[byte]
)

// maxPooledClass bounds the buffers kept: 1<<22 elements (32 MiB of
// hashes), as tables are bounded (see table.release).
const maxPooledClass = 22

// bufPool keeps released slices by capacity class, a power of two.
type bufPool[T any] struct {
	classes [maxPooledClass + 1]sync.Pool
}

// get returns an empty slice with room for n elements.
func (p *bufPool[T]) get(n int) []T {
	c := bits.Len(uint(max(n, 1) - 1)) // the least class of n or more
	if c > maxPooledClass {
		return make([]T, 0, n)
	}
	if b, ok := p.classes[c].Get().(*[]T); ok {
		return (*b)[:0]
	}
	return make([]T, 0, 1<<c)
}

// put gives b back for reuse; the caller must not use it afterwards. A
// slice whose capacity is not a power of two (not from get) is left to
// the collector.
func (p *bufPool[T]) put(b []T) {
	c := bits.Len(uint(cap(b))) - 1
	if c < 0 || c > maxPooledClass || 1<<c != cap(b) {
		return
	}
	b = b[:0]
	p.classes[c].Put(&b)
}

// grow returns b with room for n more elements, taking a larger buffer
// from p (and giving b back) when it has not.
func (p *bufPool[T]) grow(b []T, n int) []T {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := append(p.get(len(b)+n), b...)
	p.put(b)
	return nb
}
