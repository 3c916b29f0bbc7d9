package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
)

func newDedupeCmd(g *globals) *cobra.Command {
	var reflink, hardlink, del, dryRun bool
	var keep, prefix string
	cmd := &cobra.Command{
		Use:   "dedupe [--reflink | --hardlink | --delete] [--keep RULE] [--dry-run]",
		Short: "Share, link or remove identical files, with your own rights",
		Long: `dedupe acts on the sets of identical files that dupes lists. It runs in
sifctl, with the rights of the user who runs it: the daemon only names the
files and never changes one. Of each set it keeps one file (--keep) and, for
each other file, first checks that it still is what was indexed and still
has the kept file's bytes, then:

  --reflink   shares the kept file's blocks (FIDEDUPERANGE: the kernel
              compares the bytes itself); both names stay separate files.
              The default. On a filesystem without it (ext4, tmpfs) each
              file is skipped as "not supported": use --hardlink.
  --hardlink  replaces the file by a hard link to the kept one (a link made
              under a temporary name, then renamed over the file: the file
              is never missing). The name then shares the kept file's
              owner, mode and times.
  --delete    removes the file.

--keep chooses the file to keep: oldest (the default: earliest
modification time, then first by path), newest, or under:DIR (the oldest
copy in DIR's tree; a set with none there is left alone).

A file is skipped, with a message on stderr, when it changed since it was
indexed (size or bytes, or the kept file's SHA-256), vanished, cannot be
written by you (nor its directory, for --hardlink and --delete), is on
another filesystem than the kept file (for --hardlink), or already is a hard
link of the kept file. --dry-run checks all of this but changes nothing.
The last line says how many files were acted on and skipped, and the bytes
freed (a file's size, once its last name is replaced).

With --json, one line per file, {"action": ..., "path": ..., "keep": ...,
"bytes": N} or {"skip": REASON, "path": ..., "message": ...}, then
{"summary": {...}}. Exit 0 when a file was (or, with --dry-run, would be)
acted on, 1 when none, 2 on an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			act, err := dedupeActionOf(reflink, hardlink, del)
			if err != nil {
				return failed(err)
			}
			rule, err := parseKeep(keep)
			if err != nil {
				return failed(err)
			}
			prefix, err := absPrefix(prefix)
			if err != nil {
				return failed(err)
			}
			d := newDeduper(act, rule, dryRun, g.stdout, g.stderr, g.json)
			// Empty files free nothing: they are left as they are.
			if _, err := g.client().DupesWith(cmd.Context(), ipc.DupesOptions{Prefix: prefix, MinSize: 1}, d.set); err != nil {
				return failed(err)
			}
			if err := d.summary(); err != nil {
				return failed(err)
			}
			switch {
			case d.failures > 0:
				return failed(fmt.Errorf("%s could not be acted on", count(d.failures, "file", "files")))
			case d.acted == 0:
				return nothing()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&reflink, "reflink", false, "share the kept file's blocks (the default)")
	cmd.Flags().BoolVar(&hardlink, "hardlink", false, "replace each copy by a hard link to the kept file")
	cmd.Flags().BoolVar(&del, "delete", false, "remove each copy")
	cmd.Flags().StringVar(&keep, "keep", "oldest", "the file to keep of each set: oldest, newest or under:DIR")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "check and say what would be done, changing nothing")
	cmd.Flags().StringVar(&prefix, "prefix", "", "only sets whose files are all in this directory tree")
	return cmd
}

// dedupeAction is what dedupe does with a copy.
type dedupeAction int

const (
	actReflink dedupeAction = iota
	actHardlink
	actDelete
)

func dedupeActionOf(reflink, hardlink, del bool) (dedupeAction, error) {
	n, act := 0, actReflink
	if reflink {
		n++
	}
	if hardlink {
		n, act = n+1, actHardlink
	}
	if del {
		n, act = n+1, actDelete
	}
	if n > 1 {
		return 0, errors.New("--reflink, --hardlink and --delete: give one of them")
	}
	return act, nil
}

// name is the action's word in JSON; done and would are its text.
func (a dedupeAction) name() string {
	return [...]string{"reflink", "hardlink", "delete"}[a]
}

func (a dedupeAction) done(dry bool) string {
	if dry {
		return [...]string{"would reflink", "would hard-link", "would delete"}[a]
	}
	return [...]string{"reflinked", "hard-linked", "deleted"}[a]
}

// keepRule picks the file to keep of an identical set.
type keepRule struct {
	newest bool
	under  string // an absolute directory, or ""
}

func parseKeep(s string) (keepRule, error) {
	switch {
	case s == "oldest":
		return keepRule{}, nil
	case s == "newest":
		return keepRule{newest: true}, nil
	case strings.HasPrefix(s, "under:") && len(s) > len("under:"):
		abs, err := filepath.Abs(strings.TrimPrefix(s, "under:"))
		if err != nil {
			return keepRule{}, fmt.Errorf("--keep %s: %w", s, err)
		}
		return keepRule{under: abs}, nil
	}
	return keepRule{}, fmt.Errorf("--keep %q: want oldest, newest or under:DIR", s)
}

// candidate is one file of a set as found on disk now.
type candidate struct {
	path string
	fi   fs.FileInfo // nil when err is not
	err  error
}

func statSet(s ipc.DupeSet) []candidate {
	cs := make([]candidate, len(s.Files))
	for i, f := range s.Files {
		p := f.Exact()
		fi, err := os.Lstat(p)
		cs[i] = candidate{path: p, fi: fi, err: err}
	}
	return cs
}

// pick returns the index of the file to keep among the regular files of
// cs, or -1 when none fits the rule.
func (r keepRule) pick(cs []candidate) int {
	best := -1
	for i, c := range cs {
		if c.err != nil || !c.fi.Mode().IsRegular() || (r.under != "" && !underDir(c.path, r.under)) {
			continue
		}
		if best < 0 || r.before(c, cs[best]) {
			best = i
		}
	}
	return best
}

// before reports whether a is kept rather than b: ties of time go to
// the first path, so that the choice does not depend on the order of the
// answer.
func (r keepRule) before(a, b candidate) bool {
	ta, tb := a.fi.ModTime(), b.fi.ModTime()
	switch {
	case ta.Equal(tb):
		return a.path < b.path
	case r.newest:
		return ta.After(tb)
	}
	return ta.Before(tb)
}

func underDir(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Why a file is skipped: the JSON "skip" values.
const (
	skipChanged     = "changed"
	skipVanished    = "vanished"
	skipUnreadable  = "unreadable"
	skipNotWritable = "not_writable"
	skipOtherFS     = "other_filesystem"
	skipLinked      = "already_linked"
	skipUnsupported = "not_supported"
	skipNoKeep      = "no_keep"
)

// dedupeRecord is one line of dedupe --json.
type dedupeRecord struct {
	Action  string        `json:"action,omitempty"`
	Skip    string        `json:"skip,omitempty"`
	DryRun  bool          `json:"dry_run,omitempty"`
	Path    ipc.FilePath  `json:"path"`
	Keep    *ipc.FilePath `json:"keep,omitempty"`
	Bytes   int64         `json:"bytes"`
	Message string        `json:"message,omitempty"`
}

// dedupeSummary is the last line of dedupe --json.
type dedupeSummary struct {
	Action  string         `json:"action"`
	DryRun  bool           `json:"dry_run"`
	Acted   int            `json:"acted"`
	Skipped map[string]int `json:"skipped"`
	Failed  int            `json:"failed"`
	Freed   int64          `json:"freed_bytes"`
}

// deduper acts on the sets of a dupes answer as they arrive.
type deduper struct {
	act         dedupeAction
	keep        keepRule
	dry         bool
	out, errOut io.Writer
	json        bool

	acted, failures int
	freed           int64
	skipped         map[string]int
	// names counts, per inode, the names not yet replaced: a file's
	// bytes are freed with its last name.
	names       map[fileID]uint64
	unsupported bool // "not supported" was explained once
}

func newDeduper(act dedupeAction, keep keepRule, dry bool, out, errOut io.Writer, json bool) *deduper {
	return &deduper{act: act, keep: keep, dry: dry, out: out, errOut: errOut, json: json,
		skipped: map[string]int{}, names: map[fileID]uint64{}}
}

func (d *deduper) set(s ipc.DupeSet) error {
	cs := statSet(s)
	k := d.keep.pick(cs)
	if k < 0 {
		why, msg := skipVanished, "no file of its set is left to keep"
		if d.keep.under != "" {
			why, msg = skipNoKeep, "no identical copy under "+d.keep.under+" to keep"
		}
		return d.skipAll(cs, -1, why, msg)
	}
	keep := cs[k]
	// Every other file is compared with the kept one: it must itself
	// still be what was indexed.
	if err := checkIndexed(keep, s); err != nil {
		return d.skipAll(cs, k, skipChanged, "the file to keep, "+keep.path+", "+err.Error())
	}
	for i, c := range cs {
		if i == k {
			continue
		}
		if err := d.file(s, keep, c); err != nil {
			return err
		}
	}
	return nil
}

func (d *deduper) skipAll(cs []candidate, k int, why, msg string) error {
	for i, c := range cs {
		if i == k {
			continue
		}
		if err := d.skip(c.path, "", why, msg); err != nil {
			return err
		}
	}
	return nil
}

// checkIndexed reports how the kept file differs from the set's indexed
// size and SHA-256, or nil when it does not.
func checkIndexed(c candidate, s ipc.DupeSet) error {
	if c.fi.Size() != s.Size {
		return fmt.Errorf("changed since it was indexed (%d bytes, indexed with %d)", c.fi.Size(), s.Size)
	}
	f, err := os.Open(c.path)
	if err != nil {
		return fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("cannot be read: %w", err)
	}
	if hex.EncodeToString(h.Sum(nil)) != s.Strong {
		return errors.New("changed since it was indexed (its SHA-256 differs)")
	}
	return nil
}

// file checks one copy against the kept file, then acts on it.
func (d *deduper) file(s ipc.DupeSet, keep, c candidate) error {
	if c.err != nil {
		if errors.Is(c.err, fs.ErrNotExist) {
			return d.skip(c.path, keep.path, skipVanished, "vanished since it was indexed")
		}
		return d.skip(c.path, keep.path, skipUnreadable, c.err.Error())
	}
	if !c.fi.Mode().IsRegular() || c.fi.Size() != s.Size {
		return d.skip(c.path, keep.path, skipChanged, "changed since it was indexed")
	}
	kid, cid := idOf(keep.fi), idOf(c.fi)
	if os.SameFile(keep.fi, c.fi) {
		return d.skip(c.path, keep.path, skipLinked, "already a hard link of "+keep.path)
	}
	if d.act == actHardlink && kid.dev != cid.dev {
		return d.skip(c.path, keep.path, skipOtherFS, "on another filesystem than "+keep.path)
	}
	if !writable(c.path) {
		return d.skip(c.path, keep.path, skipNotWritable, "you cannot write it")
	}
	if d.act != actReflink && !writable(filepath.Dir(c.path)) {
		return d.skip(c.path, keep.path, skipNotWritable, "you cannot write its directory")
	}
	if d.act == actReflink && !d.dry {
		return d.reflink(s, keep, c, cid)
	}
	same, err := sameBytes(keep.path, c.path, c.fi)
	if err != nil {
		return d.skip(c.path, keep.path, skipUnreadable, err.Error())
	}
	if !same {
		return d.skip(c.path, keep.path, skipChanged, "its bytes differ from "+keep.path)
	}
	if !d.dry {
		if err := d.replace(keep.path, c.path); err != nil {
			return d.fail(c.path, keep.path, err)
		}
	}
	return d.done(keep.path, c.path, cid, c.fi.Size())
}

func (d *deduper) reflink(s ipc.DupeSet, keep, c candidate, id fileID) error {
	err := reflinkFile(keep.path, c.path, s.Size)
	switch {
	case err == nil:
		return d.done(keep.path, c.path, id, c.fi.Size())
	case errors.Is(err, errDiffers):
		return d.skip(c.path, keep.path, skipChanged, "its bytes differ from "+keep.path+" (checked by the kernel)")
	case errors.Is(err, errCrossDevice):
		return d.skip(c.path, keep.path, skipOtherFS, "on another filesystem than "+keep.path)
	case errors.Is(err, errReflinkUnsupported):
		msg := "reflink is not supported here (" + err.Error() + ")"
		if !d.unsupported {
			d.unsupported = true
			msg += "; --hardlink links the files instead"
		}
		return d.skip(c.path, keep.path, skipUnsupported, msg)
	}
	return d.fail(c.path, keep.path, err)
}

// replace links or removes file, which has keep's bytes.
func (d *deduper) replace(keep, file string) error {
	if d.act == actDelete {
		return os.Remove(file)
	}
	return linkOver(keep, file)
}

// linkOver replaces file by a hard link to keep: the link is made under a
// new name in file's directory, then renamed over file, so that file
// names either its old content or keep's, never nothing.
func linkOver(keep, file string) error {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, ".sif-dedupe-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	// CreateTemp chose a name free in dir; it is taken back for the link.
	if err := os.Remove(name); err != nil {
		return err
	}
	if err := os.Link(keep, name); err != nil {
		return err
	}
	if err := os.Rename(name, file); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}

// sameBytes reports whether file has keep's bytes, and that file did not
// change while it was read.
func sameBytes(keep, file string, was fs.FileInfo) (bool, error) {
	a, err := os.Open(keep)
	if err != nil {
		return false, err
	}
	defer a.Close()
	b, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer b.Close()
	bufA, bufB := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		na, errA := io.ReadFull(a, bufA)
		nb, errB := io.ReadFull(b, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			if errB != errA {
				return false, nil
			}
			break
		}
		if errA != nil {
			return false, fmt.Errorf("%s: %w", keep, errA)
		}
		if errB != nil {
			return false, fmt.Errorf("%s: %w", file, errB)
		}
	}
	now, err := b.Stat()
	if err != nil {
		return false, err
	}
	return now.Size() == was.Size() && now.ModTime().Equal(was.ModTime()), nil
}

func (d *deduper) done(keep, file string, id fileID, size int64) error {
	d.acted++
	freed := int64(0)
	left, seen := d.names[id]
	if !seen {
		left = id.nlink
	}
	if left <= 1 {
		freed = size
		delete(d.names, id)
	} else {
		d.names[id] = left - 1
	}
	d.freed += freed
	if d.json {
		k := ipc.NewFilePath(keep)
		return writeJSONLine(d.out, dedupeRecord{Action: d.act.name(), DryRun: d.dry, Path: ipc.NewFilePath(file), Keep: &k, Bytes: freed})
	}
	what := "to"
	if d.act == actDelete {
		what = "copy of"
	}
	_, err := fmt.Fprintf(d.out, "%s %s %s %s\n", d.act.done(d.dry), quoteName(file), what, quoteName(keep))
	return err
}

func (d *deduper) skip(file, keep, why, msg string) error {
	d.skipped[why]++
	fmt.Fprintf(d.errOut, "sifctl: skipped %s: %s\n", quoteName(file), msg)
	if !d.json {
		return nil
	}
	r := dedupeRecord{Skip: why, DryRun: d.dry, Path: ipc.NewFilePath(file), Message: msg}
	if keep != "" {
		k := ipc.NewFilePath(keep)
		r.Keep = &k
	}
	return writeJSONLine(d.out, r)
}

func (d *deduper) fail(file, keep string, err error) error {
	d.failures++
	fmt.Fprintf(d.errOut, "sifctl: %s: %v\n", quoteName(file), err)
	if !d.json {
		return nil
	}
	k := ipc.NewFilePath(keep)
	return writeJSONLine(d.out, dedupeRecord{Skip: "failed", Path: ipc.NewFilePath(file), Keep: &k, Message: err.Error()})
}

func (d *deduper) summary() error {
	if d.json {
		return writeJSONLine(d.out, struct {
			Summary dedupeSummary `json:"summary"`
		}{dedupeSummary{Action: d.act.name(), DryRun: d.dry, Acted: d.acted, Skipped: d.skipped, Failed: d.failures, Freed: d.freed}})
	}
	var b strings.Builder
	if d.dry {
		fmt.Fprintf(&b, "%s %s", d.act.done(true), count(d.acted, "file", "files"))
	} else {
		fmt.Fprintf(&b, "%s %s", count(d.acted, "file", "files"), d.act.done(false))
	}
	n, why := 0, make([]string, 0, len(d.skipped))
	for w, k := range d.skipped {
		n += k
		why = append(why, fmt.Sprintf("%d %s", k, strings.ReplaceAll(w, "_", " ")))
	}
	if n > 0 {
		sort.Strings(why)
		fmt.Fprintf(&b, ", %d skipped (%s)", n, strings.Join(why, ", "))
	}
	if d.failures > 0 {
		fmt.Fprintf(&b, ", %d failed", d.failures)
	}
	freed := "freed"
	if d.dry {
		freed = "would be freed"
	}
	fmt.Fprintf(&b, ": %d bytes %s\n", d.freed, freed)
	_, err := io.WriteString(d.out, b.String())
	return err
}
