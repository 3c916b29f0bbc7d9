package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal of the given width: the master, which
// reads what is written to the slave, and the slave.
func openPTY(t *testing.T, cols uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal to test a terminal's view on: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal to test a terminal's view on: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal to test a terminal's view on: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestExplainOnTerminal: on a terminal, compare --explain takes the
// terminal's width and highlights the runs; with NO_COLOR it does not.
func TestExplainOnTerminal(t *testing.T) {
	dir := t.TempDir()
	var text bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&text, "line %d of a file explained on a terminal, long enough to count\n", i)
	}
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	os.WriteFile(a, text.Bytes(), 0o644)
	os.WriteFile(b, append([]byte("a new first line, only in B, also long enough to count\n"), text.Bytes()...), 0o644)
	none := filepath.Join(dir, "none.sock")
	for _, noColor := range []bool{false, true} {
		if noColor {
			t.Setenv("NO_COLOR", "1")
		}
		m, s := openPTY(t, 120)
		out := make(chan string)
		go func() {
			var buf bytes.Buffer
			io.Copy(&buf, m) // ends with EIO once the slave is closed
			out <- buf.String()
		}()
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"--socket", none, "compare", "--explain", a, b}, s, &stderr)
		s.Close()
		got := <-out
		m.Close()
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		if hasColor := strings.Contains(got, "\x1b[32m"); hasColor == noColor {
			t.Errorf("NO_COLOR set %v, colours %v:\n%s", noColor, hasColor, got)
		}
		// The row of the run fills the terminal's 120 columns (the
		// plain view is 100 wide).
		found := false
		for _, l := range strings.Split(got, "\n") {
			l = strings.TrimRight(l, "\r")
			if !strings.HasPrefix(l, "= ") || !strings.Contains(l, "1-40") {
				continue
			}
			found = true
			plain := strings.NewReplacer("\x1b[32m", "", "\x1b[0m", "").Replace(l)
			if n := len([]rune(plain)); n < 110 {
				t.Errorf("row %q is %d columns, want the terminal's width", plain, n)
			}
		}
		if !found {
			t.Errorf("no row for the run A 1-40 = B 2-41:\n%s", got)
		}
	}
}
