package daemon

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// A Notifier is told how the daemon's life goes, in the messages of
// systemd's notify protocol (sd_notify(3)), one or more "KEY=value" lines
// per call: "READY=1" once the socket serves queries (the first scan may
// still be running: sifctl wait waits for it), "STATUS=..." lines on the
// first scan's progress every Config.ProgressEvery and once it has ended,
// and "STOPPING=1" when shutdown begins. Notify is called from the
// daemon's goroutines, one call at a time; an error is logged once and
// otherwise ignored. sifd run passes one that speaks sd_notify to
// $NOTIFY_SOCKET; the daemon only says when, the Notifier how.
type Notifier interface {
	Notify(state string) error
}

// notifier serialises the calls to a Notifier, which may be nil. Once it
// has sent STOPPING=1, it sends nothing more: a scan's last status must
// not replace the stopping one.
type notifier struct {
	mu       sync.Mutex
	n        Notifier
	log      *slog.Logger
	failed   bool
	stopping bool
}

func (n *notifier) notify(lines ...string) {
	if n.n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping {
		return
	}
	n.stopping = slices.Contains(lines, "STOPPING=1")
	if err := n.n.Notify(strings.Join(lines, "\n")); err != nil && !n.failed {
		n.failed = true
		n.log.Warn("cannot notify the service manager", "err", err)
	}
}

// scanStatus describes the first scan's progress over every root for the
// service manager: "first scan: 1200 of 5000 files, 12.3 MB/s".
func scanStatus(roots []ipc.RootStatus, elapsed time.Duration) string {
	var done, seen, bytes uint64
	walked := true
	for _, r := range roots {
		done += r.FilesDone
		seen += r.FilesSeen
		bytes += r.BytesDone
		walked = walked && r.WalkDone
	}
	of := fmt.Sprintf("%d files", seen)
	if !walked {
		of = fmt.Sprintf("%d files found so far", seen)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(bytes) / s / 1e6
	}
	return fmt.Sprintf("first scan: %d of %s, %.1f MB/s", done, of, rate)
}

// readyStatus describes the daemon once the first scan has ended:
// "ready: 20734 files indexed; watching 2 roots".
func readyStatus(files uint64, roots []ipc.RootStatus) string {
	count := map[string]int{}
	var states []string
	for _, r := range roots {
		if count[r.State] == 0 {
			states = append(states, r.State)
		}
		count[r.State]++
	}
	var parts []string
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("%s %d %s", s, count[s], plural(count[s], "root", "roots")))
	}
	return fmt.Sprintf("ready: %d files indexed; %s", files, strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
