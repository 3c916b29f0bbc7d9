package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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
//   - every record has its inode key, and every inode key belongs to a
//     record with that device and inode;
//   - every record has a forward list, every forward list a record, and a
//     record's weight and number of features are what its forward list gives;
//   - every posting belongs to a live file whose forward list holds that
//     fingerprint key with that weight, and every forward entry has its
//     posting;
//   - the metadata is present and decodes, and no key has an unknown prefix.
//
// The report counts the distinct fingerprint keys of the postings in
// Fingerprints. Undecodable values are reported as problems, not returned as
// errors. Each problem is one line naming the key (path, file id,
// fingerprint key in hex, device:inode/id of an inode key); after
// MaxProblems they are only counted, in More.
// The error is for failures to read the database.
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
	dev, ino   uint64
	weight     uint64
	features   uint32
	hasPath    bool
	hasStrong  bool
	hasInode   bool
	hasForward bool
	// The forward list, read along with the postings: fwd decodes it and
	// cur is its next entry not yet matched with a posting.
	fwd    forwardReader
	cur    entry
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
		c.checkStrong, c.checkInodes, c.checkForward, c.checkPostings,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.records)) {
		rec := c.records[id]
		if !rec.hasPath {
			c.problem("file id %d (%q): no path key", id, rec.path)
		}
		if !rec.hasStrong {
			c.problem("file id %d (%q): no identical-content key %x", id, rec.path, rec.strong)
		}
		if !rec.hasInode {
			c.problem("file id %d (%q): no inode key %d:%d", id, rec.path, rec.dev, rec.ino)
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
	known := []byte{prefixPosting, prefixForward, prefixInode, prefixMeta, prefixPath, prefixRecord, prefixStrong}
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
			c.records[id] = &checkedRecord{path: "?", hasPath: true, hasStrong: true, hasInode: true, broken: true}
			return nil
		}
		c.records[id] = &checkedRecord{
			path: rec.Path, strong: rec.Strong, dev: rec.Dev, ino: rec.Ino,
			weight: rec.Weight, features: rec.Features,
		}
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

func (c *checker) checkInodes() error {
	lo, hi := keyspace(prefixInode)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		dev, ino, id, err := parseInodeKey(k)
		if err != nil {
			c.problem("inode key %x: %v", k, err)
			return nil
		}
		rec := c.records[id]
		switch {
		case rec == nil:
			c.problem("inode key %d:%d/%d: file id %d has no record", dev, ino, id, id)
		case rec.path == "?":
		case rec.dev != dev || rec.ino != ino:
			c.problem("inode key %d:%d/%d: the record of file id %d (%q) has inode %d:%d",
				dev, ino, id, id, rec.path, rec.dev, rec.ino)
		default:
			rec.hasInode = true
		}
		if len(v) != 0 {
			c.problem("inode key %d:%d/%d: value %x, want empty", dev, ino, id, v)
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
		es, err := decodeForward(v)
		if err != nil {
			c.problem("forward list of file id %d (%q): %v", id, rec.path, err)
			rec.broken = true
			return nil
		}
		if rec.path != "?" {
			if w := totalWeight(es); w != rec.weight {
				c.problem("file id %d (%q): record weight %d, forward list gives %d", id, rec.path, rec.weight, w)
			}
			if n := uint32(len(es)); n != rec.features {
				c.problem("file id %d (%q): record says %d features, forward list holds %d", id, rec.path, rec.features, n)
			}
		}
		rec.fwd = newForwardReader(bytes.Clone(v))
		rec.cur, rec.curOK = rec.fwd.next()
		return nil
	})
}

// checkPostings walks the postings in fingerprint-key order, matching each
// posting with the next entry of its file's forward list, and counts the
// distinct fingerprint keys.
func (c *checker) checkPostings() error {
	var (
		curKey uint32
		have   bool
	)
	lo, hi := keyspace(prefixPosting)
	err := scan(c.r, lo, hi, func(k, v []byte) error {
		c.rep.Postings++
		key, id, err := parsePostingKey(k)
		if err != nil {
			c.problem("posting key %x: %v", k, err)
			return nil
		}
		if !have || key != curKey {
			c.rep.Fingerprints++
			curKey, have = key, true
		}
		w, err := decodePosting(v)
		if err != nil {
			c.problem("posting %08x/%d: %v", key, id, err)
		}
		rec := c.records[id]
		switch {
		case rec == nil:
			c.problem("posting %08x/%d: file id %d has no record", key, id, id)
			return nil
		case !rec.hasForward || rec.broken:
			return nil
		}
		c.forwardBefore(id, rec, key)
		if !rec.curOK || rec.cur.key != key {
			c.problem("posting %08x/%d: file id %d (%q) does not hold %08x in its forward list", key, id, id, rec.path, key)
			return nil
		}
		if err == nil && w != rec.cur.weight {
			c.problem("posting %08x/%d: weight %d, the forward list of %q says %d", key, id, w, rec.path, rec.cur.weight)
		}
		rec.cur, rec.curOK = rec.fwd.next()
		return nil
	})
	if err != nil {
		return err
	}
	// Forward entries never matched.
	for _, id := range slices.Sorted(maps.Keys(c.records)) {
		if rec := c.records[id]; rec.hasForward && !rec.broken {
			for rec.curOK {
				c.problem("file id %d (%q): forward entry %08x has no posting", id, rec.path, rec.cur.key)
				rec.cur, rec.curOK = rec.fwd.next()
			}
		}
	}
	return nil
}

// forwardBefore reports and skips the forward entries of rec below key:
// postings come in key order, so they have none.
func (c *checker) forwardBefore(id uint32, rec *checkedRecord, key uint32) {
	for rec.curOK && rec.cur.key < key {
		c.problem("file id %d (%q): forward entry %08x has no posting", id, rec.path, rec.cur.key)
		rec.cur, rec.curOK = rec.fwd.next()
	}
}
