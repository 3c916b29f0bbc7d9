package server

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/exact"
	"github.com/sif-dev/sif/ipc"
)

// CheckWeakShared is the fingerprint weight a weak candidate
// (index.Match.Weak) must share with the query to be checked
// (index.QueryOptions.WeakShared).
const CheckWeakShared = 1

// ContentOpener is implemented by a Backend that can read the current
// bytes of the files it indexed; without it, matches are not checked.
type ContentOpener interface {
	// OpenIndexed opens the indexed file at path for reading and returns
	// its current metadata. The server calls it only with paths the index
	// answered, after the caller's visibility filter, never with a path a
	// client named. An error wrapping ErrGone says the file vanished or is
	// no longer a regular file. The caller closes the reader.
	OpenIndexed(path string) (io.ReadCloser, index.FileMeta, error)
}

// ErrGone: an indexed file that is no longer there (see ContentOpener).
var ErrGone = errors.New("server: indexed file is gone")

// tooLargeError is a request over a limit other than the body's size.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string { return e.msg }

// checkSide is the query side of a check, prepared when first needed.
type checkSide struct {
	size    int64
	content []byte
	level   int
	sig     []uint64
	q       *exact.Query
}

// query returns the prepared query side.
func (c *checkSide) query() *exact.Query {
	if c.q == nil {
		if c.sig != nil || c.content == nil {
			c.q, _ = exact.NewSignatureQuery(c.size, c.level, c.sig) // checked by checkQuery
		} else {
			c.q = exact.NewQuery(c.content)
		}
	}
	return c.q
}

// release gives the prepared query's scratch space back.
func (c *checkSide) release() {
	if c != nil && c.q != nil {
		c.q.Release()
		c.q = nil
	}
}

// checkQuery checks a request's Content or Windows and returns the query
// side of a check, or nil when the request has neither.
func checkQuery(size int64, content []byte, w *ipc.Windows, maxHashes int) (*checkSide, error) {
	switch {
	case content != nil && w != nil:
		return nil, errors.New("content and windows: send one of them, not both")
	case content != nil:
		if int64(len(content)) != size {
			return nil, fmt.Errorf("content: %d bytes, but size is %d", len(content), size)
		}
		if len(content) > ipc.MaxContent {
			return nil, &tooLargeError{fmt.Sprintf("content: %d bytes, more than the %d this daemon takes; send windows instead", len(content), ipc.MaxContent)}
		}
		return &checkSide{size: size, content: content}, nil
	case w != nil:
		if len(w.Hashes)%8 != 0 {
			return nil, fmt.Errorf("windows.hashes: %d bytes, not a whole number of 8-byte hashes", len(w.Hashes))
		}
		n := len(w.Hashes) / 8
		if n > maxHashes {
			return nil, &tooLargeError{fmt.Sprintf("windows.hashes: %d hashes, more than the %d this daemon accepts in one query", n, maxHashes)}
		}
		sig := make([]uint64, n)
		for i := range sig {
			sig[i] = binary.BigEndian.Uint64(w.Hashes[8*i:])
		}
		if err := exact.CheckSignature(sig, w.Level); err != nil {
			return nil, fmt.Errorf("windows: %w", err)
		}
		return &checkSide{size: size, level: w.Level, sig: sig}, nil
	}
	return nil, nil
}

// checked is a match after its check.
type checked struct {
	index.Match
	measure string
	changed bool
	near    int // leading path components shared with the query's path
}

// toCheck returns how many of ms, best first, are checked: CheckTop, and
// those tied with the last of them by estimated containment, up to
// CheckMax; for a template query, up to CheckFamily of them while their
// sizes sum to at most CheckFamilyBytes.
func toCheck(ms []index.Match, template bool) int {
	n := min(len(ms), ipc.CheckTop)
	if n == 0 {
		return 0
	}
	last := pct(ms[n-1].Containment)
	for n < len(ms) && n < ipc.CheckMax && pct(ms[n].Containment) == last {
		n++
	}
	if template {
		var bytes int64
		for i, m := range ms[:min(len(ms), ipc.CheckFamily)] {
			if bytes += m.FileMeta.Size; bytes > ipc.CheckFamilyBytes {
				break
			}
			n = max(n, i+1)
		}
	}
	return n
}

// check measures the best of ms against their current bytes and orders
// them (see orderChecked); the rest follow in the index's order. The best
// are the first toCheck of the matches that are not weak, and the first
// CheckWeak weak ones, the nearer path first among equal estimates; weak
// matches not measured are dropped, their estimates being no evidence.
// Matches whose file vanished are dropped and counted; those the daemon
// cannot read, larger than MaxCheckSize, or past the check's bytes
// (CheckBytes) keep their estimates; weak ones past CheckWeakBytes or
// larger than CheckWeakLargest are not read. An identical match unchanged
// since it was indexed is not read either: it is the query's bytes. A
// checked match whose containment falls below threshold is dropped. The
// check stops when ctx is done, with its error, between candidates and
// within the read of one.
func (s *Server) check(ctx context.Context, cs *checkSide, queryPath string, ms []index.Match, threshold float64, template bool) (out []checked, measured, dropped int, err error) {
	var strong, weak []index.Match
	for _, m := range ms {
		if m.Weak {
			weak = append(weak, m)
		} else {
			strong = append(strong, m)
		}
	}
	n := toCheck(strong, template)
	if s.content == nil {
		n = 0
		weak = nil
	}
	if len(weak) > ipc.CheckWeak {
		slices.SortStableFunc(weak, func(a, b index.Match) int {
			if c := cmp.Compare(pct(b.Containment), pct(a.Containment)); c != 0 {
				return c
			}
			if c := cmp.Compare(b.SharedWeight, a.SharedWeight); c != 0 {
				return c
			}
			return cmp.Compare(nearness(queryPath, b.Path), nearness(queryPath, a.Path))
		})
		weak = weak[:ipc.CheckWeak]
	}
	var top []checked
	budget, read := max(ipc.CheckBytes, 16*cs.size), int64(0)
	weakBudget, readWeak := max(ipc.CheckWeakBytes, 64*cs.size), int64(0)
	weakLargest := max(ipc.CheckWeakLargest, 256*cs.size)
	for i, m := range append(strong[:n:n], weak...) {
		if err := ctx.Err(); err != nil {
			return nil, 0, 0, err
		}
		isWeak := i >= n
		c := checked{Match: m, measure: ipc.MeasureEstimated, near: nearness(queryPath, m.Path)}
		if read > 0 && read+m.FileMeta.Size > budget {
			if !isWeak {
				top = append(top, c)
			}
			continue
		}
		if isWeak && (readWeak+m.FileMeta.Size > weakBudget || m.FileMeta.Size > weakLargest) {
			continue
		}
		r, cur, err := s.content.OpenIndexed(m.Path)
		switch {
		case errors.Is(err, ErrGone):
			dropped++
			continue
		case err != nil:
			s.log.Debug("check: cannot read a candidate", "path", m.Path, "err", err)
			if !isWeak {
				top = append(top, c)
			}
			continue
		case cur.Size > ipc.MaxCheckSize:
			r.Close()
			if !isWeak {
				top = append(top, c)
			}
			continue
		case m.Identical && cur.Size == m.FileMeta.Size && cur.MtimeNs == m.MtimeNs:
			// The query's bytes by SHA-256 when it was indexed, and
			// unchanged since by size and modification time, as a
			// reconcile judges a file: reading it would tell nothing
			// more, at the cost of a read as large as the query.
			r.Close()
			measured++
			c.Containment, c.ReverseContainment, c.Resemblance = 1, 1, 1
			c.SharedBytes = cs.size
			c.Weak = false
			c.measure = ipc.MeasureExact
			top = append(top, c)
			continue
		}
		read += cur.Size
		if isWeak {
			readWeak += cur.Size
		}
		em, err := cs.query().Measure(ipc.ContextReader(ctx, r), cur.Size)
		r.Close()
		if err != nil && ctx.Err() != nil { // the read was stopped
			return nil, 0, 0, ctx.Err()
		}
		if err != nil {
			if !errors.Is(err, exact.ErrNoEvidence) {
				s.log.Debug("check: reading a candidate", "path", m.Path, "err", err)
			}
			if !isWeak {
				top = append(top, c)
			}
			continue
		}
		measured++
		c.changed = cur.Size != m.FileMeta.Size || cur.MtimeNs != m.MtimeNs
		c.FileMeta.Size, c.MtimeNs = cur.Size, cur.MtimeNs
		c.Identical = c.Identical && !c.changed
		c.Containment, c.ReverseContainment, c.Resemblance = em.Containment, em.ReverseContainment, em.Resemblance
		c.SharedBytes = em.SharedBytes
		c.Weak = false
		c.measure = ipc.MeasureExact
		if em.Level > 0 {
			c.measure = ipc.MeasureSampled
		}
		if c.Containment < threshold && !c.Identical {
			continue
		}
		top = append(top, c)
	}
	slices.SortStableFunc(top, orderChecked)
	for _, m := range strong[n:] {
		top = append(top, checked{Match: m, measure: ipc.MeasureEstimated})
	}
	return top, measured, dropped, nil
}

// orderChecked orders checked matches: identical files first, then by
// containment, resemblance (each to 0.01 %), nearness of path and path.
// Unchecked matches keep their place after the checked ones.
func orderChecked(a, b checked) int {
	ac, bc := a.measure != ipc.MeasureEstimated, b.measure != ipc.MeasureEstimated
	switch {
	case ac != bc:
		if ac {
			return -1
		}
		return 1
	case !ac:
		return 0
	case a.Identical != b.Identical:
		if a.Identical {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(pct(b.Containment), pct(a.Containment)); c != 0 {
		return c
	}
	if c := cmp.Compare(pct(b.Resemblance), pct(a.Resemblance)); c != 0 {
		return c
	}
	if c := cmp.Compare(b.near, a.near); c != 0 {
		return c
	}
	return strings.Compare(a.Path, b.Path)
}

// nearness counts the leading path components a and b share ("" shares
// none).
func nearness(a, b string) int {
	if a == "" || b == "" {
		return 0
	}
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	n := 0
	for n < len(as) && n < len(bs) && as[n] == bs[n] {
		n++
	}
	return n
}
