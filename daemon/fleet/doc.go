// Package fleet is sif's fleet index: one similarity index for many
// hosts, kept in a database that speaks the PostgreSQL wire protocol. Each
// sifd that joins a fleet publishes what its local index holds under its
// published roots (every file's path, size, modification time and content,
// and every distinct content's signature: its sampled fingerprints, size
// and strong hash, never the file's bytes), and asks the database which
// contents, on which hosts, are like a file. The local index stays the
// source of truth; the fleet index is a copy of parts of many of them,
// brought up to date asynchronously.
//
// # Schema
//
// The database holds five tables, created and migrated by Migrate. Their
// SQL keeps to what PostgreSQL, CockroachDB, YugabyteDB and Citus all run:
// no extensions, no LISTEN/NOTIFY, no advisory locks, no sequences or
// serial columns, upserts with ON CONFLICT, plain btree indexes. So a
// fleet that outgrows one PostgreSQL server can move to a distributed
// engine with the same sif.
//
//   - sif_schema has one row: the schema's version (SchemaVersion), the
//     fleet's id (128 random bits in hex, made with the schema, so a host
//     can tell one fleet database from another; a copy restored from a
//     backup keeps it), and the fleet's fingerprint parameters (JSON), set by
//     the first host that publishes (SetParams). Fingerprints made with
//     other parameters cannot be compared, so a host whose parameters
//     differ is refused.
//   - sif_hosts has a row per host: its name, the id computed from it,
//     the last publishing batch applied (gen: a replayed batch changes
//     nothing, and a host can tell what a database restored from an older
//     backup lacks), its published roots (bytea: paths need not be
//     UTF-8), when it was last heard from and its sif version.
//   - sif_contents has a row per distinct content, shared by every host
//     that holds it: its strong hash, size, weights, level and signature
//     (its fingerprint keys and weights in sif's own encoding). A content
//     on many hosts is stored once. Its row goes in first, in a short
//     transaction of its own, with its features column negated to mark
//     it as still without postings; its postings follow in a second
//     transaction, which clears the mark. So hosts adding the same content
//     at once wait for each other only while rows go in, and a publisher
//     that stopped in between leaves a marked row that the next host to
//     publish a file of it finishes. Since version 2 it also holds the
//     content's SimiHash skew key (simi_key, a uint32 in a bigint) and
//     sum table (simi_sum, 16 counts as bigint[]), written by hosts whose
//     index keeps SimiHash keys and NULL for a content published only by
//     hosts without them; a host with keys fills in those of the contents
//     it publishes that the fleet holds without them, and compares its
//     rows once after the upgrade (its journal mark, written without
//     SimiHash, no longer matches), sending again the files whose
//     contents lack them; so rows published before version 2 get theirs.
//     The index sif_contents_simi on simi_key makes SimiFind's key range
//     one index range scan.
//   - sif_postings has a row per (fingerprint key, content) with the key's
//     weight in that content: the inverted index a query looks its
//     fingerprints up in. Its primary key (key, content_id) makes the
//     lookup of a key an index range scan and a republished posting an
//     upsert that changes nothing; since postings belong to contents, not
//     hosts, a content held by many hosts has its postings once. An
//     operator may create it before the first host joins, hash-partitioned
//     on key over several servers (packaging/fleet/partitioned-postings.sql:
//     postgres_fdw partitions, which have no primary key); Migrate takes
//     it when its columns are sif's. Postings go in with their content's
//     row only, and out and to Check by key = ANY and content_id = ANY,
//     forms each partition runs as it is.
//   - sif_files has a row per (host, file): the path (bytea), size,
//     modification time (Unix nanoseconds) and content, NULL while the
//     file's strong hash is unknown. Its rows go with their host's
//     (ON DELETE CASCADE); the index sif_files_content finds the files,
//     on any host, of a content a query matched.
//
// Ids are computed by sif from what they name, not handed out by the
// database: a host's id is the first 8 bytes of SHA-256 of its name and a
// content's the first 8 bytes of its strong hash (SHA-256), both read
// big-endian as a signed 64-bit integer. So every host computes the same
// id for the same content without asking, an upsert needs no round trip
// to learn an id, and the ids, being uniform, spread evenly over the
// ranges or hash partitions of a distributed engine (a sequence would put
// every new row at one end). Fingerprint keys are 32-bit and stored as
// int4, reinterpreted as signed.
//
// Migrate creates the schema on an empty database and applies the
// migrations above the database's version, each in one transaction; hosts
// migrating at once are safe, and a database from a newer sif is refused
// with ErrNewerSchema rather than written to.
//
// # Publishing
//
// A Publisher keeps one host's rows equal to the published part of its
// local index, in the background; the local index and its queries never
// wait for it. What it works from is the index's change journal (package
// index, journal.go): with the journal on, every batch that changes a file
// record notes the file's id in the same batch, so no change commits
// without its note, and many changes to one file leave one note.
//
//   - A round takes up to BatchFiles notes, reads the files they name
//     from one view of the index, and sends first the contents the fleet
//     lacks (the rows, then the postings with one INSERT from arrays), in
//     a transaction of their own, so that hosts adding one content at once
//     wait for each other only that long; then, in one transaction, the
//     files as they are now (upserted by host and file id) or their
//     removal, and gen + 1 on the host's row, checked under FOR UPDATE to
//     be the gen the publisher expected. A content whose files failed to
//     follow is held by no file until the batch is sent again (or a sweep
//     drops it). Only after the commit does it
//     remove the notes it sent, those not noted again meanwhile, and write
//     the journal mark (fleet id, host, gen, roots, SimiHash) in the same local
//     batch. A note sent twice sends the same state twice: batches are
//     idempotent.
//   - Contents left held by no file are dropped with their postings after
//     the batch, best effort (a file another host adds at that moment
//     makes the drop fail on its foreign key, and the content stays);
//     Sweep, run by Forget, catches what was left.
//   - When the mark does not match the database (no mark yet: a first
//     publication, or the journal was off; another fleet id: another
//     database; another gen: the database was restored from an older
//     backup, or lost a batch; other roots; a mark written without
//     SimiHash by a host whose index keeps SimiHash keys), the publisher
//     compares the
//     whole index with the host's rows, a run of file ids at a time, and
//     sends only what differs, removing the notes of the files each run
//     compared (taken before its view: a later change keeps its note),
//     then writes the mark. Check makes the same
//     comparison and reports it (sifctl fleet check).
//   - Errors (the database down, refusing the credentials, a schema from
//     a newer sif) are kept for the status and retried, backing off from
//     1 s to 5 s; the notes wait in the local index meanwhile, so
//     nothing is lost and a database back after an hour gets only what
//     changed.
//
// # Asking
//
// Similar answers a query in one round trip (two for a template query,
// below): for each of the query's
// fingerprint keys (index.QueryEntries) its first MaxDF+1 postings, an
// index range scan of sif_postings' primary key, under a LATERAL join (or,
// when sif_postings is partitioned over servers, the postings of all the
// keys grouped by key with the cut inside the aggregate, which each shard
// answers in one round trip: Partitioned, Query.Grouped);
// keys with more are common and skipped, as the local index skips keys
// held by more than MaxDF files (here counted in contents); the rest
// summed per content (the lesser of the two weights, as locally), the
// MaxContents best kept with the query's identical content if any, and
// joined with their records and up to MaxFilesPerContent of their files
// on hosts heard from within the silence. The measures are then computed
// as the local index does (at the higher of the two files' levels, the
// query's weight of the keys that count), so a content the fleet holds
// gets the estimate the local index would give it when no key is
// common; they are estimates from fingerprints, never checked against
// bytes the asking host does not have. The asking daemon answers for its
// own files from its own index (ExcludeHost).
//
// A template query, one whose common keys hold most of its weight (the
// local index's rule, index.TemplateCut), is one of a family of files
// made from one template or form: the answer is the family, not
// nothing. The first round trip tells which keys are common (in a row of
// its own, so it comes even when every key is); a second counts them
// too, in key order while their postings add up to at most
// templatePostings, so those counted are a uniform sample. A content
// holding more than index.TemplateShare of the counted weight is of the
// family (Match.Template, Result.Template and Family): it is judged on
// all of the query's weight, its share of the common keys scaled up from
// the sample. Any other candidate is judged on the query's distinctive
// part, so a licence header shared across the fleet links nothing.
//
// # Asking by SimiHash
//
// SimiFind answers a query by SimiHash (sifctl similar --by simihash
// --fleet) in one round trip, as the local index's SimiFind does: the
// contents whose skew keys are within the key tolerance of the query's
// (one range scan of sif_contents_simi), whose sizes are within the size
// ratio and whose sum tables are within the sum tolerance (the L1
// distance computed by the database, so that only the near contents'
// files come back), the MaxContents nearest; then up to
// MaxFilesPerContent of their files on other hosts heard from within the
// silence. Each is judged again by fingerprint.Tolerances.Judge, and the
// files are ordered by sum distance. Contents whose keys no host has
// published are not found.
//
// A directory query (sifctl similar --fleet DIR) also needs the tops and
// the totals of other hosts' directories. Hosts lists the hosts heard
// from within the silence with the roots they publish (sif_hosts.roots).
// DirTotals counts, in one round trip for all the directories asked, the
// files and bytes a host published under each (the paths in the range
// DIR/ to DIR0, so by whole components), each count stopped at a cap
// like the local index's. sif_files has no index on paths (a path may be
// longer than a btree entry allows): each count scans the host's rows by
// the primary key's host_id prefix, stopping at the cap.
package fleet
