package watcher

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// DetectFS tells what kind of filesystem holds path (following symlinks),
// and its name: "ext4", "nfs", "proc"..., or its magic number in hex
// ("0x1234abcd") for one that is not known here.
func DetectFS(path string) (kind FSKind, name string, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return LocalFS, "", &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	// f_type is a 32-bit magic number in a field whose width and
	// signedness vary with the architecture.
	kind, name = fsKindOf(uint32(st.Type))
	if uint32(st.Type) == unix.TMPFS_MAGIC && mountType(path) == "devtmpfs" {
		// devtmpfs (/dev) says it is a tmpfs; only the mount table tells.
		return VirtualFS, "devtmpfs", nil
	}
	return kind, name, nil
}

// mountType returns the filesystem type that /proc/self/mountinfo gives
// for the mount holding path (following symlinks), or "" if it cannot
// tell.
func mountType(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	return mountTypeOf(f, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
}

// mountTypeOf finds in mountinfo, read from r, the filesystem type of the
// mount of device major:minor: each line is "ID PARENT MAJOR:MINOR ROOT
// MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS".
func mountTypeOf(r io.Reader, major, minor uint32) string {
	want := []byte(fmt.Sprintf("%d:%d", major, minor))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 3 || !bytes.Equal(fields[2], want) {
			continue
		}
		for i, f := range fields {
			if string(f) == "-" && i+1 < len(fields) {
				return string(fields[i+1])
			}
		}
	}
	return ""
}

// fsKindOf maps a statfs f_type magic number to a kind and a name.
func fsKindOf(magic uint32) (FSKind, string) {
	if fs, ok := filesystems[magic]; ok {
		return fs.kind, fs.name
	}
	return LocalFS, fmt.Sprintf("0x%x", magic)
}

type fsInfo struct {
	kind FSKind
	name string
}

// filesystems maps the statfs magic numbers of linux/magic.h (and of a few
// out-of-tree filesystems) to what they are. What is not here is local.
var filesystems = map[uint32]fsInfo{
	// Network and cluster filesystems: changes made elsewhere raise no
	// event here.
	unix.NFS_SUPER_MAGIC:   {NetworkFS, "nfs"},
	unix.SMB_SUPER_MAGIC:   {NetworkFS, "smb"},
	unix.CIFS_SUPER_MAGIC:  {NetworkFS, "cifs"},
	unix.SMB2_SUPER_MAGIC:  {NetworkFS, "smb2"},
	unix.V9FS_MAGIC:        {NetworkFS, "9p"},
	unix.CEPH_SUPER_MAGIC:  {NetworkFS, "ceph"},
	unix.AFS_SUPER_MAGIC:   {NetworkFS, "afs"},
	unix.AFS_FS_MAGIC:      {NetworkFS, "afs"},
	unix.CODA_SUPER_MAGIC:  {NetworkFS, "coda"},
	unix.NCP_SUPER_MAGIC:   {NetworkFS, "ncp"},
	unix.OCFS2_SUPER_MAGIC: {NetworkFS, "ocfs2"},
	0x01161970:             {NetworkFS, "gfs2"},
	0x0bd00bd0:             {NetworkFS, "lustre"},
	0x47504653:             {NetworkFS, "gpfs"},
	0x19830326:             {NetworkFS, "beegfs"},
	// FUSE: sshfs, rclone, s3fs... mostly front remote storage, and the
	// kernel reports only the changes made through this mount.
	unix.FUSE_SUPER_MAGIC: {NetworkFS, "fuse"},

	// Kernel pseudo-filesystems.
	unix.PROC_SUPER_MAGIC:      {VirtualFS, "proc"},
	unix.SYSFS_MAGIC:           {VirtualFS, "sysfs"},
	unix.DEBUGFS_MAGIC:         {VirtualFS, "debugfs"},
	unix.TRACEFS_MAGIC:         {VirtualFS, "tracefs"},
	unix.SECURITYFS_MAGIC:      {VirtualFS, "securityfs"},
	unix.CGROUP_SUPER_MAGIC:    {VirtualFS, "cgroup"},
	unix.CGROUP2_SUPER_MAGIC:   {VirtualFS, "cgroup2"},
	unix.DEVPTS_SUPER_MAGIC:    {VirtualFS, "devpts"},
	unix.PSTOREFS_MAGIC:        {VirtualFS, "pstore"},
	unix.BPF_FS_MAGIC:          {VirtualFS, "bpf"},
	unix.EFIVARFS_MAGIC:        {VirtualFS, "efivarfs"},
	unix.SELINUX_MAGIC:         {VirtualFS, "selinuxfs"},
	unix.SMACK_MAGIC:           {VirtualFS, "smackfs"},
	unix.BINFMTFS_MAGIC:        {VirtualFS, "binfmt_misc"},
	unix.NSFS_MAGIC:            {VirtualFS, "nsfs"},
	unix.RDTGROUP_SUPER_MAGIC:  {VirtualFS, "resctrl"},
	unix.OPENPROM_SUPER_MAGIC:  {VirtualFS, "openpromfs"},
	unix.USBDEVICE_SUPER_MAGIC: {VirtualFS, "usbdevfs"},
	unix.BINDERFS_SUPER_MAGIC:  {VirtualFS, "binder"},
	0x62656570:                 {VirtualFS, "configfs"},
	0x19800202:                 {VirtualFS, "mqueue"},
	0x65735543:                 {VirtualFS, "fusectl"},

	// Local filesystems with a name worth logging.
	unix.EXT4_SUPER_MAGIC:      {LocalFS, "ext4"}, // also ext2 and ext3
	unix.XFS_SUPER_MAGIC:       {LocalFS, "xfs"},
	unix.BTRFS_SUPER_MAGIC:     {LocalFS, "btrfs"},
	unix.TMPFS_MAGIC:           {LocalFS, "tmpfs"},
	unix.OVERLAYFS_SUPER_MAGIC: {LocalFS, "overlay"},
	0x2fc12fc1:                 {LocalFS, "zfs"},
	unix.F2FS_SUPER_MAGIC:      {LocalFS, "f2fs"},
	unix.BCACHEFS_SUPER_MAGIC:  {LocalFS, "bcachefs"},
	unix.RAMFS_MAGIC:           {LocalFS, "ramfs"},
	unix.MSDOS_SUPER_MAGIC:     {LocalFS, "vfat"},
	unix.EXFAT_SUPER_MAGIC:     {LocalFS, "exfat"},
	0x5346544e:                 {LocalFS, "ntfs"},
	0x7366746e:                 {LocalFS, "ntfs3"},
	unix.ISOFS_SUPER_MAGIC:     {LocalFS, "iso9660"},
	unix.SQUASHFS_MAGIC:        {LocalFS, "squashfs"},
	0xe0f5e1e2:                 {LocalFS, "erofs"},
	unix.UDF_SUPER_MAGIC:       {LocalFS, "udf"},
	unix.REISERFS_SUPER_MAGIC:  {LocalFS, "reiserfs"},
	0x3153464a:                 {LocalFS, "jfs"},
	unix.NILFS_SUPER_MAGIC:     {LocalFS, "nilfs2"},
	unix.ECRYPTFS_SUPER_MAGIC:  {LocalFS, "ecryptfs"},
	unix.HUGETLBFS_MAGIC:       {LocalFS, "hugetlbfs"},
}
