//go:build unix

package peer

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseACL(t *testing.T) {
	entry := func(tag, perm uint16, id uint32) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint16(b, tag)
		binary.LittleEndian.PutUint16(b[2:], perm)
		binary.LittleEndian.PutUint32(b[4:], id)
		return b
	}
	head := binary.LittleEndian.AppendUint32(nil, aclVersion)
	good := append(append(append(append([]byte{}, head...), entry(aclUserObj, 6, 0)...), entry(aclUser, 4, 7)...), entry(aclOther, 0, 0)...)
	acl, err := parseACL(good)
	if err != nil || len(acl) != 3 || acl[1] != (aclEntry{aclUser, 4, 7}) {
		t.Fatalf("parseACL(good) = %v, %v", acl, err)
	}
	if !acl.allows(Cred{UID: 7}, 0, permRead) || acl.allows(Cred{UID: 8}, 0, permRead) {
		t.Errorf("named user entry not applied: %v", acl)
	}
	for name, b := range map[string][]byte{
		"empty":         nil,
		"short header":  head[:3],
		"ragged":        append(append([]byte{}, good...), 1, 2, 3),
		"wrong version": append(binary.LittleEndian.AppendUint32(nil, 1), entry(aclOther, 4, 0)...),
	} {
		if _, err := parseACL(b); err == nil {
			t.Errorf("parseACL(%s) accepted %x", name, b)
		}
	}
}

// CanReadIndexed keeps a readable file only while it is the file indexed:
// the same inode, its status unchanged. Replaced, rewritten or chmod'ed,
// it is refused, even though the caller may read what is there now.
func TestCanReadIndexed(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir makes them 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("indexed"), 0o644); err != nil {
		t.Fatal(err)
	}
	indexed := func() Indexed {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return Indexed{Dev: uint64(st.Dev), Ino: st.Ino, CtimeNs: st.Ctim.Nano()}
	}
	was := indexed()
	v := NewView(Cred{UID: 54321, GID: 54321}) // someone who owns nothing here
	if !v.CanRead(p) || !v.CanReadIndexed(p, was) {
		t.Fatalf("the indexed file, readable by all: CanRead %v, CanReadIndexed %v", v.CanRead(p), v.CanReadIndexed(p, was))
	}
	other := was
	other.Ino++
	if v.CanReadIndexed(p, other) {
		t.Error("a record of another inode is accepted")
	}
	unknown := was
	unknown.CtimeNs = 0
	if !v.CanReadIndexed(p, unknown) {
		t.Error("a record without a ctime is refused on the same inode")
	}
	// Chmod'ed (still readable): its status changed since it was indexed.
	time.Sleep(10 * time.Millisecond)
	if err := os.Chmod(p, 0o604); err != nil {
		t.Fatal(err)
	}
	if !v.CanRead(p) || v.CanReadIndexed(p, was) {
		t.Errorf("chmod'ed since indexed: CanRead %v (want true), CanReadIndexed %v (want false)", v.CanRead(p), v.CanReadIndexed(p, was))
	}
	was = indexed() // read again by the daemon
	if !v.CanReadIndexed(p, was) {
		t.Error("the file as indexed again is refused")
	}
	// Replaced by another file, readable by all.
	q := filepath.Join(dir, "new")
	if err := os.WriteFile(q, []byte("another file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(q, p); err != nil {
		t.Fatal(err)
	}
	if !v.CanRead(p) || v.CanReadIndexed(p, was) {
		t.Errorf("replaced since indexed: CanRead %v (want true), CanReadIndexed %v (want false)", v.CanRead(p), v.CanReadIndexed(p, was))
	}
	// Unreadable, even as indexed.
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if v.CanReadIndexed(p, indexed()) {
		t.Error("a file the caller may not read is accepted")
	}
}
