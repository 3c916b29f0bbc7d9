// Package fingerprint turns bytes into the approximate fingerprints that sif
// indexes and compares. It reads nothing itself: callers hand it bytes through
// a [Sketcher] (an io.Writer), so a file of any size is fingerprinted in
// bounded memory.
//
// Vocabulary:
//
//   - A scheme decides which pieces of a file become fingerprints. [Manber]
//     keeps a W-byte window when the low k bits of its Karp-Rabin hash are zero
//     and never lets two kept windows of the top level (k = Bits) overlap
//     (Manber 1994, §2).
//   - The level of a file is the k it is sampled with ([Params.Level]): Bits
//     for a large file, less for a small one, from its size alone, so that it
//     gets about Target fingerprints or more. The level of a fingerprint hash
//     is the highest level that keeps its window ([Params.HashLevel]). A
//     window kept at one level is kept at every lower one, so two files are
//     compared at the higher of their levels, on their features of that
//     level or more. [Chunks] cuts
//     the file into content-defined chunks between a minimum and a maximum
//     length (normalized chunking, a descendant of TTTD in Forman et al. 2005)
//     and keeps every chunk: whether a byte ends a chunk depends only on the
//     64 bytes ending at it (through a gear hash) and on its distance from
//     the previous cut, so after an edit the old and new file's chunkings
//     fall back into step, usually within a few chunks. A scheme and its
//     parameters form [Params]; one index uses one Params, stored in it.
//   - A fingerprint is one kept piece: a 64-bit hash, its offset and length.
//     Equal pieces give equal hashes wherever they sit in a file.
//   - A feature is a distinct fingerprint hash of one file with the number of
//     times it occurs there; a [Sketch] is a file's sorted features plus its
//     [Summary].
//   - The weight of a feature is what it counts for in a comparison: one per
//     occurrence for manber, the chunk length per occurrence for chunks (so
//     chunk weights are bytes, and shared weight is a lower bound on the bytes
//     two files have in common).
//   - Containment of A in B is the share of A's weight found in B, counting a
//     feature at most as often as it occurs in B, so it never exceeds 100 %.
//     Resemblance is shared weight over the weight of the union (weighted
//     Jaccard).
//   - The summary holds what every file gets whatever the scheme: its size, a
//     strong content hash (SHA-256) for identical files, its type (text or
//     binary: Manber compares only files of one type), and the SimiHash sum
//     table (counts of 16 8-bit tags found at every bit offset, with skip
//     counters) and skew key (Sadowski and Levin 2011, §4–5).
//
// A [Sketcher] does all of this in one pass over the stream, in memory bounded
// by the scheme (about MaxChunk bytes for chunks, 2·Window for manber, plus a
// few KiB), whatever the stream's length and however it is cut into Writes:
// the output depends only on the bytes. [SketchReader] runs a Sketcher over an
// io.Reader and collects the features.
//
// The code keeps one concern per file: manber.go and chunks.go are the two
// schemes' scanners, simihash.go the sum table and keys, texttype.go the
// type, sketcher.go the pass that drives them. Each scanner has a fast path;
// the tests hold every one of them to a naive implementation of the
// definition, and testdata/golden.txt pins their exact output.
//
// SCHEMES.md, beside this file, says how the schemes and their defaults
// were chosen and how well they find what they should beside ssdeep and
// TLSH, measured.
package fingerprint
