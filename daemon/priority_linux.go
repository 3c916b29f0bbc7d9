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
	runtime.LockOSThread()
	tid := unix.Gettid()
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, workerNice); err != nil {
		return fmt.Errorf("lowering a worker thread's priority: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), workerIOPrio); e != 0 {
		return fmt.Errorf("lowering a worker thread's I/O priority: %w", e)
	}
	return nil
}

// lowPriorityWorkers says that workers run at a priority of their own.
const lowPriorityWorkers = true
