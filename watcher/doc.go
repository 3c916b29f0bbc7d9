// Package watcher finds the files under a root that the index must know
// about, and tells when they change.
//
// Vocabulary:
//
//   - A root is a directory tree sif keeps indexed.
//   - A walk visits every entry under a root without following symlinks, so
//     a symlink loop cannot trap it, and reports each one as an Entry of a
//     Kind: a regular file to index, or a reason it is not one (a symlink, a
//     special file such as a fifo, socket or device, or an entry that could
//     not be read). Directories are descended into, not reported; one that
//     cannot be listed is reported as Unreadable and skipped.
//   - A Watcher watches roots recursively on top of fsnotify, which watches
//     single directories. It reports to a Handler: a file that may have
//     changed, a path that is gone, a new directory to scan (files can land
//     in it before its watch does), an overflow (events were lost: reconcile
//     the root), and directories it could not watch (out of inotify
//     watches: reconcile them on a schedule).
//   - The settle delay is how long a path must be quiet before it is
//     fingerprinted; a Settler absorbs bursts of events per path, and hands
//     a path on at the latest after a maximum delay while it keeps changing.
//   - A Clock is the time source of the settle delay, so tests run on a
//     FakeClock and never sleep.
package watcher
