//go:build unix

package main

import (
	"strings"
	"testing"
)

func TestShouldSupervise(t *testing.T) {
	for _, c := range []struct {
		args string
		env  string
		want bool
	}{
		{"run --root /srv", "", true},
		{"run", "", true},
		{"--log-level debug run", "", false}, // not a flag of the root command: cobra refuses it
		{"check --db x", "", false},
		{"dump", "", false},
		{"install --root /srv", "", false},
		{"run --help", "", false},
		{"run -h", "", false},
		{"", "", false},
		{"run --root /srv", "SIFD_SUPERVISE=0", false},
		{"run --root /srv", "SIFD_SUPERVISE=1", true},
		{"run --root /srv", "SIFD_SUPERVISOR_FD=3", false}, // the supervised child
		{"run --root /srv", "NOTIFY_SOCKET=/run/systemd/notify", false},
		{"run --root /srv", "INVOCATION_ID=0123abcd", false},
	} {
		env := map[string]string{}
		if k, v, ok := strings.Cut(c.env, "="); ok {
			env[k] = v
		}
		if got := shouldSupervise(strings.Fields(c.args), func(k string) string { return env[k] }); got != c.want {
			t.Errorf("shouldSupervise(%q) with %q = %v, want %v", c.args, c.env, got, c.want)
		}
	}
}
