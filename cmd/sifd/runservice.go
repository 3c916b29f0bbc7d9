package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/kardianos/service"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/packaging/systemd"
)

// serviceName names sifd's systemd unit (sifd.service) and Windows service.
const serviceName = "sifd"

// servicePaths returns the index directory and socket an installed service
// uses when --db and --socket are not given. A system service uses
// daemon.SystemDB and ipc.SystemSocket (on Windows, %ProgramData%\sifd); a
// user service the per-user state directory and $XDG_RUNTIME_DIR/sifd.sock
// (/run/user/UID/sifd.sock when the variable is unset), whoever installs
// it. $SIF_SOCKET is ignored: the service does not see the installer's
// environment.
func servicePaths(user bool) (db, socket string) {
	switch {
	case runtime.GOOS == "windows":
		base := filepath.Join(os.Getenv("ProgramData"), "sifd")
		if user {
			base = ipc.UserStateDir()
		}
		return filepath.Join(base, "index"), filepath.Join(base, "sifd.sock")
	case !user:
		return daemon.SystemDB, ipc.SystemSocket
	}
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		rt = filepath.Join("/run/user", strconv.Itoa(os.Getuid()))
	}
	return filepath.Join(ipc.UserStateDir(), "index"), filepath.Join(rt, "sifd.sock")
}

// newService returns the kardianos service for sifd. exec and args are the
// command the service manager runs (`sifd run --root ...`); unit is the
// systemd unit text from systemd.Render, used when installing on systemd
// (empty for the control actions). user selects a per-user systemd unit.
func newService(user bool, exec string, args []string, unit string) (service.Service, error) {
	opt := service.KeyValue{
		"UserService": user,
		// Windows: restart a crashed sifd after 10 s; start after boot
		// without delaying it.
		"OnFailure":              "restart",
		"OnFailureDelayDuration": "10s",
		"DelayedAutoStart":       true,
	}
	if unit != "" {
		opt["SystemdScript"] = unit
	}
	cfg := &service.Config{
		Name:        serviceName,
		DisplayName: "sif daemon",
		Description: "sif: keeps an index of similar files and answers queries about them",
		Executable:  exec,
		Arguments:   args,
		Option:      opt,
	}
	return service.New(noProgram{}, cfg)
}

// noProgram is the service.Interface of a service that is only installed
// or controlled, never run, by this process.
type noProgram struct{}

func (noProgram) Start(service.Service) error { return nil }
func (noProgram) Stop(service.Service) error  { return nil }

// runService is daemon.Run for a process that a service manager may have
// started. When it is run interactively (from a shell, or in a container)
// it is exactly daemon.Run. Under systemd or the Windows service manager it
// runs daemon.Run in a goroutine through kardianos/service: a stop request
// (the Windows service control, or SIGTERM, which cancels ctx as it does
// for an interactive run) cancels it and waits for it at most
// systemd.StopTimeout seconds. If the daemon fails on its own, runService
// returns its error; on Windows, where the service manager learns of a
// failure only when the process dies, the process exits with exitError
// instead, so that it is restarted.
func runService(ctx context.Context, cfg daemon.Config) error {
	if service.Interactive() {
		return daemon.Run(ctx, cfg)
	}
	p := newProgram(ctx, cfg)
	s, err := service.New(p, &service.Config{
		Name: serviceName,
		// Return from Run when the root context is cancelled (SIGINT,
		// SIGTERM) or the daemon stops on its own, instead of
		// kardianos's own signal handler, which waits for a signal only.
		Option: service.KeyValue{"RunWait": p.wait},
	})
	if err != nil {
		return fmt.Errorf("sifd: service: %w", err)
	}
	if err := s.Run(); err != nil {
		return err
	}
	return p.result()
}

// program runs the daemon for kardianos/service. Start and Stop are called
// by kardianos, on Windows from the service manager's goroutine.
type program struct {
	parent      context.Context
	cfg         daemon.Config
	stopTimeout time.Duration
	// exitOnFailure says the service manager notices a failed daemon
	// only by its process's death: exit (os.Exit) then ends the process
	// with exitError when the daemon fails on its own.
	exitOnFailure bool
	exit          func(code int)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // Run's result, set before done is closed
}

func newProgram(ctx context.Context, cfg daemon.Config) *program {
	return &program{parent: ctx, cfg: cfg, stopTimeout: systemd.StopTimeout * time.Second, exitOnFailure: exitOnFailure, exit: os.Exit}
}

// Start starts the daemon in a goroutine and returns at once.
func (p *program) Start(service.Service) error {
	ctx, cancel := context.WithCancel(p.parent)
	p.mu.Lock()
	p.cancel, p.done = cancel, make(chan struct{})
	p.mu.Unlock()
	go func() {
		err := daemon.Run(ctx, p.cfg)
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
		if err != nil && ctx.Err() == nil && p.exitOnFailure {
			// The Windows service manager never asks about a service
			// that stopped on its own: crash, so that it restarts us.
			if p.cfg.Logger != nil {
				p.cfg.Logger.Error("sifd failed", "err", err)
			}
			p.exit(exitError)
		}
	}()
	return nil
}

// Stop cancels the daemon and waits for it, at most stopTimeout.
func (p *program) Stop(service.Service) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	t := time.NewTimer(p.stopTimeout)
	defer t.Stop()
	select {
	case <-done:
		return p.result()
	case <-t.C:
		return fmt.Errorf("sifd: the daemon did not stop within %s", p.stopTimeout)
	}
}

// wait blocks until the root context is cancelled (main's SIGINT and
// SIGTERM handler does it) or the daemon has returned. It is kardianos's
// RunWait, called after Start.
func (p *program) wait() {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-p.parent.Done():
	case <-done:
	}
}

func (p *program) result() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if errors.Is(p.err, context.Canceled) {
		return nil
	}
	return p.err
}
