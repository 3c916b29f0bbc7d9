package server

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// TestSimilarListsCommon: with list_common, the answer names the query's
// features skipped as too common to count, and no other.
func TestSimilarListsCommon(t *testing.T) {
	p := fingerprint.DefaultParams()
	ix, err := index.Open(filepath.Join(t.TempDir(), "db"), &index.Options{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	sketch := func(b []byte) *fingerprint.Sketch {
		sk, err := fingerprint.SketchReader(bytes.NewReader(b), p)
		if err != nil {
			t.Fatal(err)
		}
		return sk
	}
	text := func(seed int, n int) []byte {
		var b bytes.Buffer
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %d of text %d says %s\n", i, seed, strconv.FormatUint(uint64(seed*7919+i*104729)*2654435761, 36))
		}
		return b.Bytes()
	}
	// A header that is a minor part of each file: its features are
	// skipped, not counted as a template's would be.
	header := text(0, 2000)
	for i := 1; i <= 3; i++ {
		sk := sketch(append(append([]byte{}, header...), text(i, 4000)...))
		if _, err := ix.Put(index.FileMeta{Path: fmt.Sprintf("/f%d", i), Size: sk.Size}, sk); err != nil {
			t.Fatal(err)
		}
	}
	c := serve(t, ix)
	q := sketch(append(append([]byte{}, header...), text(9, 4000)...))
	inHeader := map[uint64]bool{}
	for _, f := range sketch(header).Features {
		inHeader[f.Hash] = true
	}
	for _, list := range []bool{false, true} {
		req := ipc.NewSimilarRequest("", q)
		req.Fast, req.MaxDF, req.ListCommon = true, 2, list
		resp, err := c.Similar(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Skipped == 0 {
			t.Fatalf("nothing skipped: %+v", resp)
		}
		if !list {
			if resp.Common != nil {
				t.Errorf("common listed unasked: %v", resp.Common)
			}
			continue
		}
		if len(resp.Common) != resp.Skipped {
			t.Errorf("%d common hashes, %d skipped", len(resp.Common), resp.Skipped)
		}
		for _, h := range resp.Common {
			v, err := strconv.ParseUint(h, 16, 64)
			if err != nil || len(h) != 16 {
				t.Fatalf("common hash %q: %v", h, err)
			}
			if !inHeader[v] {
				t.Errorf("common hash %s is not one of the shared header's", h)
			}
		}
	}
}
