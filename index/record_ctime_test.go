package index

import (
	"encoding/binary"
	"errors"
	"testing"
)

// A record keeps the status change time; a record of version 3, written
// before sif kept it, reads with CtimeNs 0, and one cut short of its ctime
// is corrupt.
func TestRecordCtime(t *testing.T) {
	m := FileMeta{Path: "/r/a", Size: 10, MtimeNs: 1_700_000_000_123_456_789, CtimeNs: 1_700_000_001_987_654_321, Dev: 2, Ino: 3, Mode: 0o644}
	v := encodeRecord(nil, &m, 5)
	got, cid, err := decodeRecord(v)
	if err != nil || got != m || cid != 5 {
		t.Fatalf("round trip: %+v %d %v, want %+v 5", got, cid, err, m)
	}
	if _, _, err := decodeRecord(v[:len(v)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("record without its last ctime byte: %v, want ErrCorrupt", err)
	}

	old := []byte{recordVersionNoCtime}
	old = binary.AppendUvarint(old, uint64(len(m.Path)))
	old = append(old, m.Path...)
	old = binary.AppendVarint(old, m.Size)
	old = binary.AppendVarint(old, m.MtimeNs)
	old = binary.AppendUvarint(old, m.Dev)
	old = binary.AppendUvarint(old, m.Ino)
	old = binary.AppendUvarint(old, uint64(m.Mode))
	old = binary.AppendUvarint(old, 5)
	want := m
	want.CtimeNs = 0
	got, cid, err = decodeRecord(old)
	if err != nil || got != want || cid != 5 {
		t.Fatalf("version 3 record: %+v %d %v, want %+v 5", got, cid, err, want)
	}
	if _, _, err := decodeRecord(append(old, 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("version 3 record with a trailing byte: %v, want ErrCorrupt", err)
	}
}
