package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/ipc/server"
)

// A root on a kernel pseudo-filesystem is refused wherever roots are
// named, with an error naming the root as given and the filesystem:
// --root and the configuration's roots (Config.withDefaults), the
// configuration file (with its line), and sifctl roots add.
func TestPseudoFSRootRefused(t *testing.T) {
	for _, tc := range []struct{ root, fs string }{
		{"/proc/self", "proc"},
		{"/proc", "proc"},
		{"/sys/kernel", "sysfs"},
		{"/dev", "devtmpfs"},
	} {
		if _, err := os.Stat(tc.root); err != nil {
			t.Logf("%s: %v; not tried", tc.root, err)
			continue
		}
		_, err := Config{Roots: []string{tc.root}}.withDefaults()
		var pe *config.PseudoFSError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "root "+tc.root) || !strings.Contains(err.Error(), "on "+tc.fs+",") {
			t.Errorf("--root %s: %v, want it refused as on %s", tc.root, err, tc.fs)
		}

		dir := t.TempDir()
		file := filepath.Join(dir, "config.toml")
		os.WriteFile(file, []byte("# sif\nroots = [\""+tc.root+"\"]\n"), 0o644)
		_, err = config.Load(file)
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Line != 2 || ce.Key != "roots" || !strings.Contains(ce.Reason, tc.root) || !strings.Contains(ce.Reason, tc.fs) {
			t.Errorf("roots = [%q] in a file: %v, want a config.Error on line 2 naming the root and %s", tc.root, err, tc.fs)
		}
	}

	d, _ := startDaemon(t, Config{Roots: []string{t.TempDir()}})
	err := d.AddRoot("/proc/self")
	if !errors.Is(err, server.ErrBadRoot) || !strings.Contains(err.Error(), "/proc/self") || !strings.Contains(err.Error(), "proc,") {
		t.Errorf("roots add /proc/self: %v", err)
	}
	if n := len(d.Roots()); n != 1 {
		t.Errorf("%d roots after a refused add, want 1", n)
	}
}
