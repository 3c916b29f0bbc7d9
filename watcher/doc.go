// Package watcher finds the files under a root that the index must know
// about, and tells when they change.
//
// Vocabulary:
//
//   - A root is a directory tree sif keeps indexed.
//   - Exclusions are gitignore-like patterns (see Exclude) naming the paths
//     under a root to leave alone: ".git/", "node_modules/", "*.swp". They
//     are matched against paths relative to the root; an excluded directory
//     excludes everything below it.
//   - A walk visits every entry under a root without following symlinks, so
//     a symlink loop cannot trap it, and reports each one as an Entry of a
//     Kind: a regular file to index, or a reason it is not one (a symlink, a
//     special file such as a fifo, socket or device, or an entry that could
//     not be read). Directories are descended into, not reported; one that
//     cannot be listed is reported as Unreadable and skipped. Excluded
//     entries are skipped silently, excluded directories not entered. On
//     Linux the walk reads directories with getdents64 and reaches each
//     entry from its parent's open descriptor (openat, fstatat), which
//     takes about three quarters of the CPU of filepath.WalkDir; elsewhere
//     it is filepath.WalkDir.
//   - A Watcher watches roots recursively on top of fsnotify, which watches
//     single directories. It reports to a Handler: a file that may have
//     changed, a path that is gone, a new directory to scan (files can land
//     in it before its watch does; a directory made below it after the
//     watcher listed its parent is reported on its own), an overflow
//     (events were lost: reconcile the root), and directories it could not
//     watch (out of inotify watches: reconcile them on a schedule). Excluded directories get no
//     watch, and the creation or change of an excluded path is not
//     reported (its removal is). Roots can be added and removed while it
//     runs, and a directory that could not be watched (its permissions
//     kept the watcher out) can be watched again (WatchAgain). A root is watched whole by a walk of its own (AddRoot), or,
//     when the caller walks it anyway, directory by directory as that walk
//     enters each one (AddRootShallow, WatchDir, WalkOptions.OnDir): the
//     tree is walked once.
//   - The settle delay is how long a path must be quiet before it is
//     fingerprinted; a Settler absorbs bursts of events per path, and hands
//     a path on at the latest after a maximum delay while it keeps changing.
//     Each kind of touch has its delay: a removal settles a little later
//     than a change, so a moved file's new name comes first. Each burst
//     carries the oldest tag of its touches, such as an epoch, so that the
//     receiver knows when all the changes seen before some moment have been
//     handed on. Its memory is bounded: past a number of pending paths, new
//     ones are folded into their directory, handed on to be rescanned.
//   - A Clock is the time source of the settle delay, so tests run on a
//     FakeClock and never sleep.
//   - DetectFS tells the kind of filesystem a root is on: local (its events
//     can be trusted), network, cluster or FUSE (changes made elsewhere
//     raise no event, so it must be reconciled on a schedule), or a kernel
//     pseudo-filesystem such as /proc (nothing to index).
package watcher
