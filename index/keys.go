package index

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Key prefixes: the first byte of every key names its keyspace. See doc.go
// for what each keyspace holds.
const (
	prefixPosting = 'P' // 'P' bucket(2) → posting list
	prefixContent = 'c' // 'c' content(4) → content record
	prefixForward = 'f' // 'f' content(4) → forward list
	prefixHash    = 'h' // 'h' strong(hashBytes) content(4) → empty
	prefixInode   = 'i' // 'i' dev(8) ino(8) id(4) → empty
	prefixMeta    = 'm' // 'm' name → metadata
	prefixPath    = 'p' // 'p' path → id(4)
	prefixRecord  = 'r' // 'r' id(4) → file record
	prefixCopy    = 's' // 's' content(4) id(4) → empty
	prefixSimi    = 'k' // 'k' simihash key(4) content(4) → empty
)

// hashBytes is how many leading bytes of a content's strong hash its hash
// key holds: enough to make contents that share them rare (two in 4
// billion), so that finding a content by strong hash reads about one
// content record.
const hashBytes = 4

// Key lengths of the fixed-size keyspaces.
const (
	idKeyLen       = 1 + 4 // record, content and forward keys
	copyPrefixLen  = 1 + 4 // the prefix shared by the copy keys of one content
	copyKeyLen     = copyPrefixLen + 4
	hashPrefixLen  = 1 + hashBytes // the prefix shared by the hash keys of strong hashes alike in their first bytes
	hashKeyLen     = hashPrefixLen + 4
	inodePrefixLen = 1 + 8 + 8 // the prefix shared by the inode keys of one (device, inode)
	inodeKeyLen    = inodePrefixLen + 4
	simiKeyLen     = 1 + 4 + 4
)

// Metadata key names.
var (
	metaVersionKey = []byte{prefixMeta, 'v', 'e', 'r', 's', 'i', 'o', 'n'}
	metaParamsKey  = []byte{prefixMeta, 'p', 'a', 'r', 'a', 'm', 's'}
	// metaSimiHashKey is present, with the value "on", in an index
	// created with SimiHash keys (Options.SimiHash).
	metaSimiHashKey = []byte{prefixMeta, 's', 'i', 'm', 'i', 'h', 'a', 's', 'h'}
)

func pathKey(path string) []byte {
	k := make([]byte, 1+len(path))
	k[0] = prefixPath
	copy(k[1:], path)
	return k
}

func appendIDKey(dst []byte, prefix byte, id uint32) []byte {
	dst = append(dst, prefix)
	return binary.BigEndian.AppendUint32(dst, id)
}

func recordKey(id uint32) []byte { return appendIDKey(make([]byte, 0, idKeyLen), prefixRecord, id) }

// contentKey and forwardKey are the keys of content cid's record and
// forward list.
func contentKey(cid uint32) []byte { return appendIDKey(make([]byte, 0, idKeyLen), prefixContent, cid) }
func forwardKey(cid uint32) []byte { return appendIDKey(make([]byte, 0, idKeyLen), prefixForward, cid) }

// copyKey returns the copy key of file id, which holds content cid.
func copyKey(cid, id uint32) []byte {
	k := copyPrefix(make([]byte, 0, copyKeyLen), cid)
	return binary.BigEndian.AppendUint32(k, id)
}

// copyPrefix appends the prefix shared by the copy keys of content cid to
// dst.
func copyPrefix(dst []byte, cid uint32) []byte { return appendIDKey(dst, prefixCopy, cid) }

// hashKey returns the hash key of content cid, whose strong hash is
// strong.
func hashKey(strong [32]byte, cid uint32) []byte {
	k := hashPrefix(make([]byte, 0, hashKeyLen), strong)
	return binary.BigEndian.AppendUint32(k, cid)
}

// hashPrefix appends the prefix shared by the hash keys of every content
// whose strong hash begins as strong does to dst.
func hashPrefix(dst []byte, strong [32]byte) []byte {
	dst = append(dst, prefixHash)
	return append(dst, strong[:hashBytes]...)
}

// inodeKey returns the inode key of file id, whose record has device dev
// and inode ino.
func inodeKey(dev, ino uint64, id uint32) []byte {
	k := inodePrefix(make([]byte, 0, inodeKeyLen), dev, ino)
	return binary.BigEndian.AppendUint32(k, id)
}

// inodePrefix appends the prefix shared by the inode keys of every file
// with device dev and inode ino (hard links of one file) to dst.
func inodePrefix(dst []byte, dev, ino uint64) []byte {
	dst = append(dst, prefixInode)
	dst = binary.BigEndian.AppendUint64(dst, dev)
	return binary.BigEndian.AppendUint64(dst, ino)
}

// parseIDKey returns the id of a record, content or forward key with the
// given prefix.
func parseIDKey(k []byte, prefix byte) (uint32, error) {
	if len(k) != idKeyLen || k[0] != prefix {
		return 0, fmt.Errorf("%w: %c key %x: want %d bytes", ErrCorrupt, prefix, k, idKeyLen)
	}
	return binary.BigEndian.Uint32(k[1:]), nil
}

// parseCopyKey splits a copy key into content id and file id.
func parseCopyKey(k []byte) (cid, id uint32, err error) {
	if len(k) != copyKeyLen || k[0] != prefixCopy {
		return 0, 0, fmt.Errorf("%w: copy key %x: want %d bytes", ErrCorrupt, k, copyKeyLen)
	}
	return binary.BigEndian.Uint32(k[1:copyPrefixLen]), binary.BigEndian.Uint32(k[copyPrefixLen:]), nil
}

// parseHashKey splits a hash key into the leading bytes of a strong hash
// and a content id.
func parseHashKey(k []byte) (strong [hashBytes]byte, cid uint32, err error) {
	if len(k) != hashKeyLen || k[0] != prefixHash {
		return strong, 0, fmt.Errorf("%w: hash key %x: want %d bytes", ErrCorrupt, k, hashKeyLen)
	}
	copy(strong[:], k[1:hashPrefixLen])
	return strong, binary.BigEndian.Uint32(k[hashPrefixLen:]), nil
}

// parseInodeKey splits an inode key into device, inode and file id.
func parseInodeKey(k []byte) (dev, ino uint64, id uint32, err error) {
	if len(k) != inodeKeyLen || k[0] != prefixInode {
		return 0, 0, 0, fmt.Errorf("%w: inode key %x: want %d bytes", ErrCorrupt, k, inodeKeyLen)
	}
	return binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:inodePrefixLen]),
		binary.BigEndian.Uint32(k[inodePrefixLen:]), nil
}

// simiKey returns the SimiHash key of content cid, whose skew key is key.
func simiKey(key, cid uint32) []byte {
	k := appendIDKey(make([]byte, 0, simiKeyLen), prefixSimi, key)
	return binary.BigEndian.AppendUint32(k, cid)
}

// parseSimiKey splits a SimiHash key into skew key and content id.
func parseSimiKey(k []byte) (key, cid uint32, err error) {
	if len(k) != simiKeyLen || k[0] != prefixSimi {
		return 0, 0, fmt.Errorf("%w: simihash key %x: want %d bytes", ErrCorrupt, k, simiKeyLen)
	}
	return binary.BigEndian.Uint32(k[1:5]), binary.BigEndian.Uint32(k[5:]), nil
}

// encodeID and decodeID are the value of a path key.
func encodeID(id uint32) []byte { return binary.BigEndian.AppendUint32(nil, id) }

func decodeID(v []byte) (uint32, error) {
	if len(v) != 4 {
		return 0, fmt.Errorf("%w: file id %x: want 4 bytes", ErrCorrupt, v)
	}
	return binary.BigEndian.Uint32(v), nil
}

// prefixEnd returns the least key greater than every key starting with p, or
// nil when there is none (p is all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// keyspace returns the bounds [lower, upper) of one prefix byte's keyspace.
func keyspace(prefix byte) (lower, upper []byte) {
	return []byte{prefix}, []byte{prefix + 1}
}

// comparerName is the name of the comparer. Pebble records it in the
// database and refuses to open the database with a comparer of another name,
// so it changes whenever Split does (bloom filters are built on prefixes).
// "sif.keys.v1" split posting keys after a 64-bit hash (format version 1);
// "sif.keys.v2" split them after the fingerprint key (format versions 2 to
// 5, one Pebble key per posting). Since version 6 every key is its own
// prefix: a posting list is one key.
const (
	comparerName   = "sif.keys.v3"
	comparerNameV1 = "sif.keys.v1"
	comparerNameV2 = "sif.keys.v2"
)

// comparer orders keys bytewise, as Pebble's default comparer does, and
// takes every key whole as its prefix.
var comparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Name = comparerName
	return &c
}()
