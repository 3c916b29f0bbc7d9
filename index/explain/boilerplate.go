package explain

import (
	"fmt"
	"slices"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Fingerprints returns the fingerprints of data under normalized p that a
// query of data is made of: those of its level or above
// (fingerprint.Params.Level, HashLevel), sorted by offset. The caller owns
// the result.
func Fingerprints(data []byte, p fingerprint.Params) ([]fingerprint.Fingerprint, error) {
	lvl := p.Level(int64(len(data)))
	var fps []fingerprint.Fingerprint
	sk, err := fingerprint.NewSketcher(p, func(fp fingerprint.Fingerprint) {
		if p.HashLevel(fp.Hash) >= lvl {
			fps = append(fps, fp)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("explain.Fingerprints: %w", err)
	}
	sk.SkipSimiHash()
	if _, err := sk.Write(data); err != nil {
		return nil, fmt.Errorf("explain.Fingerprints: %w", err)
	}
	sk.Finish()
	slices.SortStableFunc(fps, func(x, y fingerprint.Fingerprint) int {
		switch {
		case x.Offset < y.Offset:
			return -1
		case x.Offset > y.Offset:
			return 1
		}
		return 0
	})
	return fps, nil
}

// MarkBoilerplate marks the runs made of boilerplate: those whose A bytes
// wholly hold at least one of fps, A's fingerprints (see Fingerprints),
// and only fingerprints for which common returns true, the ones too
// common to count. It sets Judged. common is called on the caller's
// goroutine.
func (e *Explanation) MarkBoilerplate(fps []fingerprint.Fingerprint, common func(hash uint64) bool) {
	e.Judged, e.Note = true, ""
	for i := range e.Runs {
		r := &e.Runs[i]
		lo, _ := slices.BinarySearchFunc(fps, r.AOff, func(fp fingerprint.Fingerprint, off int64) int {
			switch {
			case fp.Offset < off:
				return -1
			case fp.Offset > off:
				return 1
			}
			return 0
		})
		held, rare := 0, 0
		for _, fp := range fps[lo:] {
			if fp.Offset >= r.AOff+r.ALen {
				break
			}
			if fp.Offset+int64(fp.Len) > r.AOff+r.ALen {
				continue // reaches past the run
			}
			held++
			if !common(fp.Hash) {
				rare++
			}
		}
		r.Boilerplate = held > 0 && rare == 0
	}
}

// CommonSet returns a common function for MarkBoilerplate from a list of
// hashes, such as the ones a daemon reports (ipc.SimilarResponse.Common).
func CommonSet(hashes []uint64) func(uint64) bool {
	set := make(map[uint64]struct{}, len(hashes))
	for _, h := range hashes {
		set[h] = struct{}{}
	}
	return func(h uint64) bool { _, ok := set[h]; return ok }
}
