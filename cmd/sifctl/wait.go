package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

// progressEvery is how often a long command's progress line is renewed.
const progressEvery = 500 * time.Millisecond

// waitGrace is how much longer than its --timeout wait gives the daemon to
// answer before giving up on it.
const waitGrace = 30 * time.Second

// While no daemon serves on the socket, wait asks again after a back-off
// that grows from firstRetry to maxRetry.
const (
	firstRetry = 50 * time.Millisecond
	maxRetry   = 500 * time.Millisecond
)

func newWaitCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait [--timeout D]",
		Short: "Wait until sifd has applied every change made before the call",
		Long: `wait returns once sifd has applied to its index every change made under its
roots before wait was called: a file written, moved or deleted before
'sifctl wait' is found (or no longer found) by the queries made after it. It
is meant for scripts, sync tools and tests that change files and then query
the index, instead of sleeping and hoping. While sifd is starting, this
includes its first scan of every root, and any reconcile under way counts
too: 'sifd run & sifctl wait' returns once the files already on disk are
indexed.

A daemon that is starting or restarting is waited for: while nothing
listens on the socket (no socket file yet, or one left by a daemon that
was killed) or the daemon answers that it is shutting down, wait asks
again, every 50ms at first, then every 500ms, so that
'systemctl restart sifd && sifctl wait' works. --timeout bounds the whole
wait, for the daemon and for its index. A socket this user may not use
fails at once. On a terminal, wait shows on standard error, renewed twice
a second, what the daemon is doing: the scans' files done of those found,
an estimate of the time left for them, and its queues.

It works with cookie files: the daemon creates a file, deletes it at once,
and waits for its change events. Events arrive in order, so by then the
daemon has seen every earlier change, and it answers once those are
applied. On Linux one cookie in the daemon's own directory (DB.state/cookies)
answers for every watched root and nothing is written in them; elsewhere
each root gets a hidden .sifd-cookie-* file. Roots that have no change
events (polling), and off Linux roots the daemon cannot write to or whose
exclusions would hide the cookie, are rescanned instead; wait lists them.

Exit status: 0 once the daemon has caught up; 1 when --timeout ran out first,
whether no daemon answered on the socket in that time or the daemon had
not caught up (it keeps working: 'sifctl status' shows its queue); 2 on
error. The message says what wait waited for. With --json, the daemon's
answer is printed, with how long sifctl waited for the daemon to answer:
  {"cookies": N, "rescanned": [{"path": ROOT}, ...], "elapsed_ns": N,
   "socket": PATH, "daemon_wait_ns": N}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 || timeout > ipc.MaxWait {
				return failedf("--timeout %s: want a duration above 0, at most %s", timeout, ipc.MaxWait)
			}
			w := &waiter{c: g.client(), timeout: timeout}
			// A client of its own: status is not to queue behind the wait.
			stop := g.newProgress().whileWaiting(cmd.Context(), g.client(), "sifctl wait")
			resp, err := w.wait(cmd.Context())
			stop()
			if err != nil {
				return err
			}
			if g.json {
				return g.printJSON(waitJSON{resp, w.c.Socket(), w.answered.Nanoseconds()})
			}
			printWait(g, resp, w)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", ipc.DefaultWait, "give up after this long, waiting for the daemon included (at most 1h)")
	return cmd
}

// waitJSON is what wait --json prints: the daemon's answer, the socket, and
// how long sifctl waited for the daemon to answer (0 when it did at once).
type waitJSON struct {
	*ipc.WaitResponse
	Socket       string `json:"socket"`
	DaemonWaitNs int64  `json:"daemon_wait_ns"`
}

// waiter is one sifctl wait: it asks the daemon to wait, and asks again
// while no daemon serves on the socket, until its timeout.
type waiter struct {
	c       *ipc.Client
	timeout time.Duration

	// Filled in by wait.
	attempts int           // requests that found no daemon serving
	last     error         // the last of those requests' error
	answered time.Duration // from the start to the request the daemon answered
}

// wait returns the daemon's answer, or a *statusError: exitNothing when
// the timeout ran out, exitError on any other error.
func (w *waiter) wait(parent context.Context) (*ipc.WaitResponse, error) {
	start := time.Now()
	deadline := start.Add(w.timeout)
	backoff := firstRetry
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, w.timedOut(nil)
		}
		sent := time.Now()
		// The daemon ends the wait at its timeout. The client sets no
		// deadline of its own, so give up only if the daemon does not
		// answer well after that.
		ctx, cancel := context.WithTimeout(parent, left+waitGrace)
		resp, err := w.c.Wait(ctx, left)
		cancel()
		if err == nil {
			w.answered = sent.Sub(start)
			return resp, nil
		}
		if parent.Err() != nil || !ipc.NotServing(err) {
			w.answered = sent.Sub(start)
			return nil, w.failed(parent, err)
		}
		if errors.Is(err, ipc.ErrNoDaemon) {
			// connect(2) refuses a path that is not a socket as it does a
			// stale socket; only the latter is worth waiting for.
			if st, serr := os.Stat(w.c.Socket()); serr == nil && (st.Mode().IsRegular() || st.IsDir()) {
				return nil, failedf("%s is not a socket: name sifd's socket with --socket or SIF_SOCKET", w.c.Socket())
			}
		}
		w.attempts++
		w.last = err
		pause := min(backoff, time.Until(deadline))
		select {
		case <-parent.Done():
			return nil, failed(parent.Err())
		case <-time.After(pause):
		}
		backoff = min(2*backoff, maxRetry)
	}
}

// waitedFor says what wait waited for before the daemon answered, or "" if
// it answered the first request.
func (w *waiter) waitedFor() string {
	if w.attempts == 0 {
		return ""
	}
	return fmt.Sprintf("sifd at %s answered after %s", w.c.Socket(), roundDuration(w.answered))
}

// timedOut is the error of a wait whose timeout ran out; daemonErr is the
// daemon's timeout answer, or nil if no daemon answered.
func (w *waiter) timedOut(daemonErr error) error {
	if daemonErr == nil {
		why := "nothing listened there"
		var e *ipc.Error
		if errors.As(w.last, &e) {
			why = "the daemon there was shutting down"
		}
		return &statusError{code: exitNothing, err: fmt.Errorf(
			"wait: timed out after %s waiting for sifd to answer on %s (%s, %d %s)",
			w.timeout, w.c.Socket(), why, w.attempts, plural(w.attempts, "try", "tries"))}
	}
	msg := fmt.Sprintf("wait: timed out after %s: the daemon has not applied every change yet ('sifctl status' shows its queue)", w.timeout)
	if s := w.waitedFor(); s != "" {
		msg += "; " + s
	}
	return &statusError{code: exitNothing, err: errors.New(msg)}
}

// failed maps a failed wait to its exit status: 1 when it timed out, 2
// otherwise. parent is the command's context, to tell our own backstop
// from an interrupt.
func (w *waiter) failed(parent context.Context, err error) error {
	var e *ipc.Error
	switch {
	case errors.As(err, &e) && e.Code == ipc.CodeTimeout:
		return w.timedOut(err)
	case errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil:
		return &statusError{code: exitNothing, err: fmt.Errorf(
			"wait: timed out: the daemon did not answer within %s", w.timeout+waitGrace)}
	}
	return failed(err)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}

func printWait(g *globals, r *ipc.WaitResponse, w *waiter) {
	if s := w.waitedFor(); s != "" {
		fmt.Fprintf(g.stdout, "%s; index ", s)
	}
	fmt.Fprintf(g.stdout, "up to date after %s: %d %s synchronised by cookie file",
		roundDuration(time.Duration(r.ElapsedNs)), r.Cookies, plural(r.Cookies, "root", "roots"))
	if len(r.Rescanned) > 0 {
		fmt.Fprintf(g.stdout, ", %d rescanned", len(r.Rescanned))
	}
	fmt.Fprintln(g.stdout)
	for _, p := range r.Rescanned {
		fmt.Fprintf(g.stdout, "  rescanned %s\n", quoteName(p.Exact()))
	}
}
