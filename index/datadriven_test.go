package index_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs of testdata/*.txt")

// TestDataDriven runs the scripts in testdata/*.txt. A script is a list of
// directives in the style of pebble's datadriven package:
//
//	command arg key=value ...
//	input lines
//	----
//	expected output lines
//	(blank line)
//
// Lines starting with '#' between directives are comments. Commands:
//
//	open scheme=manber|chunks           a new, empty index
//	put PATH [size=N] [type=text|binary] [strong=LABEL] [dev=N] [ino=N]
//	                                    input: the file's features
//	remove PATH
//	rename OLD NEW [size=N] [dev=N] [ino=N]
//	lookup-inode dev=N ino=N
//	similar [path=P] [size=N] [type=T] [strong=LABEL] [threshold=F] [limit=N]
//	        [sizeratio=F] [sameext] [sametype] [prefix=P] [maxdf=N] [minfeatures=N]
//	        [weakshared=N]
//	                                    input: the query's features
//	groups [threshold=F] [maxdf=N] [sametype] [prefix=P]
//	dupes [PREFIX]
//	check
//
// Features are written N[@LEVEL][xCOUNT][:LEN], e.g. "7", "7@4", "7x2",
// "7x2:300"; a missing LEN is lenOf(HASH) for chunks. With manber, N alone
// is the hash N << (Bits−MinBits), of the top level (what every file keeps,
// whatever its size), and N@LEVEL the hash (2N+1) << (LEVEL−MinBits), of
// exactly that level (fingerprint.Params.HashLevel); with chunks the hash is
// N. A file of size S keeps only features of level Params.Level(S) or more
// (with the defaults: 2 below 80 bytes, 3 from 103, 4 from 167, 5 from 295,
// 6 from 551, 7 from 1063, 8 from 2087). strong=LABEL sets the strong hash
// to SHA-256(LABEL); without it, it is unknown (zero). Sizes default to 100,
// device and inode to 0 for put and to the file's own for rename.
//
// Besides comparing outputs, every similar match is checked against
// fingerprint.Compare of the query and the stored sketch, unless features
// were skipped (then only identical matches are).
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

type directive struct {
	leading  []string // comment and blank lines before the directive
	line     int
	cmd      string
	args     []string
	input    []string
	expected string
}

// parseScript returns the directives of a script, and the comment and blank
// lines after the last one.
func parseScript(t *testing.T, file string) (ds []directive, trailing []string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var raw []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		raw = append(raw, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var leading []string
	for i := 0; i < len(raw); {
		l := strings.TrimSpace(raw[i])
		if l == "" || strings.HasPrefix(l, "#") {
			leading = append(leading, raw[i])
			i++
			continue
		}
		d := directive{line: i + 1, leading: leading}
		leading = nil
		fields := strings.Fields(l)
		d.cmd, d.args = fields[0], fields[1:]
		i++
		for ; i < len(raw) && raw[i] != "----"; i++ {
			d.input = append(d.input, raw[i])
		}
		if i == len(raw) {
			t.Fatalf("%s:%d: %s: no ---- line", file, d.line, d.cmd)
		}
		i++
		var out []string
		for ; i < len(raw) && raw[i] != ""; i++ {
			out = append(out, raw[i])
		}
		d.expected = strings.Join(out, "\n")
		ds = append(ds, d)
	}
	return ds, leading
}

func runScript(t *testing.T, file string) {
	ds, trailing := parseScript(t, file)
	var (
		ix     *index.Index
		p      fingerprint.Params
		stored = model{}
		out    strings.Builder // the rewritten script
	)
	defer func() {
		if ix != nil {
			ix.Close()
		}
	}()
	for _, d := range ds {
		where := fmt.Sprintf("%s:%d: %s", file, d.line, d.cmd)
		args := parseArgs(d.args)
		var got string
		switch d.cmd {
		case "open":
			if ix != nil {
				ix.Close()
			}
			p = manber
			if args.kv["scheme"] == "chunks" {
				p = chunks
			}
			ix = openMem(t, nil, p)
			stored = model{}
			got = "ok"
		case "put":
			sk := scriptSketch(t, where, p, args, d.input)
			meta := index.FileMeta{
				Path: args.pos(t, where, 0),
				Size: sk.Size,
				Dev:  args.uint64(t, where, "dev", 0),
				Ino:  args.uint64(t, where, "ino", 0),
			}
			if _, err := ix.Put(meta, sk); err != nil {
				got = "error: " + err.Error()
				break
			}
			stored[meta.Path] = modelFile{meta, sk}
			got = "ok"
		case "remove":
			path := args.pos(t, where, 0)
			got = errText(ix.Remove(path))
			delete(stored, path)
		case "rename":
			from, to := args.pos(t, where, 0), args.pos(t, where, 1)
			f := stored[from]
			meta := index.FileMeta{
				Path: to,
				Size: int64(args.int(t, where, "size", int(f.meta.Size))),
				Dev:  args.uint64(t, where, "dev", f.meta.Dev),
				Ino:  args.uint64(t, where, "ino", f.meta.Ino),
			}
			got = errText(ix.Rename(from, meta))
			if got == "ok" {
				delete(stored, from)
				stored[to] = modelFile{meta, f.sk}
			}
		case "lookup-inode":
			got = runLookupInode(t, where, ix, stored, args)
		case "similar":
			got = runSimilar(t, where, ix, p, stored, args, d.input)
		case "groups":
			got = runGroups(t, where, ix, args)
		case "dupes":
			got = runDupes(ix, args)
		case "check":
			rep, err := ix.Check()
			switch {
			case err != nil:
				got = "error: " + err.Error()
			case rep.OK():
				got = fmt.Sprintf("ok: %d files, %d contents, %d postings, %d fingerprints", rep.Files, rep.Contents, rep.Postings, rep.Fingerprints)
			default:
				got = strings.Join(rep.Problems, "\n")
			}
		default:
			t.Fatalf("%s: unknown command", where)
		}
		if *rewrite {
			for _, l := range d.leading {
				fmt.Fprintf(&out, "%s\n", l)
			}
			fmt.Fprintf(&out, "%s\n", strings.Join(append([]string{d.cmd}, d.args...), " "))
			for _, l := range d.input {
				fmt.Fprintf(&out, "%s\n", l)
			}
			fmt.Fprintf(&out, "----\n%s\n", got)
			continue
		}
		if got != d.expected {
			t.Errorf("%s:\n got:\n%s\nwant:\n%s", where, got, d.expected)
		}
	}
	if *rewrite {
		for _, l := range trailing {
			fmt.Fprintf(&out, "%s\n", l)
		}
		if err := os.WriteFile(file, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func errText(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

type scriptArgs struct {
	positional []string
	kv         map[string]string
	flags      map[string]bool
}

func parseArgs(fields []string) scriptArgs {
	a := scriptArgs{kv: map[string]string{}, flags: map[string]bool{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else if strings.HasPrefix(f, "/") {
			a.positional = append(a.positional, f)
		} else {
			a.flags[f] = true
		}
	}
	return a
}

func (a scriptArgs) pos(t *testing.T, where string, i int) string {
	if i >= len(a.positional) {
		t.Fatalf("%s: want %d path arguments", where, i+1)
	}
	return a.positional[i]
}

func (a scriptArgs) int(t *testing.T, where, key string, def int) int {
	v, ok := a.kv[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", where, key, v, err)
	}
	return n
}

func (a scriptArgs) uint64(t *testing.T, where, key string, def uint64) uint64 {
	v, ok := a.kv[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", where, key, v, err)
	}
	return n
}

func (a scriptArgs) float(t *testing.T, where, key string) float64 {
	v, ok := a.kv[key]
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s: %s=%q: %v", where, key, v, err)
	}
	return f
}

// scriptSketch builds a sketch from size=, type=, strong= and feature lines.
func scriptSketch(t *testing.T, where string, p fingerprint.Params, a scriptArgs, input []string) *fingerprint.Sketch {
	var fs []fingerprint.Feature
	for _, l := range input {
		for _, tok := range strings.Fields(l) {
			f, err := parseFeature(p, tok)
			if err != nil {
				t.Fatalf("%s: feature %q: %v", where, tok, err)
			}
			fs = append(fs, f)
		}
	}
	sk := sketchOf(p, a.kv["strong"], int64(a.int(t, where, "size", 100)), fs...)
	switch a.kv["type"] {
	case "", "text":
	case "binary":
		sk.Type = fingerprint.TypeBinary
	default:
		t.Fatalf("%s: type %q", where, a.kv["type"])
	}
	return sk
}

func parseFeature(p fingerprint.Params, tok string) (fingerprint.Feature, error) {
	f := fingerprint.Feature{Count: 1}
	tok, l, hasLen := strings.Cut(tok, ":")
	tok, c, hasCount := strings.Cut(tok, "x")
	tok, lvl, hasLevel := strings.Cut(tok, "@")
	h, err := strconv.ParseUint(tok, 0, 64)
	if err != nil {
		return f, err
	}
	f.Hash = h << (p.Bits - p.MinBits)
	if hasLevel {
		n, err := strconv.Atoi(lvl)
		if err != nil || n < p.MinBits || n > p.Bits {
			return f, fmt.Errorf("level %q: want %d..%d", lvl, p.MinBits, p.Bits)
		}
		f.Hash = (2*h + 1) << (n - p.MinBits)
	}
	if hasCount {
		n, err := strconv.ParseUint(c, 10, 32)
		if err != nil {
			return f, err
		}
		f.Count = uint32(n)
	}
	if hasLen {
		n, err := strconv.ParseUint(l, 10, 32)
		if err != nil {
			return f, err
		}
		f.Len = uint32(n)
	}
	return f, nil
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func runSimilar(t *testing.T, where string, ix *index.Index, p fingerprint.Params, stored model, a scriptArgs, input []string) string {
	q := index.Query{Path: a.kv["path"], Sketch: scriptSketch(t, where, p, a, input)}
	opts := index.QueryOptions{
		Threshold:   a.float(t, where, "threshold"),
		Limit:       a.int(t, where, "limit", 0),
		SizeRatio:   a.float(t, where, "sizeratio"),
		SameExt:     a.flags["sameext"],
		SameType:    a.flags["sametype"],
		PathPrefix:  a.kv["prefix"],
		MaxDF:       a.int(t, where, "maxdf", 0),
		MinFeatures: a.int(t, where, "minfeatures", 0),
		WeakShared:  a.int(t, where, "weakshared", 0),
	}
	res, err := ix.Similar(context.Background(), q, opts)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "query: features=%d weight=%d skipped=%d/%d candidates=%d",
		res.QueryFeatures, res.QueryWeight, res.Skipped, res.SkippedWeight, res.Candidates)
	if res.TooFew {
		b.WriteString(" toofew")
	}
	if res.Template {
		fmt.Fprintf(&b, " template total=%d", res.Total)
	}
	if len(res.Matches) == 0 {
		b.WriteString("\n(no matches)")
	}
	for _, m := range res.Matches {
		fmt.Fprintf(&b, "\n%s: contain=%s reverse=%s resemble=%s shared=%d",
			m.Path, pct(m.Containment), pct(m.ReverseContainment), pct(m.Resemblance), m.SharedWeight)
		if m.SharedBytes >= 0 {
			fmt.Fprintf(&b, " bytes=%d", m.SharedBytes)
		}
		if m.Identical {
			b.WriteString(" identical")
		}
		if m.Weak {
			b.WriteString(" weak")
		}
		if m.Template {
			b.WriteString(" template")
		}
		// Cross-check with fingerprint.Compare.
		f, ok := stored[m.Path]
		if !ok {
			t.Errorf("%s: match %q is not a stored file", where, m.Path)
			continue
		}
		if res.Skipped > 0 && !m.Identical {
			continue
		}
		c := fingerprint.Compare(q.Sketch, f.sk)
		if m.SharedWeight != c.SharedWeight || m.Containment != c.AInB || m.ReverseContainment != c.BInA ||
			m.Resemblance != c.Resemblance || m.SharedBytes != c.SharedBytes || m.Identical != c.Identical {
			t.Errorf("%s: match %q: %+v; Compare says %+v", where, m.Path, m, c)
		}
	}
	return b.String()
}

// runLookupInode lists the files LookupInode returns, one "id=N PATH" line
// each, and checks them against the files of the model with that inode.
func runLookupInode(t *testing.T, where string, ix *index.Index, stored model, a scriptArgs) string {
	if _, ok := a.kv["dev"]; !ok {
		t.Fatalf("%s: want dev=N", where)
	}
	if _, ok := a.kv["ino"]; !ok {
		t.Fatalf("%s: want ino=N", where)
	}
	dev, ino := a.uint64(t, where, "dev", 0), a.uint64(t, where, "ino", 0)
	recs, err := ix.LookupInode(dev, ino)
	if err != nil {
		return "error: " + err.Error()
	}
	var want []string
	for path, f := range stored {
		if f.meta.Dev == dev && f.meta.Ino == ino {
			want = append(want, path)
		}
	}
	var got, lines []string
	for i, r := range recs {
		if i > 0 && r.ID <= recs[i-1].ID {
			t.Errorf("%s: file id %d listed after %d", where, r.ID, recs[i-1].ID)
		}
		if r.Dev != dev || r.Ino != ino {
			t.Errorf("%s: %q has inode %d:%d", where, r.Path, r.Dev, r.Ino)
		}
		got = append(got, r.Path)
		lines = append(lines, fmt.Sprintf("id=%d %s", r.ID, r.Path))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: LookupInode gives %q, the model %q", where, got, want)
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, "\n")
}

func runGroups(t *testing.T, where string, ix *index.Index, a scriptArgs) string {
	gs, err := ix.Groups(context.Background(), index.GroupOptions{
		Threshold:  a.float(t, where, "threshold"),
		MaxDF:      a.int(t, where, "maxdf", 0),
		SameType:   a.flags["sametype"],
		PathPrefix: a.kv["prefix"],
		MinShared:  a.int(t, where, "minshared", 0),
	})
	if err != nil {
		return "error: " + err.Error()
	}
	if len(gs) == 0 {
		return "(no groups)"
	}
	var b strings.Builder
	member := func(m index.GroupMember) {
		fmt.Fprintf(&b, "\n  %s %s", m.Path, pct(m.Percent))
		if m.Via != "" {
			fmt.Fprintf(&b, " via=%s", m.Via)
		}
		if len(m.Copies) > 0 {
			fmt.Fprintf(&b, " copies=%s", strings.Join(m.Copies, ","))
		}
		if m.Template {
			b.WriteString(" template")
		}
	}
	for i, g := range gs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "group %s", g.Reference.Path)
		if len(g.Reference.Copies) > 0 {
			fmt.Fprintf(&b, " copies=%s", strings.Join(g.Reference.Copies, ","))
		}
		for _, m := range g.Members {
			member(m)
		}
	}
	return b.String()
}

func runDupes(ix *index.Index, a scriptArgs) string {
	prefix := ""
	if len(a.positional) > 0 {
		prefix = a.positional[0]
	}
	ds, err := ix.Dupes(context.Background(), prefix)
	if err != nil {
		return "error: " + err.Error()
	}
	if len(ds) == 0 {
		return "(no dupes)"
	}
	var lines []string
	for _, d := range ds {
		// A hard link shows as PATH=FIRST, FIRST the first path of its
		// inode; then the redundant copies when links make them fewer.
		links := d.HardLinkOf()
		var paths []string
		for i, f := range d.Files {
			if links[i] != "" {
				paths = append(paths, f.Path+"="+links[i])
			} else {
				paths = append(paths, f.Path)
			}
		}
		line := fmt.Sprintf("%d bytes: %s", d.Size, strings.Join(paths, " "))
		if n, b := d.Redundant(); n != len(d.Files)-1 {
			line += fmt.Sprintf(" (redundant: %d files, %d bytes)", n, b)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
