//go:build linux

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// ticksPerSecond is USER_HZ, the unit of /proc/PID/stat's times.
const ticksPerSecond = 100

// readBytes returns the bytes process pid has read (rchar: files and
// sockets).
func readBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/io: %q: %v", pid, line, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/io: no rchar:\n%s", pid, b)
	return 0
}

// TestHangUpStopsWork sends queries whose check reads many large indexed
// files (sixteen candidates of 16 MiB each: a second or more of the
// daemon's CPU per query), kills the clients once the daemon is at work,
// and measures what the daemon then spends: it notices the clients are
// gone and stops, costing less than a second of CPU in the two seconds
// after.
func TestHangUpStopsWork(t *testing.T) {
	e := newEnv(t)
	big := make([]byte, ipc.MaxCheckSize)
	rand.NewChaCha8([32]byte{19}).Read(big)
	// Copies: they are read once each to be indexed, and each is a
	// candidate that contains the whole query, so the check reads as many
	// as it reads at most (ipc.CheckMax).
	for i := range ipc.CheckMax {
		e.write(fmt.Sprintf("big/%02d.bin", i), big)
	}
	// Larger than ipc.MaxContent: sent as windows, so the daemon's work is
	// reading and hashing the candidates (the cost of a query sent as
	// bytes, preparing them, is bounded by their size).
	query := filepath.Join(e.dir, "query.bin")
	must(t, os.WriteFile(query, big[:4*ipc.MaxContent], 0o644))
	e.start()
	pid := e.daemon.Process.Pid
	// Quiet: the first scan's flush and compaction are done.
	deadline := time.Now().Add(60 * time.Second)
	for quiet, last := 0, cpuTicks(t, pid); quiet < 3; {
		time.Sleep(200 * time.Millisecond)
		now := cpuTicks(t, pid)
		if quiet++; now-last > 2 {
			quiet = 0
		}
		last = now
		if time.Now().After(deadline) {
			t.Fatal("the daemon is not quiet 60 s after its first scan")
		}
	}

	const clients = 6
	read0 := readBytes(t, pid)
	var cmds []*exec.Cmd
	for range clients {
		cmd := exec.Command(sifctlBin, "--socket", e.socket, "similar", query)
		must(t, cmd.Start())
		cmds = append(cmds, cmd)
	}
	t.Cleanup(func() {
		for _, cmd := range cmds {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// At work: checking the candidates, past the requests' decoding (which
	// is not interrupted): two candidates read per query on average, of
	// the sixteen each reads.
	start := cpuTicks(t, pid)
	deadline = time.Now().Add(120 * time.Second)
	for readBytes(t, pid)-read0 < 2*clients*ipc.MaxCheckSize {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon read %d bytes for the queries in 120 s", readBytes(t, pid)-read0)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, cmd := range cmds {
		cmd.Process.Kill()
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err == nil {
			t.Fatal("a query was answered before its client was killed: the test needs heavier queries")
		}
	}
	// What it spends in the two seconds after: less than a second, and in
	// the second second next to nothing, since it stopped within the
	// first (where carrying on, even on a machine so loaded that it gets
	// a fraction of a core, it would spend that fraction).
	hungUp := cpuTicks(t, pid)
	time.Sleep(time.Second)
	oneSecond := cpuTicks(t, pid)
	time.Sleep(time.Second)
	twoSeconds := cpuTicks(t, pid)
	spent, second := twoSeconds-hungUp, twoSeconds-oneSecond
	t.Logf("the daemon spent %.2f s of CPU in the 2 s after %d clients hung up, %.2f s in the second second (%.2f s before)",
		float64(spent)/ticksPerSecond, clients, float64(second)/ticksPerSecond, float64(hungUp-start)/ticksPerSecond)
	if spent >= ticksPerSecond || second >= ticksPerSecond/5 {
		t.Errorf("the daemon spent %.2f s of CPU in the 2 s after its clients hung up, %.2f s in the second second; want less than 1 s, and than 0.2 s",
			float64(spent)/ticksPerSecond, float64(second)/ticksPerSecond)
	}
	// It still answers, with the check.
	if r := e.sifctl("similar", query); r.code != 0 {
		t.Errorf("sifctl similar after the hang-ups: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(e.logs.String(), "request canceled: the client went away") {
		t.Errorf("the daemon's log does not say a request was canceled:\n%s", e.logs.String())
	}
}
