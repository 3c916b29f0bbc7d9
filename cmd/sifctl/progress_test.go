package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

func TestStatusLine(t *testing.T) {
	first := &ipc.Status{State: "scanning", Roots: []ipc.RootStatus{{FilesSeen: 1000, FilesDone: 100}}}
	st := &ipc.Status{State: "scanning", Roots: []ipc.RootStatus{{FilesSeen: 4000, FilesDone: 1100}},
		Queue: ipc.QueueStatus{Scan: 2900, Live: 3, Settling: 1}, Index: ipc.IndexStats{Files: 1100}}
	got := statusLine(st, first, 10*time.Second, 12*time.Second)
	// 1,000 files done in 10 s: the 2,900 left take about 29 s.
	want := "12s, scanning: 1100 of 4000 files found (27 %), about 29s left for those; queued: 3 changed, 1 settling, 2900 found; 1100 files indexed"
	if got != want {
		t.Errorf("statusLine:\n got %q\nwant %q", got, want)
	}
	ready := &ipc.Status{State: "ready", Roots: []ipc.RootStatus{{FilesSeen: 5, FilesDone: 5}}, Index: ipc.IndexStats{Files: 5}}
	if got := statusLine(ready, ready, time.Second, time.Second); got != "1s; 5 files indexed" {
		t.Errorf("statusLine of an idle daemon: %q", got)
	}
}

// A waiting command shows the daemon's status on its progress line and
// erases it when it ends; without a terminal it writes nothing.
func TestProgressWhileWaiting(t *testing.T) {
	sock := startFake(t, &fakeDaemon{catchUp: true})
	var buf bytes.Buffer
	g := &globals{progressTo: &buf}
	stop := g.newProgress().whileWaiting(t.Context(), ipc.NewClient(sock), "sifctl wait")
	time.Sleep(700 * time.Millisecond)
	stop()
	out := buf.String()
	if !strings.Contains(out, "\r\x1b[Ksifctl wait: ") || !strings.Contains(out, "files indexed") || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress line: %q", out)
	}
	var none bytes.Buffer
	g = &globals{stdout: &none, stderr: &none}
	stop = g.newProgress().whileWaiting(t.Context(), ipc.NewClient(sock), "sifctl wait")
	time.Sleep(100 * time.Millisecond)
	stop()
	if none.Len() != 0 {
		t.Errorf("progress without a terminal: %q", none.String())
	}
}

// A command that waits for its answer's first line shows how long it has
// waited, and the line is gone before the answer.
func TestProgressUntilAnswer(t *testing.T) {
	var buf bytes.Buffer
	p := (&globals{progressTo: &buf}).newProgress()
	stop := p.untilAnswer(t.Context(), "sifctl groups: sifd is linking")
	time.Sleep(600 * time.Millisecond)
	stop()
	stop() // a second call changes nothing
	out := buf.String()
	if !strings.Contains(out, "\r\x1b[Ksifctl groups: sifd is linking, 0s") || !strings.Contains(out, "sifd is linking, 1s") ||
		!strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress line: %q", out)
	}
}

// How far a request has come, in words: its step, the part done and,
// once a second of the step has passed, the time left in it.
func TestWorkLine(t *testing.T) {
	for _, c := range []struct {
		w    ipc.Work
		want string
	}{
		{ipc.Work{}, ""},
		{ipc.Work{Step: "selecting the files", Done: -1}, "selecting the files"},
		{ipc.Work{Step: "linking similar files, pass 2 of at least 3", Done: 0.25, StepElapsedNs: int64(3 * time.Second)},
			"linking similar files, pass 2 of at least 3, 25 %, about 9s left"},
		{ipc.Work{Step: "listing the groups", Done: 0.5, StepElapsedNs: int64(100 * time.Millisecond)}, "listing the groups, 50 %"},
		{ipc.Work{Step: "listing the groups", Done: 0.01, StepElapsedNs: int64(5 * time.Second)}, "listing the groups, 1 %"},
	} {
		if got := workLine(&c.w); got != c.want {
			t.Errorf("workLine(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
}

// While the daemon works on a named groups request, the progress line
// says its step under the command's name, alone (one ticker), and is gone
// at the end.
func TestProgressUntilWork(t *testing.T) {
	f := &fakeDaemon{groupsHold: make(chan struct{})}
	sock := startFake(t, f)
	c := ipc.NewClient(sock)
	id := ipc.NewRequestID()
	done := make(chan error, 1)
	go func() {
		_, err := c.GroupsEach(t.Context(), ipc.GroupsOptions{RequestID: id}, func(ipc.Group) error { return nil })
		done <- err
	}()
	var buf bytes.Buffer
	p := (&globals{progressTo: &buf}).newProgress()
	stop := p.untilWork(t.Context(), ipc.NewClient(sock), id, "sifctl groups: sifd is linking", "sifctl groups")
	time.Sleep(1300 * time.Millisecond)
	close(f.groupsHold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stop()
	lines := strings.Split(strings.TrimPrefix(buf.String(), "\r\x1b[K"), "\r\x1b[K")
	if len(lines) < 3 || lines[len(lines)-1] != "" {
		t.Fatalf("progress lines: %q", lines)
	}
	seen := false
	for _, l := range lines[:len(lines)-1] {
		switch {
		case strings.HasPrefix(l, "sifctl groups: linking similar files, 50 %, "):
			seen = true
		case strings.HasPrefix(l, "sifctl groups: sifd is linking, ") && !seen:
			// before the daemon has the request
		default:
			t.Errorf("progress line %q among %q", l, lines)
		}
	}
	if !seen {
		t.Errorf("the daemon's step never shown: %q", lines)
	}
}
