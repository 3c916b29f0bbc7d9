package pgserver

import (
	"os"
	"os/exec"
)

// process is a running postgres.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has exited and been reaped
	err  error         // its exit status, once done is closed
	// killed are the pids killGroup killed: postgres and its children.
	killed []int
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// interrupt asks postgres for a fast shutdown.
func (p *process) interrupt() { p.cmd.Process.Signal(os.Interrupt) }

// account is the user the server runs as when the test runs as root.
type account struct {
	name     string
	uid, gid int
}
