// Package ipc is sif's local API as a client sees it: the wire types of
// HTTP/1.1 with JSON bodies over a Unix socket, and the Go client that
// sifctl and sync or backup tools use. It depends only on the standard
// library, sif's own index/fingerprint, index/exact and ipc/filestat
// (a file's ctime, shared with the daemon), and the two small libraries
// those use: github.com/zeebo/xxh3 and, through it,
// github.com/klauspost/cpuid/v2; never on the index or Pebble, so that a
// tool importing it stays small (deps_test.go holds it to that). The daemon's side, the HTTP server, is package
// ipc/server.
// API.md, beside this file, is the HTTP reference: every route, its
// fields, the error codes and the limits, for clients in any language.
//
// Vocabulary:
//
//   - The daemon listens on one Unix socket (DefaultSocket, ClientSocket).
//     Every route is under /v1/; a route that changes incompatibly gets a
//     new version prefix, never a new meaning.
//   - A query carries fingerprints, not a path: the client reads and
//     fingerprints the file itself (SketchFile, QueryFile), with the
//     parameters the daemon reports in /v1/info, and the daemon never opens
//     a path a client names. The query may carry the file's path so the
//     file is not listed as its own match. A file that changes while it is
//     read gives no sketch (ErrChanged), and the *Context variants stop
//     reading once their context is done.
//   - A query's sketch (QuerySketch: its params, path, size, strong hash,
//     type and features) travels on its own as one line of JSON, a
//     signature (NewQuerySketch, DecodeQuerySketch): `sifctl sketch`
//     prints it, and a request made of it alone, without the bytes, is
//     answered with the index's estimates.
//   - Percentages on the wire are numbers from 0 to 100.
//   - Hashes on the wire are lowercase hex: 16 digits for a fingerprint, 64
//     for a strong (SHA-256) content hash.
//   - Paths are strings. A path that is not valid UTF-8 is sent as its
//     closest UTF-8 rendering in "path" plus its exact bytes, base64, in
//     "path_raw" (PathFields, JoinPath, FilePath).
//   - An error is a non-2xx status with {"error": {"code": CODE, "message":
//     TEXT}}; CODE is one of the Code constants and never changes meaning.
//     The Client returns it as an *Error. A route asked with a method it
//     does not take answers 405 method_not_allowed with the methods it
//     takes in Allow.
//   - A prefix (prefix=P, path_prefix) is a directory tree, matched by whole
//     path components: /a/b holds /a/b/x, not /a/bin. It must be absolute,
//     like every path a request names (else 400 bad_request naming the
//     field), and the daemon cleans it: /a/../a//b/ is /a/b.
//   - Identical files (dupes) that are hard links to one inode are listed,
//     marked with hard_link_of, and counted once in the redundant copies.
//   - A query may carry its bytes (content, up to MaxContent) or a
//     signature of its 32-byte windows (windows; ReadQuery makes either):
//     the daemon then checks the best candidates (CheckTop, plus ties)
//     against their current bytes, which it reads itself, only for files
//     the index answered and the caller may read, and reports exact
//     measures (package index/exact), marked with the match's measure. The
//     same reading of both files' bytes lets /v1/basis simulate rdiff's
//     delta.
//   - Busy: a daemon serving as many requests as it takes answers 503
//     busy with Retry-After; the Client tries again a few times
//     (ClientOptions), then fails with ErrBusy.
//
// Routes:
//
//	GET  /v1/info         scheme, parameters and counts
//	POST /v1/similar      one against all: SimilarRequest → SimilarResponse
//	POST /v1/basis        the best basis for a delta of a file: BasisRequest → BasisResponse
//	GET  /v1/groups       all against all: ?threshold=PCT&max_df=N&min_shared=N&all_types=1&prefix=P
//	GET  /v1/dupes        identical files: ?prefix=P&in=DIR&min_size=N
//	POST /v1/dirs/totals  indexed files and bytes per directory tree: DirTotalsRequest → DirTotalsResponse
//	GET  /v1/status       what the daemon is doing: roots, queue, counters
//	GET  /v1/work         how far a long request has come: ?id=ID (its request_id) → Work
//	GET  /v1/roots        the roots and their states
//	POST /v1/roots        RootsRequest (add or remove a root, persisted) → RootsResponse
//	POST /v1/rescan       RescanRequest (a directory, or every root) → RescanResponse
//	POST /v1/wait         WaitRequest → WaitResponse once every earlier change is applied
//	GET  /v1/fleet/check  how this host's rows in the fleet index differ from its index → FleetCheck
//	POST /v1/fleet/forget FleetForgetRequest (a host gone for good) → FleetForgetResponse
//	GET  /v1/fleet/hosts  the hosts of the fleet and their published roots → FleetHostsResponse
//
// The limits the daemon puts on requests (body size, fingerprints per
// query, slots, timeouts, connections) are described in package
// ipc/server.
package ipc
