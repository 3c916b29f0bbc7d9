package main

import (
	"fmt"
	"path/filepath"
)

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
