package ipc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sif-dev/sif/index/fingerprint"
)

// A query's sketch, saved: `sifctl sketch` prints a QuerySketch as one
// line of JSON, exactly the query part of a SimilarRequest or a
// BasisRequest sent without the query's bytes, and `sifctl similar
// --signature` reads it back with DecodeQuerySketch. Such a line is a
// request body /v1/similar and /v1/basis take as it is.

// ErrBadSketch is wrapped by DecodeQuerySketch's errors: the line is not
// a query's sketch, a signature.
var ErrBadSketch = errors.New("not a signature")

// NewQuerySketch returns the query part of a request for the content
// sketched as sk: its parameters, size, strong hash, type and features,
// with path (which may be empty) in its wire form (PathFields).
func NewQuerySketch(path string, sk *fingerprint.Sketch) QuerySketch {
	p, raw := PathFields(path)
	return QuerySketch{
		Params:   sk.Params,
		Path:     p,
		PathRaw:  raw,
		Size:     sk.Size,
		Strong:   hex.EncodeToString(sk.Strong[:]),
		Type:     sk.Type,
		Features: EncodeFeatures(sk.Features),
	}
}

// AppendJSONLine appends q to b as one line of JSON and a newline: the
// bytes json.Marshal makes of q, made faster (a large file's sketch holds
// hundreds of thousands of features).
func (q *QuerySketch) AppendJSONLine(b []byte) ([]byte, error) {
	params, err := json.Marshal(q.Params)
	if err != nil {
		return b, err
	}
	// A feature takes 47 bytes, {"hash":"...","count":1,"len":40}, when
	// its count has one digit.
	b = slices.Grow(b, 256+len(params)+2*len(q.Path)+len(q.PathRaw)+48*len(q.Features))
	b = append(append(b, `{"params":`...), params...)
	if q.Path != "" {
		b = appendJSONString(append(b, `,"path":`...), q.Path)
	}
	if q.PathRaw != "" {
		b = appendJSONString(append(b, `,"path_raw":`...), q.PathRaw)
	}
	b = strconv.AppendInt(append(b, `,"size":`...), q.Size, 10)
	b = appendJSONString(append(b, `,"strong":`...), q.Strong)
	b = appendJSONString(append(b, `,"type":`...), q.Type.String())
	if q.Features == nil {
		b = append(b, `,"features":null`...)
	} else {
		b = append(b, `,"features":[`...)
		for i, f := range q.Features {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, `{"hash":`...), f.Hash)
			b = strconv.AppendUint(append(b, `,"count":`...), uint64(f.Count), 10)
			if f.Len != 0 {
				b = strconv.AppendUint(append(b, `,"len":`...), uint64(f.Len), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if h := q.SimiHash; h != nil {
		b = append(b, `,"simihash":{"sum":[`...)
		for i, n := range h.Sum {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(n), 10)
		}
		b = strconv.AppendUint(append(b, `],"key":`...), uint64(h.Key), 10)
		b = append(b, '}')
	}
	return append(b, "}\n"...), nil
}

// appendJSONString appends s as a JSON string: as it is when it needs no
// escaping (the hex digits of hashes), else as json.Marshal writes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			e, _ := json.Marshal(s)
			return append(b, e...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// DecodeQuerySketch decodes b, one JSON object (surrounding white space
// aside) of QuerySketch's fields and no other, as NewQuerySketch makes
// them. It checks what it can without the index: the object is whole
// (an error says "truncated" for one that ends early), it has params,
// its size is not negative, its path_raw is base64 and its strong hash
// and features are well formed; whether the params are the index's is
// the caller's to check (the daemon refuses others with
// CodeParamsMismatch). Errors wrap ErrBadSketch.
func DecodeQuerySketch(b []byte) (*QuerySketch, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var q QuerySketch
	if err := dec.Decode(&q); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadSketch, describeJSONError(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: more after the JSON object (one sketch per line)", ErrBadSketch)
	}
	if err := q.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSketch, err)
	}
	return &q, nil
}

// check reports what is wrong with q's fields, as the daemon would.
func (q *QuerySketch) check() error {
	if q.Params == (fingerprint.Params{}) {
		return errors.New(`params: missing; a sketch carries the parameters its features were made with`)
	}
	if _, err := q.Params.Normalize(); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	if _, _, _, err := q.Decoded(); err != nil {
		return err
	}
	return CheckSimiHash(q.SimiHash)
}

// SimiHashOf returns sk's SimiHash summary, for a sketch made with it
// (not fingerprint.SketchQuery's).
func SimiHashOf(sk *fingerprint.Sketch) *SimiHash { return &SimiHash{Sum: sk.Sum, Key: sk.Key} }

// CheckSimiHash reports a key that is not the sum table's skew key; a nil
// h is fine.
func CheckSimiHash(h *SimiHash) error {
	if h != nil && h.Key != fingerprint.SkewKey(h.Sum) {
		return fmt.Errorf("simihash: key %d, but the sum table's skew key is %d", h.Key, fingerprint.SkewKey(h.Sum))
	}
	return nil
}

// Decoded returns q's path, strong hash and features decoded, checked as
// the daemon checks a query's: the path and path_raw agree (JoinPath),
// the size is not negative, the strong hash is 64 hex digits and the
// features are well formed, sorted and distinct. Its params are the
// caller's to check.
func (q *QuerySketch) Decoded() (path string, strong [32]byte, fs []fingerprint.Feature, err error) {
	if path, err = JoinPath(q.Path, q.PathRaw); err != nil {
		return "", strong, nil, err
	}
	if q.Size < 0 {
		return "", strong, nil, fmt.Errorf("size %d: must not be negative", q.Size)
	}
	if len(q.Strong) != 64 {
		return "", strong, nil, fmt.Errorf("strong %q: want 64 hex digits (SHA-256)", q.Strong)
	}
	if _, err := hex.Decode(strong[:], []byte(q.Strong)); err != nil {
		return "", strong, nil, fmt.Errorf("strong %q: want 64 hex digits (SHA-256)", q.Strong)
	}
	if fs, err = DecodeFeatures(q.Features); err != nil {
		return "", strong, nil, err
	}
	for i := 1; i < len(fs); i++ {
		if fs[i].Hash <= fs[i-1].Hash {
			return "", strong, nil, fmt.Errorf("features[%d]: hashes must be sorted and distinct", i)
		}
	}
	return path, strong, fs, nil
}

// describeJSONError says what a decoding error means for a line that
// should hold one JSON object.
func describeJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "empty; want a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated: the JSON object ends early"
	case errors.As(err, &se):
		return "not JSON: " + err.Error()
	case errors.As(err, &te):
		if te.Field != "" {
			return fmt.Sprintf("%s: want a JSON %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return fmt.Sprintf("want a JSON object, not %s", te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ") + " (a sketch has only the fields `sifctl sketch` prints)"
	}
	return err.Error()
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	}
	return "number"
}
