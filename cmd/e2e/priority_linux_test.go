package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWorkerThreadsGiveWay: the real sifd's workers run on threads of
// their own at the lowest CPU priority (nice 19) and the lowest
// best-effort I/O priority, one thread per worker, and every other
// thread (the queries' among them) at the priority sifd was started
// with.
func TestWorkerThreadsGiveWay(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(1, 20000))
	e.write("b.txt", words(1, 20000))
	e.start("--workers", "3")
	if r := e.sifctl("similar", q); r.code != 0 {
		t.Fatalf("sifctl similar: exit %d: %s", r.code, r.stderr)
	}
	pid := e.daemon.Process.Pid
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("sifd's threads: %v", err)
	}
	low := 0
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(task, "stat"))
		if err != nil {
			t.Fatal(err)
		}
		// After the command's closing parenthesis, nice is the 17th field.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		nice, _ := strconv.Atoi(f[16])
		tid, _ := strconv.Atoi(filepath.Base(task))
		prio, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(tid), 0)
		switch {
		case nice == 19 && errno == 0 && prio == 2<<13|7:
			low++
		case nice != 0:
			t.Errorf("sifd's thread %d runs at nice %d, I/O priority %#x (%v): want 19 and best effort 7 for a worker's, else nice 0", tid, nice, prio, errno)
		}
	}
	if low != 3 {
		t.Errorf("%d of sifd's %d threads run at the workers' priority, want one per worker (3)\n%s", low, len(tasks), e.logs.String())
	}
}
