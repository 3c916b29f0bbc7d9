package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

// defaultTop is how many directories, groups and sets each section of
// the report lists by default.
const defaultTop = 50

func newReportCmd(g *globals) *cobra.Command {
	var out, prefix string
	top := defaultTop
	cmd := &cobra.Command{
		Use:   "report --html FILE [--top N] [--prefix DIR]",
		Short: "Write a picture of the file server: what copies and near-copies cost, as one HTML page",
		Long: `report asks sifd what dupes, groups and groups --dirs answer and writes
them as one HTML page, for a person to look at in a browser: the page is
self-contained (its styles and pictures are in it; opening it fetches
nothing) and --html - writes it to standard output. It holds:

  - a summary: the files and bytes indexed, the bytes removing the identical
    copies would free (as dupes counts them), the groups of near-copy
    directories and what deleting their copies would reclaim, and the groups
    of similar files with the bytes in them beyond each group's reference;
  - a treemap of the bytes the identical copies take, by directory: each
    rectangle is a directory, its area the bytes of the copies in it, and
    a table below it lists the same directories by number. Of each set of
    identical files, the first by path is counted as the one kept and the
    others as the copies (hard links to one file count once); which one
    'sifctl dedupe' keeps depends on its --keep;
  - the near-copy directories, largest saving first, as groups --dirs finds
    them (at its default threshold, 50 %): each group's reference, its
    other directories with their resemblance to it, and the saving;
  - the groups of similar files, largest first, as groups finds them (at
    its default threshold, 25 %): the reference, and each member with how
    much of one the other contains and its size;
  - the sets of identical files that would free the most, with their files.

--top caps each list (and the treemap, which shows up to 50 directories
and the rest as one rectangle). --prefix keeps the files under a directory
tree. Sizes are in KiB, MiB and GiB (powers of 1024). The figures are those
of the index when report ran, estimates where groups --dirs says so.

The page is written once every answer is in, to a temporary file beside
FILE then renamed to it: FILE is whole or unchanged. On a terminal sifctl
shows on standard error which of the three questions it is waiting for.
report has no --json: 'sifctl dupes --json', 'groups --json' and 'groups
--dirs --json' give the same data for programs. Exit status 0 once the
page is written, 2 on error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.json {
				return failedf("report writes a page, not JSON: 'sifctl dupes --json', 'groups --json' and 'groups --dirs --json' give its data")
			}
			if out == "" {
				return failedf("--html FILE is required: the file to write the page to (- for standard output)")
			}
			if top < 1 {
				return failedf("--top %d: want 1 or more", top)
			}
			abs, err := absPrefix(prefix)
			if err != nil {
				return failed(err)
			}
			w, err := createOutput(out, g.stdout)
			if err != nil {
				return failed(err)
			}
			defer w.abort()
			d, err := gatherReport(cmd.Context(), g, abs, top)
			if err != nil {
				return failed(err)
			}
			if err := writeReport(w, d); err != nil {
				return failed(fmt.Errorf("--html %s: %w", out, err))
			}
			if err := w.commit(); err != nil {
				return failed(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "html", "", "write the page to `FILE` (- for standard output)")
	cmd.Flags().IntVar(&top, "top", defaultTop, "list at most `N` directories, groups and sets in each section")
	cmd.Flags().StringVar(&prefix, "prefix", "", "only files in the directory tree `DIR` (whole path components; relative to the current directory)")
	return cmd
}

// reportData is what the page shows, as the daemon answered it.
type reportData struct {
	Host      string
	Generated time.Time
	Prefix    string // "" for the whole index
	Top       int
	// Files and Bytes are indexed (under Prefix, when given); Truncated
	// says the count under Prefix stopped at ipc.MaxDirMaxFiles files.
	Files, Bytes int64
	Truncated    bool
	// Scanning, when sifd had not finished its first scans, says so: the
	// page holds the files indexed so far.
	Scanning    string
	Dupes       ipc.DupesTotals
	Sets        []ipc.DupeSet // the Top sets that free the most, most first
	FreeingSets int           // the sets that would free something: not only hard links
	// ByDir sums the identical copies (all but the first file by path of
	// each set, a hard link counted once) by their directories.
	ByDir      map[string]dirCopies
	FileGroups []ipc.Group // the first Top groups of similar files, largest first
	Similar    groupTotals // over every group of similar files
	DirGroups  []dirsim.Group
}

// dirCopies counts the identical copies in one directory.
type dirCopies struct {
	Files int
	Bytes int64
}

// groupTotals sums the groups of similar files: their files, copies
// included, and the bytes of their members (each group's reference, and
// the identical copies, which dupes counts, left out).
type groupTotals struct {
	Groups, Files int
	MemberFiles   int
	MemberBytes   int64
}

// gatherReport asks the daemon of g for the report's data: the totals of
// the index (or of prefix), the identical files, the groups of similar
// files, and the groups of near-copy directories, showing on a terminal
// which it waits for.
func gatherReport(ctx context.Context, g *globals, prefix string, top int) (*reportData, error) {
	c := g.client()
	d := &reportData{Generated: time.Now(), Prefix: prefix, Top: top, ByDir: map[string]dirCopies{}}
	d.Host, _ = os.Hostname()
	if err := d.indexTotals(ctx, c); err != nil {
		return nil, err
	}
	if st, err := c.Status(ctx); err == nil && st.State == "scanning" {
		var seen, done uint64
		for _, r := range st.Roots {
			seen, done = seen+r.FilesSeen, done+r.FilesDone
		}
		d.Scanning = fmt.Sprintf("sifd was still scanning its roots when this page was made (%d of the %d files found so far read); the page shows the files indexed by then. Make it again once 'sifctl wait' returns.", done, seen)
		fmt.Fprintln(g.stderr, "sifctl report: "+d.Scanning)
	}
	pr := g.newProgress()
	step := func(n int, what string) func() {
		if pr.w == nil {
			return func() {}
		}
		return pr.untilAnswer(ctx, fmt.Sprintf("sifctl report (%d of 3): %s among %d indexed files", n, what, d.Files))
	}
	stop := step(1, "finding the identical files")
	var err error
	d.Dupes, err = c.DupesWith(ctx, ipc.DupesOptions{Prefix: prefix, MinSize: 1}, d.addSet)
	stop()
	if err != nil {
		return nil, fmt.Errorf("identical files: %w", err)
	}
	d.Sets = topSets(d.Sets, top)
	id := ipc.NewRequestID()
	stop = pr.untilWork(ctx, g.client(), id, fmt.Sprintf("sifctl report (2 of 3): linking the similar files among %d indexed files", d.Files), "sifctl report (2 of 3)")
	_, err = c.GroupsEach(ctx, ipc.GroupsOptions{Prefix: prefix, RequestID: id}, d.addGroup)
	stop()
	if err != nil {
		return nil, fmt.Errorf("groups of similar files: %w", err)
	}
	stop = step(3, "comparing the directories")
	d.DirGroups, err = dirsim.Groups(ctx, c, &dirsim.GroupsOptions{Prefix: prefix})
	stop()
	if errors.Is(err, dirsim.ErrNoLinks) {
		err = fmt.Errorf("%w: it is older than this sifctl", err)
	}
	if err != nil {
		return nil, fmt.Errorf("groups of similar directories: %w", err)
	}
	return d, nil
}

// indexTotals counts the files and bytes the report is about: the
// index's, or those under the prefix.
func (d *reportData) indexTotals(ctx context.Context, c *ipc.Client) error {
	if d.Prefix == "" {
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		d.Files, d.Bytes = int64(info.Index.Files), int64(info.Index.Bytes)
		return nil
	}
	t, err := c.DirTotals(ctx, []string{d.Prefix}, ipc.MaxDirMaxFiles)
	if err != nil {
		return err
	}
	if len(t.Dirs) != 1 {
		return fmt.Errorf("the totals of %s: %d answered for 1 directory", d.Prefix, len(t.Dirs))
	}
	d.Files, d.Bytes, d.Truncated = t.Dirs[0].Files, t.Dirs[0].Bytes, t.Dirs[0].Truncated
	return nil
}

// addSet counts one set of identical files: its copies by directory, and
// among the sets that free the most.
func (d *reportData) addSet(s ipc.DupeSet) error {
	for i, f := range s.Files {
		if i == 0 || f.HardLinkOf != nil {
			continue // the file kept, or a link to a file counted already
		}
		dir := filepath.Dir(f.Exact())
		c := d.ByDir[dir]
		c.Files++
		c.Bytes += s.Size
		d.ByDir[dir] = c
	}
	if s.RedundantBytes > 0 {
		d.FreeingSets++
		d.Sets = append(d.Sets, s)
		if len(d.Sets) >= 2*d.Top+64 {
			d.Sets = topSets(d.Sets, d.Top)
		}
	}
	return nil
}

// topSets returns the top sets of sets that free the most, most first,
// then by their first path.
func topSets(sets []ipc.DupeSet, top int) []ipc.DupeSet {
	slices.SortFunc(sets, func(a, b ipc.DupeSet) int {
		if a.RedundantBytes != b.RedundantBytes {
			return cmp.Compare(b.RedundantBytes, a.RedundantBytes)
		}
		return strings.Compare(a.Files[0].Exact(), b.Files[0].Exact())
	})
	return slices.Clip(sets[:min(top, len(sets))])
}

// addGroup counts one group of similar files and keeps it among the
// first Top.
func (d *reportData) addGroup(grp ipc.Group) error {
	s := &d.Similar
	s.Groups++
	s.Files += 1 + len(grp.Reference.Copies)
	for _, m := range grp.Members {
		s.Files += 1 + len(m.Copies)
		s.MemberFiles++
		s.MemberBytes += m.Size
	}
	if len(d.FileGroups) < d.Top {
		d.FileGroups = append(d.FileGroups, grp)
	}
	return nil
}

// reportOutput is where the page goes: standard output, or a temporary
// file beside the file named, renamed to it once the page is whole.
type reportOutput struct {
	io.Writer
	name string   // the file named by --html; "" for standard output
	tmp  *os.File // nil for standard output
	done bool
}

// createOutput opens the page's output for --html name ("-": stdout).
// The temporary file is made at once, so that a file that cannot be
// written is said before the daemon is asked anything. It is created as
// os.Create would create name (the umask applies), and takes the mode of
// the file it replaces.
func createOutput(name string, stdout io.Writer) (*reportOutput, error) {
	if name == "-" {
		return &reportOutput{Writer: stdout}, nil
	}
	fi, err := os.Stat(name)
	switch {
	case err == nil && fi.IsDir():
		return nil, fmt.Errorf("--html %s: a directory: name the file to write", name)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("--html %s: %v", name, pathCause(err))
	}
	dir, base := filepath.Split(name)
	var f *os.File
	for i := 0; ; i++ {
		tmp := filepath.Join(dir, "."+base+".tmp"+strconv.Itoa(os.Getpid()+i))
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err == nil || !errors.Is(err, fs.ErrExist) || i == 100 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("--html %s: cannot write there: %v", name, pathCause(err))
	}
	if fi != nil {
		f.Chmod(fi.Mode().Perm())
	}
	return &reportOutput{Writer: f, name: name, tmp: f}, nil
}

// commit makes the page the file named: it closes the temporary file and
// renames it.
func (o *reportOutput) commit() error {
	if o.tmp == nil {
		return nil
	}
	if err := o.tmp.Close(); err != nil {
		return fmt.Errorf("--html %s: %v", o.name, pathCause(err))
	}
	if err := os.Rename(o.tmp.Name(), o.name); err != nil {
		return fmt.Errorf("--html %s: %v", o.name, pathCause(err))
	}
	o.done = true
	return nil
}

// abort removes the temporary file unless the page was committed.
func (o *reportOutput) abort() {
	if o.tmp == nil || o.done {
		return
	}
	o.tmp.Close()
	os.Remove(o.tmp.Name())
}

// pathCause is err without the path of an *fs.PathError, which would
// name the temporary file: the caller names the file asked for.
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
