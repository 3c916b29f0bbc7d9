// Package dirsim finds similar directories from what a sif client receives:
// the directories that hold a good part of a given directory (Similar,
// `sifctl similar DIR`), and the groups of directories that are
// near-copies of each other (Groups, `sifctl groups --dirs`). The daemon
// knows files, not directories: dirsim asks it for the matches of files,
// the groups of similar files with their links, the sets of identical
// files and the totals of directories, and sums them per directory
// itself.
//
// It lives under ipc because it works on the client's answers and needs
// nothing but the client (package ipc) and the fingerprints a client
// computes (index/fingerprint): like ipc, it never imports the index or
// Pebble, so that a sync or backup tool can call it and stay small
// (ipc/deps_test.go checks both). The numbers are estimates from the
// index: no candidate file is read.
//
// # Vocabulary
//
//   - A file pair is two files f and g and how much of each the other
//     holds: f's size times the containment of f in g (the share of f's
//     fingerprints found in g), and the reverse; both whole sizes when the
//     two are identical. A file's part found in another file is its shared
//     bytes there. Matches under FileThreshold percent (or the threshold
//     asked, if lower) count nothing.
//   - A directory's shared bytes in another directory sum, over its files,
//     the most of each found in any one file under the other. Its
//     containment in the other is that over its own bytes; the
//     resemblance of two directories is the bytes they share (the lesser
//     of the two sums) over their union (both sizes less it). The bytes
//     and files indexed under a directory come from the daemon
//     (POST /v1/dirs/totals): counting stops at 200,000 files, and a
//     directory whose totals were cut short (truncated) has no reverse
//     containment nor resemblance.
//   - A top is the highest directory a match counts for: the root the
//     matched file lies under (GET /v1/roots), or the prefix asked, or the
//     filesystem's root when the daemon lists no roots.
//   - Folding keeps one line per copied tree, at its top: the pairs of a
//     copy's subdirectories, and the parents of a copy that hold nothing
//     more of it, are not listed. A directory holding a copy of its own
//     files (a vendored copy of the project inside it) is linked to that
//     copy.
//
// # Similar: the directories that hold a directory
//
// Similar walks the directory asked about (the query directory, Q),
// symlinks not followed; empty, special (symlinks, fifos, sockets,
// devices) and unreadable files are skipped and counted. It fingerprints
// each regular file as `sifctl similar --fast` does and asks the daemon
// for its matches (InFlight at once; identical files once), without a
// path, so that Q's own indexed files come back and are dropped.
//
//   - A pair is one match of a query file f: an indexed file g outside Q,
//     with the bytes of f found in g and the bytes of g found in f.
//   - Every pair counts for each ancestor directory D of g, from g's
//     directory up to its top, except Q itself, its ancestors and its
//     descendants: those are the candidates.
//   - shared(D) sums, over the query files, the best bytes each has in any
//     file under D; containment is shared(D) over Q's bytes. An identical
//     file under D makes f identical there; a lesser match, similar; no
//     match, missing.
//   - revShared(D) sums, over the files under D that match, the best bytes
//     each has in any query file: reverse containment is revShared(D) over
//     the bytes indexed under D.
//
// Folding keeps one line per copy of Q:
//
//   - A directory is listed when its containment reaches the threshold
//     and it adds something: its shared bytes exceed those of each
//     candidate directly under it, or its files outside the listed
//     directories under it reach the threshold on their own (a copy
//     holding a nested copy is listed beside it). So the ancestors of a
//     copy, up to its root, which hold nothing more of Q, are not listed: a
//     copied tree is one line at its top.
//   - A listed directory under another listed one is a part of it, and
//     dropped, when its matches sit at the paths they have in Q (g is
//     A/rel where f is Q/rel) under a directory A that is the other one or
//     above it, more than in itself: src/ of a copy of Q is a part of that
//     copy, also when the copy is listed below its top A because A holds
//     nothing of Q outside it; a copy of Q nested in another copy is a copy
//     of its own.
//
// The listed directories come best first: by containment, then
// resemblance, then path.
//
// With the fleet (Options.Fleet, `sifctl similar --fleet DIR`), each
// file query asks the fleet index too, and its matches on other hosts
// come with their host. A directory is then a (host, path): the same path
// on another host is another directory, and only on this host are Q, its
// ancestors and its descendants left out (a copy of Q kept at Q's own
// path on another host is a candidate like any other).
//
//   - The tops of another host's directories are the roots it publishes
//     (GET /v1/fleet/hosts, from sif_hosts); this host's are its roots,
//     as without the fleet.
//   - The totals of another host's directories are the files and bytes
//     it published under them, counted in the fleet database
//     (POST /v1/dirs/totals with a host per directory, one round trip for
//     all of them, each stopped at 200,000 files as here).
//   - Their measures are estimates from fingerprints, as another host's
//     file matches are: the same, when no fingerprint is too common, as
//     that host's own daemon would give.
//   - When the fleet does not answer (the hosts, any file's query, or the
//     totals), the answer is this host's directories only, and
//     Result.FleetError says why; the file queries left stop asking it.
//
// # Groups: directories that are near-copies of each other
//
// Groups asks for the groups of similar files with their links
// (GET /v1/groups?links) and the sets of identical files (GET /v1/dupes),
// and sums their file pairs per pair of directories (a Grouping; a caller
// that has those answers already feeds them to one itself). A link pairs
// every file of one end, its identical copies included, with every file
// of the other (up to 256 pairs, else the first file of each end with
// every file of the other); a set of identical files pairs all its files
// (up to 32 files, else its first with each other one), hard links to one
// file being pairs that save nothing.
//
//   - The candidates are the pairs of directories at the same depth
//     offset above the two files of a pair: their own directories, their
//     parents, and so on, until the two are one directory, or one of them
//     is a top, or one holds the other: that pair is the last, a candidate
//     when the two files lie at one relative path below it, and the holder
//     stands for its files outside the other (a directory holding a copy of
//     its own files, as a vendored copy of the project inside it; not a
//     root holding copies of a tree elsewhere than the tree itself).
//   - shared(A in B), for a candidate (A, B), sums over the files under A
//     the most of each found in one file under B, whatever their depths (a
//     copy nested deeper in A than A's own files counts whole); the other
//     way likewise. Only the candidates that may reach the threshold by the
//     bytes known under them have their totals asked for.
//   - A pair is kept when its resemblance reaches the threshold: each
//     holds most of the other, and not only as many copies of it (a
//     directory holding two copies of proj/ contains proj/ and is contained
//     in it, but resembles it at 50 %).
//
// Folding keeps one pair per copied tree:
//
//   - A kept pair whose shared bytes are, both ways, no more than those of
//     a kept pair within it (each directory in the pair's, or one of them)
//     adds nothing to it: the copy's top is the smaller pair, and this one
//     is dropped (a copy of proj/ in a directory holding nothing else is
//     proj/, not its parent).
//   - A kept pair (A/x, B/y) folds into a kept pair above it at the same
//     depth offset, (A, B) or higher, that is not dropped: a copied tree is
//     one pair, at its top, whatever was renamed or moved inside it.
//   - The pairs left are linked into groups (union-find). A pair whose
//     ancestors at the same depth offset are both in one group (they may
//     hold one another) says nothing new, and is dropped: the src/ of two
//     copies of a tree, one nested inside the other, is part of them. A
//     folded pair whose two directories are in groups still links them: a
//     tree duplicated inside each of two copies is one group.
//
// The reference of a group is, of the members no other member holds, the
// one with the most links, then the most bytes, then the first path. Each
// other member is measured against the reference, or, when it is linked
// to the group only through another member, against its strongest link
// (Via). The saving of a group is the bytes deleting all its directories
// but the reference would reclaim and lose nothing the reference holds:
// for each other member, the bytes of it found in the directory it is
// linked to, less the files whose every match there is a hard link of
// them; a member inside another member that is not the reference is
// counted with it. Groups come by saving, largest first, then by the
// reference's path. Files linked at under FileThreshold percent count
// nothing, and a copy whose files moved to other depths is found only
// where its directories line up.
package dirsim
