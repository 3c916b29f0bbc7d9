package ipc

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Code is a stable error code carried across the socket.
type Code string

const (
	CodeBadRequest     Code = "bad_request"     // the request is malformed or a field is invalid
	CodeBadPrefix      Code = "bad_prefix"      // a directory-tree prefix is under no root of the daemon, nor above one: it can hold no indexed file
	CodeParamsMismatch Code = "params_mismatch" // fingerprints made with other parameters than the index's
	CodeNotFound       Code = "not_found"       // no such route or object
	CodeMethod         Code = "method_not_allowed"
	CodeUnavailable    Code = "unavailable"       // the daemon is shutting down
	CodeTimeout        Code = "timeout"           // a wait did not complete in time, or the request was not received in time
	CodeBusy           Code = "busy"              // the daemon serves as many requests as it takes at once; retry after Retry-After
	CodeTooLarge       Code = "too_large"         // the body or a list in it is larger than the daemon accepts
	CodeInternal       Code = "internal"          // the daemon failed; see its log
	CodeForbidden      Code = "forbidden"         // the caller may not do this (or cannot be identified)
	CodeNoFleet        Code = "no_fleet"          // the daemon has no fleet ([fleet] in its configuration)
	CodeFleetDown      Code = "fleet_unavailable" // the fleet database did not answer in time, or failed
	CodeNoSimiHash     Code = "no_simihash"       // the index keeps no SimiHash keys: it was created without [scheme] simihash
)

// Error is an error reported by the daemon.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// Error is the message, said to come from the daemon; the code is for
// programs (a person is told what was wrong, not "(bad_request)").
func (e *Error) Error() string { return "sifd: " + e.Message }

type errorBody struct {
	Error *Error `json:"error"`
}

// PathFields splits a file path into its wire fields: the path itself when
// it is valid UTF-8, else a lossy rendering and the exact bytes in base64.
func PathFields(p string) (display string, raw string) {
	if utf8.ValidString(p) {
		return p, ""
	}
	return string([]rune(p)), base64.StdEncoding.EncodeToString([]byte(p))
}

// JoinPath is the inverse of PathFields: the exact path from its wire
// fields.
func JoinPath(display, raw string) (string, error) {
	if raw == "" {
		return display, nil
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return "", fmt.Errorf("path_raw: %w", err)
	}
	return string(b), nil
}

// FilePath is a path on the wire with its exact bytes when they are not
// valid UTF-8 (see PathFields).
type FilePath struct {
	Path    string `json:"path"`
	PathRaw string `json:"path_raw,omitempty"`
}

// NewFilePath returns the wire form of p.
func NewFilePath(p string) FilePath {
	d, raw := PathFields(p)
	return FilePath{Path: d, PathRaw: raw}
}

// Exact returns the path's exact bytes, or its display form if path_raw is
// malformed.
func (f FilePath) Exact() string {
	if p, err := JoinPath(f.Path, f.PathRaw); err == nil {
		return p
	}
	return f.Path
}

// Feature is one fingerprint of a query, with its count and the bytes one
// occurrence covers.
type Feature struct {
	Hash  string `json:"hash"` // 16 hex digits
	Count uint32 `json:"count"`
	Len   uint32 `json:"len,omitempty"`
}

// EncodeFeatures converts features to their wire form.
func EncodeFeatures(fs []fingerprint.Feature) []Feature {
	out := make([]Feature, len(fs))
	var b [8]byte
	for i, f := range fs {
		binary.BigEndian.PutUint64(b[:], f.Hash)
		out[i] = Feature{Hash: hex.EncodeToString(b[:]), Count: f.Count, Len: f.Len}
	}
	return out
}

// DecodeFeatures converts wire features back, checking each.
func DecodeFeatures(ws []Feature) ([]fingerprint.Feature, error) {
	out := make([]fingerprint.Feature, len(ws))
	for i, w := range ws {
		var b [8]byte
		if len(w.Hash) != 16 {
			return nil, fmt.Errorf("features[%d].hash %q: want 16 hex digits", i, w.Hash)
		}
		if _, err := hex.Decode(b[:], []byte(w.Hash)); err != nil {
			return nil, fmt.Errorf("features[%d].hash %q: want 16 hex digits", i, w.Hash)
		}
		if w.Count == 0 {
			return nil, fmt.Errorf("features[%d].count: must be at least 1", i)
		}
		var h uint64
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
		out[i] = fingerprint.Feature{Hash: h, Count: w.Count, Len: w.Len}
	}
	return out, nil
}

// Info describes the daemon and its index: what a client needs to
// fingerprint a query the same way.
type Info struct {
	Version string             `json:"version"`
	Params  fingerprint.Params `json:"params"`
	// SimiHash says the index keeps SimiHash keys: it answers similar
	// requests by SimiHash (SimilarRequest.By).
	SimiHash bool       `json:"simihash,omitempty"`
	Index    IndexStats `json:"index"`
}

// IndexStats counts what the index holds.
type IndexStats struct {
	Files        uint64 `json:"files"`
	Bytes        uint64 `json:"bytes"`
	Contents     uint64 `json:"contents"`               // distinct contents: identical files share one
	Postings     uint64 `json:"postings"`               // stored: one per content and fingerprint key
	Fingerprints uint64 `json:"fingerprints,omitempty"` // distinct; not tracked by the daemon (sifd check counts them)
	DiskBytes    uint64 `json:"disk_bytes"`
	// Compacting is set while the daemon rewrites the index compactly
	// after a scan that wrote much: DiskBytes shrinks when it is done.
	Compacting bool `json:"compacting,omitempty"`
}

// QuerySketch is the query as SimilarRequest and BasisRequest carry it:
// its sketch on the wire, with its path. Embedded, its fields are theirs
// in JSON too.
type QuerySketch struct {
	// Params are the parameters the features were made with; they must equal
	// the index's (see Info). Required: a request without them, or with
	// them empty ({}), is refused with CodeBadRequest.
	Params fingerprint.Params `json:"params"`
	// Path of the query file, if it has one on this machine: that file is
	// not listed as its own match, and it decides the extension for
	// same_ext.
	Path    string `json:"path,omitempty"`
	PathRaw string `json:"path_raw,omitempty"`
	// Size, Strong (64 hex digits, SHA-256) and Type of the query content.
	Size     int64            `json:"size"`
	Strong   string           `json:"strong"`
	Type     fingerprint.Type `json:"type"`
	Features []Feature        `json:"features"`
	// SimiHash is the query's SimiHash sum table and skew key, which a
	// query by SimiHash (SimilarRequest.By) needs; absent otherwise.
	SimiHash *SimiHash `json:"simihash,omitempty"`
}

// SimiHash is a content's SimiHash summary: its sum table, the count of
// each tag's matches (fingerprint.Tags), and its skew key
// (fingerprint.SkewKey of the sum table).
type SimiHash struct {
	Sum fingerprint.SumTable `json:"sum"`
	Key uint32               `json:"key"`
}

// Ways of answering a SimilarRequest (By).
const (
	// ByManber compares fingerprints (the index's scheme, manber by
	// default): containment of the query in each match.
	ByManber = "manber"
	// BySimiHash answers as SimiFind (Sadowski and Levin): the files
	// whose SimiHash key, size and sum table are within the tolerances of
	// the query's, the near-identical ones.
	BySimiHash = "simihash"
)

// SimilarRequest is a one-against-all query.
type SimilarRequest struct {
	QuerySketch

	// By says how to find the matches: ByManber (the default, "") or
	// BySimiHash, which needs QuerySketch.SimiHash and an index created
	// with SimiHash keys, and takes only Tolerances, Limit, SameExt and
	// PathPrefix of the options below (its params need not be the
	// index's).
	By string `json:"by,omitempty"`
	// Tolerances are SimiFind's (By BySimiHash); absent fields mean the
	// defaults (fingerprint.DefaultTolerances).
	Tolerances *fingerprint.Tolerances `json:"tolerances,omitempty"`

	// Threshold is the least containment of the query in a match, in
	// percent; absent means 25.
	Threshold *float64 `json:"threshold,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	// SizeRatio, when > 1, drops files whose size differs from the query's
	// by more than this factor.
	SizeRatio  float64 `json:"size_ratio,omitempty"`
	SameExt    bool    `json:"same_ext,omitempty"`
	SameType   bool    `json:"same_type,omitempty"`
	PathPrefix string  `json:"path_prefix,omitempty"`
	// MaxDF skips fingerprints found in more files than this; 0 means the
	// daemon's default, -1 no cap.
	MaxDF int `json:"max_df,omitempty"`

	// Content (the query's bytes, at most MaxContent) or Windows (a
	// signature of its 32-byte windows) let the daemon check the best
	// candidates against their current bytes (see CheckTop); without
	// either, or with Fast, the matches keep the index's estimates.
	Content []byte   `json:"content,omitempty"` // base64 on the wire
	Windows *Windows `json:"windows,omitempty"`
	Fast    bool     `json:"fast,omitempty"`
	// ListCommon asks for the hashes of the query's features skipped as
	// too common to count (SimilarResponse.Common): what sifctl's
	// --explain marks as boilerplate.
	ListCommon bool `json:"list_common,omitempty"`
	// Fleet asks the fleet index too (the daemon's [fleet]): the answer
	// adds the files of other hosts that match, each with its Host and
	// estimated from fingerprints, to this host's own (checked as
	// without Fleet). For root, the daemon's user and the fleet's ask
	// group.
	Fleet bool `json:"fleet,omitempty"`
}

// Match is one file similar to a query.
type Match struct {
	Path               string  `json:"path"`
	PathRaw            string  `json:"path_raw,omitempty"`
	Size               int64   `json:"size"`
	Containment        float64 `json:"containment"`         // percent of the query found in this file
	ReverseContainment float64 `json:"reverse_containment"` // percent of this file found in the query
	Resemblance        float64 `json:"resemblance"`         // percent, shared over union
	SharedBytes        *int64  `json:"shared_bytes"`        // null when the scheme does not know lengths
	Identical          bool    `json:"identical"`
	Type               string  `json:"type"`
	MtimeNs            int64   `json:"mtime_ns"`
	// Measure says where the numbers come from: MeasureExact,
	// MeasureSampled or MeasureEstimated.
	Measure string `json:"measure"`
	// Changed is set when the file changed since it was indexed: it was
	// measured on its current bytes, and Size and MtimeNs are its current
	// ones.
	Changed bool `json:"changed,omitempty"`
	// Template is set, when the query is a template query
	// (SimilarResponse.Template), on a file found mostly through what many
	// files share: one of the query's family.
	Template bool `json:"template,omitempty"`
	// Host is the host of the file, in an answer that asked the fleet
	// (SimilarRequest.Fleet); absent otherwise.
	Host string `json:"host,omitempty"`
	// SimiHash is SimiFind's verdict, in an answer by SimiHash
	// (SimilarRequest.By); the percentages are then 0.
	SimiHash *SimiMatch `json:"simihash,omitempty"`
}

// SimiMatch is how far a match is from the query by SimiHash: the
// distance of their keys and of their sum tables (the sum of the
// differences of the tags' counts), each with the tolerance it was held
// to (as in SimiFindInfo). Identical files are flagged in Match.Identical.
type SimiMatch struct {
	KeyDistance  uint64 `json:"key_distance"`
	KeyTolerance uint64 `json:"key_tolerance"`
	SumDistance  uint64 `json:"sum_distance"`
	SumTolerance uint64 `json:"sum_tolerance"`
}

// SimiFindInfo is what an answer by SimiHash says of the query.
type SimiFindInfo struct {
	Tolerances   fingerprint.Tolerances `json:"tolerances"`    // normalized
	KeyTolerance uint64                 `json:"key_tolerance"` // for the query's size
	SumTolerance uint64                 `json:"sum_tolerance"`
	// KeyHits counts the contents within the key tolerance, SumHits
	// those of them found similar (their files are the matches).
	KeyHits int `json:"key_hits"`
	SumHits int `json:"sum_hits"`
}

// SimilarResponse answers a SimilarRequest.
type SimilarResponse struct {
	Matches []Match `json:"matches"`
	// SimiFind is set in an answer by SimiHash (SimilarRequest.By); the
	// fingerprint fields below are then 0.
	SimiFind *SimiFindInfo `json:"simifind,omitempty"`
	// Fingerprints is the number of distinct query fingerprints, Skipped how
	// many were ignored because they occur in more than MaxDF files.
	Fingerprints int `json:"fingerprints"`
	Skipped      int `json:"skipped"`
	MaxDF        int `json:"max_df"`
	// Common lists the hashes (16 hex digits) of the query's features
	// that were skipped, when the request asked for them (ListCommon).
	Common []string `json:"common,omitempty"`
	// TooFew is set when the query has too few fingerprints to carry
	// evidence of similarity (MinFingerprints); only identical files are
	// then listed. When the daemon checks the candidates against the
	// query's bytes (Content or Windows), a candidate sharing even one
	// fingerprint is judged by that check, and TooFew is set only when no
	// fingerprint but those too common to count is left.
	TooFew          bool `json:"too_few"`
	MinFingerprints int  `json:"min_fingerprints"`
	Candidates      int  `json:"candidates"`
	// Template is set when most of the query (by weight) is in
	// fingerprints found in more than MaxDF files: the query is one of a
	// family of files made from one template or form (or the template
	// itself). Those fingerprints are then counted, not skipped, and the
	// family is the answer, the closest first; Skipped counts only those
	// left out to bound the work.
	Template bool `json:"template,omitempty"`
	// Total is how many files passed the filters and the threshold before
	// the limit: with Template, the size of the query's family.
	Total int `json:"total"`
	// Checked is how many candidates were measured against their current
	// bytes; Dropped how many of those had vanished (they are not listed).
	Checked int `json:"checked"`
	Dropped int `json:"dropped,omitempty"`
	// FleetError is set when the request asked the fleet and the fleet did
	// not answer (CodeFleetDown: the database did not answer in time, or
	// failed): the matches are this host's only.
	FleetError *Error `json:"fleet_error,omitempty"`
	// ElapsedNs is the time spent in the daemon, from the request's
	// receipt (its body read) to the answer, any wait for a slot included.
	ElapsedNs int64 `json:"elapsed_ns"`
}

// GroupFile is one file of a group.
type GroupFile struct {
	Path    string  `json:"path"`
	PathRaw string  `json:"path_raw,omitempty"`
	Size    int64   `json:"size"`
	Percent float64 `json:"percent"`
	// Via names the file this one is most similar to when it is linked to
	// the group but not to its reference.
	Via    *FilePath  `json:"via,omitempty"`
	Copies []FilePath `json:"copies,omitempty"` // identical files
	// Template is set when this file's link is between two files that are
	// mostly what many files share (fingerprints found in more than the
	// daemon's max_df files): the group is a family of files made from one
	// template or form.
	Template bool `json:"template,omitempty"`
	// SimiHash is, in a group by SimiHash (GroupsResponse.By), how far
	// this file is from the group's reference (Percent is then 0).
	SimiHash *SimiGroupFile `json:"simihash,omitempty"`
}

// SimiGroupFile is how far a file of a group by SimiHash is from the
// group's reference: the distances of their keys and of their sum tables.
// A file linked to the group through others may be farther from the
// reference than the tolerances.
type SimiGroupFile struct {
	KeyDistance uint64 `json:"key_distance"`
	SumDistance uint64 `json:"sum_distance"`
	Identical   bool   `json:"identical,omitempty"` // the reference's content
}

// Group is a set of similar files with a reference file (Manber's "R").
type Group struct {
	Reference GroupFile   `json:"reference"`
	Members   []GroupFile `json:"members"`
	// Links are the links between the group's files, when asked for
	// (GroupsOptions.Links), by A, then B.
	Links []GroupLink `json:"links,omitempty"`
}

// GroupLink is one link of a group: two of its files named by their place
// (0 the reference, i the member Members[i-1]; A < B), and the percentage
// of each the other contains. A file's copies are identical to it and
// have no links of their own.
type GroupLink struct {
	A    int     `json:"a"`
	B    int     `json:"b"`
	AInB float64 `json:"a_in_b"`
	BInA float64 `json:"b_in_a"`
}

// check reports what is wrong with l as a link of a group of n files.
func (l GroupLink) check(n int) error {
	switch {
	case l.A < 0 || l.A >= l.B || l.B >= n:
		return fmt.Errorf("link %d-%d: not two files of a group of %d", l.A, l.B, n)
	case !(l.AInB >= 0 && l.AInB <= 100 && l.BInA >= 0 && l.BInA <= 100):
		return fmt.Errorf("link %d-%d: percentages %v and %v, want 0 to 100", l.A, l.B, l.AInB, l.BInA)
	}
	return nil
}

// GroupsResponse answers GET /v1/groups.
type GroupsResponse struct {
	Threshold float64 `json:"threshold"`
	// By is BySimiHash in an answer by SimiHash (GET /v1/groups?by=simihash),
	// absent otherwise; SimiHash then counts the sweep's work.
	By        string          `json:"by,omitempty"`
	Groups    []Group         `json:"groups"`
	SimiHash  *SimiGroupsInfo `json:"simihash,omitempty"`
	ElapsedNs int64           `json:"elapsed_ns"` // as in SimilarResponse
}

// SimiGroupsInfo is what an answer of groups by SimiHash says of the
// sweep: the tolerances, the contents swept and their pairs, n(n−1)/2, the
// sum-table comparisons made (pairs within the key tolerance and the size
// ratio) and how many were similar; Overflow counts the contents that left
// the sweep's full window while still within reach (their later pairs
// were not compared), and Window the most contents it held.
type SimiGroupsInfo struct {
	Tolerances  fingerprint.Tolerances `json:"tolerances"`
	Contents    int                    `json:"contents"`
	Pairs       int64                  `json:"pairs"`
	Comparisons int64                  `json:"comparisons"`
	Similar     int64                  `json:"similar"`
	Overflow    int64                  `json:"overflow"`
	Window      int                    `json:"window"`
}

// DupeSet is a set of identical files (equal size and SHA-256).
type DupeSet struct {
	Size   int64      `json:"size"`
	Strong string     `json:"strong"` // SHA-256, 64 hex digits
	Files  []DupeFile `json:"files"`  // by path
	// Inodes is the number of distinct files on disk: hard links to one
	// inode are one. RedundantFiles is Inodes-1, and RedundantBytes the
	// bytes they take (what removing them would free).
	Inodes         int   `json:"inodes"`
	RedundantFiles int   `json:"redundant_files"`
	RedundantBytes int64 `json:"redundant_bytes"`
	// Hosts is the number of hosts holding the content, in an answer from
	// the fleet (fleet=1); absent otherwise.
	Hosts int `json:"hosts,omitempty"`
}

// DupeFile is one file of a DupeSet.
type DupeFile struct {
	// Host is the file's host, in an answer from the fleet.
	Host string `json:"host,omitempty"`
	FilePath
	// HardLinkOf names the first file of the set (by path) that is the same
	// file on disk (same device and inode), when this one is a hard link
	// to it.
	HardLinkOf *FilePath `json:"hard_link_of,omitempty"`
}

// DupesTotals sums the sets of a DupesResponse.
type DupesTotals struct {
	Sets           int   `json:"sets"`
	Files          int   `json:"files"`
	RedundantFiles int   `json:"redundant_files"`
	RedundantBytes int64 `json:"redundant_bytes"`
}

// DupesResponse answers GET /v1/dupes.
type DupesResponse struct {
	Sets   []DupeSet   `json:"sets"`
	Totals DupesTotals `json:"totals"`
}

// DirTotalsRequest asks POST /v1/dirs/totals for the indexed files and
// bytes in each of Dirs' trees (absolute paths, matched by whole path
// components). MaxFiles caps the files counted per directory: 0 means
// DefaultDirMaxFiles, and more than MaxDirMaxFiles is cut to it.
type DirTotalsRequest struct {
	Dirs     []HostDir `json:"dirs"`
	MaxFiles int       `json:"max_files,omitempty"`
}

// HostDir is a directory asked of POST /v1/dirs/totals. Host, when set,
// names a host of the fleet (the daemon's [fleet]): the directory is
// that host's, and its totals are what the host published under it,
// from the fleet database (this host's own name is this host). Asking
// for another host's directory is for those who may ask the fleet.
type HostDir struct {
	Host string `json:"host,omitempty"`
	FilePath
}

// Limits of POST /v1/dirs/totals.
const (
	MaxDirTotals       = 1024      // directories in one request (413 too_large beyond)
	DefaultDirMaxFiles = 200_000   // files counted per directory by default
	MaxDirMaxFiles     = 1_000_000 // the most a request may ask for
)

// DirTotal is what the index holds in one directory tree, counting only
// the files the caller may read. Truncated is set when the count stopped
// at the request's MaxFiles: Files and Bytes are then lower bounds.
type DirTotal struct {
	// Host is the directory's host, as asked (HostDir.Host).
	Host string `json:"host,omitempty"`
	FilePath
	Files     int64 `json:"files"`
	Bytes     int64 `json:"bytes"`
	Truncated bool  `json:"truncated,omitempty"`
}

// DirTotalsResponse answers a DirTotalsRequest: one DirTotal per
// directory asked, in the order asked.
type DirTotalsResponse struct {
	Dirs      []DirTotal `json:"dirs"`
	ElapsedNs int64      `json:"elapsed_ns"` // as in SimilarResponse
}

// Status is what the daemon is doing.
type Status struct {
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	State   string    `json:"state"` // "scanning" until every root's first scan has ended, then "ready"; "degraded" while index writes are on hold
	// Reason says why the daemon is degraded, e.g. "no space left on
	// device: ...".
	Reason string       `json:"reason,omitempty"`
	DB     string       `json:"db"`
	Socket string       `json:"socket"`
	Params string       `json:"params"`
	Roots  []RootStatus `json:"roots"`
	// RemovedRoots are configured roots (configuration file or --root)
	// not in effect because sifctl roots remove took them out; sifctl roots
	// add puts them back.
	RemovedRoots []FilePath `json:"removed_roots,omitempty"`
	// Forgetting lists the removed roots whose records are still being
	// deleted from the index, a batch at a time: Index counts none of
	// their files, and queries answer none, from the moment the removal
	// is accepted.
	Forgetting []ForgetStatus `json:"forgetting,omitempty"`
	Queue      QueueStatus    `json:"queue"`
	Counters   Counters       `json:"counters"`
	Index      IndexStats     `json:"index"`
	LastError  []string       `json:"last_errors,omitempty"`
	// UncleanStart is set when the previous run did not shut down cleanly,
	// so the first scan re-read what that run may have missed.
	UncleanStart bool `json:"unclean_start,omitempty"`
	// Redacted is set in the status given to a caller who does not see
	// every indexed file (not root, not the daemon's user): it lists only
	// the roots that caller can read, and leaves out the db, the counters,
	// the index's totals, the roots' file counts and the error lines, which
	// would name or count files the caller cannot read.
	Redacted bool `json:"redacted,omitempty"`
	// IndexRebuilt is set once the index was found damaged or deleted and
	// rebuilt by a full scan.
	IndexRebuilt *IndexRebuild `json:"index_rebuilt,omitempty"`
	// StillChanging names files that kept changing (up to 20): read at
	// most once per max settle delay.
	StillChanging []string `json:"still_changing,omitempty"`
	// LowSpace is set while index writes are on hold for want of room
	// under the index: how much is free and how much sifd keeps free.
	LowSpace *LowSpace `json:"low_space,omitempty"`
	// Fleet is the link to the fleet index, when the daemon has one
	// (the [fleet] table of its configuration).
	Fleet *FleetStatus `json:"fleet,omitempty"`
}

// Work is how far a long request the daemon is answering has come (GET
// /v1/work?id=ID), for its client to show while it waits: the request is
// the one its client named with request_id (GroupsOptions.RequestID).
type Work struct {
	ID string `json:"id"`
	// Step is what the daemon is doing, e.g. "linking similar files" or,
	// when the pairs take several passes over the index, "linking similar
	// files, pass 2 of at least 3"; "" before the first step.
	Step string `json:"step"`
	// Done is the part of the step done, 0..1, or -1 when the step cannot
	// tell.
	Done          float64 `json:"done"`
	ElapsedNs     int64   `json:"elapsed_ns"`
	StepElapsedNs int64   `json:"step_elapsed_ns"`
}

// FleetStatus is the state of the daemon's link to the fleet index.
type FleetStatus struct {
	// Host is this host's name in the fleet.
	Host string `json:"host"`
	// Publishing lists the published roots (none: the daemon only asks).
	Publishing []string `json:"publishing"`
	// Connected says the last exchange with the database succeeded;
	// LastError (and ErrorAt) is the last failure, cleared by a success.
	Connected bool      `json:"connected"`
	LastError string    `json:"last_error,omitempty"`
	ErrorAt   time.Time `json:"error_at,omitzero"`
	// Pending is the number of changed files not yet published, counted
	// up to a million (PendingMore says there were more), and LagSecs how
	// long the oldest of them has waited.
	Pending     int     `json:"pending"`
	PendingMore bool    `json:"pending_more,omitempty"`
	LagSecs     float64 `json:"lag_seconds"`
	// Resyncing is set while the daemon compares its rows in the fleet
	// with its whole index: at the first publication, and after the
	// database lost or gained rows behind its back (restored from a
	// backup, another host under the same name).
	Resyncing bool `json:"resyncing,omitempty"`
	// Published counts the files published (set or removed) since start,
	// and LastPublished is when a batch last went in.
	Published     int64     `json:"published"`
	LastPublished time.Time `json:"last_published,omitzero"`
}

// LowSpace says why index writes wait for room: the filesystem of the
// index has FreeBytes available, below MinFreeBytes, the free space sifd
// keeps for the index to flush and compact (or full, when MinFreeBytes is
// 0). Setting names what changes the minimum.
type LowSpace struct {
	FreeBytes    uint64 `json:"free_bytes"`
	MinFreeBytes uint64 `json:"min_free_bytes"`
	Setting      string `json:"setting"`
}

// IndexRebuild says why and when the index was rebuilt, and where the
// damaged one was moved ("" when its directory had been deleted).
type IndexRebuild struct {
	Reason  string    `json:"reason"`
	MovedTo string    `json:"moved_to,omitempty"`
	At      time.Time `json:"at"`
}

// Root states.
const (
	RootScanning = "scanning" // a scan of the whole root is running or queued (first scan, reconcile, rescan)
	RootWatching = "watching" // every directory is watched; changes apply as they happen
	RootPolling  = "polling"  // a filesystem without change events: scanned every rescan interval
	RootDegraded = "degraded" // some directories could not be watched and are rescanned periodically
	RootFailed   = "failed"   // the root cannot be read; retried at the next rescan
	RootMissing  = "missing"  // deleted, moved away or unmounted: its files are kept, not answered; reconciled when back
)

// RootStatus is one watched root.
type RootStatus struct {
	Path string `json:"path"`
	// State is one of the Root* constants.
	State string `json:"state"`
	// Reason says why a root is polling, degraded or failed.
	Reason string `json:"reason,omitempty"`
	// FS names the root's filesystem type (ext4, nfs, fuse, ...).
	FS string `json:"fs,omitempty"`
	// Source is "config" for roots from the configuration file or --root,
	// "added" for roots added with sifctl roots add (kept in roots.json in
	// the daemon's state directory, beside the index directory).
	Source string `json:"source,omitempty"`
	// Watched is the number of watched directories under the root, and
	// Unwatched the number of subtrees that could not be watched.
	Watched   int `json:"watched_dirs"`
	Unwatched int `json:"unwatched_dirs,omitempty"`
	// The current or last scan: files and bytes found by the walk so far
	// (Seen), those dealt with (Done: found unchanged, read, or skipped),
	// and those read.
	FilesSeen uint64 `json:"files_seen"`
	BytesSeen uint64 `json:"bytes_seen"`
	FilesDone uint64 `json:"files_done"`
	BytesDone uint64 `json:"bytes_done"`
	FilesRead uint64 `json:"files_read"`
	BytesRead uint64 `json:"bytes_read"`
	// WalkDone is set once the scan's walk has found every file, so Seen
	// are totals and ETA can be estimated.
	WalkDone bool    `json:"walk_done"`
	ScanSecs float64 `json:"scan_seconds"`
	// BytesPerSec is the rate at which the scan deals with bytes, and
	// ETASecs the estimated seconds left (absent until the walk is done).
	BytesPerSec float64  `json:"bytes_per_second,omitempty"`
	ETASecs     *float64 `json:"eta_seconds,omitempty"`
	Scans       uint64   `json:"scans"` // scans of the whole root since start
	LastError   string   `json:"last_error,omitempty"`
	ScanFinish  string   `json:"scan_finished,omitempty"`
	// Denied is what sifd leaves out of the index under the root for lack
	// of permission; absent when nothing is.
	Denied *DeniedStatus `json:"permission_denied,omitempty"`
}

// DeniedStatus lists the files and directories sifd cannot read, for lack
// of permission: Count of them (at most MaxDenied are kept; More says
// there were others), and the first few Paths in path order. Each is
// retried when its permissions (or those of the directory above it)
// change, and every few seconds besides.
type DeniedStatus struct {
	Count int      `json:"count"`
	More  bool     `json:"more,omitempty"`
	Paths []string `json:"paths"`
}

// QueueStatus is the work waiting in the daemon.
type QueueStatus struct {
	Settling int `json:"settling"` // changed paths waiting for their settle delay
	Live     int `json:"live"`     // settled changes queued for a worker
	Scan     int `json:"scan"`     // files found by scans queued for a worker
	Scans    int `json:"scans"`    // directory scans queued or running
	Busy     int `json:"busy"`     // workers busy
}

// ForgetStatus is a removed root whose records are being deleted: the
// files and bytes still in the index under it.
type ForgetStatus struct {
	Dir   FilePath `json:"dir"`
	Files uint64   `json:"files"`
	Bytes uint64   `json:"bytes"`
}

// RootsResponse answers GET and POST /v1/roots.
type RootsResponse struct {
	Roots []RootStatus `json:"roots"`
}

// RootsRequest changes the roots: Action "add" or "remove", with the
// directory. The change is applied at once and persisted in the index
// directory, so it outlives restarts.
type RootsRequest struct {
	Action  string `json:"action"`
	Path    string `json:"path"`
	PathRaw string `json:"path_raw,omitempty"`
}

// RescanRequest asks for a reconcile of Path (a root or a directory under
// one), or of every root when Path is empty.
type RescanRequest struct {
	Path    string `json:"path,omitempty"`
	PathRaw string `json:"path_raw,omitempty"`
}

// RescanResponse lists the directories queued for a reconcile.
type RescanResponse struct {
	Queued []FilePath `json:"queued"`
}

// WaitRequest asks the daemon to answer once every change made before the
// request has been applied to the index. TimeoutMs bounds the wait; 0
// means 60 seconds.
type WaitRequest struct {
	TimeoutMs int64 `json:"timeout_ms,omitempty"`
}

// Limits of POST /v1/wait.
const (
	DefaultWait = 60 * time.Second // a WaitRequest without a timeout
	MaxWait     = time.Hour        // longer timeouts are cut to this
)

// WaitResponse answers a WaitRequest that completed.
type WaitResponse struct {
	// Cookies is the number of roots synchronised with a cookie file;
	// Rescanned lists the roots that had to be rescanned instead (no
	// change events, or not writable by the daemon).
	Cookies   int        `json:"cookies"`
	Rescanned []FilePath `json:"rescanned,omitempty"`
	ElapsedNs int64      `json:"elapsed_ns"`
}

// Counters count what the daemon did since it started.
type Counters struct {
	Indexed           uint64 `json:"indexed"`             // files read and (re)indexed
	Unchanged         uint64 `json:"unchanged"`           // skipped: size, mtime and inode as indexed
	Removed           uint64 `json:"removed"`             // records of vanished files removed
	Unreadable        uint64 `json:"unreadable"`          // files or directories that could not be opened or read
	Special           uint64 `json:"special"`             // fifos, sockets, devices
	Symlinks          uint64 `json:"symlinks"`            // not followed
	Vanished          uint64 `json:"vanished"`            // gone between listing and reading
	ChangedDuringRead uint64 `json:"changed_during_read"` // reads that found the file changing (each put back to settle, up to a few times)
	TooLarge          uint64 `json:"too_large"`           // above the size limit
	TooSmall          uint64 `json:"too_small"`           // below min_size
	Excluded          uint64 `json:"excluded"`            // records dropped because an exclude pattern now matches
	Renamed           uint64 `json:"renamed"`             // moved files recognised by device, inode, size and mtime: not read again
	Events            uint64 `json:"events"`              // change events received from the watcher
	Overflows         uint64 `json:"overflows"`           // times the kernel dropped events (each forces a reconcile)
	Errors            uint64 `json:"errors"`              // index write failures
	// ScanYields counts the times a scan's worker waited for queries
	// being answered before it went on (queries go first).
	ScanYields uint64 `json:"scan_yields"`
}

// MarshalJSONLine encodes v as one line of JSON with a trailing newline.
func MarshalJSONLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// DefaultMinShared is the daemon's default for GroupsOptions.MinShared:
// the fingerprints two files must share to be linked (the index's
// DefaultMinFeatures, which a test of package server holds it to; package
// ipc does not import the index, so that clients stay light).
const DefaultMinShared = 4
