package index

import (
	"sync"
	"sync/atomic"
	"time"
)

// Progress is how far a long run of the index (Groups, EachGroup) has
// come, for whoever asks while it works, such as a status request beside
// it: the step it is at and the part of that step done. The run writes
// it (Begin, SetDone); any goroutine may read it at any time (Step). A
// nil *Progress takes no notes.
type Progress struct {
	mu    sync.Mutex
	step  string
	since time.Time
	// done is the part of the step done, in millionths; unknownDone when
	// the step cannot tell.
	done atomic.Uint32
}

const unknownDone = ^uint32(0)

// Step returns the step the run is at ("" before the first), the part of
// it done (0..1, or -1 when the step cannot tell) and when it began.
func (p *Progress) Step() (step string, done float64, since time.Time) {
	p.mu.Lock()
	step, since = p.step, p.since
	p.mu.Unlock()
	done = -1
	if d := p.done.Load(); d != unknownDone && step != "" {
		done = float64(d) / 1e6
	}
	return step, done, since
}

// Begin starts a step; how much of it is done is unknown until SetDone.
func (p *Progress) Begin(step string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.step, p.since = step, time.Now()
	p.mu.Unlock()
	p.done.Store(unknownDone)
}

// SetDone says that the part f (0..1) of the step is done.
func (p *Progress) SetDone(f float64) {
	if p == nil {
		return
	}
	p.done.Store(uint32(min(max(f, 0), 1) * 1e6))
}

// keyDone is setDone for a pass over the postings at fingerprint key k:
// keys are hashes, spread evenly, and come in order. It stores only when
// the key's top 12 bits change, about 4,000 times a pass.
func (p *Progress) keyDone(k, prev uint32) {
	if p != nil && k>>20 != prev>>20 {
		p.SetDone(float64(k) / (1 << 32))
	}
}
