package ipc

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/requests.golden")

// fill sets every field of v, through pointers, slices (one element; three
// bytes for a []byte) and embedded structs, to a value that is not zero
// and differs from field to field: n counts the values set, which do not
// depend on how the fields are grouped into structs.
func fill(v reflect.Value, n *int) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Struct, reflect.Array:
	default:
		*n++
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		l := 1
		if v.Type().Elem().Kind() == reflect.Uint8 {
			l = 3
		}
		v.Set(reflect.MakeSlice(v.Type(), l, l))
		for i := range l {
			fill(v.Index(i), n)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	default:
		panic(fmt.Sprintf("fill: a %s", v.Type()))
	}
}

// TestRequestsWire: the query requests' JSON, every field set and every
// field zero, is byte for byte that of testdata/requests.golden, and
// decodes back (refusing unknown fields) to what encodes the same. The golden
// file pins the names, the order and the omitempty of every field, so a
// change to the structs' shape that changes the wire shows.
func TestRequestsWire(t *testing.T) {
	var got bytes.Buffer
	for _, r := range []struct {
		name string
		new  func() any
	}{
		{"SimilarRequest", func() any { return new(SimilarRequest) }},
		{"BasisRequest", func() any { return new(BasisRequest) }},
		{"DirTotalsRequest", func() any { return new(DirTotalsRequest) }},
	} {
		full := r.new()
		var n int
		fill(reflect.ValueOf(full).Elem(), &n)
		for _, v := range []any{full, r.new()} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			fmt.Fprintf(&got, "%s %s\n", r.name, b)
			back := r.new()
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(back); err != nil {
				t.Errorf("%s: decoding %s: %v", r.name, b, err)
			} else if again, _ := json.Marshal(back); !bytes.Equal(again, b) {
				t.Errorf("%s: %s decodes to what encodes as %s", r.name, b, again)
			}
		}
	}
	const golden = "testdata/requests.golden"
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("the requests' JSON changed:\n got: %s\nwant: %s", got.Bytes(), want)
	}
}
