package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// interruptGrace is how long sifctl lets a command wind down after SIGINT
// or SIGTERM cancelled its context before it exits anyway: whatever it is
// doing (reading a file, waiting on the daemon), it is gone within a
// second of the signal.
const interruptGrace = 500 * time.Millisecond

// interrupted is the cause of the root context's cancellation when a
// signal ended the command.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// status is the exit status of a command a signal ended: 128 plus the
// signal's number, as a shell reports it (130 for SIGINT, 143 for
// SIGTERM).
func (e *interrupted) status() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// interruptOf returns what interrupted ctx, or nil if no signal did.
func interruptOf(ctx context.Context) *interrupted {
	var ie *interrupted
	if errors.As(context.Cause(ctx), &ie) {
		return ie
	}
	return nil
}

// exitMu makes one exit: the command's own, or the backstop's after a
// signal.
var exitMu sync.Mutex

// exit ends the process with code, unless the other exit already is.
func exit(code int) {
	exitMu.Lock()
	os.Exit(code)
}

// withSignals returns a context that SIGINT or SIGTERM cancel, with an
// *interrupted as its cause. If the command has not returned
// interruptGrace after the signal (or a second signal comes), the process
// exits anyway with the interrupt's status, after saying so on stderr:
// no read or request keeps sifctl from stopping.
func withSignals(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		ie := &interrupted{sig: <-sigs}
		cancel(ie)
		select {
		case <-sigs:
		case <-time.After(interruptGrace):
		}
		exitMu.Lock()
		fmt.Fprintf(os.Stderr, "sifctl: %v\n", ie)
		os.Exit(ie.status())
	}()
	return ctx
}
