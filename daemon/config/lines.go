package config

import (
	"errors"
	"slices"

	"github.com/BurntSushi/toml"
)

// keyPositions finds the line of a key of a valid file, for the errors found
// after decoding: unknown keys and settings that contradict each other.
// The TOML decoder knows where every key is, but tells only in a
// toml.ParseError; and it makes one, with the key's position, when a
// toml.Unmarshaler refuses the key's value. So line decodes the key's
// value, kept as a toml.Primitive, into here, which refuses every value.
//
// The position is the library's: the key's line, except for a multi-line
// string value, where it is the line on which the value ends.
type keyPositions struct {
	md  toml.MetaData
	top map[string]toml.Primitive
}

func newKeyPositions(text string) *keyPositions {
	k := &keyPositions{}
	k.md, _ = toml.Decode(text, &k.top) // the text was decoded once already
	return k
}

// line returns the line on which key is set or its table opened: for a
// table that only dotted keys or [a.b] headers make, the line of its first
// key. It returns 0 if the library does not say (a key inside an array of
// tables).
func (k *keyPositions) line(key toml.Key) int {
	if n := k.at(key); n > 0 {
		return n
	}
	for _, full := range k.md.Keys() { // in the file's order
		if len(full) > len(key) && slices.Equal(full[:len(key)], key) {
			if n := k.at(full); n > 0 {
				return n
			}
		}
	}
	return 0
}

// at returns the position the library keeps for key, 0 if none.
func (k *keyPositions) at(key toml.Key) int {
	prim, ok := k.top[key[0]]
	for _, part := range key[1:] {
		var table map[string]toml.Primitive
		if !ok || k.md.PrimitiveDecode(prim, &table) != nil {
			return 0
		}
		prim, ok = table[part]
	}
	var pe toml.ParseError
	if !ok || !errors.As(k.md.PrimitiveDecode(prim, here{}), &pe) {
		return 0
	}
	return pe.Position.Line
}

// here is a value that refuses to be decoded, to learn where it is.
type here struct{}

func (here) UnmarshalTOML(any) error { return errHere }

var errHere = errors.New("config: here")
