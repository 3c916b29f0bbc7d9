//go:build unix

package peer

import (
	"encoding/binary"
	"testing"
)

func TestParseACL(t *testing.T) {
	entry := func(tag, perm uint16, id uint32) []byte {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint16(b, tag)
		binary.LittleEndian.PutUint16(b[2:], perm)
		binary.LittleEndian.PutUint32(b[4:], id)
		return b
	}
	head := binary.LittleEndian.AppendUint32(nil, aclVersion)
	good := append(append(append(append([]byte{}, head...), entry(aclUserObj, 6, 0)...), entry(aclUser, 4, 7)...), entry(aclOther, 0, 0)...)
	acl, err := parseACL(good)
	if err != nil || len(acl) != 3 || acl[1] != (aclEntry{aclUser, 4, 7}) {
		t.Fatalf("parseACL(good) = %v, %v", acl, err)
	}
	if !acl.allows(Cred{UID: 7}, 0, permRead) || acl.allows(Cred{UID: 8}, 0, permRead) {
		t.Errorf("named user entry not applied: %v", acl)
	}
	for name, b := range map[string][]byte{
		"empty":         nil,
		"short header":  head[:3],
		"ragged":        append(append([]byte{}, good...), 1, 2, 3),
		"wrong version": append(binary.LittleEndian.AppendUint32(nil, 1), entry(aclOther, 4, 0)...),
	} {
		if _, err := parseACL(b); err == nil {
			t.Errorf("parseACL(%s) accepted %x", name, b)
		}
	}
}
