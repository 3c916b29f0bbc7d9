// Package exact measures how much two files really share, from their bytes,
// and how many bytes an rsync-style delta from one to the other would take.
// The index proposes candidates from approximate fingerprints; this package
// is what the daemon checks the best of them with.
//
// Vocabulary:
//
//   - A window is a run of [Window] (32) consecutive bytes; a file of n
//     bytes has n−31 of them (none when n < 32). A file's window set is the
//     set of its distinct windows. Measures count distinct windows, so a
//     window repeated in a file counts once.
//   - The hash of a window is its Karp-Rabin value
//     F = t₀·p^31 + t₁·p^30 + … + t₃₁ in wrapping 64-bit arithmetic with
//     p = [Prime] (bytes t as 0–255), passed through murmur3's fmix64
//     finalizer, a bijection that spreads every input bit over the low bits.
//     Distinct windows are told apart by their hashes: two distinct windows
//     collide with probability about 2⁻⁶⁴, so the measures below are exact
//     but for that.
//   - Containment of a query Q in a candidate C is |Q ∩ C| / |Q| over window
//     sets, reverse containment |Q ∩ C| / |C|, resemblance
//     |Q ∩ C| / |Q ∪ C|. Shared bytes are the bytes of Q that lie in at
//     least one window also found in C. A file with no window (under 32
//     bytes) has containment 1 in a file equal to it, else 0.
//   - A level L sample of a window set keeps the windows whose hash has its
//     low L bits zero: about one in 2^L, chosen by content, so the samples
//     of two files are samples of the same windows, and a level L+1 sample
//     is a subset of the level L one. The ratios above computed on two
//     samples of one level estimate the exact ones (each is a ratio of
//     counts of one random subset of windows); shared bytes are then
//     estimated as containment × the query's size. A signature is a level
//     L sample of a file's window set, sorted, sent instead of the file's
//     bytes ([Signature], [SignatureLevel]).
//   - Sampled measures: when either file is larger than [ExactLimit]
//     (1 MiB), or the query is a signature, both sides are sampled at the
//     level max(the signature's, [LevelFor] of the larger file), so a
//     measure costs about [MaxSamples] table operations at most, not one
//     per byte; it still reads the whole candidate.
//   - A delta is what librsync's rdiff sends to turn a basis file into a
//     target: the basis is cut into blocks of [BlockLen] bytes, the target
//     is scanned with a rolling window of that length, a window equal to a
//     basis block becomes a copy command, everything else literal bytes.
//     [DeltaCost] simulates it and counts the bytes of the commands and
//     literals, the way rdiff encodes them.
package exact
