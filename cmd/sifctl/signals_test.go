package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptStops: a command whose context a signal cancels stops at
// once, whatever it is reading, and exits 128 plus the signal's number
// with one line saying so.
func TestInterruptStops(t *testing.T) {
	sock := startFake(t, &fakeDaemon{})
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 8<<30); err != nil { // sparse: minutes to read
		t.Fatal(err)
	}
	for _, c := range []struct {
		sig  syscall.Signal
		args []string
		want int
	}{
		{syscall.SIGINT, []string{"similar", big}, 130},
		{syscall.SIGTERM, []string{"similar", big}, 143},
		{syscall.SIGTERM, []string{"similar", "--fast", big}, 143},
		{syscall.SIGTERM, []string{"similar", "--json", big}, 143},
		{syscall.SIGINT, []string{"basis", big}, 130},
		{syscall.SIGTERM, []string{"compare", big, big}, 143},
		{syscall.SIGTERM, []string{"similar", filepath.Dir(big)}, 143},
	} {
		name := c.sig.String() + " " + strings.Join(c.args, " ")
		ctx, cancel := context.WithCancelCause(context.Background())
		var out, errb bytes.Buffer
		done := make(chan int)
		go func() { done <- run(ctx, append([]string{"--socket", sock}, c.args...), &out, &errb) }()
		time.Sleep(300 * time.Millisecond)
		cancel(&interrupted{sig: c.sig})
		select {
		case code := <-done:
			if code != c.want || !strings.Contains(errb.String(), "interrupted by") {
				t.Errorf("%s: exit %d, stderr %q; want %d", name, code, errb.String(), c.want)
			}
		case <-time.After(time.Second):
			t.Fatalf("%s: still running a second after the signal", name)
		}
	}
}
