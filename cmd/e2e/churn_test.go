//go:build unix

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// churner changes a tree the way people and programs do: it creates,
// edits (in place, by appending, and by writing a temporary file and
// renaming it over the old one), truncates, renames and moves files and
// whole directories, moves directories out of the root and back in, and
// deletes files and whole directories. It keeps no model of the tree: it
// looks at the disk for what to change, and the test compares the index
// with a fresh scan of the result.
type churner struct {
	t       *testing.T
	r       *rand.Rand
	root    string
	outside string // a directory beside the root, for moves out and in
	seq     int
	ops     map[string]int
}

func newChurner(t *testing.T, seed uint64, root, outside string) *churner {
	if err := os.MkdirAll(outside, 0o777); err != nil {
		t.Fatal(err)
	}
	return &churner{t: t, r: rand.New(rand.NewPCG(seed, 0xc4)), root: root, outside: outside, ops: map[string]int{}}
}

func (c *churner) name(prefix string) string {
	c.seq++
	return fmt.Sprintf("%s%d", prefix, c.seq)
}

// content is text with a share of common lines, so that files have
// fingerprints in common as real trees do.
func (c *churner) content() []byte {
	n := 200 + c.r.IntN(6000)
	b := words(c.r.Uint64(), n)
	if c.r.IntN(3) == 0 {
		b = append(words(42, 1500), b...)
	}
	return b
}

// populate makes dirs directories of files files each.
func (c *churner) populate(dirs, files int) {
	for range dirs {
		d := filepath.Join(c.root, c.name("d"))
		c.mkdir(d)
		for range files {
			c.writeFile(filepath.Join(d, c.name("f")+".txt"), c.content())
		}
	}
}

func (c *churner) mkdir(d string) {
	if err := os.MkdirAll(d, 0o777); err != nil {
		c.t.Fatal(err)
	}
	os.Chmod(d, 0o777)
}

func (c *churner) writeFile(p string, b []byte) {
	if err := os.WriteFile(p, b, 0o666); err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
}

// pick returns a random file or directory under the root (dirs: want a
// directory other than the root), or "" if there is none.
func (c *churner) pick(dirs bool) string {
	var found []string
	filepath.WalkDir(c.root, func(p string, de os.DirEntry, err error) error {
		if err != nil || p == c.root {
			return nil
		}
		if de.IsDir() == dirs && !strings.HasPrefix(de.Name(), ".sifd-cookie-") {
			found = append(found, p)
		}
		return nil
	})
	if len(found) == 0 {
		return ""
	}
	slices.Sort(found)
	return found[c.r.IntN(len(found))]
}

// step makes one random change.
func (c *churner) step() {
	op := c.r.IntN(100)
	switch {
	case op < 20: // create a file
		d := c.pick(true)
		if d == "" {
			d = c.root
		}
		c.writeFile(filepath.Join(d, c.name("n")+".txt"), c.content())
		c.ops["create"]++
	case op < 35: // edit in place
		if f := c.pick(false); f != "" {
			if b, err := os.ReadFile(f); err == nil && len(b) > 60 {
				c.writeFile(f, edit(c.r.Uint64(), b, 0.2))
				c.ops["edit"]++
			}
		}
	case op < 42: // append
		if f := c.pick(false); f != "" {
			if fh, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0); err == nil {
				fh.Write(words(c.r.Uint64(), 500))
				fh.Close()
				c.ops["append"]++
			}
		}
	case op < 52: // editor save: write a temporary file, rename it over
		if f := c.pick(false); f != "" {
			if b, err := os.ReadFile(f); err == nil && len(b) > 60 {
				tmp := filepath.Join(filepath.Dir(f), "."+filepath.Base(f)+".swp")
				c.writeFile(tmp, edit(c.r.Uint64(), b, 0.1))
				os.Rename(tmp, f)
				c.ops["save"]++
			}
		}
	case op < 56: // truncate
		if f := c.pick(false); f != "" {
			if st, err := os.Stat(f); err == nil {
				os.Truncate(f, st.Size()/int64(1+c.r.IntN(3)))
				c.ops["truncate"]++
			}
		}
	case op < 66: // rename or move a file
		if f := c.pick(false); f != "" {
			d := c.pick(true)
			if d == "" || c.r.IntN(2) == 0 {
				d = filepath.Dir(f)
			}
			os.Rename(f, filepath.Join(d, c.name("m")+".txt"))
			c.ops["move"]++
		}
	case op < 72: // rename or move a directory
		if d := c.pick(true); d != "" {
			to := filepath.Join(c.root, c.name("r"))
			if p := c.pick(true); p != "" && c.r.IntN(2) == 0 && !strings.HasPrefix(p+"/", d+"/") {
				to = filepath.Join(p, c.name("r"))
			}
			os.Rename(d, to)
			c.ops["move dir"]++
		}
	case op < 75: // move a directory out of the root
		if d := c.pick(true); d != "" {
			os.Rename(d, filepath.Join(c.outside, c.name("o")))
			c.ops["move out"]++
		}
	case op < 78: // move a directory back in
		ents, _ := os.ReadDir(c.outside)
		if len(ents) > 0 {
			e := ents[c.r.IntN(len(ents))]
			os.Rename(filepath.Join(c.outside, e.Name()), filepath.Join(c.root, c.name("i")))
			c.ops["move in"]++
		}
	case op < 88: // delete a file
		if f := c.pick(false); f != "" {
			os.Remove(f)
			c.ops["delete"]++
		}
	case op < 91: // delete a whole directory
		if d := c.pick(true); d != "" {
			os.RemoveAll(d)
			c.ops["delete dir"]++
		}
	default: // a new directory full of files, some nested
		d := filepath.Join(c.root, c.name("b"))
		c.mkdir(filepath.Join(d, "sub"))
		for i := range 20 + c.r.IntN(60) {
			sub := d
			if i%3 == 0 {
				sub = filepath.Join(d, "sub")
			}
			c.writeFile(filepath.Join(sub, c.name("f")+".txt"), c.content())
		}
		c.ops["new dir"]++
	}
	if c.r.IntN(50) == 0 {
		time.Sleep(time.Duration(c.r.IntN(30)) * time.Millisecond) // let some changes settle between bursts
	}
}

// checkAgainstFreshScan stops e's daemon, scans e's root afresh into
// another index, and requires both indexes to hold exactly the same files
// with the same fingerprints, and the live one to pass sifd check.
func checkAgainstFreshScan(t *testing.T, e *env) {
	t.Helper()
	e.stop()
	live := run(t, sifdBin, "dump", "--db", e.db)
	if live.code != 0 {
		t.Fatalf("sifd dump (live): exit %d: %s", live.code, live.stderr)
	}
	if r := run(t, sifdBin, "check", "--db", e.db); r.code != 0 {
		t.Fatalf("sifd check (live): exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	fresh := &env{t: t, dir: e.dir, root: e.root, db: filepath.Join(e.dir, "fresh-db"), socket: filepath.Join(e.dir, "f.sock")}
	fresh.start()
	fresh.stop()
	want := run(t, sifdBin, "dump", "--db", fresh.db)
	if want.code != 0 {
		t.Fatalf("sifd dump (fresh): exit %d: %s", want.code, want.stderr)
	}
	if live.stdout != want.stdout {
		t.Errorf("the live index differs from a fresh scan:\n%s", lineDiff(live.stdout, want.stdout))
	}
	if n := strings.Count(want.stdout, "\n"); n < 100 {
		t.Errorf("only %d files indexed after the churn: the test tree is too small to mean much", n)
	}
}

// lineDiff lists the lines only in a (-) and only in b (+), up to 40.
func lineDiff(a, b string) string {
	as, bs := strings.Split(a, "\n"), strings.Split(b, "\n")
	inA, inB := map[string]bool{}, map[string]bool{}
	for _, l := range as {
		inA[l] = true
	}
	for _, l := range bs {
		inB[l] = true
	}
	var out []string
	for _, l := range as {
		if !inB[l] {
			out = append(out, "- live:  "+l)
		}
	}
	for _, l := range bs {
		if !inA[l] {
			out = append(out, "+ fresh: "+l)
		}
	}
	if len(out) > 40 {
		out = append(out[:40], fmt.Sprintf("... and %d more", len(out)-40))
	}
	return strings.Join(out, "\n")
}

// churnAndCheck runs steps changes on a populated tree under a live sifd
// started with flags, calling mid (if set) half-way; then it waits for the
// daemon to catch up and compares its index with a fresh scan.
func churnAndCheck(t *testing.T, seed uint64, steps int, mid func(e *env), flags ...string) {
	if raceEnabled {
		steps /= 2 // the race detector slows sifd several times over
	}
	e := newEnv(t)
	c := newChurner(t, seed, e.root, filepath.Join(e.dir, "outside"))
	c.populate(8, 40)
	e.start(flags...)
	for i := range steps {
		if i == steps/2 && mid != nil {
			mid(e)
		}
		c.step()
	}
	if r := e.sifctl("wait", "--timeout", "120s"); r.code != 0 {
		t.Fatalf("sifctl wait: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	st := e.status()
	t.Logf("ops %v; counters %+v", c.ops, st.Counters)
	if slices.Contains(flags, "--debug-drop-events") && st.Counters.Overflows == 0 {
		t.Errorf("no event was lost: the test did not test event loss")
	}
	checkAgainstFreshScan(t, e)
}

func TestChurn(t *testing.T) {
	churnAndCheck(t, 1, 3000, nil, "--settle-delay", "20ms")
}

// With a one-event buffer and one event in 200 dropped as if the kernel
// had lost it, reconciles (with back-off) must make up for the losses.
func TestChurnWithEventLoss(t *testing.T) {
	churnAndCheck(t, 2, 3000, nil, "--settle-delay", "20ms", "--event-buffer", "1", "--debug-drop-events", "200")
}

// SIGKILL half-way, more churn while sifd is down, then a restart: the
// start-up reconcile must bring the index back to the disk.
func TestChurnWithKill(t *testing.T) {
	churnAndCheck(t, 3, 3000, func(e *env) {
		e.kill()
		c := newChurner(t, 33, e.root, filepath.Join(e.dir, "outside"))
		for range 500 {
			c.step()
		}
		e.start("--settle-delay", "20ms")
		if st := e.status(); !st.UncleanStart {
			t.Errorf("status after SIGKILL and restart: unclean_start not set")
		}
	}, "--settle-delay", "20ms")
}
