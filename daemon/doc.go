// Package daemon is sifd's engine room: it opens the index, scans the roots
// into it with a pool of workers, serves the local API, and shuts down
// cleanly. Run is its entry point: it returns when its context is
// cancelled, or with the error that stopped it. Stop signals, exit
// statuses and service managers are the caller's (cmd/sifd); the daemon
// only tells a Notifier when it is ready, how its first scan goes and when
// it stops, and reloads Config.Reload's configuration on SIGHUP.
//
// Vocabulary:
//
//   - A root is a directory tree sifd keeps indexed. Roots are absolute,
//     with symlinks resolved once at start; a root inside another root is
//     dropped, since the outer one covers it. The roots in effect are the
//     configured ones (Config.Roots: the configuration file or --root),
//     plus those added and minus those removed at run time (sifctl roots),
//     which the roots file (roots.json in the index directory) keeps and
//     which win over the configuration. Each root's source is logged at
//     start and shown in the status, as are configured roots left out.
//   - A scan walks a root without following symlinks and hands every regular
//     file to the workers. A file whose size, modification time, device and
//     inode equal its index record is unchanged and costs one stat; others
//     are read, fingerprinted and written to the index, each in one atomic
//     batch. After the walk, records of files that are no longer regular
//     files on disk are removed.
//   - A worker reads one file at a time. It opens it without following
//     symlinks and without blocking (a fifo swapped in after the walk cannot
//     hang it), checks it is still a regular file, and compares its size and
//     modification time before and after reading: a file that changed while
//     it was read is read again, and after a few tries counted and left for
//     the next scan, never indexed half old, half new.
//   - Faults (faults.go): a full disk puts index writes on hold (the
//     daemon is degraded, queries go on, the waiting paths are applied
//     once there is room); a damaged or deleted index is moved aside and
//     rebuilt by a full scan, swapped under the queries (ixHandle); a
//     missing root's files are kept but not answered until it is back.
//   - Skips (unreadable files, special files, symlinks, files that vanish
//     mid-scan, files above the size limit) are counted in the status and
//     never stop a scan.
//   - The first scan of a root is its full scan at start. The daemon serves
//     queries during it (and tells a Notifier, such as systemd, that it is
//     ready); a root shows as scanning while a full scan of it is queued
//     or running, and Wait counts every scan registered before it was
//     called, so a wait made during the first scan returns after it.
package daemon
