package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Check verifies the invariants of the index on one consistent state of it
// (writes may go on meanwhile):
//
//   - every path key names a record whose path is that path, and every
//     record has its path key;
//   - every record has its identical-content key, and every such key belongs
//     to a record with that strong hash;
//   - every record has a forward list, every forward list a record, and a
//     record's weight and number of features are what its forward list gives;
//   - every posting belongs to a live file whose forward list holds that
//     hash with that count (and length), and every forward entry has its
//     posting;
//   - every fingerprint file-count equals the number of postings of its
//     hash, and no count is left without postings;
//   - the metadata is present and decodes, and no key has an unknown prefix.
//
// Undecodable values are reported as problems, not returned as errors. Each
// problem is one line naming the key (path, file id, hash in hex); after
// MaxProblems they are only counted, in More. The error is for failures to
// read the database.
func (ix *Index) Check() (*CheckReport, error) {
	if err := ix.acquire(); err != nil {
		return nil, fmt.Errorf("index.Check: %w", err)
	}
	defer ix.release()
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	c := &checker{
		ix:      ix,
		r:       snap,
		rep:     &CheckReport{},
		records: make(map[uint32]*checkedRecord),
	}
	if err := c.run(); err != nil {
		return nil, fmt.Errorf("index.Check: %w", err)
	}
	return c.rep, nil
}

type checker struct {
	ix      *Index
	r       pebble.Reader
	rep     *CheckReport
	records map[uint32]*checkedRecord
}

// checkedRecord is what Check remembers of a record.
type checkedRecord struct {
	path       string
	strong     [32]byte
	weight     uint64
	features   uint32
	hasPath    bool
	hasStrong  bool
	hasForward bool
	// The forward list, read along with the postings: fwd decodes it and
	// cur is its next feature not yet matched with a posting.
	fwd    forwardReader
	cur    fingerprint.Feature
	curOK  bool
	broken bool // the forward list does not decode: do not match postings against it
}

func (c *checker) problem(format string, args ...any) {
	if len(c.rep.Problems) < MaxProblems {
		c.rep.Problems = append(c.rep.Problems, fmt.Sprintf(format, args...))
	} else {
		c.rep.More++
	}
}

func (c *checker) run() error {
	for _, step := range []func() error{
		c.checkMeta, c.checkPrefixes, c.checkRecords, c.checkPaths,
		c.checkStrong, c.checkForward, c.checkPostings,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	ids := make([]uint32, 0, len(c.records))
	for id := range c.records {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rec := c.records[id]
		if !rec.hasPath {
			c.problem("file id %d (%q): no path key", id, rec.path)
		}
		if !rec.hasStrong {
			c.problem("file id %d (%q): no identical-content key %x", id, rec.path, rec.strong)
		}
		if !rec.hasForward {
			c.problem("file id %d (%q): no forward list", id, rec.path)
		}
	}
	return nil
}

func (c *checker) checkMeta() error {
	v, found, err := getValue(c.r, metaVersionKey)
	if err != nil {
		return err
	}
	if !found {
		c.problem("meta: no format version")
	} else if string(v) != fmt.Sprint(formatVersion) {
		c.problem("meta: format version %q, want %d", v, formatVersion)
	}
	v, found, err = getValue(c.r, metaParamsKey)
	if err != nil {
		return err
	}
	var p fingerprint.Params
	switch {
	case !found:
		c.problem("meta: no fingerprint parameters")
	case json.Unmarshal(v, &p) != nil:
		c.problem("meta: fingerprint parameters %q do not decode", v)
	default:
		if p, err = p.Normalize(); err != nil {
			c.problem("meta: fingerprint parameters %q: %v", v, err)
		} else if p != c.ix.params {
			c.problem("meta: fingerprint parameters %s, the index was opened with %s", p, c.ix.params)
		}
	}
	return nil
}

// checkPrefixes reports keys outside the known keyspaces.
func (c *checker) checkPrefixes() error {
	it, err := c.r.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	known := []byte{prefixPosting, prefixDF, prefixForward, prefixMeta, prefixPath, prefixRecord, prefixStrong}
	for ok := it.First(); ok; {
		k := it.Key()
		if len(k) > 0 && bytes.IndexByte(known, k[0]) >= 0 {
			if k[0] == 0xff {
				break
			}
			ok = it.SeekGE([]byte{k[0] + 1})
			continue
		}
		c.problem("key %x: unknown prefix", k)
		ok = it.Next()
	}
	return it.Error()
}

func (c *checker) checkRecords() error {
	lo, hi := keyspace(prefixRecord)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		c.rep.Files++
		id, err := parseIDKey(k, prefixRecord)
		if err != nil {
			c.problem("record key %x: %v", k, err)
			return nil
		}
		rec, err := decodeRecord(id, v)
		if err != nil {
			c.problem("file id %d: record: %v", id, err)
			// Keep a placeholder, so its other keys are not reported as orphans.
			c.records[id] = &checkedRecord{path: "?", hasPath: true, hasStrong: true, broken: true}
			return nil
		}
		c.records[id] = &checkedRecord{path: rec.Path, strong: rec.Strong, weight: rec.Weight, features: rec.Features}
		return nil
	})
}

func (c *checker) checkPaths() error {
	lo, hi := keyspace(prefixPath)
	owner := make(map[uint32]string)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		path := string(k[1:])
		id, err := decodeID(v)
		if err != nil {
			c.problem("path %q: %v", path, err)
			return nil
		}
		if other, dup := owner[id]; dup {
			c.problem("path %q: file id %d is named by path %q too", path, id, other)
		}
		owner[id] = path
		rec := c.records[id]
		switch {
		case rec == nil:
			c.problem("path %q: file id %d has no record", path, id)
		case rec.path != path && rec.path != "?":
			c.problem("path %q: file id %d's record has path %q", path, id, rec.path)
		default:
			rec.hasPath = true
		}
		return nil
	})
}

func (c *checker) checkStrong() error {
	lo, hi := keyspace(prefixStrong)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		strong, id, err := parseStrongKey(k)
		if err != nil {
			c.problem("identical-content key %x: %v", k, err)
			return nil
		}
		rec := c.records[id]
		switch {
		case rec == nil:
			c.problem("identical-content key %x/%d: file id %d has no record", strong, id, id)
		case rec.path == "?":
		case rec.strong != strong:
			c.problem("identical-content key %x/%d: the record of file id %d (%q) has strong hash %x",
				strong, id, id, rec.path, rec.strong)
		default:
			rec.hasStrong = true
		}
		if len(v) != 0 {
			c.problem("identical-content key %x/%d: value %x, want empty", strong, id, v)
		}
		return nil
	})
}

func (c *checker) checkForward() error {
	lo, hi := keyspace(prefixForward)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		id, err := parseIDKey(k, prefixForward)
		if err != nil {
			c.problem("forward key %x: %v", k, err)
			return nil
		}
		rec := c.records[id]
		if rec == nil {
			c.problem("forward list of file id %d: no record", id)
			return nil
		}
		rec.hasForward = true
		features, err := decodeForward(v, c.ix.knowsLengths)
		if err != nil {
			c.problem("forward list of file id %d (%q): %v", id, rec.path, err)
			rec.broken = true
			return nil
		}
		if rec.path != "?" {
			if w := totalWeight(c.ix.params, features); w != rec.weight {
				c.problem("file id %d (%q): record weight %d, forward list gives %d", id, rec.path, rec.weight, w)
			}
			if n := uint32(len(features)); n != rec.features {
				c.problem("file id %d (%q): record says %d features, forward list holds %d", id, rec.path, rec.features, n)
			}
		}
		rec.fwd = newForwardReader(bytes.Clone(v), c.ix.knowsLengths)
		rec.cur, rec.curOK = rec.fwd.next()
		return nil
	})
}

// checkPostings walks the postings in hash order alongside the file-counts,
// matching each posting with the next entry of its file's forward list.
func (c *checker) checkPostings() error {
	lo, hi := keyspace(prefixDF)
	dit, err := c.r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer dit.Close()
	dit.First()

	var (
		curHash uint64
		n       int64 // postings of curHash
		have    bool
	)
	endHash := func() error {
		if !have {
			return nil
		}
		c.rep.Fingerprints++
		if err := c.countsBefore(dit, curHash, true); err != nil {
			return err
		}
		var got int64
		if dit.Valid() {
			if h, err := parseDFKey(dit.Key()); err == nil && h == curHash {
				v, err := dit.ValueAndErr()
				if err != nil {
					return err
				}
				if got, err = decodeCount(v); err != nil {
					c.problem("file-count %016x: %v", curHash, err)
					got = n
				}
				dit.Next()
			}
		}
		if got != n {
			c.problem("file-count %016x: %d, but %d files hold the fingerprint", curHash, got, n)
		}
		return nil
	}

	lo, hi = keyspace(prefixPosting)
	err = scan(c.r, lo, hi, func(k, v []byte) error {
		c.rep.Postings++
		hash, id, err := parsePostingKey(k)
		if err != nil {
			c.problem("posting key %x: %v", k, err)
			return nil
		}
		if !have || hash != curHash {
			if err := endHash(); err != nil {
				return err
			}
			curHash, n, have = hash, 0, true
		}
		n++
		p, err := decodePosting(v, c.ix.knowsLengths)
		if err != nil {
			c.problem("posting %016x/%d: %v", hash, id, err)
		}
		rec := c.records[id]
		switch {
		case rec == nil:
			c.problem("posting %016x/%d: file id %d has no record", hash, id, id)
			return nil
		case !rec.hasForward || rec.broken:
			return nil
		}
		c.forwardBefore(id, rec, hash)
		if !rec.curOK || rec.cur.Hash != hash {
			c.problem("posting %016x/%d: file id %d (%q) does not hold %016x in its forward list", hash, id, id, rec.path, hash)
			return nil
		}
		if err == nil && (p.Count != rec.cur.Count || p.Len != rec.cur.Len) {
			c.problem("posting %016x/%d: count %d length %d, the forward list of %q says count %d length %d",
				hash, id, p.Count, p.Len, rec.path, rec.cur.Count, rec.cur.Len)
		}
		rec.cur, rec.curOK = rec.fwd.next()
		return nil
	})
	if err != nil {
		return err
	}
	if err := endHash(); err != nil {
		return err
	}
	// File-counts after the last posting, and forward entries never matched.
	if err := c.countsBefore(dit, 0, false); err != nil {
		return err
	}
	ids := make([]uint32, 0, len(c.records))
	for id := range c.records {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if rec := c.records[id]; rec.hasForward && !rec.broken {
			for rec.curOK {
				c.problem("file id %d (%q): forward entry %016x has no posting", id, rec.path, rec.cur.Hash)
				rec.cur, rec.curOK = rec.fwd.next()
			}
		}
	}
	return nil
}

// forwardBefore reports and skips the forward entries of rec below hash:
// postings come in hash order, so they have none.
func (c *checker) forwardBefore(id uint32, rec *checkedRecord, hash uint64) {
	for rec.curOK && rec.cur.Hash < hash {
		c.problem("file id %d (%q): forward entry %016x has no posting", id, rec.path, rec.cur.Hash)
		rec.cur, rec.curOK = rec.fwd.next()
	}
}

// countsBefore reports and skips the file-counts below hash (all of them
// when !bounded): fingerprints no posting holds must have no count.
func (c *checker) countsBefore(dit *pebble.Iterator, hash uint64, bounded bool) error {
	for ; dit.Valid(); dit.Next() {
		h, err := parseDFKey(dit.Key())
		if err != nil {
			c.problem("file-count key %x: %v", dit.Key(), err)
			continue
		}
		if bounded && h >= hash {
			break
		}
		v, err := dit.ValueAndErr()
		if err != nil {
			return err
		}
		if n, err := decodeCount(v); err != nil {
			c.problem("file-count %016x: %v", h, err)
		} else if n != 0 {
			c.problem("file-count %016x: %d, but no file holds the fingerprint", h, n)
		}
	}
	return dit.Error()
}
