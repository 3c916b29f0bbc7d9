package main

import (
	"io/fs"
	"strings"
	"testing"
	"time"
)

type fakeInfo struct{ mode fs.FileMode }

func (f fakeInfo) Name() string       { return "" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return nil }

// A refused connection names what refused it: the directory that cannot
// be searched, not the socket, when the directory is what blocks.
func TestDeniedCause(t *testing.T) {
	stat := func(locked string, sockMode fs.FileMode) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) {
			switch {
			case locked != "" && strings.HasPrefix(p, locked+"/"):
				return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrPermission}
			case p == "/run/sifd/sifd.sock":
				return fakeInfo{fs.ModeSocket | sockMode}, nil
			case p == locked:
				return fakeInfo{fs.ModeDir | 0o700}, nil
			}
			return fakeInfo{fs.ModeDir | 0o755}, nil
		}
	}
	for _, c := range []struct {
		name, locked string
		sock         fs.FileMode
		want         string
	}{
		{"runtime directory 0700", "/run/sifd", 0o666, "the directory /run/sifd (mode 0700) does not let you reach the socket"},
		{"a directory above it", "/run", 0o666, "the directory /run (mode 0700)"},
		{"the socket itself", "", 0o600, "the socket (mode 0600) is private to the user the daemon runs as"},
	} {
		got := deniedCause("/run/sifd/sifd.sock", stat(c.locked, c.sock))
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, got, c.want)
		}
	}
}

func TestUseColor(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	for _, c := range []struct {
		flag string
		tty  bool
		env  func(string) (string, bool)
		want bool
	}{
		{"auto", true, env("TERM", "xterm"), true},
		{"auto", false, env("TERM", "xterm"), false},
		{"auto", true, env("TERM", "dumb"), false},
		{"auto", true, env("TERM", "xterm", "NO_COLOR", ""), false},
		{"always", false, env("TERM", "dumb", "NO_COLOR", "1"), true},
		{"never", true, env("TERM", "xterm"), false},
	} {
		if got := useColor(c.flag, c.tty, c.env); got != c.want {
			t.Errorf("--color %s, terminal %v: colour %v, want %v", c.flag, c.tty, got, c.want)
		}
	}
}

// --color takes only its three words, and --socket's help prints one
// default.
func TestColorAndSocketFlags(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(t.Context(), []string{"--color", "rainbow", "status"}, &out, &errOut); code != exitError ||
		!strings.Contains(errOut.String(), `--color "rainbow": want auto, always or never`) {
		t.Fatalf("--color rainbow: exit %d, %q", code, errOut.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"status", "--help"}, &out, &errOut); code != exitFound {
		t.Fatalf("status --help: exit %d", code)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "--socket") && strings.Count(line, "default") != 1 {
			t.Errorf("--socket's help names %d defaults: %q", strings.Count(line, "default"), line)
		}
	}
}

// Every flag's help shows one default, printed from the value in effect
// (gendocs.CheckDefaults, which gen-docs runs before writing the pages).
func TestOneDefaultPerFlag(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(t.Context(), []string{"gen-docs", t.TempDir()}, &out, &errOut); code != exitFound {
		t.Fatalf("gen-docs: exit %d: %s", code, errOut.String())
	}
}
