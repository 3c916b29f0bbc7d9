package main

import (
	"fmt"
	"path/filepath"
)

// Paths the commands take from the command line, made absolute: the
// daemon has another current directory.

// absPrefix makes a --prefix directory absolute against the current
// directory, and clean, as rescan does with its directory: the daemon has
// another one, and refuses a relative prefix. "" (no prefix) stays "". The daemon
// matches the prefix by whole path components: /src/a matches /src/a and
// /src/a/x, not /src/ab.
func absPrefix(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--prefix %s: %w", p, err)
	}
	return abs, nil
}

// absDir makes dir absolute against the current directory, as the daemon
// has another. It keeps dir's bytes: a name that is not UTF-8 is sent
// exactly (see ipc.PathFields).
func absDir(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("empty directory name")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	return abs, nil
}
