package daemon

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// workerNice is the scheduling priority (nice value) of the workers'
// threads: the lowest, as background indexers run, so that the kernel
// gives a processor to a query's thread the moment it wakes, and to the
// workers only what is left.
const workerNice = 19

// workerIOPrio is the I/O priority of the workers' threads: the lowest of
// the best-effort class, so that where the disk's scheduler weighs
// priorities (BFQ) a query's reads and the users' own go before a
// scan's.
const workerIOPrio = ioprioClassBE<<ioprioClassShift | 7

// From linux/ioprio.h.
const (
	ioprioClassBE    = 2
	ioprioClassShift = 13
	ioprioWhoProcess = 1
)

// lowerPriority binds the calling goroutine, a worker, to its thread for
// good and lowers that thread's CPU and I/O priorities. The thread ends
// with the goroutine (it is never unbound), as an unprivileged thread
// could not take its priority back.
func lowerPriority() error {
	tid, err := lockAtNice(workerNice)
	if err != nil {
		return fmt.Errorf("lowering a worker thread's priority: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), workerIOPrio); e != 0 {
		return fmt.Errorf("lowering a worker thread's I/O priority: %w", e)
	}
	return nil
}

// wholeNice is the CPU priority of the whole-index answers (groups,
// dupes): below a query's, which a user or a sync tool waits on for each
// file, above the scan's.
const wholeNice = 10

// whole runs f, a whole-index answer, at wholeNice (see atNice).
func whole(f func()) { atNice(wholeNice, f) }

// atNice runs f on a thread of its own at the CPU priority nice, and
// returns when it has; the thread ends with it. A panic in f is raised
// again in the caller (where the server recovers an answer's).
func atNice(nice int, f func()) {
	var caught any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { caught = recover() }()
		lockAtNice(nice) // at worst f runs at the daemon's priority
		f()
	}()
	<-done
	if caught != nil {
		panic(caught)
	}
}

// lockAtNice binds the calling goroutine to its thread for good and sets
// that thread's CPU priority; it returns the thread's id.
func lockAtNice(nice int) (tid int, err error) {
	runtime.LockOSThread()
	tid = unix.Gettid()
	return tid, unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
}

// lowPriorityWorkers says that workers run at a priority of their own.
const lowPriorityWorkers = true
