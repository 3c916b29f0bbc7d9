// Package index is sif's store: it keeps the sketches of the files sif
// watches in a Pebble LSM, and answers one-against-all queries (Similar),
// all-against-all runs (Groups) and identical-file reports (Dupes) from it.
// The fingerprints themselves come from package fingerprint.
//
// Vocabulary:
//
//   - A file record holds what sif knows of one indexed file: its metadata
//     ([FileMeta]: path, size, mtime, device and inode, mode), its
//     [fingerprint.Summary] (size, strong hash, type, SimiHash sum table and
//     key), its total weight and its number of features.
//   - A file id is a 32-bit number naming one file record. Ids are handed out
//     in increasing order and never reused while the file lives; replacing
//     or renaming a file keeps its id. Postings and forward lists name files
//     by id, so a rename touches only the path key and the record.
//   - The forward list of a file is its features, sorted by hash. It is what
//     lets a change remove the file's old postings without a scan.
//   - A posting says "file id holds fingerprint hash, count times". There is
//     one key per posting, and the postings of one fingerprint are adjacent,
//     so Manber's all-against-all sort of fingerprints is a scan of the
//     posting keyspace, and a query reads one short range per feature.
//   - The fingerprint file-count (document frequency) of a hash is the number
//     of files that hold it. Fingerprints held by very many files (licence
//     blocks, templates, boilerplate) carry little evidence: queries and
//     groups skip those above MaxDF.
//   - The identical-content key of a file joins its strong hash to its id, so
//     identical files are found without reading any posting.
//   - Weight: what a feature counts for, per occurrence (1 for manber, the
//     chunk length for chunks). A file's weight is the sum over its features
//     of count × weight; the shared weight of two files sums min(count in
//     one, count in the other) × weight over the features both hold.
//   - Containment of a query in a file is the shared weight over the query's
//     weight (Manber's percentage); reverse containment is over the file's
//     weight; resemblance is shared over union weight. Identical files have
//     equal strong hashes and sizes.
//
// Storage layout. Every key starts with a byte naming its keyspace; ids are
// 4 bytes and hashes 8 bytes, big-endian, so keys sort numerically:
//
//	'm' "version"         format version (decimal text, now 1)
//	'm' "params"          the normalized fingerprint.Params, JSON
//	'p' path              file id (4 bytes); paths are raw bytes
//	'r' id                file record: version byte 1, then varints
//	'f' id                forward list: n, then per feature the hash delta
//	                      from the previous one, the count, and the length
//	                      when the scheme knows lengths (uvarints)
//	'P' hash id           posting: count, and length when the scheme knows
//	                      lengths (uvarints)
//	'd' hash              fingerprint file-count: a signed varint, summed by
//	                      the merge operator "sif.count.v1"; 0 means absent
//	's' strong(32) id     identical-content key, empty value
//
// Pebble's comparer ("sif.keys.v1") orders keys bytewise but takes the hash
// of a posting key as its prefix, so a query's prefix seek on a fingerprint
// skips, on their bloom filters, the tables that hold no posting of it. The
// first file to gain a fingerprint sets its file-count to 1, the last to
// lose it deletes the count, and the changes in between are merge operands
// (merge.go says why).
//
// Every change to one file (Put, Remove, Rename) is one atomic batch
// carrying all the keys it touches, so after a crash the index holds each
// file as it was before or after a change, never between. Batches commit
// without fsync: the index is a cache of the disk, and Sync and Close make
// it durable. Writes are serialized by a mutex; reads run concurrently, each
// on one consistent view. Only one process may open the database (Pebble's
// LOCK file): Open fails with ErrLocked otherwise. Check verifies every
// invariant above; on corruption, the cure is to move the index aside and
// rebuild it.
package index
