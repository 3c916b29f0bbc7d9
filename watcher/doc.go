// Package watcher finds the files under a root that the index must know
// about. Today it walks; live watching with fsnotify builds on it.
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
package watcher
