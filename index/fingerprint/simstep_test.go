package fingerprint

import (
	"os"
	"os/exec"
	"testing"
)

// The SimiHash step table is filled when a stream is first scanned, not
// when the package is loaded: a process that imports the package and
// never computes a SimiHash (sifctl) does not fill it. The check runs in
// a fresh process, as other tests of this one fill the table.
func TestSimStepFilledOnFirstUse(t *testing.T) {
	if os.Getenv("SIF_TEST_SIMSTEP_CHILD") == "1" {
		filled := func() bool {
			for _, e := range simStep {
				if e != 0 {
					return true
				}
			}
			return false
		}
		if filled() {
			t.Fatal("the step table is filled before any stream is scanned")
		}
		var s simiHash
		s.write([]byte("the table is filled by the first write"))
		if !filled() {
			t.Fatal("the step table is not filled after a write")
		}
		if got, want := s.sum(), naiveSum([]byte("the table is filled by the first write")); got != want {
			t.Fatalf("sum %v, want %v", got, want)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSimStepFilledOnFirstUse$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SIF_TEST_SIMSTEP_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the check in a fresh process failed: %v\n%s", err, out)
	}
}
