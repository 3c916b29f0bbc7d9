package daemon

import (
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/sif-dev/sif/watcher"
)

// A file that never stops changing is read at most once per max settle
// delay (the settler hands it on after that long however often it
// changes), counted, and named in the status as still changing.

const (
	// maxChanging bounds the files listed as still changing.
	maxChanging = 20
	// changingFor is how long a file stays listed as still changing after
	// it was last found changing (at least three max settle delays): long
	// enough for someone to see it, even when the file happens to stay
	// quiet for a settle delay now and then.
	changingFor = time.Minute
)

// changing lists the files found still changing, for the status: those
// the settler held for the max settle delay, and those a read found
// changing under it.
type changing struct {
	maxDelay time.Duration // the max settle delay in effect
	log      *slog.Logger

	mu    sync.Mutex
	paths map[string]time.Time // path → last found still changing
}

// newChanging returns the list for the max settle delay maxDelay (0 for
// the watcher's default).
func newChanging(maxDelay time.Duration, log *slog.Logger) *changing {
	if maxDelay <= 0 {
		maxDelay = watcher.DefaultMaxSettleDelay
	}
	return &changing{maxDelay: maxDelay, log: log, paths: make(map[string]time.Time)}
}

// settled notes a path handed on by the settler after waiting for waited
// since its first change: one that waited the max settle delay was still
// changing. A path that settled sooner stays listed until expire forgets
// it, so a file that pauses now and then is still shown.
func (c *changing) settled(path string, waited time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if waited < c.maxDelay {
		return
	}
	if _, ok := c.paths[path]; !ok && len(c.paths) >= maxChanging {
		return
	}
	if _, ok := c.paths[path]; !ok {
		c.log.Warn("file keeps changing: read at most once per max settle delay", "path", path, "max_settle_delay", c.maxDelay)
	}
	c.paths[path] = time.Now()
}

// duringRead notes a read that found path changing.
func (c *changing) duringRead(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.paths[path]; ok || len(c.paths) < maxChanging {
		c.paths[path] = time.Now()
	}
}

// expire forgets files not found changing for changingFor (or three max
// settle delays, if longer; the watcher's default at least).
func (c *changing) expire() {
	keep := max(3*max(c.maxDelay, watcher.DefaultMaxSettleDelay), changingFor)
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, t := range c.paths {
		if time.Since(t) > keep {
			delete(c.paths, p)
		}
	}
}

// list returns the files listed as still changing, sorted; nil for none.
func (c *changing) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for p := range c.paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
