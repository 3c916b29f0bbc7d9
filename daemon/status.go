package daemon

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// counters are updated by workers and read by status requests.
type counters struct {
	indexed, unchanged, removed, unreadable, special, symlinks atomic.Uint64
	vanished, changed, tooLarge, errors                        atomic.Uint64
	tooSmall, excluded, renamed, events, overflows             atomic.Uint64
	scanYields                                                 atomic.Uint64
}

func (c *counters) snapshot() ipc.Counters {
	return ipc.Counters{
		Indexed:           c.indexed.Load(),
		Unchanged:         c.unchanged.Load(),
		Removed:           c.removed.Load(),
		Unreadable:        c.unreadable.Load(),
		Special:           c.special.Load(),
		Symlinks:          c.symlinks.Load(),
		Vanished:          c.vanished.Load(),
		ChangedDuringRead: c.changed.Load(),
		TooLarge:          c.tooLarge.Load(),
		TooSmall:          c.tooSmall.Load(),
		Excluded:          c.excluded.Load(),
		Renamed:           c.renamed.Load(),
		Events:            c.events.Load(),
		Overflows:         c.overflows.Load(),
		Errors:            c.errors.Load(),
		ScanYields:        c.scanYields.Load(),
	}
}

// errorLog keeps the last few error lines for the status.
type errorLog struct {
	mu    sync.Mutex
	lines []string
}

const maxErrorLines = 20

func (l *errorLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == maxErrorLines {
		copy(l.lines, l.lines[1:])
		l.lines = l.lines[:maxErrorLines-1]
	}
	l.lines = append(l.lines, time.Now().UTC().Format(time.RFC3339)+" "+s)
}

func (l *errorLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}
