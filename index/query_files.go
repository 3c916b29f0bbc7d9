package index

import (
	"bytes"
	"fmt"
)

// candidates counts the files of the candidate contents, the query's own
// file aside.
func (s *querySearch) candidates() int {
	ix := s.ix
	ix.copiesMu.RLock()
	defer ix.copiesMu.RUnlock()
	if len(ix.copies) == 0 {
		return len(s.st.shared)
	}
	n := 0
	for cid := range s.st.shared {
		n += ix.filesOf(cid)
	}
	if _, ok := s.st.shared[s.selfCID]; ok && s.hasSelf {
		n--
	}
	return n
}

// self finds the query's own file in the index, when it is indexed: its
// file and content ids, and whether other files hold its content.
func (s *querySearch) self() error {
	v, ok, err := s.get(pathKey(s.q.Path))
	if err != nil || !ok {
		return err
	}
	if s.selfID, err = decodeID(v); err != nil {
		return err
	}
	s.st.key = appendIDKey(s.st.key[:0], prefixRecord, s.selfID)
	if v, ok, err = s.get(s.st.key); err != nil || !ok {
		return err
	}
	if _, s.selfCID, err = decodeRecord(v); err != nil {
		return fmt.Errorf("file id %d: %w", s.selfID, err)
	}
	var c FileRecord
	if ok, err = s.content(s.selfCID, &c); err != nil || !ok {
		return err
	}
	s.hasSelf = true
	files, err := s.files(s.selfCID)
	s.selfAlone = len(files) == 0
	return err
}

// identical returns the files identical to the query that pass the filters,
// with their shared weight computed from their forward lists, and the
// contents they hold (which need no other look).
func (s *querySearch) identical() (matches []Match, done []uint32, err error) {
	sum := &s.q.Sketch.Summary
	if sum.Strong == ([32]byte{}) {
		return nil, nil, nil
	}
	prefix := hashPrefix(s.st.key[:0], sum.Strong)
	s.st.key = prefix
	var cids []uint32
	for ok := s.it.SeekGE(prefix); ok && bytes.HasPrefix(s.it.Key(), prefix); ok = s.it.Next() {
		_, cid, err := parseHashKey(s.it.Key())
		if err != nil {
			return nil, nil, err
		}
		cids = append(cids, cid)
	}
	if err := s.it.Error(); err != nil {
		return nil, nil, err
	}
	for _, cid := range cids {
		var c FileRecord
		ok, err := s.content(cid, &c)
		if err != nil {
			return nil, nil, err
		}
		if !ok || c.Summary.Size != sum.Size || c.Strong != sum.Strong {
			continue
		}
		done = append(done, cid)
		v, ok, err := s.get(forwardKey(cid))
		if err != nil {
			return nil, nil, err
		}
		var shared uint64
		if ok {
			if shared, err = s.sharedWith(v); err != nil {
				return nil, nil, fmt.Errorf("forward list of content %d: %w", cid, err)
			}
		}
		if matches, err = s.appendFiles(matches, cid, s.match(c, shared, true, false)); err != nil {
			return nil, nil, err
		}
	}
	return matches, done, nil
}

// appendFiles appends to ms a copy of m for every file of content cid
// (m's content; m.ID its holder hint) that passes the filters, the query's
// own file aside. A content held by one file is most often held by the
// file that created it: then its record is the one read.
func (s *querySearch) appendFiles(ms []Match, cid uint32, m Match) ([]Match, error) {
	ix := s.ix
	ix.copiesMu.RLock()
	alone := ix.filesOf(cid) == 1
	ix.copiesMu.RUnlock()
	if holder := m.ID; alone && holder != 0 {
		meta, hcid, ok, err := s.meta(holder)
		if err != nil {
			return ms, err
		}
		if ok && hcid == cid {
			m.FileMeta = meta
			if !(s.hasSelf && holder == s.selfID) && s.keep(&m.FileRecord) {
				ms = append(ms, m)
			}
			return ms, nil
		}
	}
	files, err := s.files(cid)
	if err != nil {
		return ms, err
	}
	for _, id := range files {
		if err := s.poll.tick(); err != nil {
			return ms, err
		}
		meta, _, ok, err := s.meta(id)
		if err != nil {
			return ms, err
		}
		m.ID, m.FileMeta = id, meta
		if ok && s.keep(&m.FileRecord) {
			ms = append(ms, m)
		}
	}
	return ms, nil
}

// files returns the ids of the files holding content cid, the query's own
// file aside. The slice is scratch space, valid until the next call.
func (s *querySearch) files(cid uint32) ([]uint32, error) {
	prefix := copyPrefix(s.st.key[:0], cid)
	s.st.key = prefix
	files := s.st.files[:0]
	for ok := s.it.SeekGE(prefix); ok && bytes.HasPrefix(s.it.Key(), prefix); ok = s.it.Next() {
		_, id, err := parseCopyKey(s.it.Key())
		if err != nil {
			return nil, err
		}
		if !s.hasSelf || id != s.selfID {
			files = append(files, id)
		}
	}
	s.st.files = files
	return files, s.it.Error()
}

// sharedWith returns the weight the query shares with a forward list.
func (s *querySearch) sharedWith(forward []byte) (uint64, error) {
	r := newForwardReader(forward)
	es := s.entries
	var shared uint64
	i := 0
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		for i < len(es) && es[i].key < e.key {
			i++
		}
		if i < len(es) && es[i].key == e.key {
			shared = satAdd(shared, min(es[i].weight, e.weight))
		}
	}
	return shared, r.err()
}
