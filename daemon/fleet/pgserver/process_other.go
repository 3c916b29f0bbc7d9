//go:build !linux

package pgserver

import (
	"errors"
	"syscall"
	"time"
)

func supported() error {
	return errors.New("pgserver: the test PostgreSQL server runs on Linux only")
}

func serverAccount() (*account, error) { return nil, supported() }

func sysProcAttr(*account) *syscall.SysProcAttr { return nil }

func (p *process) killGroup() { p.cmd.Process.Kill() }

func (p *process) waitGroupGone(time.Duration) {}

func (p *process) pause(bool) {}
