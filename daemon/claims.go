package daemon

import (
	"strings"
	"sync"
)

// claims serialise the work on each path: one worker at a time brings a
// path up to date. A worker that finds the path claimed hands its ticket to
// the claimant and marks the path to be looked at again, so the last look
// always follows the last change, and two reads of one file can never
// commit out of order.
type claims struct {
	mu   sync.Mutex
	busy map[string]*claim
}

type claim struct {
	again   bool
	tickets []ticket
}

// take claims path for the caller, or, if another worker holds it, hands t
// over and returns false.
func (c *claims) take(path string, t ticket) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy == nil {
		c.busy = make(map[string]*claim)
	}
	if cl := c.busy[path]; cl != nil {
		cl.again = true
		cl.tickets = append(cl.tickets, t)
		return false
	}
	c.busy[path] = &claim{}
	return true
}

// finish is called by the claimant when it is done with path. If the path
// was marked meanwhile, it stays claimed and finish returns again = true:
// the caller must look at it once more. Otherwise the claim ends and the
// tickets handed over are returned for release.
func (c *claims) finish(path string) (again bool, handed []ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.busy[path]
	if cl.again {
		cl.again = false
		return true, nil
	}
	delete(c.busy, path)
	return false, cl.tickets
}

// markUnder marks every claimed path at or below dir (a directory whose
// records were just removed) to be looked at again by its claimant.
func (c *claims) markUnder(dir string) {
	prefix := dirPrefix(dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, cl := range c.busy {
		if p == dir || strings.HasPrefix(p, prefix) {
			cl.again = true
		}
	}
}
