package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The denied set is bounded, lists its first paths in order, and hands
// out its paths in turn, every one within a round.
func TestDeniedSet(t *testing.T) {
	var s deniedSet
	if s.status() != nil || s.holds("/r") || s.batch(3) != nil {
		t.Fatal("an empty set holds something")
	}
	for i := range 12 {
		if !s.add(fmt.Sprintf("/r/d%02d", i), syscall.EACCES) {
			t.Fatalf("path %d not new", i)
		}
	}
	if s.add("/r/d00", syscall.EACCES) {
		t.Error("a path added twice is new twice")
	}
	st := s.status()
	if st.Count != 12 || st.More || len(st.Paths) != maxDeniedShown || st.Paths[0] != "/r/d00" || st.Paths[9] != "/r/d09" {
		t.Errorf("status: %+v", st)
	}
	seen := map[string]int{}
	for range 4 {
		for _, p := range s.batch(5) {
			seen[p]++
		}
	}
	if len(seen) != 12 {
		t.Errorf("four batches of 5 handed out %d distinct paths of 12: %v", len(seen), seen)
	}
	if !s.holds("/r") || !s.holds("/r/d03") || s.holds("/r/d03x") || !s.above("/r/d03/f") || s.above("/r/d03") {
		t.Error("holds or above is wrong")
	}
	if !s.clearUnder("/r/d03") || s.holds("/r/d03") || s.status().Count != 11 {
		t.Error("clearUnder did not clear")
	}
	for i := range maxDenied {
		s.add(fmt.Sprintf("/s/%d", i), syscall.EACCES)
	}
	if st := s.status(); st.Count != maxDenied || !st.More {
		t.Errorf("past the bound: count %d, more %v", st.Count, st.More)
	}
}

// A path denied whose rights changed without any event (an ACL, a group
// membership) is found readable by the poll: a directory is scanned
// again, a file read again, and both leave the set. (Root reads
// everything: the test lists readable paths as denied, as if their
// rights had just changed.)
func TestDeniedRetriedByPoll(t *testing.T) {
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o755)
	in := filepath.Join(sub, "in.txt")
	loose := filepath.Join(root, "loose.txt")
	os.WriteFile(in, []byte(strings.Repeat("a file in a directory once locked; ", 200)), 0o644)
	os.WriteFile(loose, []byte(strings.Repeat("a file once locked itself; ", 200)), 0o644)
	d, logs := startDaemon(t, Config{Roots: []string{root}, SettleDelay: 20 * time.Millisecond})
	r := d.rootList()[0]
	// As a scan finding them locked leaves them: out of the index, listed.
	d.forget(in)
	d.forget(loose)
	r.denied.add(sub, syscall.EACCES)
	r.denied.add(loose, syscall.EACCES)
	if st := d.Status(); st.Index.Files != 0 || st.Roots[0].Denied == nil || st.Roots[0].Denied.Count != 2 {
		t.Fatalf("before the poll: %d files, denied %+v", st.Index.Files, st.Roots[0].Denied)
	}
	deadline := time.Now().Add(3*faultPoll + 5*time.Second)
	for {
		st := d.Status()
		if st.Index.Files == 2 && st.Roots[0].Denied == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not retried by the poll: %d files, denied %+v\n%s", st.Index.Files, st.Roots[0].Denied, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var got []string
	for _, f := range []string{in, loose} {
		if _, err := d.ix.Lookup(f); err == nil {
			got = append(got, f)
		}
	}
	if !slices.Equal(got, []string{in, loose}) {
		t.Errorf("indexed after the poll: %v", got)
	}
}
