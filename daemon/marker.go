package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

func (d *Daemon) markerPath() string { return filepath.Join(d.stateDir(), markerName) }

// writeMarker notes an unclean previous run, if any, and writes this run's
// marker.
func (d *Daemon) writeMarker() error {
	b, err := os.ReadFile(d.markerPath())
	switch {
	case err == nil:
		d.unclean = true
		since := time.Now().Add(-time.Hour) // unreadable marker: a conservative guess
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				since = time.Unix(0, ns)
			}
		}
		// Timestamps may be as coarse as 2 s (FAT); step back over them.
		d.racySince.Store(since.Add(-2 * time.Second).UnixNano())
		d.log.Warn("the previous run did not shut down cleanly: files changed since it started are read again",
			"previous_start", since.UTC().Format(time.RFC3339))
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("run marker: %w", err)
	}
	content := fmt.Sprintf("%d %d\n", os.Getpid(), time.Now().UnixNano())
	if err := writeFileSync(d.markerPath(), []byte(content)); err != nil {
		return fmt.Errorf("run marker: %w", err)
	}
	return nil
}

func (d *Daemon) removeMarker() {
	if err := os.Remove(d.markerPath()); err != nil {
		d.log.Warn("cannot remove the run marker", "err", err)
	}
}
