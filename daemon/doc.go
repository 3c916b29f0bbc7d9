// Package daemon is sifd's engine room: it opens the index, scans the roots
// into it with a pool of workers, serves the local API, and shuts down
// cleanly. Run is its entry point: it returns when its context is
// cancelled, or with the error that stopped it. Stop signals, exit
// statuses and service managers are the caller's (cmd/sifd); the daemon
// only tells a Notifier when it is ready, how its first scan goes and when
// it stops, and reloads Config.Reload's configuration on SIGHUP. It keeps
// its socket file in place: one removed or replaced is made again (see
// server.Listener) every Config.SocketCheckEvery and on SIGHUP.
//
// Vocabulary:
//
//   - A root is a directory tree sifd keeps indexed. Roots are absolute,
//     with symlinks resolved once at start; a root inside another root is
//     dropped, since the outer one covers it. The roots in effect are the
//     configured ones (Config.Roots: the configuration file or --root),
//     plus those added and minus those removed at run time (sifctl roots),
//     which the roots file (roots.json in the state directory) keeps and
//     which win over the configuration. Each root's source is logged at
//     start and shown in the status, as are configured roots left out. A
//     removed root's records are deleted in the background, in batches
//     paced by Pebble's backlog, and left out of the status and of every
//     answer from the moment of the removal (forget.go). A
//     root on a kernel pseudo-filesystem (proc, sysfs, devtmpfs...) is
//     refused wherever it is named (config.CheckRootFS).
//   - A scan walks a root without following symlinks and hands every regular
//     file to the workers. A file whose size, modification time, device and
//     inode equal its index record is unchanged and costs one stat; others
//     are read, fingerprinted and written to the index, each in one atomic
//     batch. After the walk, records of files that are no longer regular
//     files on disk are removed.
//   - A worker reads one file at a time. It opens it without following
//     symlinks and without blocking (a fifo swapped in after the walk cannot
//     hang it); on Linux openat2 refuses a symlink anywhere in the path, so
//     a directory replaced by a symlink after the walk cannot lead the read
//     out of the root. It checks the file is still a regular file, and
//     compares its size and modification time before and after reading: a
//     file that changed while it was read is read again, and after a few
//     tries counted and left for the next scan, never indexed half old,
//     half new.
//   - Faults (faults.go, faultloop.go): a full disk, or an index
//     directory that stops taking writes (writable.go), puts index writes
//     on hold (the daemon is degraded, queries go on, the waiting paths
//     are applied once there is room; a ballast file holds room for
//     Pebble, ballast.go); a damaged or deleted index is moved aside and
//     rebuilt by a full scan, swapped under the queries (ixHandle); a
//     missing root's files are kept but not answered until it is back.
//   - Skips (unreadable files, special files, symlinks, files that vanish
//     mid-scan, files above the size limit) are counted in the status and
//     never stop a scan. What could not be read for lack of permission is
//     denied: kept per root, listed in the status, and read again once it
//     may be, on the event a change of permissions raises or by a poll
//     (denied.go).
//   - The fleet (fleetlink.go, package daemon/fleet): with a [fleet]
//     table in its configuration, the daemon links to a fleet index, a
//     database shared by many hosts, through a pool that connects lazily
//     (a database down at start is an error in the status, tried again).
//     With published roots, the index keeps its change journal and a
//     publisher copies the files under those roots there in the
//     background; the status shows the link, the changes not yet
//     published and the lag. sifctl fleet check and forget are answered
//     by the daemon: callers never hold the database's credentials.
//   - A polled root is on a filesystem that sends no change events (NFS,
//     SMB, FUSE; or any root under --no-watch): it is not watched but
//     rescanned every rescan interval, and Wait rescans it.
//   - A reconcile is a full scan of a root that is already indexed: after
//     events were lost (an overflow; repeated ones back off, 1 s doubling
//     up to 5 min), when a missing root is back, after the index was
//     rebuilt, or asked for (sifctl rescan). Its walk is merged with the
//     records under the root read in path order: an unchanged file (size,
//     mtime, ctime, device, inode) costs a stat and no lookup, and the
//     records the walk did not meet are queued for removal once its
//     files are done (reconcile.go).
//   - A change settles before it is applied: its path goes on the live lane
//     once quiet for the settle delay (a removal a little longer, so a
//     moved file's new name comes first and its record moves without a
//     read). Past Config.MaxSettling paths settling, further changes are
//     kept per directory, which is rescanned once it settles
//     (watcher.Settler; changes.go).
//   - A lane is one of the two bounded queues of items (paths to bring up
//     to date) between producers and workers: the live lane carries
//     settled changes and the files of new directories, the bulk lane
//     those of full scans. Workers take live items first (queue.go).
//   - Queries go first: a query being answered (similar, basis,
//     SimiHash's find) holds a processor, and a worker takes a scan item,
//     or goes on past a piece of a file it reads for a scan, only while
//     the queries and the other scanning workers leave one free; it waits
//     at most 250 ms at a time, and the status counts these waits
//     (scan_yields). On Linux the workers' threads also run at the lowest
//     CPU priority (nice 19) and the lowest best-effort I/O priority, with
//     the Go runtime given a thread more per worker, so the kernel hands a
//     waking query's thread a processor at once; long answers (groups,
//     dupes) run at nice 10, below queries and above the scan. Live items
//     and long answers neither wait nor hold (queryfirst.go,
//     priority_linux.go).
//   - A claim is a worker's hold on one path while it brings it up to
//     date: another worker that gets the same path hands its work over
//     and has the claimant look once more, so the last look follows the
//     last change (claims.go).
//   - An epoch numbers a span of time in the tracker (tracker.go). Each
//     unit of work (a settling path, a queued scan, an item) is
//     registered at the epoch current when it was caused, or at the epoch
//     of the work it continues (a retry), and released when done. Wait
//     closes the current epoch and waits until the applied epoch, the last
//     one with nothing open at or before it, reaches it. The settler
//     carries each path's epoch as its tag.
//   - A cookie is a file Wait creates and the watcher reports (never
//     indexed): events arrive in order, so once it is reported every
//     earlier change has been seen. On Linux one cookie in the daemon's
//     own watched directory, StateDir(DB)/cookies, answers for every
//     watched root; elsewhere each root gets one, .sifd-cookie-PID-N
//     (cookies.go).
//   - The state directory, DB.state beside the index directory, holds the
//     roots file and the run marker; the index directory is Pebble's alone
//     (statedir.go).
//   - The run marker (sifd.running) exists while sifd runs; found at start
//     it means the previous run ended uncleanly, and files changed since
//     that run started are read again even when their metadata match
//     (marker.go).
//   - The first scan of a root is its full scan at start. The daemon serves
//     queries during it (and tells a Notifier, such as systemd, that it is
//     ready); a root shows as scanning while a full scan of it is queued
//     or running, and Wait counts every scan registered before it was
//     called, so a wait made during the first scan returns after it.
//     A first scan into a root with nothing indexed (a fresh scan) asks
//     the index to leave the postings of new contents, to be written many
//     at a time (index.FileWrite Deferred); the fault loop
//     writes those pending every tick, the scan before it ends, and Wait
//     before it returns, so what a wait promises is found by queries.
//     Its walk lists files without an lstat: each worker stats its file
//     once open. Into an index that held nothing at all, the scan keeps
//     the strong hashes it has met (index.Bulk), so a copy of bytes it has
//     met joins their content by the content's id, a new content is
//     written without the index searching for an equal one, and a file
//     without the index looking up a record of its path (the Bulk's
//     filter holds every path given one since the scan began).
//
// # The life of a change
//
// A file written under a watched root reaches the index along one chain:
// from fsnotify's goroutine over three of the daemon's (the watcher's
// event goroutine, the settler's, a worker) and two queues (file:
// function at each step):
//
//  1. fsnotify's reader goroutine puts the kernel's event on the Events
//     channel of its watcher.
//  2. watcher/watch.go: Watcher.Run, on the watcher's event goroutine
//     (under Run's errgroup), takes the event, and Watcher.event sorts
//     it: a write, chmod or new file is Changed, a removal or a rename
//     away Removed, a new directory goes to the adder goroutine (see
//     the variants below).
//  3. daemon/daemon.go: watchHandler.Changed (or Removed) counts it, and
//     daemon/changes.go: Daemon.touch registers it at the tracker's
//     current epoch and hands it to watcher/settle.go: Settler.Touch.
//     Queue 1: the settler's pending bursts, one per path.
//  4. watcher/settle.go: Settler.Run, on the settler's goroutine, emits
//     the burst once the path has been quiet for the settle delay (a
//     removal a little longer). Past Config.MaxSettling paths the burst
//     is its directory's, which daemon/changes.go: Daemon.rescanSettled
//     has scanned instead.
//  5. daemon/changes.go: Daemon.settled puts an item for the path on the
//     live lane (daemon/queue.go: lanes.push). Queue 2: the live lane.
//  6. daemon/worker.go: Daemon.worker, on one of the worker goroutines,
//     takes it (daemon/queue.go: lanes.next, live items first), and
//     Daemon.handle claims the path (daemon/claims.go), looking again
//     while changes to it arrive.
//  7. daemon/worker.go: Daemon.syncPath lstats the path. A path gone is
//     forgotten (Daemon.gone, Daemon.forget: index.Index.Remove); a
//     directory, symlink or special file loses its record; a regular file
//     goes on.
//  8. daemon/worker.go: Daemon.indexFile stops at a file whose record
//     matches it (index.Index.Lookup), moves the record of a file renamed
//     to the path without reading it (Daemon.renamed: LookupInode,
//     RenameIf), and otherwise reads the file (daemon/read.go:
//     reader.load: its SHA-256, and the sketch of a file too large to
//     keep whole) and hands what it read to the index in one call:
//     daemon/ixhandle.go: ixHandle.PutFile, which applies the hold on
//     writes and follows a swap of the index, calls index.Index.PutFile.
//  9. index/putfile.go: Index.PutFile joins a copy of a content the index
//     holds to it without a sketch (putCopy); otherwise it has the
//     reader make the sketch (index.FileWrite MakeSketch: reader.sketch)
//     and calls index/write.go: Index.put, which maps the sketch to
//     entries, takes the write lock, looks for an equal content
//     (findContent) and calls store.
//  10. index/write.go: Index.store plans the write (planStore: the old
//     record, and the content it leaves), adds the content's keys
//     (batch.storeContent, batch.setContent, batch.diffPostings,
//     batch.mergePostings: one Pebble merge operand per posting bucket)
//     and the file's (batch.storeFile) to one batch, and commits it
//     (batch.commit): the postings are in Pebble.
//
// Variants:
//
//   - A new directory: Watcher.event hands it to the adder goroutine
//     (watcher/watch.go: Watcher.addTree), which watches it and reports
//     it; daemon/daemon.go: watchHandler.DirAdded queues a scan of it on
//     the live scanner (daemon/scan.go: Daemon.requestScan), whose
//     goroutine walks it (Daemon.runScan) and puts its files on the live
//     lane: steps 6 to 10.
//   - The first scan: daemon/daemon.go: Daemon.firstScan has
//     daemon/rootset.go: Daemon.startRoot watch each root and queue its
//     full scan on the bulk scanner. daemon/scan.go: Daemon.runScan, on
//     that scanner's goroutine, walks the root (watcher.Walk) and puts
//     each file on the bulk lane, which workers take when the live lane
//     is empty: steps 6 to 10. Into a root with nothing indexed (a fresh
//     scan) the walk leaves the lstat out, so step 7 goes straight to
//     step 8, and step 8 sets index.FileWrite Deferred: a new content's
//     postings stay in memory (index/pending.go) after step 10 until
//     index.Index.Flush writes them (runScan once the files are done,
//     the fault loop every tick in daemon/faultloop.go, Wait in
//     daemon/wait.go, or the deferred write that finds too many). Into an
//     empty index runScan also takes an index.Bulk, which step 8 passes
//     (FileWrite Bulk): in step 9 a copy of bytes the scan met joins
//     their content by its id, with neither a search nor a sketch.
//   - A reconcile: lost events (watchHandler.Overflow, then
//     daemon/reconcile.go: Daemon.overflow after its back-off), a root
//     back, an index rebuilt or a rescan asked for queue a full scan on
//     the bulk scanner. Its walk (daemon/scan.go: Daemon.runScan) is
//     merged with the records under the root (daemon/reconcile.go:
//     recordMerge): only files new or differing from their records go on
//     the bulk lane, and the records the walk did not meet follow
//     (Daemon.queueUnmet), for step 7 to remove.
//
// Time: the daemon reads the real clock. Its unit tests of timing (Wait,
// the tracker, overflow back-off) run in testing/synctest bubbles, where
// time is virtual and "still waiting" is checked once every goroutine is
// blocked, so none sleeps; the settler takes a watcher.Clock.
//
// Goroutines: Run's parts run under one errgroup; those that walk trees on
// request (a root added, a removed root's records, the index's
// verification) join it through spawn, so Run returns only after they
// have. Workers stay outside it, so a shutdown can give up on a stuck
// read after Config.ShutdownTimeout.
package daemon
