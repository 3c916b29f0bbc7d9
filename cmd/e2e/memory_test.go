//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMemoryLimit drives the soft limit of sifd's Go heap: the default,
// --memory-limit, $GOMEMLIMIT, the configuration file's memory_limit and
// its "unlimited", each as the running daemon reports it; and a limit too
// small to run in refused with the flag named.
func TestMemoryLimit(t *testing.T) {
	e := newEnv(t)
	e.write("a.txt", words(1, 2000))
	conf := filepath.Join(e.dir, "sifd.toml")
	if err := os.WriteFile(conf, []byte("memory_limit = \"unlimited\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"default", nil, nil, `msg="memory limit" go_heap_mib=128 from=default`},
		{"flag", []string{"--memory-limit", "64MiB"}, nil, `msg="memory limit" go_heap_mib=64 from=--memory-limit`},
		{"environment", nil, []string{"GOMEMLIMIT=200MiB"}, `msg="memory limit" go_heap_mib=200 from=GOMEMLIMIT`},
		{"flag over environment", []string{"--memory-limit", "48MiB"}, []string{"GOMEMLIMIT=200MiB"}, `msg="memory limit" go_heap_mib=48 from=--memory-limit`},
		{"file", []string{"--config", conf}, []string{"GOMEMLIMIT=200MiB"}, `msg="memory limit" go_heap=unlimited from=` + conf},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			e.setenv = c.env
			e.start(c.args...)
			logs := e.logs.String()
			e.stop()
			if !strings.Contains(logs, c.want) {
				t.Errorf("sifd's log does not say %s:\n%s", c.want, logs)
			}
		})
	}
	e.t = t
	e.setenv = nil
	e.startNoWait("--memory-limit", "1MiB")
	select {
	case <-e.waited:
	case <-time.After(30 * time.Second):
		t.Fatal("sifd runs with --memory-limit 1MiB")
	}
	e.daemon = nil
	if e.exit == nil || !strings.Contains(e.logs.String(), "--memory-limit 1MiB: less than the least sifd runs in (32 MiB)") {
		t.Errorf("--memory-limit 1MiB: exit %v, output:\n%s", e.exit, e.logs.String())
	}
}
