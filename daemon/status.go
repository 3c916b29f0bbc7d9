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
		Errors:            c.errors.Load(),
	}
}

// rootState is the progress of one root's scan.
type rootState struct {
	path                                       string
	filesSeen, bytesSeen, filesRead, bytesRead atomic.Uint64
	mu                                         sync.Mutex
	state                                      string
	started, finished                          time.Time
	lastErr                                    string
}

func (r *rootState) setState(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state = s
	switch s {
	case "scanning":
		r.started = time.Now()
	case "ready", "failed":
		r.finished = time.Now()
	}
}

func (r *rootState) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastErr = err.Error()
}

func (r *rootState) status() ipc.RootStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := ipc.RootStatus{
		Path:      r.path,
		State:     r.state,
		FilesSeen: r.filesSeen.Load(),
		BytesSeen: r.bytesSeen.Load(),
		FilesRead: r.filesRead.Load(),
		BytesRead: r.bytesRead.Load(),
		LastError: r.lastErr,
	}
	switch {
	case !r.finished.IsZero():
		st.ScanSecs = r.finished.Sub(r.started).Seconds()
		st.ScanFinish = r.finished.UTC().Format(time.RFC3339)
	case !r.started.IsZero():
		st.ScanSecs = time.Since(r.started).Seconds()
	}
	return st
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
