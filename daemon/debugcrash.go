package daemon

import (
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// debugCrashEnv names a file for the tests of a daemon that Pebble kills
// (cmd/e2e TestSupervisorRestartsDeadDaemon): when the fault poll finds
// the file, it removes it and makes Pebble rotate its write-ahead log with
// the creation of the next one failing (EIO, which the index does not
// wait out as it does a read-only or full filesystem). Pebble then panics
// in rotateWAL with its lock released, which the Go runtime turns into a
// fatal error ("sync: unlock of unlocked mutex", cockroachdb/pebble#5601)
// that ends the process. Never set it otherwise.
const debugCrashEnv = "SIFD_DEBUG_CRASH_WAL"

// debugCrash is the hook's state; its trigger is "" unless debugCrashEnv
// is set.
var debugCrash = struct {
	trigger string
	armed   atomic.Bool
}{trigger: os.Getenv(debugCrashEnv)}

// debugFS returns the filesystem the index runs on: nil (the OS's) unless
// debugCrashEnv is set.
func debugFS() vfs.FS {
	if debugCrash.trigger == "" {
		return nil
	}
	return crashFS{vfs.Default}
}

// crashFS fails the creation of a write-ahead log once armed.
type crashFS struct{ vfs.FS }

func (fs crashFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".log") && debugCrash.armed.CompareAndSwap(true, false) {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return fs.FS.Create(name, c)
}

// debugCrashPoll, called by the fault poll, kills the process through
// Pebble if the trigger file exists.
func (d *Daemon) debugCrashPoll() {
	if debugCrash.trigger == "" {
		return
	}
	if err := os.Remove(debugCrash.trigger); err != nil {
		return
	}
	d.log.Warn("debug: making Pebble fail to create its next log", "env", debugCrashEnv)
	debugCrash.armed.Store(true)
	// Close flushes the memtable, which rotates the log with Pebble's
	// lock held and released by defer, as a write that fills the memtable
	// does.
	_ = d.ix.cur().Close()
}
