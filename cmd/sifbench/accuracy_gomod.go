package main

// The Go source of the accuracy corpus: module versions from the Go
// module proxy, through the Go command.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// fetchGoModule copies module path at version v into dst, downloading it
// into the module cache first. It runs `go mod download` in workDir,
// outside any module, so no go.mod or go.sum is touched.
func fetchGoModule(ctx context.Context, workDir, path, v, dst string) error {
	src, err := downloadModule(ctx, workDir, path, v)
	if err != nil {
		return err
	}
	if _, _, err := copyTree(src, dst); err != nil {
		return fmt.Errorf("copy %s@%s: %w", path, v, err)
	}
	return nil
}

// downloadModule fills the module cache with path@version and returns the
// directory it was unpacked in.
func downloadModule(ctx context.Context, workDir, path, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = workDir
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	json.Unmarshal(out, &info)
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s@%s: %s", path, version, info.Error)
	case err != nil:
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", path, version, err, strings.TrimSpace(stderr.String()))
	case info.Dir == "":
		return "", fmt.Errorf("go mod download %s@%s: no directory in its answer", path, version)
	}
	return info.Dir, nil
}
