package daemon

import (
	"fmt"
	"log/slog"
)

// The free space kept under the index (Config.MinFreeSpace) is room for
// Pebble to flush a memtable and compact. Its default, 64 MiB, would be
// most of a small filesystem: where it is more than a quarter of the
// filesystem's size, a quarter of the size is kept instead, and the log
// says so. A minimum that was set (flag or configuration key) is kept as
// set.

// minFreeSetting names what sets the free space kept under the index, for
// the status and the log.
const minFreeSetting = "sifd run --min-free-space BYTES, or min_free_space in the configuration file"

// smallFSShare is the share of its filesystem the default minimum may
// take at most: 4 for a quarter.
const smallFSShare = 4

// statTotal is totalSpace, a variable so that tests can make a small disk.
var statTotal = totalSpace

// minFreeFor returns the free space to keep under the index in dir:
// minFree as configured (after defaults), scaled down to a quarter of the
// filesystem when it is the default (defaulted) and more than that, which
// it logs to log.
func minFreeFor(dir string, minFree int64, defaulted bool, log *slog.Logger) int64 {
	if !defaulted || minFree <= 0 {
		return minFree
	}
	total, err := statTotal(dir)
	if err != nil || total == 0 || uint64(minFree) <= total/smallFSShare {
		return minFree
	}
	scaled := int64(total / smallFSShare)
	log.Info("the index's filesystem is small: keeping a quarter of it free rather than the default",
		"db", dir, "size", humanBytes(total), "min_free_space", humanBytes(uint64(scaled)),
		"default", humanBytes(uint64(minFree)), "set_with", minFreeSetting)
	return scaled
}

// lowSpaceText says how much room is under the index, against the minimum
// kept and what sets it, for the reason of a hold for want of room.
func lowSpaceText(free, minFree uint64) string {
	if minFree == 0 {
		return fmt.Sprintf("%s free under the index, with no minimum kept (set one with %s)", humanBytes(free), minFreeSetting)
	}
	return fmt.Sprintf("%s free under the index, below the %s kept free (change it with %s)",
		humanBytes(free), humanBytes(minFree), minFreeSetting)
}
