package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The run marker is a file in the state directory that exists while sifd
// runs: written at start, removed after a clean shutdown. Finding it at
// start means the previous run ended without one (killed, crashed, power
// lost). Its content is when that run started.
//
// After an unclean shutdown the first scan trusts metadata less: a file
// changed while the previous run was up may have lost its change event
// with the crash, and a rewrite within the filesystem's timestamp
// granularity keeps size and mtime. Such files (modified since the
// previous run started) are read again even when their metadata match.
const markerName = "sifd.running"

// runMarker is the run marker of a state directory.
type runMarker struct {
	path string
	log  *slog.Logger
}

func newRunMarker(stateDir string, log *slog.Logger) runMarker {
	return runMarker{path: filepath.Join(stateDir, markerName), log: log}
}

// write writes this run's marker. If it finds one already, the previous
// run did not shut down cleanly: it logs so, and returns true and when
// that run started (an hour ago, a conservative guess, if the marker
// cannot be read).
func (m runMarker) write() (unclean bool, since time.Time, err error) {
	b, err := os.ReadFile(m.path)
	switch {
	case err == nil:
		unclean = true
		since = time.Now().Add(-time.Hour) // unreadable marker: a conservative guess
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				since = time.Unix(0, ns)
			}
		}
		m.log.Warn("the previous run did not shut down cleanly: files changed since it started are read again",
			"previous_start", since.UTC().Format(time.RFC3339))
	case !errors.Is(err, os.ErrNotExist):
		return false, time.Time{}, fmt.Errorf("run marker: %w", err)
	}
	content := fmt.Sprintf("%d %d\n", os.Getpid(), time.Now().UnixNano())
	if err := writeFileSync(m.path, []byte(content)); err != nil {
		return false, time.Time{}, fmt.Errorf("run marker: %w", err)
	}
	return unclean, since, nil
}

func (m runMarker) remove() {
	if err := os.Remove(m.path); err != nil {
		m.log.Warn("cannot remove the run marker", "err", err)
	}
}

// racyWindow holds, when not 0, a time (Unix ns) from which files are read
// even if their metadata match their records: after an unclean shutdown,
// files changed while the previous run was up may have lost their change
// events, and a rewrite within the filesystem's timestamp granularity
// keeps size and mtime. It is open from the marker's start of the
// previous run until the first scan ends.
type racyWindow struct{ since atomic.Int64 }

// openAt opens the window at t, stepping back over timestamps as coarse
// as 2 s (FAT).
func (w *racyWindow) openAt(t time.Time) { w.since.Store(t.Add(-2 * time.Second).UnixNano()) }

func (w *racyWindow) close() { w.since.Store(0) }

// covers reports whether a file with this mtime must be read even though
// its metadata match its record.
func (w *racyWindow) covers(mtimeNs int64) bool {
	since := w.since.Load()
	return since != 0 && mtimeNs >= since
}
