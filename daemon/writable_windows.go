package daemon

import "golang.org/x/sys/windows"

// dirWritable does not ask the system in advance here: a refused write is
// reported by the index when it happens (index.Options.OnUnwritable).
func dirWritable(string) error { return nil }

// diskSize returns the size of the volume holding dir and the bytes
// available on it to the daemon's user.
func diskSize(dir string) (total, free uint64, err error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, 0, err
	}
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, nil); err != nil {
		return 0, 0, err
	}
	return total, free, nil
}
