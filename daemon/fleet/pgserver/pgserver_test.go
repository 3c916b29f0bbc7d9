package pgserver

import (
	"strings"
	"testing"
)

func TestFindBin(t *testing.T) {
	t.Setenv(EnvBin, "")
	bin, err := findBin()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("server binaries in %s", bin)
	t.Setenv(EnvBin, bin)
	if got, err := findBin(); err != nil || got != bin {
		t.Errorf("with %s=%s: %q %v", EnvBin, bin, got, err)
	}
	empty := t.TempDir()
	t.Setenv(EnvBin, empty)
	if _, err := findBin(); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("with %s naming an empty directory: %v", EnvBin, err)
	}
	if got := majorOf("/usr/lib/postgresql/15/bin"); got != 15 {
		t.Errorf("majorOf: %v", got)
	}
}
