package daemon

import (
	"slices"
	"testing"
)

// One worker at a time has a path: a second one hands its ticket over and
// makes the claimant look again; the claim ends after the last look, with
// the tickets handed over returned for release.
func TestClaims(t *testing.T) {
	var c claims
	t1, t2, t3 := ticket{epoch: 1}, ticket{epoch: 2}, ticket{epoch: 3}
	if !c.take("/r/a", t1) {
		t.Fatal("first take refused")
	}
	if c.take("/r/a", t2) || c.take("/r/a", t3) {
		t.Fatal("a claimed path was taken again")
	}
	if !c.take("/r/b", t1) {
		t.Fatal("another path is not claimed")
	}
	again, handed := c.finish("/r/a")
	if !again || handed != nil {
		t.Fatalf("finish after handovers: again %v, handed %v; want another look", again, handed)
	}
	again, handed = c.finish("/r/a")
	if again || !slices.Equal(handed, []ticket{t2, t3}) {
		t.Fatalf("last finish: again %v, handed %v; want the claim ended with t2, t3", again, handed)
	}
	if !c.take("/r/a", t1) {
		t.Fatal("an ended claim was not free")
	}

	// markUnder: every claimed path at or below a directory looks again;
	// a path that only shares the prefix does not.
	c.take("/r/ab", t1)
	c.take("/r", t1)
	c.markUnder("/r/a")
	for path, want := range map[string]bool{"/r/a": true, "/r/ab": false, "/r/b": false, "/r": false} {
		if again, _ := c.finish(path); again != want {
			t.Errorf("%s after markUnder(/r/a): again %v, want %v", path, again, want)
		}
	}
}
