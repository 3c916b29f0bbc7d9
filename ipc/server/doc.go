// Package server is the daemon's side of sif's local API (package ipc): an
// HTTP/1.1 server on a Unix socket that decodes and checks requests,
// decides what each caller may see, asks the index and the daemon, and
// encodes the answers in ipc's wire types. It imports the index (and so
// Pebble); clients import only package ipc.
//
// Vocabulary:
//
//   - A Backend is what a Server answers from, by role: Query, the index's
//     query interface (index.Querier, which *index.Index implements);
//     Control, the daemon's Controller for /v1/status and the control
//     routes (roots, rescan, wait); and Content, a ContentOpener that reads
//     the current bytes of indexed files to check a query's candidates.
//     Control and Content may be nil: the control routes then answer 404
//     not_found, and matches keep the index's estimates.
//   - The backend returns domain values (index results, statuses, the
//     paths a wait rescanned); only the server converts them to wire types
//     and encodes JSON.
//   - A caller is who sent a request, learned from the socket's peer
//     credentials (package ipc/peer). Access says who sees every file and
//     who may change the daemon; any other caller is answered with only
//     the files it could read (a peer.View) and with no counts that would
//     include others.
//   - A route is a method and a path (routes.go lists them, as ipc's doc
//     and API.md do). Every route's handler is reached through one
//     prologue: the caller is identified (403 forbidden when it cannot
//     be), refused a change it may not make (403), told 404 not_found for
//     a control route the backend cannot serve, and the request's body,
//     if the route takes one, is decoded (400, 408 or 413).
//   - A slot is the right to be served now; a request waits for one in a
//     short queue, first come first served, or is answered 503 busy.
//   - The socket is a Listener: a Unix socket file that, when it is
//     removed or replaced, it makes again at the same path (Ensure, every
//     few seconds from Watch) while the connections already open go on.
//
// Limits (Options; the defaults in brackets) keep one client from holding
// the daemon:
//
//   - A body larger than MaxBody [64 MiB], or a query with more than
//     MaxFeatures [1,048,576] fingerprints, is answered 413 too_large; a
//     body not received within BodyTimeout [30 s] 408 timeout.
//   - A body is read whole before its request takes a slot, and counts
//     against MaxBodyInFlight [128 MiB] as it arrives, so a slow client
//     holds no slot and only what it sent.
//   - A slot is then taken for the rest of the request: MaxConcurrent [16]
//     of them, MaxWhole [2] for the whole-index requests GET /v1/groups and
//     /v1/dupes, and MaxWaits [64] for POST /v1/wait, which mostly sleeps.
//     With none free a request waits in a short queue, first come first
//     served: up to QueueWait [1 s] behind at most MaxQueued [64] others,
//     or WholeWait [10 s] behind MaxWholeQueued [4] for whole-index ones,
//     none for waits; beyond that the answer is 503 busy with Retry-After.
//     Identical whole-index requests of one caller that wait together
//     share one answer, written to each of them as it is made.
//   - A request other than a wait or a whole-index one that is still at
//     work RequestTimeout [1 minute] after it took its slot is stopped and
//     answered 504 timeout: the most CPU one request can cost.
//   - A user (a uid) has a share of each: MaxPerUser [4] of the slots,
//     MaxWholePerUser [1] of the whole-index ones, MaxWaitsPerUser [16] of
//     the waits, MaxBodyPerUser [64 MiB] of the bodies' bytes and
//     MaxConnsPerUser [32] of the connections. A user's requests beyond
//     their share wait in a queue of their own, within the same QueueWait
//     or WholeWait, and are then answered 503 busy naming the share; so a
//     user who floods the socket leaves the rest to the others.
//   - No request costs more than about linear time in its size, whatever
//     numbers it carries: the exact check's tables place window hashes by
//     a mix seeded per process (package index/exact), fingerprints and
//     signatures must be sorted and distinct, and Go's maps and sorts do
//     the rest. A million hashes chosen to collide cost the daemon about
//     what a million random ones do (cmd/e2e TestHostileKeys; go test -run
//     '^$' -bench MeasureSignature ./index/exact/ times each pattern).
//   - Each piece of an answer is written within WriteTimeout [30 s] of
//     being sent, or the connection is closed, so a client that stops
//     reading frees its slot.
//   - A client that hangs up stops its request: the request's context,
//     passed down to the index's queries and to the check of candidates,
//     is done, the work stops within a read of a candidate or a few
//     hundred keys of the index, and nothing is answered. A whole-index
//     answer shared by several clients stops once all of them have gone.
//
// Streaming. The groups and dupes answers are encoded and sent in pieces
// as they are made (see stream), never held whole: one JSON object, the
// same bytes as if encoded at once, so a client that reads it whole sees
// no difference. The status goes with the first piece; a failure after it
// cuts the connection rather than end a truncated answer cleanly.
//   - At most MaxConns [128] connections are open. A new connection
//     closes the one that has waited longest without a request in
//     progress (idle, or still sending its header), failing that the one
//     sending its body longest, so idle and slowloris connections cost
//     bounded memory and cannot keep a client out. A user at their share
//     of connections closes their own idlest one (but not one connected
//     within the last second that has yet to send its request), or
//     failing that its request waits, within QueueWait, for one of theirs
//     to close or fall idle, and is then answered 503 busy and the
//     connection closed. So a hundred clients of one user, each on a
//     connection of its own, take turns on their 32.
package server
