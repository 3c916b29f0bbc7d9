package daemon

import "golang.org/x/sys/windows"

// totalSpace returns the size in bytes of the volume holding dir.
func totalSpace(dir string) (uint64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var total uint64
	if err := windows.GetDiskFreeSpaceEx(p, nil, &total, nil); err != nil {
		return 0, err
	}
	return total, nil
}
