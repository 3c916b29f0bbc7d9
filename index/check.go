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
//   - every file record names a content that has a record, and every
//     content is held by at least one file;
//   - every file record has its copy key (its content id, its id), and
//     every copy key belongs to a file record naming that content;
//   - every content whose strong hash is known (not all zero) has one hash
//     key, which carries the first bytes of that hash, and every hash key
//     belongs to such a content;
//   - no two contents are equal (same strong hash, summary and forward
//     list): identical files share one;
//   - in an index that keeps SimiHash keys, every content has one, which
//     carries its skew key, and every SimiHash key belongs to such a
//     content; an index that does not keep them holds none;
//   - every record has its inode key, and every inode key belongs to a
//     record with that device and inode;
//   - every content has a forward list, every forward list a content, and
//     a content's weight and number of features are what its forward list
//     gives;
//   - every posting belongs to a live content whose forward list holds
//     that fingerprint key with that weight, and every forward entry has
//     its posting;
//   - the metadata is present and decodes, and no key has an unknown prefix.
//
// The report counts the distinct fingerprint keys of the postings in
// Fingerprints and the contents in Contents. Undecodable values are
// reported as problems, not returned as errors. Each problem is one line
// naming the key (path, file id, content id, fingerprint key in hex,
// device:inode/id of an inode key); after MaxProblems they are only
// counted, in More. A damaged file of the database (a block whose checksum
// does not match) ends the check with one more problem naming the file and
// what was wrong, and sets Damaged. The error is for other failures to
// read the database.
func (ix *Index) Check() (*CheckReport, error) {
	if err := ix.acquire(); err != nil {
		return nil, fmt.Errorf("index.Check: %w", err)
	}
	defer ix.release()
	if !ix.readOnly {
		if err := ix.writePending(); err != nil {
			return nil, fmt.Errorf("index.Check: %w", err)
		}
	}
	snap := ix.db.NewSnapshot()
	defer snap.Close()
	c := &checker{
		ix:       ix,
		r:        snap,
		rep:      &CheckReport{},
		records:  make(map[uint32]*checkedRecord),
		contents: make(map[uint32]*checkedContent),
	}
	// A read-only index may hold contents whose postings a bulk load left
	// to write (pending.go): the next read-write Open writes them.
	from, err := readPendingKey(snap)
	switch {
	case err != nil:
		c.problem("meta: %v", err)
	case from != 0 && !ix.readOnly:
		c.problem("meta: the pending key names content %d, but no posting is pending", from)
	case ix.readOnly:
		c.pendFrom = from
	}
	if err := c.run(); err != nil {
		if !IsCorrupt(err) {
			return nil, fmt.Errorf("index.Check: %w", err)
		}
		c.rep.Damaged = true
		c.rep.Problems = append(c.rep.Problems, fmt.Sprintf("%v (the check stopped there)", plainCorruption(err)))
	}
	return c.rep, nil
}

type checker struct {
	ix       *Index
	pendFrom uint32 // the content id the pending key names, or 0
	r        pebble.Reader
	rep      *CheckReport
	records  map[uint32]*checkedRecord
	contents map[uint32]*checkedContent
}

// checkedRecord is what Check remembers of a file record.
type checkedRecord struct {
	path     string
	cid      uint32
	dev, ino uint64
	hasPath  bool
	hasCopy  bool
	hasInode bool
	broken   bool // the record does not decode
}

// checkedContent is what Check remembers of a content record.
type checkedContent struct {
	rec        FileRecord // its content fields
	files      int        // file records naming it
	hasForward bool
	hasHash    bool
	hasSimi    bool
	fwdHash    uint64 // forwardHash of its forward list
	// The forward list, read along with the postings: fwd decodes it and
	// cur is its next entry not yet matched with a posting.
	fwd    forwardReader
	cur    entry
	curOK  bool
	broken bool // the record or forward list does not decode: do not match postings against it
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
		c.checkMeta, c.checkPrefixes, c.checkContents, c.checkRecords, c.checkPaths,
		c.checkCopies, c.checkHashes, c.checkSimi, c.checkInodes, c.checkForward, c.checkPostings,
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
		if !rec.hasCopy {
			c.problem("file id %d (%q): no copy key %d/%d", id, rec.path, rec.cid, id)
		}
		if !rec.hasInode {
			c.problem("file id %d (%q): no inode key %d:%d", id, rec.path, rec.dev, rec.ino)
		}
	}
	type same struct {
		sum  fingerprint.Summary
		fwd  uint64
		w    uint64
		n    uint32
		lvl  uint8
		lvls string
	}
	seen := make(map[same]uint32)
	for _, cid := range slices.Sorted(maps.Keys(c.contents)) {
		cr := c.contents[cid]
		if cr.files == 0 {
			c.problem("content %d: no file holds it", cid)
		}
		if !cr.hasForward {
			c.problem("content %d: no forward list", cid)
		}
		if !cr.hasHash && !cr.broken && cr.rec.Strong != ([32]byte{}) {
			c.problem("content %d: no hash key %x/%d", cid, cr.rec.Strong[:hashBytes], cid)
		}
		if !cr.hasSimi && !cr.broken && c.ix.simihash {
			c.problem("content %d: no simihash key %d/%d", cid, cr.rec.Key, cid)
		}
		if cr.broken || !cr.hasForward || cr.rec.Strong == ([32]byte{}) {
			continue
		}
		k := same{cr.rec.Summary, cr.fwdHash, cr.rec.Weight, cr.rec.Features, cr.rec.Level, fmt.Sprint(cr.rec.LevelWeights)}
		if other, dup := seen[k]; dup {
			c.problem("content %d: equal to content %d (strong hash %x): identical files must share one", cid, other, cr.rec.Strong)
		} else {
			seen[k] = cid
		}
	}
	c.rep.Contents = uint64(len(c.contents))
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
	v, found, err = getValue(c.r, metaSimiHashKey)
	if err != nil {
		return err
	}
	if found != c.ix.simihash || found && string(v) != "on" {
		c.problem("meta: simihash setting %q (present: %v), the index was opened with simihash %s", v, found, onOff(c.ix.simihash))
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
	known := []byte{prefixPosting, prefixContent, prefixForward, prefixHash, prefixInode, prefixMeta, prefixPath, prefixRecord, prefixCopy, prefixJournal, prefixSimi}
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

func (c *checker) checkContents() error {
	lo, hi := keyspace(prefixContent)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		cid, err := parseIDKey(k, prefixContent)
		if err != nil {
			c.problem("content key %x: %v", k, err)
			return nil
		}
		cr := &checkedContent{}
		if _, err := decodeContent(v, &cr.rec); err != nil {
			c.problem("content %d: record: %v", cid, err)
			cr.broken = true
		}
		c.contents[cid] = cr
		return nil
	})
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
		meta, cid, err := decodeRecord(v)
		if err != nil {
			c.problem("file id %d: record: %v", id, err)
			// Keep a placeholder, so its other keys are not reported as orphans.
			c.records[id] = &checkedRecord{path: "?", hasPath: true, hasCopy: true, hasInode: true, broken: true}
			return nil
		}
		c.records[id] = &checkedRecord{path: meta.Path, cid: cid, dev: meta.Dev, ino: meta.Ino}
		if cr := c.contents[cid]; cr == nil {
			c.problem("file id %d (%q): content %d has no record", id, meta.Path, cid)
			c.records[id].hasCopy = true // not reported twice
		} else {
			cr.files++
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

func (c *checker) checkCopies() error {
	lo, hi := keyspace(prefixCopy)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		cid, id, err := parseCopyKey(k)
		if err != nil {
			c.problem("copy key %x: %v", k, err)
			return nil
		}
		rec := c.records[id]
		switch {
		case rec == nil:
			c.problem("copy key %d/%d: file id %d has no record", cid, id, id)
		case rec.broken:
		case rec.cid != cid:
			c.problem("copy key %d/%d: the record of file id %d (%q) names content %d",
				cid, id, id, rec.path, rec.cid)
		default:
			rec.hasCopy = true
		}
		if len(v) != 0 {
			c.problem("copy key %d/%d: value %x, want empty", cid, id, v)
		}
		return nil
	})
}

func (c *checker) checkHashes() error {
	lo, hi := keyspace(prefixHash)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		h, cid, err := parseHashKey(k)
		if err != nil {
			c.problem("hash key %x: %v", k, err)
			return nil
		}
		cr := c.contents[cid]
		switch {
		case cr == nil:
			c.problem("hash key %x/%d: content %d has no record", h, cid, cid)
		case cr.broken:
			cr.hasHash = true
		case [hashBytes]byte(cr.rec.Strong[:hashBytes]) != h || cr.rec.Strong == ([32]byte{}):
			c.problem("hash key %x/%d: content %d has strong hash %x", h, cid, cid, cr.rec.Strong)
		default:
			cr.hasHash = true
		}
		if len(v) != 0 {
			c.problem("hash key %x/%d: value %x, want empty", h, cid, v)
		}
		return nil
	})
}

func (c *checker) checkSimi() error {
	lo, hi := keyspace(prefixSimi)
	return scan(c.r, lo, hi, func(k, v []byte) error {
		key, cid, err := parseSimiKey(k)
		if err != nil {
			c.problem("simihash key %x: %v", k, err)
			return nil
		}
		cr := c.contents[cid]
		switch {
		case !c.ix.simihash:
			c.problem("simihash key %d/%d: the index keeps no simihash keys", key, cid)
		case cr == nil:
			c.problem("simihash key %d/%d: content %d has no record", key, cid, cid)
		case cr.broken:
			cr.hasSimi = true
		case cr.rec.Key != key:
			c.problem("simihash key %d/%d: content %d has skew key %d", key, cid, cid, cr.rec.Key)
		default:
			cr.hasSimi = true
		}
		if len(v) != 0 {
			c.problem("simihash key %d/%d: value %x, want empty", key, cid, v)
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
		cid, err := parseIDKey(k, prefixForward)
		if err != nil {
			c.problem("forward key %x: %v", k, err)
			return nil
		}
		cr := c.contents[cid]
		if cr == nil {
			c.problem("forward list of content %d: no content record", cid)
			return nil
		}
		cr.hasForward = true
		es, err := decodeForward(v)
		if err != nil {
			c.problem("forward list of content %d: %v", cid, err)
			cr.broken = true
			return nil
		}
		if !cr.broken {
			if w := totalWeight(es); w != cr.rec.Weight {
				c.problem("content %d: record weight %d, forward list gives %d", cid, cr.rec.Weight, w)
			}
			if n := uint32(len(es)); n != cr.rec.Features {
				c.problem("content %d: record says %d features, forward list holds %d", cid, cr.rec.Features, n)
			}
		}
		cr.fwdHash, _ = forwardHash(v)
		cr.fwd = newForwardReader(bytes.Clone(v))
		cr.cur, cr.curOK = cr.fwd.next()
		return nil
	})
}

// checkPostings walks the postings in fingerprint-key order, matching each
// posting with the next entry of its content's forward list, and counts the
// distinct fingerprint keys.
func (c *checker) checkPostings() error {
	var (
		curKey uint32
		have   bool
	)
	var list []postingEntry
	lo, hi := keyspace(prefixPosting)
	err := scan(c.r, lo, hi, func(k, v []byte) error {
		b, err := parseBucketKey(k)
		if err != nil {
			c.problem("posting list key %x: %v", k, err)
			return nil
		}
		if list, err = decodePostingList(list[:0], b, v, false); err != nil {
			c.problem("posting list of bucket %x: %v", b, err)
			return nil
		}
		for _, p := range list {
			c.checkPosting(p, &curKey, &have)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Forward entries never matched.
	for _, cid := range slices.Sorted(maps.Keys(c.contents)) {
		if cr := c.contents[cid]; cr.hasForward && !cr.broken && !c.pending(cid) {
			for cr.curOK {
				c.problem("content %d: forward entry %08x has no posting", cid, cr.cur.key)
				cr.cur, cr.curOK = cr.fwd.next()
			}
		}
	}
	return nil
}

// checkPosting matches posting p with the next entry of its content's
// forward list, and counts the distinct fingerprint keys.
func (c *checker) checkPosting(p postingEntry, curKey *uint32, have *bool) {
	c.rep.Postings++
	key, cid, w := p.key, p.cid, p.weight
	if !*have || key != *curKey {
		c.rep.Fingerprints++
		*curKey, *have = key, true
	}
	cr := c.contents[cid]
	switch {
	case cr == nil:
		c.problem("posting %08x/%d: content %d has no record", key, cid, cid)
		return
	case !cr.hasForward || cr.broken:
		return
	}
	c.forwardBefore(cid, cr, key)
	if !cr.curOK || cr.cur.key != key {
		c.problem("posting %08x/%d: content %d does not hold %08x in its forward list", key, cid, cid, key)
		return
	}
	if w != cr.cur.weight {
		c.problem("posting %08x/%d: weight %d, the forward list of content %d says %d", key, cid, w, cid, cr.cur.weight)
	}
	cr.cur, cr.curOK = cr.fwd.next()
}

// forwardBefore reports and skips the forward entries of content cid below
// key: postings come in key order, so they have none.
func (c *checker) forwardBefore(cid uint32, cr *checkedContent, key uint32) {
	for cr.curOK && cr.cur.key < key {
		if !c.pending(cid) {
			c.problem("content %d: forward entry %08x has no posting", cid, cr.cur.key)
		}
		cr.cur, cr.curOK = cr.fwd.next()
	}
}

// pending reports whether the postings of content cid may not be written
// yet.
func (c *checker) pending(cid uint32) bool { return c.pendFrom != 0 && cid >= c.pendFrom }
