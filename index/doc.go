// Package index is sif's store: it keeps the sketches of the files sif
// watches in a Pebble LSM, and answers one-against-all queries (Similar),
// all-against-all runs (Groups) and identical-file reports (Dupes) from it.
// The fingerprints themselves come from package fingerprint.
//
// Vocabulary:
//
//   - A file record holds what sif knows of one indexed file: its metadata
//     ([FileMeta]: path, size, mtime, device and inode, mode) and the id of
//     its content.
//   - A file id is a 32-bit number naming one file record. Ids are handed out
//     in increasing order and never reused while the file lives; replacing
//     or renaming a file keeps its id, so a rename touches only the path
//     key and the record.
//   - A content is what identical files share: one content record (the
//     [fingerprint.Summary]: size, strong hash, type, SimiHash sum table
//     and key, which sifd fills in only for an index with SimiHash keys;
//     the total weight, the number of features, the level and the level
//     weights), one forward list and one set of postings, however many
//     files hold it. Files are identical, and share a content, when
//     their strong hashes (SHA-256), summaries and entries are equal; a
//     file whose strong hash is unknown (all zero) has a content of its
//     own; [Index.PutFile] joins a file to the content of its size and
//     strong hash without its sketch. A content id is a 32-bit number
//     naming a content, handed out in increasing order apart from file
//     ids and never reused while the content lives. Adding or removing
//     one of several copies touches no posting; a content is deleted,
//     postings and all, in the batch that removes its last file, and a
//     file that held its content alone and changes keeps the content id,
//     so only the postings that differ are rewritten. A [FileRecord]
//     joins a file record and its content's.
//   - The copy key of a file joins its content id and its file id. The copy
//     keys of a content are its reference count, kept in the same batches
//     as everything else: a scan of the keys that begin with its content id
//     lists the files holding it.
//   - The hash key of a content joins the first 4 bytes of its strong hash
//     and its content id; a content whose strong hash is unknown has none.
//     It finds the contents of a strong hash without reading any posting
//     (for PutFile's copies, Put's identical contents, the identical
//     files of a query, Dupes): the contents its hash keys name, about
//     one, whose records then confirm the whole hash.
//   - The SimiHash key of a content joins its skew key (the
//     [fingerprint.Summary]'s Key) and its content id, in an index created
//     with SimiHash keys ([Options].SimiHash, stored as 'm' "simihash");
//     an index without holds none. Keys sort numerically, so the contents
//     whose skew keys lie in a range are one ordered scan: the first step
//     of SimiFind ([Index.SimiFind]), whose tolerances and verdict are
//     [fingerprint.Tolerances]. It is written and deleted with the content
//     record, in the same batches; copies, renames and moves of files do
//     not touch it. It is per content, not per file: the paper's
//     extension-aware key (fingerprint.ExtKey) depends on a file's name,
//     and a SimiHash key per content serves every name at once.
//   - The fingerprint key of a 64-bit fingerprint hash is the high 32 bits of
//     murmur3's fmix64 finalizer of it: a fixed bijective mixer, so the key
//     draws on every bit of the hash (manber with mod_bits=30 makes hashes of
//     22 significant bits) and keys are uniform. The index stores keys, not
//     hashes.
//   - Weight: what a feature counts for, per occurrence (1 for manber, the
//     chunk length for chunks). A file's features are stored as entries, one
//     per fingerprint key: the weight of an entry is the sum, over the
//     file's features whose hashes map to that key, of count × weight.
//     A file keeps only features of its level (fingerprint.Params.Level)
//     or more; its record holds its weight at each level above its own, so
//     that a query and a file of two levels are compared at the higher one.
//     The keys two files share are all of both levels or more, so shared
//     weight needs no levels; a candidate is listed only when the query has
//     MinFeatures distinctive entries at the level of the comparison.
//     A file's weight is the sum of its entries' weights, and its number of
//     features the number of its entries. Queries take the query's sketch
//     the same way.
//   - The shared weight of two files sums, over the fingerprint keys both
//     hold, the lesser of their two weights. Without key collisions that is
//     fingerprint.Compare's min(count in one, count in the other) × weight.
//   - The forward list of a content is its entries, sorted by key. It is
//     what lets a change remove the content's old postings without a scan.
//     Its keys are stored as gaps, Rice-coded: each in a unary quotient
//     and k low bits, k chosen from the mean gap; its weights in Elias
//     gamma (a weight of w bits in 2w−1 bits), or not at all when every
//     weight is 1, as most of manber's are.
//   - A posting says "content id holds fingerprint key k, with this
//     weight". The postings of every fingerprint key whose top 16 bits are
//     equal (a bucket) make one posting list, one Pebble value, sorted by
//     fingerprint key and content id, so Manber's all-against-all sort of
//     fingerprints is a scan of the posting lists, and a query reads one
//     list per bucket its entries fall in. Writes stay blind: a change
//     merges into each bucket it touches an operand with the postings it
//     sets and tombstones for those it removes; Pebble's merge operator
//     folds the operands, newest first, when it reads or compacts them,
//     and drops a tombstone once the merge reaches the bucket's oldest
//     operand. A list left empty is deleted by Compact.
//   - Deferred postings: [Index.PutFile] with [FileWrite] Deferred, for
//     bulk loads such as a first scan, writes a new content's records and
//     forward list at once and keeps its postings in memory, to be
//     written with those of many other contents, sorted, one merge
//     operand per bucket, by [Index.Flush], by the deferred write that
//     would keep too many, by a write that changes or removes such a
//     content (before its own batch), or by Close. The pending key ('m'
//     "pending") names the first content whose postings may be missing; a
//     read-write Open that finds it writes the postings of every content
//     from there on from their forward lists. See pending.go.
//   - The document frequency of a fingerprint key is the number of files
//     that hold it: over its run of postings, the number of files of each
//     content, which queries and groups count as they read it; it is not
//     stored. The index keeps in memory the number of files of every
//     content held by two or more (built from the copy keys at Open,
//     updated as each batch commits); Groups counts them from the copy
//     keys of the view it reads. Fingerprints held by very many files
//     (licence blocks, templates, boilerplate) carry little evidence:
//     queries and groups skip those above MaxDF, and leave their weight out
//     of the weight of each file holding them at the levels they are of
//     (a query knows the levels of its fingerprints, and leaves out of a
//     candidate's weight those of its skipped fingerprints the candidate
//     holds, so that all three measures are of the distinctive parts;
//     Groups, which reads keys only, bounds them by the levels of the files
//     holding them).
//   - A template file is one whose fingerprints above MaxDF are most of
//     its weight (past TemplateShare by the sampling error of its number
//     of fingerprints, templateCut): one of a family of files made from
//     one template or form, or the template itself. There the common
//     fingerprints are its content, not boilerplate: a query of it counts
//     them for its family (the candidates holding most of it through
//     them), judged on all of its weight and flagged Match.Template;
//     Groups links template files through a hub per common key (the first
//     template file holding it), so a family of n files costs about n
//     pairs. A licence header in a file with more content of its own stays
//     boilerplate. Posting lists are stored whole; a template query counts
//     at most templatePostings of its common postings.
//   - The inode key of a file joins its device and inode numbers to its id,
//     so a file renamed or moved where sif did not see it go is recognised
//     by its inode (and its size and mtime) without being read again. Hard
//     links of one file are indexed once per path, and share device and
//     inode: they have one inode key each.
//   - Containment of a query in a file is the shared weight over the query's
//     weight (Manber's percentage); reverse containment is over the file's
//     weight; resemblance is shared over union weight. Identical files have
//     equal strong hashes and sizes.
//
// Key collisions. Two distinct hashes can map to one fingerprint key. Within
// a file they merge into one entry. Across files, with F distinct
// fingerprints in the index, a query fingerprint the index does not hold
// matches some key by chance with probability about F/2^32: 0.2 % for 10
// million fingerprints (roughly 4 GB of text at the default density). A
// collision can only add a little spurious shared weight (the lesser of two
// sums is at least the sum of the lessers), or a file to a key's document
// frequency; weights and containment denominators are unchanged. Identical
// files are found by their strong hash, not by fingerprints.
//
// Storage layout. Every key starts with a byte naming its keyspace; ids and
// fingerprint keys are 4 bytes, device and inode numbers 8 bytes, all
// big-endian, so Pebble keys sort numerically:
//
//	'm' "version"          format version (decimal text, now 7)
//	'm' "params"           the normalized fingerprint.Params, JSON
//	'm' "simihash"         "on" in an index with SimiHash keys
//	'p' path               file id (4 bytes); paths are raw bytes
//	'r' id                 file record: version byte 4, then the path
//	                       and metadata, and the content id (varints)
//	'c' content            content record: version byte 1, the holder
//	                       hint (the id of the file that created it, which
//	                       may have left: a query of a content held by one
//	                       file reads that file's record first), then the
//	                       summary, weights and level (varints)
//	'f' content            forward list: n (uvarint), a byte holding the
//	                       Rice parameter k and whether every weight is
//	                       1, then per entry, bit-packed: the fingerprint
//	                       key's gap from the previous one, minus one (the
//	                       first from 0), Rice-coded with k, and unless
//	                       every weight is 1 the weight in Elias gamma;
//	                       see encoding.go
//	'P' bucket(2)          posting list: n (uvarint), the Rice parameter k
//	                       and the content-id width cb (a byte each),
//	                       then per posting, bit-packed: a new-key bit
//	                       (not for the first), the gap from the previous
//	                       key's low 16 bits Rice-coded with k (for a new
//	                       key), the content id in cb bits, and the
//	                       weight: 0 for 1, 10 and Elias gamma of
//	                       weight−1, or 11 for a tombstone (in merge
//	                       operands only); see postings_codec.go
//	'h' strong(4) content  hash key, empty value: the first 4 bytes of
//	                       the content's strong hash
//	's' content id         copy key, empty value
//	'k' key(4) content     SimiHash key, empty value: the content's skew key
//	'i' dev(8) ino(8) id   inode key, empty value
//	'j' id                 journal note: a sequence number (uvarint),
//	                       while the change journal is on (journal.go)
//	'm' "journal"          the journal mark: its reader's record of where
//	                       its copy stands (opaque to the index)
//
// Pebble's comparer ("sif.keys.v3") orders keys bytewise and takes every
// key as its own prefix; its merge operator ("sif.postings.v1") is the
// posting lists'.
//
// Every change to one file (PutFile, Put, Remove, Rename) is one atomic
// batch carrying all the keys it touches, its content's among them, so after a
// crash the index holds each file and each content as it was before or
// after a change, never between. A change reads only the file's path key
// and records, the hash keys of the strong hash it looks for, the copy
// keys of the content it leaves, and the forward lists of the contents it
// compares, rewrites or deletes; its postings are merged blind. Batches
// commit without fsync: the index is a cache of the disk, and Sync and
// Close make it durable. Writes are serialized by a mutex (a writer that
// finds it taken yields its processor for up to 200 µs before it blocks:
// see lockWrites); reads run concurrently, each on one consistent view.
// The queries (Similar, Groups, Dupes, DirTotals) take a context and stop
// within a few hundred keys of it being done (cancel.go). A
// bulk load into an empty index (Bulk) skips the path lookup of a write
// whose path a Bloom filter of every path given a record since the load
// began does not hold. Only one process may open the
// database (Pebble's LOCK file): Open fails with ErrLocked otherwise.
// Check verifies every invariant above; on corruption, and for an index
// written in another format (version 1 had 64-bit hashes in its keys and
// stored document frequencies, version 2 no inode keys, version 3 one
// sampling density and no levels in its records, version 4 no contents:
// postings and forward lists per file, version 5 one Pebble key per
// posting, version 6 the whole strong hash in every copy key, no hash
// keys and forward lists of uvarints), the cure is to move the index
// aside and rebuild it. Compact rewrites the database into its most
// compact form after a bulk load. Dump lists the files in a canonical
// text form, free of file ids and write history, so two indexes of one
// tree can be compared.
//
// A filesystem that stops taking writes (read-only, refusing new files,
// full) never reaches Pebble where it cannot survive it: a write of its
// write-ahead log or MANIFEST waits until the filesystem takes it again,
// and other refused writes fail after a pause (guardfs.go); the owner
// hears of each (Options.OnUnwritable) and can free room when the disk
// fills (Options.OnDiskFull).
package index
