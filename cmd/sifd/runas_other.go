//go:build !linux

package main

import (
	"errors"
	"log/slog"

	"github.com/sif-dev/sif/daemon"
)

const runAsFlag = "run-as"

// runAs refuses --run-as: keeping one capability across a change of user
// is Linux's. Elsewhere the service manager runs sifd as its user.
func runAs(name string, _ daemon.Config, _ string, _ []string, _ func(string) bool, _ *slog.Logger) error {
	if name == "" {
		return nil
	}
	return errors.New("--run-as: becoming another user while keeping the right to read every file is done on Linux only; let the service manager start sifd as that user")
}

// runAsPending: no run becomes another user here.
func runAsPending([]string) bool { return false }
