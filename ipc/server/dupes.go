package server

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// dupes answers GET /v1/dupes. The index returns the sets whole; each is
// converted, encoded and sent in turn (see stream), and let go of once
// sent, so neither the wire form of the answer nor its JSON is held whole.
// The bytes are those of one ipc.DupesResponse encoded at once.
func (s *Server) dupes(w http.ResponseWriter, r *http.Request, c *caller) {
	prefix, err := absPath("prefix", r.URL.Query().Get("prefix"))
	if err != nil {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
		return
	}
	if !s.checkPrefix(w, c, prefix) {
		return
	}
	filter, err := dupesFilterOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
		return
	}
	if r.URL.Query().Get("fleet") == "1" {
		if filter.in != "" {
			// The fleet's files are of many hosts; its prefix already
			// keeps the sets with a file of this host under it.
			writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, "in: not with fleet=1, whose prefix keeps the sets with a file of this host under it")
			return
		}
		if !s.mayAskFleet(w, c) {
			return
		}
		sets, err := s.fleet.Dupes(r.Context(), prefix)
		if err != nil {
			s.fleetFailed(w, err)
			return
		}
		s.streamDupes(w, len(sets), func(i int) (ipc.DupeSet, bool) { return sets[i], filter.keep(&sets[i]) })
		return
	}
	sets, err := s.q.Dupes(r.Context(), prefix)
	if err != nil {
		s.fail(w, err)
		return
	}
	var canRead func(*index.FileMeta) bool
	if v := c.view(); v != nil {
		canRead = visibleTo(v)
	}
	s.streamDupes(w, len(sets), func(i int) (ipc.DupeSet, bool) {
		set, ok := dupeSet(&sets[i], canRead)
		sets[i] = index.DupeSet{} // sent: the collector may have it
		return set, ok && filter.keep(&set)
	})
}

// dupesFilter is what GET /v1/dupes keeps beyond the prefix and what the
// caller may read: sets of files of at least minSize bytes, with a file
// under the directory tree in ("" for any).
type dupesFilter struct {
	minSize int64
	in      string
}

// dupesFilterOf reads the parameters min_size (bytes, 0 when absent) and
// in (an absolute directory) of r.
func dupesFilterOf(r *http.Request) (dupesFilter, error) {
	q := r.URL.Query()
	var f dupesFilter
	if v := q.Get("min_size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return f, fmt.Errorf("min_size %q: want a whole number of bytes, 0 or more", v)
		}
		f.minSize = n
	}
	in, err := absPath("in", q.Get("in"))
	f.in = in
	return f, err
}

// keep says whether set passes f. It is asked of the files the caller may
// read, so that a set is not kept for a file under in that the caller
// cannot see.
func (f dupesFilter) keep(set *ipc.DupeSet) bool {
	if set.Size < f.minSize {
		return false
	}
	return f.in == "" || slices.ContainsFunc(set.Files, func(d ipc.DupeFile) bool { return index.InTree(d.Exact(), f.in) })
}

// streamDupes writes the answer of n sets, set(i) giving the i-th and
// whether to send it.
func (s *Server) streamDupes(w http.ResponseWriter, n int, set func(i int) (ipc.DupeSet, bool)) {
	st := newStream(w)
	st.buf = append(st.buf, `{"sets":[`...)
	var totals ipc.DupesTotals
	for i := range n {
		set, ok := set(i)
		if !ok {
			continue
		}
		b, err := json.Marshal(set)
		if err == nil && totals.Sets > 0 {
			st.buf = append(st.buf, ',')
		}
		if err != nil {
			// Cannot happen (strings and numbers); cut the answer short
			// rather than send it without the set.
			s.abortStream(st, w, fmt.Errorf("encoding dupes set: %w", err))
			return
		}
		st.buf = append(st.buf, b...)
		totals.Sets++
		totals.Files += len(set.Files)
		totals.RedundantFiles += set.RedundantFiles
		totals.RedundantBytes += set.RedundantBytes
		if err := st.maybeFlush(); err != nil {
			s.log.Debug("dupes answer not taken", "err", err)
			return
		}
	}
	b, _ := json.Marshal(totals)
	st.buf = append(st.buf, `],"totals":`...)
	st.buf = append(append(st.buf, b...), "}\n"...)
	if err := st.flush(); err != nil {
		s.log.Debug("dupes answer not taken", "err", err)
	}
}

// dupeSet converts one of the index's sets of identical files to its wire
// form, with its redundant copies. Hard links to one inode count as one
// copy on disk. When canRead is not nil, only the files it accepts are
// listed and counted, and a set left with fewer than two files is
// dropped (false): a copy the caller cannot see makes no set.
func dupeSet(d *index.DupeSet, canRead func(*index.FileMeta) bool) (ipc.DupeSet, bool) {
	if canRead != nil {
		kept := index.DupeSet{Size: d.Size, Strong: d.Strong}
		for i := range d.Files {
			if canRead(&d.Files[i]) {
				kept.Files = append(kept.Files, d.Files[i])
				if len(d.IDs) == len(d.Files) {
					kept.IDs = append(kept.IDs, d.IDs[i])
				}
			}
		}
		if len(kept.Files) < 2 {
			return ipc.DupeSet{}, false
		}
		d = &kept
	}
	set := ipc.DupeSet{Size: d.Size, Strong: hex.EncodeToString(d.Strong[:]), Inodes: d.Inodes(),
		Files: make([]ipc.DupeFile, 0, len(d.Files))}
	set.RedundantFiles, set.RedundantBytes = d.Redundant()
	for j, link := range d.HardLinkOf() {
		f := ipc.DupeFile{FilePath: ipc.NewFilePath(d.Files[j].Path)}
		if link != "" {
			l := ipc.NewFilePath(link)
			f.HardLinkOf = &l
		}
		set.Files = append(set.Files, f)
	}
	return set, true
}
