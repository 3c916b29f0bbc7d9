package watcher

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDetectFS(t *testing.T) {
	for _, tc := range []struct {
		path string
		kind FSKind
		name string // "" for any
	}{
		{"/proc", VirtualFS, "proc"},
		{"/proc/self/status", VirtualFS, "proc"},
		{"/sys", VirtualFS, "sysfs"},
		{t.TempDir(), LocalFS, ""},
		{"/dev/null", VirtualFS, "devtmpfs"},
		{"/dev/shm", LocalFS, "tmpfs"},
	} {
		if _, err := os.Stat(tc.path); err != nil {
			t.Logf("%s: %v; skipped", tc.path, err)
			continue
		}
		kind, name, err := DetectFS(tc.path)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if kind != tc.kind || tc.name != "" && name != tc.name || name == "" {
			t.Errorf("%s: %v %q, want %v %q", tc.path, kind, name, tc.kind, tc.name)
		}
	}
	_, _, err := DetectFS(filepath.Join(t.TempDir(), "missing"))
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Op != "statfs" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v, want a statfs PathError for a missing file", err)
	}
}

func TestFSKindOf(t *testing.T) {
	for _, tc := range []struct {
		magic uint32
		kind  FSKind
		name  string
	}{
		{0x6969, NetworkFS, "nfs"},
		{0x517b, NetworkFS, "smb"},
		{0xff534d42, NetworkFS, "cifs"},
		{0xfe534d42, NetworkFS, "smb2"},
		{0x01021997, NetworkFS, "9p"},
		{0x00c36400, NetworkFS, "ceph"},
		{0x5346414f, NetworkFS, "afs"},
		{0x65735546, NetworkFS, "fuse"},
		{0x0bd00bd0, NetworkFS, "lustre"},
		{0x47504653, NetworkFS, "gpfs"},
		{0x9fa0, VirtualFS, "proc"},
		{0x62656572, VirtualFS, "sysfs"},
		{0x64626720, VirtualFS, "debugfs"},
		{0x74726163, VirtualFS, "tracefs"},
		{0x73636673, VirtualFS, "securityfs"},
		{0x27e0eb, VirtualFS, "cgroup"},
		{0x63677270, VirtualFS, "cgroup2"},
		{0x1cd1, VirtualFS, "devpts"},
		{0x6165676c, VirtualFS, "pstore"},
		{0xcafe4a11, VirtualFS, "bpf"},
		{0xef53, LocalFS, "ext4"},
		{0x58465342, LocalFS, "xfs"},
		{0x9123683e, LocalFS, "btrfs"},
		{0x01021994, LocalFS, "tmpfs"},
		{0x794c7630, LocalFS, "overlay"},
		{0x2fc12fc1, LocalFS, "zfs"},
		{0x1234abcd, LocalFS, "0x1234abcd"},
	} {
		if kind, name := fsKindOf(tc.magic); kind != tc.kind || name != tc.name {
			t.Errorf("fsKindOf(%#x) = %v %q, want %v %q", tc.magic, kind, name, tc.kind, tc.name)
		}
	}
	// A negative f_type (a 32-bit field on some architectures) maps the same.
	neg := int32(-0xacb2be) // 0xff534d42
	if kind, name := fsKindOf(uint32(neg)); kind != NetworkFS || name != "cifs" {
		t.Errorf("a negative CIFS magic: %v %q", kind, name)
	}
	if s := FSKind(7).String(); s != "FSKind(7)" {
		t.Errorf("FSKind(7).String() = %q", s)
	}
}

func TestMountTypeOf(t *testing.T) {
	const info = `22 1 0:21 / /proc rw,relatime shared:5 - proc proc rw
23 1 0:5 / /dev rw,nosuid shared:2 - devtmpfs udev rw,size=4k
24 23 0:25 / /dev/shm rw,nosuid,nodev shared:3 - tmpfs tmpfs rw
25 1 8:1 / / rw,relatime shared:1 master:3 - ext4 /dev/sda1 rw
`
	for _, tc := range []struct {
		major, minor uint32
		want         string
	}{
		{0, 5, "devtmpfs"}, {0, 25, "tmpfs"}, {8, 1, "ext4"}, {0, 21, "proc"}, {0, 2, ""}, {9, 9, ""},
	} {
		if got := mountTypeOf(strings.NewReader(info), tc.major, tc.minor); got != tc.want {
			t.Errorf("%d:%d: %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
}
