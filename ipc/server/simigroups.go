package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// SimiGrouper is the part of a Backend's Query that finds groups by
// SimiHash (GET /v1/groups?by=simihash); a Query without it, or whose
// index keeps no SimiHash keys, answers with ipc.CodeNoSimiHash.
type SimiGrouper interface {
	SimiHash() bool // the index keeps SimiHash keys
	SimiGroups(ctx context.Context, o index.SimiGroupOptions, fn func(index.SimiGroup) error) (*index.SimiGroupStats, error)
}

// groupsBySimiHash answers GET /v1/groups?by=simihash, streamed as groups
// are (see groups), with the sweep's counts after the groups.
func (s *Server) groupsBySimiHash(w http.ResponseWriter, r *http.Request, c *caller) {
	start := received(r)
	opts, err := simiGroupOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
		return
	}
	if !s.checkPrefix(w, c, opts.PathPrefix) {
		return
	}
	sg, ok := s.q.(SimiGrouper)
	if !ok || !sg.SimiHash() {
		writeError(w, http.StatusConflict, ipc.CodeNoSimiHash, noSimiHash)
		return
	}
	if v := c.view(); v != nil {
		opts.Visible = visibleTo(v)
	}
	st := newStream(w)
	st.buf = append(st.buf, `{"threshold":0,"by":"simihash","groups":[`...)
	n := 0
	stats, err := sg.SimiGroups(r.Context(), opts, func(g index.SimiGroup) error {
		b, err := json.Marshal(wireSimiGroup(g))
		if err != nil {
			return fmt.Errorf("encoding group of %s: %w", g.Members[0].Path, err)
		}
		if n > 0 {
			st.buf = append(st.buf, ',')
		}
		n++
		st.buf = append(st.buf, b...)
		return st.maybeFlush()
	})
	if errors.Is(err, index.ErrNoSimiHash) && !st.sent {
		writeError(w, http.StatusConflict, ipc.CodeNoSimiHash, noSimiHash)
		return
	}
	if err == nil {
		var b []byte
		b, err = json.Marshal(ipc.SimiGroupsInfo{Tolerances: stats.Tolerances, Contents: stats.Contents, Pairs: stats.Pairs,
			Comparisons: stats.Comparisons, Similar: stats.Similar, Overflow: stats.Overflow, Window: stats.Window})
		st.buf = append(st.buf, `],"simihash":`...)
		st.buf = append(st.buf, b...)
		st.buf = append(st.buf, `,"elapsed_ns":`...)
		st.buf = strconv.AppendInt(st.buf, time.Since(start).Nanoseconds(), 10)
		st.buf = append(st.buf, "}\n"...)
	}
	if err == nil {
		err = st.flush()
	}
	switch {
	case err == nil:
	case st.err != nil:
		s.log.Debug("groups answer not taken", "groups", n, "err", st.err)
	default:
		s.abortStream(st, w, fmt.Errorf("groups answer cut short after %d groups: %w", n, err))
	}
}

// simiGroupOptions reads the parameters of a groups request by SimiHash:
// prefix and SimiFind's tolerances (key, size_ratio, sum); those of groups
// by fingerprints are refused rather than ignored.
func simiGroupOptions(r *http.Request) (index.SimiGroupOptions, error) {
	q := r.URL.Query()
	var o index.SimiGroupOptions
	for _, name := range []string{"threshold", "max_df", "min_shared", "links", "all_types"} {
		if q.Has(name) {
			return o, fmt.Errorf("%s: groups by simihash take only prefix and the tolerances key, size_ratio and sum", name)
		}
	}
	var err error
	if o.PathPrefix, err = absPath("prefix", q.Get("prefix")); err != nil {
		return o, err
	}
	for name, f := range map[string]*float64{"key": &o.Tolerances.Key, "size_ratio": &o.Tolerances.SizeRatio, "sum": &o.Tolerances.Sum} {
		if v := q.Get(name); v != "" {
			if *f, err = strconv.ParseFloat(v, 64); err != nil || *f == 0 {
				return o, fmt.Errorf("%s %q: want a number above 0", name, v)
			}
		}
	}
	if _, err := o.Tolerances.Normalize(); err != nil {
		return o, fmt.Errorf("tolerances: %w", err)
	}
	return o, nil
}

func wireSimiGroup(g index.SimiGroup) ipc.Group {
	wg := ipc.Group{Reference: simiGroupFile(g.Members[0]), Members: make([]ipc.GroupFile, 0, len(g.Members)-1)}
	for _, m := range g.Members[1:] {
		wg.Members = append(wg.Members, simiGroupFile(m))
	}
	return wg
}

func simiGroupFile(m index.SimiMember) ipc.GroupFile {
	p, raw := ipc.PathFields(m.Path)
	return ipc.GroupFile{Path: p, PathRaw: raw, Size: m.FileMeta.Size,
		SimiHash: &ipc.SimiGroupFile{KeyDistance: m.KeyDistance, SumDistance: m.SumDistance, Identical: m.Identical}}
}
