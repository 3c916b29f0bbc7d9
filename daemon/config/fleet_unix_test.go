//go:build unix

package config

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFleetURLFilePrivate checks that a URL file others may read or write,
// or owned by another user, is refused without showing the URL.
func TestFleetURLFilePrivate(t *testing.T) {
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o602, 0o620, 0o666} {
		path := writeURLFile(t, secretURL, perm)
		got, err := (&Fleet{URLFile: path}).URL(env(nil))
		want := "fleet: " + path + ": mode " + octal(perm) + " lets other users read or change the fleet database's password; chmod 600 it"
		if err == nil || err.Error() != want {
			t.Errorf("mode %04o: URL() = %q, %v; want the error %s", perm, got, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("error %q shows the password", err)
		}
	}

	// A symbolic link to a private file is read; its own mode (0777) does
	// not matter.
	path := writeURLFile(t, secretURL, 0o600)
	link := filepath.Join(t.TempDir(), "link.url")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if got, err := (&Fleet{URLFile: link}).URL(env(nil)); err != nil || got != secretURL {
		t.Errorf("URL() through a link = %q, %v", got, err)
	}

	// Owned by another user, who could change it.
	if os.Geteuid() != 0 {
		return
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no user nobody to own the file: %v", err)
	}
	uid, err := strconv.Atoi(nobody.Uid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, 0); err != nil {
		t.Fatal(err)
	}
	_, err = (&Fleet{URLFile: path}).URL(env(nil))
	want := "fleet: " + path + ": owned by uid " + nobody.Uid + ", neither root nor the user sifd runs as (uid 0), who could change the fleet database it names; chown it"
	if err == nil || err.Error() != want {
		t.Errorf("a file of nobody's: URL() error %v, want %s", err, want)
	}
}

func octal(m os.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return string([]byte{'0', digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}
