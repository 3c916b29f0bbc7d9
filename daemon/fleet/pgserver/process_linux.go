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

// killGroup kills postgres and every process of its group.
func (p *process) killGroup() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

// waitGroupGone waits, at most timeout, until no live (not zombie) process
// is left in postgres's process group.
func (p *process) waitGroupGone(timeout time.Duration) {
	pgid := p.cmd.Process.Pid
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !groupAlive(pgid) {
			return
		}
	}
}

// groupAlive reports whether /proc shows a process of group pgid that is
// not a zombie.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	want := strconv.Itoa(pgid)
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so parse
		// after its closing parenthesis.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || string(f[0]) == "Z" || string(f[0]) == "X" {
			continue
		}
		if string(f[2]) == want {
			return true
		}
	}
	return false
}
