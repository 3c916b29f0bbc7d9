package ipc

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// heavy are the packages a client must not pull in: the index (its
// subpackages fingerprint and exact are light) and, whole trees, the store
// under it and what that brings along.
func heavy(pkg string) bool {
	if pkg == "github.com/sif-dev/sif/index" {
		return true
	}
	for _, tree := range []string{
		"github.com/cockroachdb/pebble",
		"github.com/cockroachdb/errors",
		"github.com/prometheus",
		"github.com/getsentry/sentry-go",
	} {
		if pkg == tree || strings.HasPrefix(pkg, tree+"/") {
			return true
		}
	}
	return false
}

// deps lists the packages pkgs import, directly or not, other than the
// standard library's, as built for goos.
func deps(t *testing.T, goos string, pkgs ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test runs go list: %v", err)
	}
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}, pkgs...)
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(os.Environ(), "GOOS="+goos)
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s (GOOS=%s): %v\n%s", strings.Join(pkgs, " "), goos, err, stderr)
	}
	return strings.Fields(string(out))
}

// clientDeps are the packages outside the standard library that package ipc
// may depend on, as its doc says: sif's fingerprint packages, the ctime
// of a file it shares with the daemon, and the two small libraries they
// use (xxh3 hashes in index/fingerprint; cpuid is how xxh3 picks its
// vector code).
var clientDeps = []string{
	"github.com/sif-dev/sif/index/fingerprint",
	"github.com/sif-dev/sif/index/exact",
	"github.com/sif-dev/sif/ipc/filestat",
	"github.com/zeebo/xxh3",
	"github.com/klauspost/cpuid/v2",
}

// TestClientIsLight: the client package and sifctl pull in neither the
// index nor Pebble and its dependencies (cockroachdb/errors, Prometheus,
// Sentry), and the client package depends on nothing but the standard
// library and clientDeps.
func TestClientIsLight(t *testing.T) {
	const mod = "github.com/sif-dev/sif/"
	for _, goos := range []string{"linux", "windows"} {
		for _, pkg := range []string{mod + "ipc", mod + "cmd/sifctl"} {
			if bad := slices.DeleteFunc(deps(t, goos, pkg), func(d string) bool { return !heavy(d) }); len(bad) > 0 {
				t.Errorf("GOOS=%s: %s depends on %d heavy packages: %s", goos, pkg, len(bad), strings.Join(bad, " "))
			}
		}
		extra := slices.DeleteFunc(deps(t, goos, mod+"ipc"), func(d string) bool {
			return d == mod+"ipc" || slices.Contains(clientDeps, d)
		})
		if len(extra) > 0 {
			t.Errorf("GOOS=%s: package ipc depends on %s, beyond the standard library and %s", goos, strings.Join(extra, " "), strings.Join(clientDeps, ", "))
		}
	}
}

// TestDirsimIsLight: package ipc/dirsim, directory similarity for any
// client, pulls in nothing heavy either, and nothing beyond the client's
// own dependencies but golang.org/x/sync.
func TestDirsimIsLight(t *testing.T) {
	const mod = "github.com/sif-dev/sif/"
	for _, goos := range []string{"linux", "windows"} {
		got := deps(t, goos, mod+"ipc/dirsim")
		if bad := slices.DeleteFunc(slices.Clone(got), func(d string) bool { return !heavy(d) }); len(bad) > 0 {
			t.Errorf("GOOS=%s: ipc/dirsim depends on %d heavy packages: %s", goos, len(bad), strings.Join(bad, " "))
		}
		allowed := deps(t, goos, mod+"ipc")
		extra := slices.DeleteFunc(got, func(d string) bool {
			return d == mod+"ipc/dirsim" || slices.Contains(allowed, d) || strings.HasPrefix(d, "golang.org/x/sync/")
		})
		if len(extra) > 0 {
			t.Errorf("GOOS=%s: package ipc/dirsim depends on %s, beyond the client's dependencies and x/sync", goos, strings.Join(extra, " "))
		}
	}
}
