package index

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Errors. Check them with errors.Is.
var (
	ErrClosed = errors.New("index: closed")
	// ErrWedged is returned by Abandon when Pebble did not close: a write
	// whose log write failed left it stuck, and only a new process can
	// open the index again.
	ErrWedged = errors.New("index: the database is stuck after a failed write: only a new process can open it again")
	// ErrParamsMismatch: the database was built with other fingerprint
	// parameters than the ones asked for.
	ErrParamsMismatch = errors.New("index: fingerprint parameters differ from the index's")
	// ErrLocked: another process (normally a running sifd) has the database open.
	ErrLocked = errors.New("index: database is in use by another process")
	// ErrNotFound: no file with that path is indexed.
	ErrNotFound = errors.New("index: no such file")
	// ErrCorrupt: the database holds something that cannot be decoded, or
	// was written in another format (by another version of sif). The cure
	// is to move the index aside and rebuild it.
	ErrCorrupt = errors.New("index: corrupt")
	// ErrOldFormat: the database was written by an older sif, in a layout
	// this one does not read. It is also an ErrCorrupt.
	ErrOldFormat = fmt.Errorf("%w: older format", ErrCorrupt)
	// ErrNewFormat: the database was written by a newer sif. It is also an
	// ErrCorrupt, but Options.MoveAsideCorrupt leaves it in place.
	ErrNewFormat = fmt.Errorf("%w: newer format", ErrCorrupt)
	// ErrBadQuery: the query or its options are invalid.
	ErrBadQuery = errors.New("index: bad query")
	// ErrNotIndex: a read-only Open of a directory that holds no index.
	ErrNotIndex = errors.New("index: not a sif index")
	// ErrReadOnly: a write to an index opened with Options.ReadOnly.
	ErrReadOnly = errors.New("index: opened read-only")
)

// Options configure Open. A nil *Options means the defaults.
type Options struct {
	// Params are the fingerprint parameters the caller will use. For a new
	// database they are stored; for an existing one they must equal the
	// stored ones, else Open fails with ErrParamsMismatch. Zero Params on an
	// existing database means "whatever is stored"; on a new one, the
	// defaults.
	Params fingerprint.Params
	// FS is the filesystem Pebble runs on; nil means the OS's. Tests use
	// vfs.NewMem or vfs.NewCrashableMem.
	FS vfs.FS
	// ReadOnly opens the database without writing to it, and refuses,
	// with ErrNotIndex and before writing anything (not even a lock file),
	// a directory that holds no database.
	ReadOnly bool
	// MoveAsideOldFormat: when the database is of an older format, rename
	// its directory to DIR.old-format (or DIR.old-format-TIME if that
	// exists) and create a new, empty one; Index.MovedAside names it. The
	// index holds only what can be read again from the files, so the cost
	// is a full scan. Without it, Open fails with ErrOldFormat.
	MoveAsideOldFormat bool
	// MoveAsideCorrupt: when the database cannot be opened because its
	// files are damaged (a Pebble corruption error, a MANIFEST or table
	// that is missing or unreadable, a sif key that does not decode),
	// rename its directory to DIR.corrupt-TIME (see MoveAside) and create
	// a new, empty one; Index.MovedAside names it and Index.MoveReason
	// gives the error. Without it, Open fails with that error.
	MoveAsideCorrupt bool
	// OnBackgroundError, if not nil, is called on a Pebble goroutine with
	// every error of a background flush or compaction (which Pebble
	// retries), such as running out of space. It must not block.
	OnBackgroundError func(error)
	// OnUnwritable, if not nil, is called with every error of a write
	// that failed because the filesystem does not take writes for now
	// (IsUnwritable: read-only, refusing them, or full), on the goroutine
	// of the write, which may hold Pebble's locks: it must not block nor
	// call the index. A write Pebble cannot survive failing (of its
	// write-ahead log or MANIFEST) is not failed but waits, trying again,
	// until the filesystem takes it; others fail (a flush or compaction,
	// which Pebble retries). Close and Abandon wait for such a write at
	// most 10 s, then return ErrWedged.
	OnUnwritable func(error)
	// OnDiskFull, if not nil, is called when a write finds the filesystem
	// full, before the write is tried once more (vfs.OnDiskFull): it can
	// free room, by deleting a ballast file, so that the index can finish
	// the write. Writes wait while it runs; it is called again only for a
	// write begun after it returned.
	OnDiskFull func()
	// Logger receives the index's log lines; nil discards them.
	Logger *slog.Logger
	// Journal turns the change journal on (Index.SetJournal); without it,
	// a read-write Open deletes the journal's notes and mark.
	Journal bool
	// SimiHash, when not nil, is whether the index keeps SimiHash keys (see
	// doc.go): stored in a new database; for an existing one it must be
	// what is stored, else Open fails with ErrParamsMismatch. Nil means
	// whatever is stored, and DefaultSimiHash for a new database. An index
	// with SimiHash keys expects the sketches it is given to carry their
	// sum tables and keys ([fingerprint.Summary]).
	SimiHash *bool
	// CacheSize is the memory, in bytes, of Pebble's block cache and its
	// memtables together (Pebble charges memtables to the cache); 0 means
	// DefaultCacheSize.
	CacheSize int64
}

// FileMeta is what the filesystem says about a file, used to decide whether
// it must be read again.
type FileMeta struct {
	Path    string // absolute; any bytes, not necessarily UTF-8
	Size    int64
	MtimeNs int64 // modification time, Unix nanoseconds
	// CtimeNs is the status change time, Unix nanoseconds: it moves on
	// every write and on a touch that sets the mtime back. 0 means
	// unknown (no such time here, or a record written before sif kept it).
	CtimeNs int64
	Dev     uint64
	Ino     uint64
	Mode    uint32 // os.FileMode bits
}

// FileRecord is an indexed file.
type FileRecord struct {
	ID uint32
	// Content is the id of the file's content (doc.go): files with equal
	// Content are identical. It is set on every record the index returns.
	Content uint32
	FileMeta
	fingerprint.Summary
	Weight   uint64 // total feature weight
	Features uint32 // number of distinct features (fingerprint keys, doc.go)
	// Level is the level the file was sampled at (fingerprint.Params.Level
	// of its size), and LevelWeights its weights at the levels above, up to
	// the top: LevelWeights[i] is the weight of its entries of level
	// Level+1+i or more. It is empty for a file sampled at the top level
	// and with the chunks scheme, whose files all have level 0.
	Level        uint8
	LevelWeights []uint64
}

// WeightAt returns the weight of r's entries of level lvl or more: its
// weight had it been sampled at lvl, when lvl is at least r.Level.
func (r *FileRecord) WeightAt(lvl int) uint64 {
	i := lvl - int(r.Level) - 1
	switch {
	case i < 0:
		return r.Weight
	case i < len(r.LevelWeights):
		return r.LevelWeights[i]
	case len(r.LevelWeights) > 0:
		return r.LevelWeights[len(r.LevelWeights)-1]
	}
	return r.Weight
}

// Query is a file to find matches for: its sketch, and optionally its path
// (so the file itself is not listed as its own match) and extension.
type Query struct {
	Path   string
	Sketch *fingerprint.Sketch
}

// QueryOptions filter and shape a one-against-all query. The zero value
// means the defaults.
type QueryOptions struct {
	// Threshold is the least containment of the query in a candidate, 0..1.
	// 0 means DefaultThreshold.
	Threshold float64
	// Limit caps the matches returned; 0 means no limit.
	Limit int
	// SizeRatio, when set (at least 1), drops candidates whose size differs
	// from the query's by more than this factor either way; 0 means any
	// size.
	SizeRatio float64
	// SameExt keeps only candidates with the query path's extension.
	SameExt bool
	// SameType keeps only candidates of the query's type.
	SameType bool
	// PathPrefix keeps only candidates in this directory tree, matched by
	// whole path components (InTree); "" keeps all.
	PathPrefix string
	// MaxDF skips features whose fingerprint key occurs in more than MaxDF
	// files; 0 means DefaultMaxDF, negative means no cap.
	MaxDF int
	// MinFeatures is the fewest query features that carry evidence; 0 means
	// DefaultMinFeatures.
	MinFeatures int
	// WeakShared, when 1 or more, also lists candidates with less evidence
	// than MinFeatures asks, flagged Weak: those compared at a level where
	// the query has fewer than MinFeatures distinctive features (a small
	// query against a larger file, sampled more sparsely), and all of them
	// when the query has fewer in all, provided they share at least
	// WeakShared of the query's weight. It is for a caller that checks the
	// matches against their bytes and drops the weak ones it does not
	// check: their estimates rest on one or a few fingerprints. 0 (the
	// default) lists no weak candidate.
	WeakShared int
	// Visible, when set, keeps only candidates whose record it accepts, as
	// if the others were not indexed: they are neither listed nor counted
	// in Result.Candidates. It is called on the caller's goroutine, after
	// the other filters, only for candidates that reach the threshold. It
	// is given the file's record as indexed (path, inode, status change
	// time), so that it can tell whether the file now at the path is
	// still that one.
	Visible func(m *FileMeta) bool
}

// Defaults for QueryOptions and GroupOptions.
const (
	DefaultThreshold   = 0.25
	DefaultMaxDF       = 200
	DefaultMinFeatures = 4
)

// Match is one candidate that passed a query's filters.
type Match struct {
	FileRecord
	SharedWeight       uint64
	Containment        float64 // of the query in this file, 0..1
	ReverseContainment float64 // of this file in the query, 0..1
	Resemblance        float64 // 0..1
	SharedBytes        int64   // lower bound when the scheme knows lengths, else -1
	Identical          bool
	// Weak is set when the estimate rests on fewer than MinFeatures of the
	// query's features (QueryOptions.WeakShared).
	Weak bool
	// Template is set when the file is one of a template query's family
	// (Result.Template): it holds more than TemplateShare of the query's
	// fingerprints held by more than MaxDF files, and is judged on all of
	// the query's weight.
	Template bool
}

// Result answers a one-against-all query.
type Result struct {
	Matches []Match // by containment, then shared weight, descending; identical files first
	// QueryFeatures is the number of distinct query features (fingerprint
	// keys, doc.go), and QueryWeight their total weight.
	QueryFeatures int
	QueryWeight   uint64
	// Skipped counts query features skipped because they occur in more than
	// MaxDF files, and SkippedWeight their weight, which is left out of the
	// query's weight when containment and resemblance are computed.
	Skipped       int
	SkippedWeight uint64
	// SkippedKeys are the fingerprint keys of the skipped features,
	// sorted; SkippedHash tells whether a query hash maps to one.
	SkippedKeys []uint32
	// TooFew is set when the query has fewer than MinFeatures features that
	// were not skipped: no similarity evidence is possible, and only
	// identical files are listed (and weak matches, with
	// QueryOptions.WeakShared).
	TooFew bool
	// Candidates is how many files shared at least one feature; with
	// QueryOptions.Visible, how many visible files passed the filters and
	// the threshold (before Limit).
	Candidates int
	// Total is how many files passed the filters and the threshold, before
	// Limit: with Template, the size of the query's family.
	Total int
	// Template is set when the query is mostly features held by more than
	// MaxDF files (past TemplateShare, by a margin for its sampling error)
	// and files holding most of those were found: its family
	// (copies of one template or form), answered and flagged
	// Match.Template, those features counted for them rather than
	// skipped. Skipped then counts only those left out to bound the work
	// (see Similar).
	Template bool
}

// SkippedHash reports whether the query feature of fingerprint hash h was
// skipped for its document frequency: what explains a match's boilerplate.
func (r *Result) SkippedHash(h uint64) bool {
	_, ok := slices.BinarySearch(r.SkippedKeys, fingerprintKey(h))
	return ok
}

// GroupOptions shape an all-against-all run.
type GroupOptions struct {
	Threshold  float64 // least containment, either way, that links two files; 0 means DefaultThreshold
	MaxDF      int     // as in QueryOptions
	SameType   bool    // link only files of one type (default in sifctl: true)
	PathPrefix string  // consider only files in this directory tree (InTree); "" means all
	// MinShared is the fewest distinct fingerprints two files must share to
	// be linked, however high the percentage: a file of two fingerprints
	// "contained" in a large one is no evidence, and union-find would chain
	// unrelated groups through it. 0 means DefaultMinFeatures; negative is
	// an error.
	MinShared int
	// Visible, when set, keeps only files whose record it accepts: the
	// others are left out as if they were not indexed, so they neither
	// appear nor link the files they resemble. It is called once per file
	// under PathPrefix, on the caller's goroutine (as QueryOptions.Visible).
	Visible func(m *FileMeta) bool
	// Links, when set, lists in each Group the links between its files
	// with their containments both ways (Group.Links): what a caller that
	// weighs the pairs itself needs, such as directory grouping.
	Links bool
	// Progress, when set, is kept up to date with the run's step and how
	// much of it is done, for a caller to show while it waits.
	Progress *Progress
}

// Group is a set of similar files (Manber §4, Figure 3): a reference file
// and members, each with how much of it the reference contains, or how much
// of the reference it contains, whichever is higher. Identical copies are
// folded into one member and listed under Copies.
type Group struct {
	Reference GroupMember
	Members   []GroupMember // by percentage, descending
	// Links are the links between the group's files, when
	// GroupOptions.Links is set (else nil), ordered by A, then B.
	Links []GroupLink
}

// GroupLink is one link of a group: two of its files, each named by its
// place in the group (0 the reference, i the member Members[i-1]; A < B),
// and how much of each the other contains, 0..1, as a query of one would
// find the other (boilerplate left out; see Index.Groups for when it is
// less). Copies of a file are identical to it and have no links of their
// own.
type GroupLink struct {
	A, B       int
	AInB, BInA float64
}

// GroupMember is one file of a group.
type GroupMember struct {
	FileRecord
	// Percent is max(containment of the member in the reference, of the
	// reference in the member), 0..1; for the reference, 1. A member linked
	// to the group only through others has Percent 0 and Via set.
	Percent float64
	Via     string   // path of the member's strongest link, when not linked to the reference
	Copies  []string // paths of files identical to this one
	// Template is set when the member's link (to the reference, or Via)
	// joins two template files through what they share with many others:
	// the group is a family of files made from one template or form.
	Template bool
}

// DupeSet is a set of identical files (equal strong hash and size).
type DupeSet struct {
	Size   int64
	Strong [32]byte
	// Files are the identical files, sorted by path. Files of the same
	// device and inode are hard links to one file on disk: they are listed,
	// but Inodes and Redundant count them once.
	Files []FileMeta
	// IDs are the files' ids, one per file of Files: the lowest of an
	// inode's is its oldest name in the index (see HardLinkOf).
	IDs []uint32
}

// Stats counts what an index holds.
type Stats struct {
	Params fingerprint.Params
	Files  uint64
	// Features sums the files' numbers of features (fingerprint keys),
	// each copy counted.
	Features uint64
	// Contents counts the distinct contents (identical files share one),
	// and Postings the postings stored: one per content and fingerprint
	// key, fewer than Features when files are identical.
	Contents uint64
	Postings uint64
	// Fingerprints is always 0: distinct fingerprints are not tracked (that
	// would cost a read per write); sifd check counts them
	// (CheckReport.Fingerprints).
	Fingerprints uint64
	Bytes        uint64 // total size of indexed files
	DiskBytes    uint64 // database size on disk
}

// CheckReport is the result of an invariant check.
type CheckReport struct {
	Files        uint64
	Contents     uint64 // distinct contents: identical files share one
	Postings     uint64
	Fingerprints uint64   // distinct fingerprint keys among the postings
	Problems     []string // empty when the index is consistent; capped at MaxProblems
	More         int      // problems found beyond the cap
	// Damaged says a file of the database is damaged (a block whose
	// checksum does not match, say): the check stopped there, and its last
	// problem names the file and what was wrong. The counts are those
	// made before it. The cure is to rebuild the index (sifd run moves a
	// damaged one aside and does).
	Damaged bool
}

// MaxProblems caps CheckReport.Problems.
const MaxProblems = 100

// OK reports whether the check found nothing wrong.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 && r.More == 0 }

// Querier answers similarity questions. Safe for concurrent use. The
// queries stop when their context is done (a client hung up), returning
// an error that wraps the context's.
type Querier interface {
	Params() fingerprint.Params
	Similar(ctx context.Context, q Query, opts QueryOptions) (*Result, error)
	// EachGroup calls fn with each group Index.Groups would return, in
	// its order, holding one at a time (see Index.EachGroup).
	EachGroup(ctx context.Context, opts GroupOptions, fn func(Group) error) error
	Dupes(ctx context.Context, prefix string) ([]DupeSet, error)
	Stats() (Stats, error)
}

// Writer keeps the index equal to the disk, one file at a time. Safe for
// concurrent use; each call is one atomic batch.
type Writer interface {
	Put(meta FileMeta, sk *fingerprint.Sketch) (FileRecord, error)
	Remove(path string) error
	Rename(oldPath string, meta FileMeta) error
	Lookup(path string) (FileRecord, error)
	LookupInode(dev, ino uint64) ([]FileRecord, error)
	Files(prefix string, fn func(FileRecord) error) error
}

// DefaultSimiHash is whether a new index keeps SimiHash keys when
// Options.SimiHash does not say. It is off: SimiHash's bit-level scan
// nearly doubles the sketcher's CPU time (0.24 → 0.43 s over Go's sources,
// 11,478 files, 128 MB), so sifd's first scan of them took 1.34 times as
// long to be ready with 2 workers (2.11 → 2.82 s, medians of 3, load
// average about 5 on 2 cores) and 1.25 with 1, and its index took 8 %
// more room (4.37 → 4.71 MB, about 30 bytes a file), for a query that
// finds only near-identical files, which the default query finds too.
const DefaultSimiHash = false
