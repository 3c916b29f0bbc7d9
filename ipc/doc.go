// Package ipc is sif's local API: HTTP/1.1 with JSON bodies over a Unix
// socket, and the Go client that sifctl and other programs use.
//
// Vocabulary:
//
//   - The daemon listens on one Unix socket. Every route is under /v1/; a
//     route that changes incompatibly gets a new version prefix, never a new
//     meaning.
//   - A query carries fingerprints, not a path: the client reads and
//     fingerprints the file itself, with the parameters the daemon reports
//     in /v1/info, and the daemon never opens a path a client names. The
//     query may carry the file's path so the file is not listed as its own
//     match.
//   - Percentages on the wire are numbers from 0 to 100.
//   - Hashes on the wire are lowercase hex: 16 digits for a fingerprint, 64
//     for a strong (SHA-256) content hash.
//   - Paths are strings. A path that is not valid UTF-8 is sent as its
//     closest UTF-8 rendering in "path" plus its exact bytes, base64, in
//     "path_raw".
//   - An error is a non-2xx status with {"error": {"code": CODE, "message":
//     TEXT}}; CODE is one of the Code constants and never changes meaning.
//     A route asked with a method it does not take answers 405
//     method_not_allowed with the methods it takes in Allow.
//   - A prefix (prefix=P, path_prefix) is a directory tree, matched by whole
//     path components: /a/b holds /a/b/x, not /a/bin.
//   - Identical files (dupes) that are hard links to one inode are listed,
//     marked with hard_link_of, and counted once in the redundant copies.
//   - A query may carry its bytes (content, up to MaxContent) or a
//     signature of its 32-byte windows (windows): the daemon then checks
//     the best candidates (CheckTop, plus ties) against their current
//     bytes, which it reads itself, only for files the index answered and
//     the caller may read (ContentOpener), and reports exact measures
//     (package index/exact), marked with the match's measure. The same
//     reading of both files' bytes lets /v1/basis simulate rdiff's delta.
//
// Routes:
//
//	GET  /v1/info     scheme, parameters and counts
//	POST /v1/similar  one against all: SimilarRequest → SimilarResponse
//	POST /v1/basis    the best basis for a delta of a file: BasisRequest → BasisResponse
//	GET  /v1/groups   all against all: ?threshold=PCT&max_df=N&min_shared=N&all_types=1&prefix=P
//	GET  /v1/dupes    identical files: ?prefix=P
//	GET  /v1/status   what the daemon is doing: roots, queue, counters
//	GET  /v1/roots    the roots and their states
//	POST /v1/roots    RootsRequest (add or remove a root, persisted) → RootsResponse
//	POST /v1/rescan   RescanRequest (a directory, or every root) → RescanResponse
//	POST /v1/wait     WaitRequest → WaitResponse once every earlier change is applied
//
// The last four need a backend that implements Controller.
//
// Limits (ServerOptions; the defaults in brackets) keep one client from
// holding the daemon:
//
//   - A body larger than MaxBody [64 MiB], or a query with more than
//     MaxFeatures [1,048,576] fingerprints, is answered 413 too_large; a
//     body not received within BodyTimeout [30 s] 408 timeout.
//   - A body is read whole before its request takes a slot, and counts
//     against MaxBodyInFlight [128 MiB] as it arrives, so a slow client
//     holds no slot and only what it sent.
//   - A slot is then taken for the rest of the request: MaxConcurrent [16]
//     of them, MaxWhole [1] for the whole-index requests GET /v1/groups and
//     /v1/dupes, and MaxWaits [64] for POST /v1/wait, which mostly sleeps.
//     With none free a request waits in a short queue, first come first
//     served: up to QueueWait [1 s] behind at most MaxQueued [64] others,
//     or WholeWait [10 s] behind MaxWholeQueued [4] for whole-index ones,
//     none for waits; beyond that the answer is 503 busy with Retry-After.
//     Identical whole-index requests of one caller that wait together
//     share one answer. The Client retries a busy answer a few times, then
//     fails with ErrBusy.
//   - An answer is written within WriteTimeout [30 s] of its first byte,
//     or the connection is closed, so a client that stops reading frees
//     its slot.
//   - At most MaxConns [128] connections are open. A new connection
//     closes the one that has waited longest without a request in
//     progress (idle, or still sending its header), failing that the one
//     sending its body longest, so idle and slowloris connections cost
//     bounded memory and cannot keep a client out.
package ipc
