package daemon

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// threadNice reads the nice value of the calling process's thread tid.
func threadNice(t *testing.T, tid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis: state is the
	// first, nice the 17th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("nice of thread %d: %v", tid, err)
	}
	return n
}

// A worker's thread runs at workerNice, and the other threads are left
// as they were.
func TestWorkerThreadPriority(t *testing.T) {
	nice := func(tid int) int { return threadNice(t, tid) }
	ioprio := func(tid int) int {
		t.Helper()
		p, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
		if e != 0 {
			t.Fatalf("I/O priority of thread %d: %v", tid, e)
		}
		return int(p)
	}
	got := make(chan [2]int)
	go func() {
		if err := lowerPriority(); err != nil {
			t.Error(err)
		}
		tid := unix.Gettid()
		got <- [2]int{nice(tid), ioprio(tid)}
	}()
	w := <-got
	if w[0] != workerNice {
		t.Errorf("a worker's thread runs at nice %d, want %d", w[0], workerNice)
	}
	if w[1] != workerIOPrio {
		t.Errorf("a worker's thread has I/O priority %#x, want %#x (best effort, 7)", w[1], workerIOPrio)
	}
	if n := nice(unix.Gettid()); n != 0 {
		t.Errorf("the test's own thread runs at nice %d, want 0", n)
	}
}

// A whole-index answer runs at wholeNice, between the queries and the
// scan, and a panic in it reaches the caller.
func TestWholeAnswerPriority(t *testing.T) {
	var got int
	whole(func() { got = threadNice(t, unix.Gettid()) })
	if got != wholeNice {
		t.Errorf("a whole-index answer runs at nice %d, want %d", got, wholeNice)
	}
	if n := threadNice(t, unix.Gettid()); n != 0 {
		t.Errorf("the caller's thread runs at nice %d after it, want 0", n)
	}
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v from a panicking answer, want its panic", r)
		}
	}()
	whole(func() { panic("boom") })
}
