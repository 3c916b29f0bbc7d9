package pgserver

import (
	"bytes"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func supported() error { return nil }

// serverAccount returns the user to run the server as when the test runs
// as root: postgres (made by Debian's package) or else nobody.
func serverAccount() (*account, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil {
			continue
		}
		return &account{name: name, uid: uid, gid: gid}, nil
	}
	return nil, errors.New("pgserver: running as root, and neither a postgres nor a nobody user exists to run PostgreSQL's server (it refuses root)")
}

// sysProcAttr runs a server binary in a process group of its own (so Kill
// reaches every backend), as the account as when it is not nil, and kills it if the test
// process dies first.
func sysProcAttr(as *account) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if as != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(as.uid), Gid: uint32(as.gid)}
	}
	return attr
}

// killGroup kills postgres and every process it started, at once, as a
// crash would. Its children do not stay in its process group (each
// backend calls setsid), so they are found by their parent: postgres is
// stopped first, so that it forks no more, then its children and it are
// killed. The killed pids are kept for waitGroupGone.
func (p *process) killGroup() {
	pid := p.cmd.Process.Pid
	syscall.Kill(pid, syscall.SIGSTOP)
	p.killed = append(childrenOf(pid), pid)
	for _, c := range p.killed {
		syscall.Kill(c, syscall.SIGKILL)
	}
	syscall.Kill(-pid, syscall.SIGKILL)
}

// waitGroupGone waits, at most timeout, until every process killGroup
// killed is gone (or a zombie): until then a new server on the same data
// finds the old shared memory in use and refuses to start.
func (p *process) waitGroupGone(timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		alive := false
		for _, pid := range p.killed {
			if st, _, ok := procStat(pid); ok && st != "Z" && st != "X" {
				alive = true
				break
			}
		}
		if !alive {
			return
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		c, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(c); ok && ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// procStat returns the state and parent of process pid, from
// /proc/PID/stat; ok is false when there is no such process.
func procStat(pid int) (state string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so parse after its
	// closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(string(f[1]))
	return string(f[0]), ppid, true
}

// pause stops (SIGSTOP) or lets go on (SIGCONT) postgres and every
// process it started.
func (p *process) pause(stop bool) {
	sig := syscall.SIGCONT
	if stop {
		sig = syscall.SIGSTOP
	}
	pid := p.cmd.Process.Pid
	if stop {
		syscall.Kill(pid, sig) // first: it forks no more meanwhile
	}
	for _, c := range childrenOf(pid) {
		syscall.Kill(c, sig)
	}
	syscall.Kill(pid, sig)
}
