//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// `sifd run` in the foreground supervises itself: the process started by
// the user (the supervisor) runs the daemon as a child process, a new run
// of the same program with the same arguments, and starts it again when it
// dies of something it did not choose: a fatal error of the Go runtime
// (exit status 2 without having said so, as Pebble's unrecoverable
// panics end), a panic, or a signal that the supervisor did not forward
// (SIGKILL, SIGSEGV, the kernel's OOM killer). A child that exits on its
// own (a clean stop, a bad configuration, an index in use) says with what
// status through a pipe (fd 3, named by $SIFD_SUPERVISOR_FD) just before
// it exits; the supervisor then exits with that status and never starts it
// again, so a configuration error is not retried in a loop. Restarts wait
// 250 ms, doubling with each restart in the last minute, and stop after
// maxRestarts in a minute: the supervisor then exits with the child's
// status. SIGINT, SIGTERM and SIGHUP are forwarded to the child; after
// SIGINT or SIGTERM the child's end is not a crash. The child dies with
// the supervisor (Linux: PR_SET_PDEATHSIG).
//
// A service manager supervises sifd itself: under systemd ($NOTIFY_SOCKET
// or $INVOCATION_ID set; with NotifyAccess=main a child could not even
// notify it) the daemon runs in the process started, and so it does with
// SIFD_SUPERVISE=0 in the environment (tests that need the daemon's pid).
const (
	superviseEnv   = "SIFD_SUPERVISE"
	supervisorFD   = "SIFD_SUPERVISOR_FD"
	maxRestarts    = 5
	restartWindow  = time.Minute
	firstRestartIn = 250 * time.Millisecond
)

// supervise runs the daemon in a child process and restarts it when it
// dies, if args are those of `sifd run` in the foreground and nothing else
// supervises it; it returns the exit status and true. Otherwise it returns
// false and main goes on to run the command itself.
func supervise(args []string) (int, bool) {
	// A root sifd with --run-as becomes the user first; the run it
	// becomes supervises (runas_linux.go).
	if runAsPending(args) || !shouldSupervise(args, os.Getenv) {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, false // run unsupervised rather than not at all
	}
	// PR_SET_PDEATHSIG fires when the thread that started the child ends.
	runtime.LockOSThread()
	log := supervisorLogger(args, os.Stderr)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	var deaths []time.Time
	for {
		code, crashed, stopping := runChild(exe, args, sigs, log)
		if !crashed || stopping {
			return code, true
		}
		now := time.Now()
		recent := deaths[:0]
		for _, t := range deaths {
			if now.Sub(t) < restartWindow {
				recent = append(recent, t)
			}
		}
		deaths = append(recent, now)
		if len(deaths) > maxRestarts {
			log.Error("sifd died too often: not restarting it", "deaths", len(deaths), "within", restartWindow, "exit_status", code)
			return code, true
		}
		wait := firstRestartIn << (len(deaths) - 1)
		log.Error("sifd died: restarting it", "exit_status", code, "in", wait, "restart", len(deaths), "max_per_minute", maxRestarts)
		select {
		case s := <-sigs:
			if s != syscall.SIGHUP {
				return code, true
			}
		case <-time.After(wait):
		}
	}
}

// shouldSupervise reports whether args run the daemon in the foreground
// with nothing else to supervise it: the subcommand is run (and not its
// help), this is not the supervised child, and no service manager started
// it. getenv is os.Getenv.
func shouldSupervise(args []string, getenv func(string) string) bool {
	if getenv(superviseEnv) == "0" || getenv(supervisorFD) != "" ||
		getenv("NOTIFY_SOCKET") != "" || getenv("INVOCATION_ID") != "" {
		return false
	}
	cmd := ""
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help" || a == "--version":
			return false
		case cmd == "" && !strings.HasPrefix(a, "-"):
			cmd = a
		}
	}
	return cmd == "run"
}

// runChild runs the daemon once and returns its exit status (128+N for a
// death by signal N), whether it died without saying so (a crash), and
// whether the supervisor forwarded a stop to it.
func runChild(exe string, args []string, sigs <-chan os.Signal, log *slog.Logger) (code int, crashed, stopping bool) {
	r, w, err := os.Pipe()
	if err != nil {
		log.Error("cannot supervise sifd", "err", err)
		return exitError, false, false
	}
	defer r.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), supervisorFD+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		w.Close()
		log.Error("cannot start sifd", "err", err)
		return exitError, false, false
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for running := true; running; {
		select {
		case s := <-sigs:
			if s != syscall.SIGHUP {
				stopping = true
			}
			_ = cmd.Process.Signal(s)
		case <-done:
			running = false
		}
	}
	code = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	report, _ := io.ReadAll(r)
	if said, err := strconv.Atoi(strings.TrimSpace(string(report))); err == nil {
		return said, false, stopping
	}
	return code, true, stopping
}

// exited tells the supervisor, if any, that the daemon exits with code on
// purpose, and returns code.
func exited(code int) int {
	fd, err := strconv.Atoi(os.Getenv(supervisorFD))
	if err != nil || fd < 3 {
		return code
	}
	f := os.NewFile(uintptr(fd), "supervisor")
	if f == nil {
		return code
	}
	if _, err := fmt.Fprintf(f, "%d\n", code); err != nil && !errors.Is(err, syscall.EPIPE) {
		fmt.Fprintf(os.Stderr, "sifd: telling the supervisor the exit status: %v\n", err)
	}
	f.Close()
	return code
}

// supervisorLogger logs to w in the format --log-format names in args.
func supervisorLogger(args []string, w io.Writer) *slog.Logger {
	json := false
	for i, a := range args {
		if a == "--log-format=json" || a == "--log-format" && i+1 < len(args) && args[i+1] == "json" {
			json = true
		}
	}
	if json {
		return slog.New(slog.NewJSONHandler(w, nil)).With("component", "supervisor")
	}
	return slog.New(slog.NewTextHandler(w, nil)).With("component", "supervisor")
}
