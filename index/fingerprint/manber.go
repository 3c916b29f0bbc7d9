package fingerprint

// Manber's approximate fingerprints (Manber 1994, §2).
//
// The Karp-Rabin hash of the W-byte window t_i … t_{i+W-1} is
//
//	F_i = (t_i·p^(W-1) + t_{i+1}·p^(W-2) + … + t_{i+W-1}) mod M
//
// with M = 2^ModBits. Sliding the window one byte gives
//
//	F_{i+1} = (p·F_i + t_{i+W} − t_i·p^W) mod M
//
// (the paper prints p^(W-1) in the last term; multiplying F_i by p raises
// t_i's coefficient to p^W, so p^W is what must be subtracted). The products
// t·p^W are looked up in a 256-entry table.
//
// Every computation is done in uint64 arithmetic, that is mod 2^64. Since
// 2^30 divides 2^64, reducing the 64-bit result mod 2^30 at the end gives the
// same value as reducing at every step, so both moduli share one scanner and
// differ only in the multiplier and in a final mask.
//
// A window is a candidate at level L when the low L bits of F are zero. A
// stream is sampled at its level k (Params.Level: Bits for a large stream,
// less for a small one). Candidates at the top level, Bits, are kept greedily
// in stream order, skipping any that overlap the last kept top-level window
// ("once a fingerprint is identified, the text is shifted to the end of it");
// candidates below the top level are kept wherever they are. So the windows
// kept at level k are exactly those kept at level k+1 and the candidates
// whose low bits are zero up to bit k, not k+1: what a small file keeps at a
// higher level is what a large one keeps, and the two compare at that level.
// The stored hash is F >> MinBits: the MinBits low bits are known to be zero,
// and the trailing zeros of the rest tell the hash's level.
//
// The stream's level is known only at its end, but it never decreases as the
// stream grows: while the bytes seen are too few for the top level, kept
// windows at or above the level those bytes already imply are held back, and
// the ones below the final level are dropped at the end. Once the top level
// is reached the held windows of the top level are emitted and the scanner
// runs its fast path, which tests the top level only.
//
// A caveat of the paper's choice that the tests make visible: since M is a
// power of two, the low k bits of F depend only on the low k bits of the bytes
// (and of p). With k = 8 every bit of a byte matters; with k < 8 the high bits
// of the bytes do not affect which windows are selected, only their hashes.

const (
	// manberPrime64 is the multiplier p for ModBits = 64: the smallest prime
	// above ⌊2^64/φ⌋ = 0x9e3779b97f4a7c15, φ the golden ratio. Its bits are
	// well mixed, so every byte of a window reaches every bit of F.
	manberPrime64 = 0x9e3779b97f4a7c55
	// manberPrime30 is the multiplier p for ModBits = 30: the smallest prime
	// above ⌊2^30/φ⌋ = 0x278dde6e.
	manberPrime30 = 0x278dde89
)

// manber finds Manber fingerprints in a stream written to it in pieces. It
// keeps the last W bytes of the stream, so its memory is O(W).
type manber struct {
	params  Params
	w       int    // window length W
	k       uint   // selection bits of the top level
	kmin    uint   // MinBits: the stored hash is F >> kmin
	sel     uint64 // 2^k - 1: a window is a top-level candidate when F&sel == 0
	modMask uint64 // 2^ModBits - 1
	p       uint64 // the multiplier, p^2, p^3 and p^4 mod 2^64
	p2      uint64
	p3      uint64
	p4      uint64
	out     [256]uint64 // out[t] = t·p^W mod 2^64: the term leaving the window
	emit    func(Fingerprint)

	h       uint64        // F (mod 2^64) of the window ending at the last byte seen
	pos     int64         // bytes seen
	level   int           // the least level the stream can have: Level(pos)
	held    []Fingerprint // kept windows held back while level < k
	nextEnd int64         // stream index of the last byte of the first window that may be kept
	hist    []byte        // the last w bytes seen; zeros before the stream starts
	scratch []byte        // the history followed by the head of a Write, cap 2w
}

// newManber returns a scanner for normalized manber parameters. emit must
// not be nil.
func newManber(p Params, emit func(Fingerprint)) *manber {
	m := &manber{
		params:  p,
		w:       p.Window,
		k:       uint(p.Bits),
		kmin:    uint(p.MinBits),
		sel:     1<<uint(p.Bits) - 1,
		modMask: ^uint64(0),
		p:       manberPrime64,
		emit:    emit,
		hist:    make([]byte, p.Window),
		scratch: make([]byte, 0, 2*p.Window),
	}
	if p.ModBits == 30 {
		m.modMask = 1<<30 - 1
		m.p = manberPrime30
	}
	m.p2 = m.p * m.p
	m.p3 = m.p2 * m.p
	m.p4 = m.p3 * m.p
	pw := uint64(1)
	for range m.w {
		pw *= m.p
	}
	for t := range m.out {
		m.out[t] = uint64(t) * pw
	}
	m.reset()
	return m
}

// reset readies m for a new stream.
//
// The history starts as W zero bytes with F = 0, which is their hash, so the
// rolling update needs no special case while the first window fills: after W
// bytes F is exactly the hash of the first window. Windows that would start
// before the stream are never tested (nextEnd starts at W-1).
func (m *manber) reset() {
	m.h = 0
	m.pos = 0
	m.level = m.params.Level(0)
	m.held = m.held[:0]
	m.nextEnd = int64(m.w) - 1
	clear(m.hist)
}

// finish emits the held windows of the stream's final level.
func (m *manber) finish() {
	m.release(m.params.Level(m.pos))
}

// release emits the held windows of level at least lvl, in stream order,
// and forgets all held windows.
func (m *manber) release(lvl int) {
	for _, fp := range m.held {
		if m.params.HashLevel(fp.Hash) >= lvl {
			m.emit(fp)
		}
	}
	m.held = m.held[:0]
}

// write scans b, which continues the stream, emitting kept windows.
func (m *manber) write(b []byte) {
	if len(b) == 0 {
		return
	}
	w := m.w
	scan := m.scan
	if m.level < int(m.k) {
		// The stream is at least this long, so it has at least this level.
		m.level = m.params.Level(m.pos + int64(len(b)))
		if m.level < int(m.k) {
			scan = m.scanLow
		} else {
			m.release(int(m.k)) // they come before the windows of b
		}
	}
	// The first bytes of b push out bytes of the history: scan them in a
	// copy of history+head so the scanning loops see one contiguous slice.
	n := min(len(b), w)
	s := append(append(m.scratch[:0], m.hist...), b[:n]...)
	scan(s, w, m.pos-int64(w))
	if len(b) > w {
		scan(b, w, m.pos)
		copy(m.hist, b[len(b)-w:])
	} else {
		copy(m.hist, s[len(s)-w:])
	}
	m.pos += int64(len(b))
}

// scan rolls the hash over buf[from:], where buf[j] is the stream byte at
// index base+j and buf[j-w] is valid for every j >= from (from >= w).
func (m *manber) scan(buf []byte, from int, base int64) {
	h := m.h
	for j := from; j < len(buf); {
		if end := base + int64(j); end < m.nextEnd {
			// Windows ending before nextEnd overlap the last kept window.
			stop := len(buf)
			if lim := m.nextEnd - base; lim < int64(stop) {
				stop = int(lim)
			}
			h = m.roll(buf, j, stop, h)
			j = stop
			continue
		}
		hit, hh, stop, hs := m.rollTest(buf, j, h)
		h, j = hs, stop
		if hit < 0 {
			break
		}
		end := base + int64(hit)
		m.emit(Fingerprint{Hash: (hh & m.modMask) >> m.kmin, Offset: end - int64(m.w) + 1, Len: uint32(m.w)})
		// rollTest may have rolled up to three bytes past the hit; they end
		// windows that overlap the kept one (W >= 8), which are skipped.
		m.nextEnd = end + int64(m.w)
	}
	m.h = h
}

// scanLow is scan while the stream's level is below the top: it rolls the
// hash one byte at a time and holds every window kept at m.level or above
// (top-level windows without overlap), to be emitted by release.
func (m *manber) scanLow(buf []byte, from int, base int64) {
	h, p, out, w := m.h, m.p, &m.out, m.w
	low := uint64(1)<<uint(m.level) - 1
	for j := from; j < len(buf); j++ {
		h = h*p + uint64(buf[j]) - out[buf[j-w]]
		f := h & m.modMask
		if f&low != 0 {
			continue
		}
		end := base + int64(j)
		if end < int64(w)-1 {
			continue // the window would start before the stream
		}
		if f&m.sel == 0 {
			if end < m.nextEnd {
				continue // overlaps the last top-level window kept
			}
			m.nextEnd = end + int64(w)
		}
		m.held = append(m.held, Fingerprint{Hash: f >> m.kmin, Offset: end - int64(w) + 1, Len: uint32(w)})
	}
	m.h = h
}

// roll returns the hash after rolling h over buf[from:to] without testing
// any window. It advances four bytes per step along the dependency chain:
//
//	F_{i+4} = p^4·F_i + (((d_1·p + d_2)·p + d_3)·p + d_4)
//
// where d_j = t_new − t_old·p^W, so the chain carries one multiply per four
// bytes and the rest is independent work.
func (m *manber) roll(buf []byte, from, to int, h uint64) uint64 {
	if to <= from {
		return h
	}
	p, p4, out := m.p, m.p4, &m.out
	nw := buf[from:to]
	old := buf[from-m.w : to-m.w]
	old = old[:len(nw)]
	i := 0
	for ; i < len(nw)-3; i += 4 {
		d1 := uint64(nw[i]) - out[old[i]]
		d2 := uint64(nw[i+1]) - out[old[i+1]]
		d3 := uint64(nw[i+2]) - out[old[i+2]]
		d4 := uint64(nw[i+3]) - out[old[i+3]]
		h = h*p4 + (((d1*p+d2)*p+d3)*p + d4)
	}
	for ; i < len(nw); i++ {
		h = h*p + uint64(nw[i]) - out[old[i]]
	}
	return h
}

// rollTest rolls h over buf[from:], testing every window, until a candidate
// window ends at buf[hit]; hh is its hash. The roll itself may run up to
// three bytes further: it stopped before buf[stop] with hash hs. When no
// window in buf is a candidate, hit is -1 and stop is len(buf).
//
// It advances four bytes per step along the dependency chain,
//
//	F_{i+4} = p^4·F_i + (((d_1·p + d_2)·p + d_3)·p + d_4)
//
// and computes F_{i+1}, F_{i+2} and F_{i+3} beside the chain (F_{i+k} =
// p^k·F_i + the first k terms), so the chain carries one multiply of latency
// per four windows; the tail of buf goes two bytes, then one, at a time.
func (m *manber) rollTest(buf []byte, from int, h uint64) (hit int, hh uint64, stop int, hs uint64) {
	p, p2, p3, p4, sel, out := m.p, m.p2, m.p3, m.p4, m.sel, &m.out
	nw := buf[from:]
	old := buf[from-m.w : len(buf)-m.w]
	old = old[:len(nw)]
	i := 0
	for ; i < len(nw)-3; i += 4 {
		d1 := uint64(nw[i]) - out[old[i]]
		d2 := uint64(nw[i+1]) - out[old[i+1]]
		d3 := uint64(nw[i+2]) - out[old[i+2]]
		d4 := uint64(nw[i+3]) - out[old[i+3]]
		e2 := d1*p + d2
		e3 := e2*p + d3
		h1 := h*p + d1
		h2 := h*p2 + e2
		h3 := h*p3 + e3
		h = h*p4 + (e3*p + d4)
		if h1&sel == 0 {
			return from + i, h1, from + i + 4, h
		}
		if h2&sel == 0 {
			return from + i + 1, h2, from + i + 4, h
		}
		if h3&sel == 0 {
			return from + i + 2, h3, from + i + 4, h
		}
		if h&sel == 0 {
			return from + i + 3, h, from + i + 4, h
		}
	}
	for ; i < len(nw)-1; i += 2 {
		d1 := uint64(nw[i]) - out[old[i]]
		d2 := uint64(nw[i+1]) - out[old[i+1]]
		h1 := h*p + d1
		h = h*p2 + (d1*p + d2)
		if h1&sel == 0 {
			return from + i, h1, from + i + 2, h
		}
		if h&sel == 0 {
			return from + i + 1, h, from + i + 2, h
		}
	}
	if i < len(nw) {
		h = h*p + uint64(nw[i]) - out[old[i]]
		if h&sel == 0 {
			return from + i, h, from + i + 1, h
		}
	}
	return -1, h, len(buf), h
}
