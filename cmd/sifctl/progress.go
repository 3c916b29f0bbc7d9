package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/sif-dev/sif/ipc"
)

// progress is one line on the terminal's standard error, rewritten in
// place while a long command works and erased when it ends. It is shown
// only when both standard output and standard error are terminals: a
// script or a pipe gets nothing extra.
type progress struct {
	mu    sync.Mutex
	w     io.Writer // nil: not shown
	width int
	shown bool
}

// newProgress returns the progress line of g's command.
func (g *globals) newProgress() *progress {
	if g.progressTo != nil { // tests
		return &progress{w: g.progressTo, width: 100}
	}
	out, ok1 := g.stdout.(*os.File)
	errf, ok2 := g.stderr.(*os.File)
	if !ok1 || !ok2 || !term.IsTerminal(int(out.Fd())) || !term.IsTerminal(int(errf.Fd())) {
		return &progress{}
	}
	w := 80
	if c, _, err := term.GetSize(int(errf.Fd())); err == nil && c > 1 {
		w = c - 1
	}
	return &progress{w: errf, width: w}
}

// show replaces the line with s, cut to the terminal's width.
func (p *progress) show(s string) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := []rune(s); len(r) > p.width {
		s = string(r[:p.width-1]) + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", s)
	p.shown = true
}

// done erases the line.
func (p *progress) done() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

// whileWaiting shows the daemon's status (watchStatus) until the function
// it returns is called, which erases the line.
func (p *progress) whileWaiting(ctx context.Context, c *ipc.Client, what string) (stop func()) {
	if p.w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		p.watchStatus(ctx, c, what, progressEvery)
	}()
	return func() {
		cancel()
		<-ended
		p.done()
	}
}

// watchStatus shows, every interval until ctx is done, what the daemon is
// doing as status reports it (what is being done, how far, an estimate),
// for a command that waits on it.
func (p *progress) watchStatus(ctx context.Context, c *ipc.Client, what string, interval time.Duration) {
	if p == nil || p.w == nil {
		return
	}
	start := time.Now()
	var first *ipc.Status
	firstAt := start
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := c.Status(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			p.show(fmt.Sprintf("%s: %s, no answer from sifd yet", what, time.Since(start).Round(time.Second)))
		default:
			if first == nil {
				first, firstAt = st, time.Now()
			}
			p.show(what + ": " + statusLine(st, first, time.Since(firstAt), time.Since(start)))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// statusLine sums st up in one line: the scans' files done of those seen,
// the queues, and, from the files done since first (elapsed ago), an
// estimate of the time left for what has been seen.
func statusLine(st, first *ipc.Status, elapsed, waited time.Duration) string {
	var seen, done, doneBefore uint64
	for _, r := range st.Roots {
		seen += r.FilesSeen
		done += r.FilesDone
	}
	for _, r := range first.Roots {
		doneBefore += r.FilesDone
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", waited.Round(time.Second))
	if st.State == "scanning" || seen > done {
		fmt.Fprintf(&b, ", scanning: %d of %d files found", done, seen)
		if seen > 0 {
			fmt.Fprintf(&b, " (%d %%)", done*100/seen)
		}
		if rate := float64(done-min(done, doneBefore)) / elapsed.Seconds(); rate > 0 && seen > done && elapsed >= time.Second {
			if left := time.Duration(float64(seen-done) / rate * float64(time.Second)).Round(time.Second); left > 0 {
				fmt.Fprintf(&b, ", about %s left for those", left)
			}
		}
	}
	q := st.Queue
	if n := q.Settling + q.Live + q.Scan; n > 0 {
		fmt.Fprintf(&b, "; queued: %d changed, %d settling, %d found", q.Live, q.Settling, q.Scan)
	}
	fmt.Fprintf(&b, "; %d files indexed", st.Index.Files)
	return b.String()
}

// untilAnswer shows "what, Ns" until the function it returns is called
// (at the answer's first line, or its end), which erases the line; it is
// safe to call more than once.
func (p *progress) untilAnswer(ctx context.Context, what string) (stop func()) {
	return p.untilAnswerWith(ctx, what, "", nil)
}

// untilWork is untilAnswer for the request named id, with how far the
// daemon says it has come (GET /v1/work, on a connection of its own) once
// it says: "cmd: linking similar files, 45 %, about 6s left, 12s".
func (p *progress) untilWork(ctx context.Context, c *ipc.Client, id, what, cmd string) (stop func()) {
	return p.untilAnswerWith(ctx, what, cmd, func(ctx context.Context) string {
		ctx, cancel := context.WithTimeout(ctx, progressEvery)
		defer cancel()
		w, err := c.Work(ctx, id)
		if err != nil {
			return "" // not started yet, or a daemon that cannot tell
		}
		return workLine(w)
	})
}

// workLine says how far w has come: its step, and the part of it done
// with an estimate of the time left in it, when the daemon knows them.
func workLine(w *ipc.Work) string {
	switch {
	case w.Step == "":
		return ""
	case w.Done < 0:
		return w.Step
	}
	s := fmt.Sprintf("%s, %d %%", w.Step, int(w.Done*100))
	if in := time.Duration(w.StepElapsedNs); w.Done >= 0.02 && w.Done < 1 && in >= time.Second {
		left := time.Duration(float64(in) * (1 - w.Done) / w.Done)
		s += fmt.Sprintf(", about %s left", left.Round(time.Second))
	}
	return s
}

// untilAnswerWith is untilAnswer, showing "short: detail" instead of what
// when detail (which may be nil) answers.
func (p *progress) untilAnswerWith(ctx context.Context, what, short string, detail func(context.Context) string) (stop func()) {
	if p.w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		start := time.Now()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			line := what
			if detail != nil {
				if d := detail(ctx); d != "" {
					line = short + ": " + d
				}
			}
			if ctx.Err() != nil {
				return
			}
			p.show(fmt.Sprintf("%s, %s", line, time.Since(start).Round(time.Second)))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-ended
			p.done()
		})
	}
}

// indexedFiles names how many files the daemon has indexed, for a
// progress line ("its 71000 indexed files"), or "its index" when status
// does not answer at once.
func indexedFiles(ctx context.Context, c *ipc.Client) string {
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if st, err := c.Status(ctx); err == nil {
		return fmt.Sprintf("its %d indexed files", st.Index.Files)
	}
	return "its index"
}

// indexedFilesIf is indexedFiles when g's progress is shown, and ""
// otherwise (no status request for a line nobody sees).
func indexedFilesIf(ctx context.Context, g *globals) string {
	if g.newProgress().w == nil {
		return ""
	}
	return indexedFiles(ctx, g.client())
}
