package main

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/ipc/dirsim"
)

// The page of `sifctl report`: reportData made into a view of strings
// and numbers (reportPage), then into HTML by html/template, which
// escapes every name. The page is one file: its styles are inline, the
// treemap is SVG laid out here, and it names no other resource.

// Treemap geometry, in the SVG's units (pixels at the page's full width).
const (
	treemapW, treemapH = 1200, 520
	treemapMax         = 50  // directories drawn; the rest are one rectangle
	treemapColours     = 8   // classes k0..k7 of the page's style
	charWidth          = 8.4 // an average character of the labels' bold 13px font, generously
	groupRows          = 20  // files or directories listed per group
)

// reportPage is the view the template renders.
type reportPage struct {
	Title, Host, Generated, Scope string
	Notice                        string // "" for none: the page is partial
	Cards                         []card
	Treemap                       *treemapView // nil: no identical copies
	DirGroups                     []dirGroupView
	DirGroupsMore                 string // "3 more groups", not listed; "" for none
	FileGroups                    []fileGroupView
	FileGroupsMore                string
	Sets                          []setView
	SetsMore                      string
	Top                           int
}

type card struct{ Label, Value, Note string }

type treemapView struct {
	W, H   int
	Total  string
	Boxes  []treemapBox
	Legend []legendRow
}

// treemapBox is one rectangle and its labels: Name and Size when they
// fit, else only Rank when that fits, and always Title, the tooltip. The
// labels are drawn in an SVG of the rectangle's own, which clips them
// should the font be wider than charWidth allows for.
type treemapBox struct {
	X, Y, W, H       float64
	Class            string
	Title            string
	Name, Size, Rank string
}

type legendRow struct {
	Rank, Class, Path, Copies, Bytes, Share string
}

type dirGroupView struct {
	Rank   int
	Saving string
	Rows   []pathRow
	More   string // "3 more directories", not listed; "" for none
}

type fileGroupView struct {
	Rank int
	Rows []pathRow
	More string
}

// pathRow is one file or directory of a group or set.
type pathRow struct {
	Path    string
	Tag     string // "reference", "identical copy", "kept", "hard link"
	Note    string // "via PATH", "hard link of PATH"
	Percent string // "" for none
	Bar     int    // the percentage, whole, for its bar
	Size    string
	Files   string // files under a directory
}

type setView struct {
	Rank                int
	Frees, Size, Copies string
	Rows                []pathRow
	More                string
}

// writeReport renders d as the page to w.
func writeReport(w io.Writer, d *reportData) error {
	return pageTemplate.Execute(w, newReportPage(d))
}

func newReportPage(d *reportData) *reportPage {
	p := &reportPage{Host: displayPath(d.Host), Generated: d.Generated.Format(time.RFC1123), Top: d.Top,
		Scope: "every indexed file"}
	p.Title = "File server report"
	if p.Host != "" {
		p.Title += ": " + p.Host
	}
	if d.Prefix != "" {
		p.Scope = "the files under " + displayPath(d.Prefix)
	}
	p.Notice = d.Scanning
	p.Cards = reportCards(d)
	p.Treemap = newTreemap(d.ByDir, d.Dupes.RedundantBytes, min(d.Top, treemapMax))
	for i, g := range d.DirGroups[:min(d.Top, len(d.DirGroups))] {
		p.DirGroups = append(p.DirGroups, dirGroupOf(i+1, g))
	}
	p.DirGroupsMore = more(len(d.DirGroups)-len(p.DirGroups), "group", "groups")
	for i, g := range d.FileGroups {
		p.FileGroups = append(p.FileGroups, fileGroupOf(i+1, g))
	}
	p.FileGroupsMore = more(d.Similar.Groups-len(p.FileGroups), "group", "groups")
	for i, s := range d.Sets {
		p.Sets = append(p.Sets, setOf(i+1, s))
	}
	p.SetsMore = more(d.FreeingSets-len(p.Sets), "set", "sets")
	return p
}

func reportCards(d *reportData) []card {
	saving, groups := reclaimable(d.DirGroups)
	dirNote := fmt.Sprintf("to reclaim by deleting the copies of %s of near-copy directories", count(len(d.DirGroups), "group", "groups"))
	if groups < len(d.DirGroups) {
		dirNote = fmt.Sprintf("at least, to reclaim by deleting the copies of %d of the %s of near-copy directories that do not overlap", groups, count(len(d.DirGroups), "group", "groups"))
	}
	files := thousands(d.Files) + " " + plural(int(d.Files), "file", "files")
	if d.Truncated {
		files += " or more (counting stopped there)"
	}
	return []card{
		{"Indexed", humanBytes(d.Bytes), files},
		{"Identical copies", humanBytes(d.Dupes.RedundantBytes),
			fmt.Sprintf("would be freed by removing %s %s, in %s of identical files",
				thousands(int64(d.Dupes.RedundantFiles)), plural(d.Dupes.RedundantFiles, "redundant copy", "redundant copies"),
				count(d.Dupes.Sets, "set", "sets"))},
		{"Near-copy directories", humanBytes(saving), dirNote},
		{"Similar files", humanBytes(d.Similar.MemberBytes),
			fmt.Sprintf("in %s %s similar to another, in %s of similar files (each group's reference not counted)",
				thousands(int64(d.Similar.MemberFiles)), plural(d.Similar.MemberFiles, "file", "files"),
				count(d.Similar.Groups, "group", "groups"))},
	}
}

// reclaimable sums the savings of the groups of directories, largest
// first, that share no directory with a group counted before, nor hold
// one nor lie in one: a group inside a copy of another is part of that
// one's saving. It returns the sum and the groups counted.
func reclaimable(groups []dirsim.Group) (int64, int) {
	var taken []string
	var sum int64
	n := 0
	for _, g := range groups {
		dirs := []string{g.Reference.Exact()}
		for _, m := range g.Members {
			dirs = append(dirs, m.Exact())
		}
		if slices.ContainsFunc(dirs, func(d string) bool {
			return slices.ContainsFunc(taken, func(t string) bool { return within(d, t) || within(t, d) })
		}) {
			continue
		}
		taken = append(taken, dirs...)
		sum += g.Saving
		n++
	}
	return sum, n
}

// within reports whether path p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// newTreemap lays out the n directories with the most bytes in
// identical copies, and the others as one rectangle; total is every
// copy's bytes. It returns nil when there are none.
func newTreemap(byDir map[string]dirCopies, total int64, n int) *treemapView {
	if len(byDir) == 0 || total <= 0 {
		return nil
	}
	type entry struct {
		path string
		dirCopies
	}
	dirs := make([]entry, 0, len(byDir))
	for p, c := range byDir {
		dirs = append(dirs, entry{p, c})
	}
	slices.SortFunc(dirs, func(a, b entry) int {
		if a.Bytes != b.Bytes {
			return cmp.Compare(b.Bytes, a.Bytes)
		}
		return strings.Compare(a.path, b.path)
	})
	shown := dirs[:min(n, len(dirs))]
	var rest entry
	for _, e := range dirs[len(shown):] {
		rest.Files += e.Files
		rest.Bytes += e.Bytes
	}
	paths := make([]string, len(shown))
	for i, e := range shown {
		paths[i] = e.path
	}
	common := commonDir(paths)
	type item struct {
		entry
		label, class, rank string
	}
	items := make([]item, 0, len(shown)+1)
	for i, e := range shown {
		items = append(items, item{e, relLabel(e.path, common), "k" + strconv.Itoa(i%treemapColours), strconv.Itoa(i + 1)})
	}
	if rest.Bytes > 0 {
		others := count(len(dirs)-len(shown), "other directory", "other directories")
		items = append(items, item{entry{others, rest.dirCopies}, others, "other", ""})
	}
	// The layout wants the largest first; the other directories may be
	// larger than the last shown.
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(b.Bytes, a.Bytes) })
	values := make([]float64, len(items))
	for i, it := range items {
		values[i] = float64(it.Bytes)
	}
	t := &treemapView{W: treemapW, H: treemapH, Total: humanBytes(total)}
	for i, r := range squarify(values, rect{0, 0, treemapW, treemapH}) {
		it := items[i]
		title := fmt.Sprintf("%s: %s in %s", displayPath(it.path), humanBytes(it.Bytes), count(it.Files, "copy", "copies"))
		t.Boxes = append(t.Boxes, boxOf(r, it.class, title, it.rank, it.label, humanBytes(it.Bytes)))
	}
	for i, e := range shown {
		t.Legend = append(t.Legend, legendRowOf(strconv.Itoa(i+1), "k"+strconv.Itoa(i%treemapColours), displayPath(e.path), e.dirCopies, total))
	}
	if rest.Bytes > 0 {
		t.Legend = append(t.Legend, legendRowOf("", "other", count(len(dirs)-len(shown), "other directory", "other directories"), rest.dirCopies, total))
	}
	return t
}

// boxOf places the labels of one rectangle: "RANK. NAME" and its size
// when a line of a few characters fits, else the rank alone when it
// fits; a name too long keeps its end, the most telling part of a path.
func boxOf(r rect, class, title, rank, label, size string) treemapBox {
	b := treemapBox{X: round1(r.X), Y: round1(r.Y), W: round1(r.W), H: round1(r.H), Class: class, Title: title}
	chars := int((r.W - 12) / charWidth)
	lead := ""
	if rank != "" {
		lead = rank + ". "
	}
	switch {
	case chars >= len(lead)+4 && r.H >= 26:
		b.Name = lead + fitTail(label, chars-len(lead))
		if r.H >= 42 && utf8.RuneCountInString(size) <= chars {
			b.Size = size
		}
	case rank != "" && r.W >= float64(len(rank))*charWidth+6 && r.H >= 20:
		b.Rank = rank
	}
	return b
}

func legendRowOf(rank, class, path string, c dirCopies, total int64) legendRow {
	return legendRow{Rank: rank, Class: class, Path: path, Copies: thousands(int64(c.Files)), Bytes: humanBytes(c.Bytes),
		Share: shareOf(c.Bytes, total)}
}

func dirGroupOf(rank int, g dirsim.Group) dirGroupView {
	v := dirGroupView{Rank: rank, Saving: humanBytes(g.Saving)}
	v.Rows = append(v.Rows, pathRow{Path: displayPath(g.Reference.Exact()), Tag: "reference",
		Size: humanBytes(g.Reference.Size), Files: thousands(g.Reference.IndexedFiles)})
	for _, m := range g.Members[:min(groupRows, len(g.Members))] {
		r := pathRow{Path: displayPath(m.Exact()), Percent: percent(m.Percent), Bar: bar(m.Percent),
			Size: humanBytes(m.Size), Files: thousands(m.IndexedFiles)}
		if m.Via != nil {
			r.Note = "via " + displayPath(m.Via.Exact())
		}
		v.Rows = append(v.Rows, r)
	}
	v.More = more(len(g.Members)-min(groupRows, len(g.Members)), "directory", "directories")
	return v
}

func fileGroupOf(rank int, g ipc.Group) fileGroupView {
	v := fileGroupView{Rank: rank}
	var rows []pathRow
	add := func(f ipc.GroupFile, ref bool) {
		r := pathRow{Path: displayPath(exactPath(f.Path, f.PathRaw)), Size: humanBytes(f.Size)}
		switch {
		case ref:
			r.Tag = "reference"
		case f.Via != nil:
			// Linked through another member: no percentage of its own
			// with the reference, as groups prints none.
			r.Note = "via " + displayPath(f.Via.Exact())
		default:
			r.Percent, r.Bar = percent(f.Percent), bar(f.Percent)
		}
		if f.Template {
			r.Tag = "template"
		}
		rows = append(rows, r)
		for _, c := range f.Copies {
			rows = append(rows, pathRow{Path: displayPath(c.Exact()), Tag: "identical copy", Size: humanBytes(f.Size)})
		}
	}
	add(g.Reference, true)
	for _, m := range g.Members {
		add(m, false)
	}
	v.Rows = rows[:min(groupRows, len(rows))]
	v.More = more(len(rows)-len(v.Rows), "file", "files")
	return v
}

func setOf(rank int, s ipc.DupeSet) setView {
	v := setView{Rank: rank, Frees: humanBytes(s.RedundantBytes), Size: humanBytes(s.Size),
		Copies: thousands(int64(len(s.Files)))}
	for i, f := range s.Files[:min(groupRows, len(s.Files))] {
		r := pathRow{Path: displayPath(f.Exact())}
		switch {
		case i == 0:
			r.Tag = "kept"
		case f.HardLinkOf != nil:
			r.Tag, r.Note = "hard link", "of "+displayPath(f.HardLinkOf.Exact())
		}
		v.Rows = append(v.Rows, r)
	}
	v.More = more(len(s.Files)-len(v.Rows), "file", "files")
	return v
}

// displayPath renders a name for the page: its characters as they are,
// but each byte that is not UTF-8 and each control character as an
// escape (\xff, \n, \u0085), so that every name is one line and its odd
// bytes show. html/template escapes the rest (<, &, quotes).
func displayPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, p[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(p[i : i+n])
		}
		i += n
	}
	return b.String()
}

// commonDir is the deepest directory holding every path of paths.
func commonDir(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	c := paths[0]
	for _, p := range paths[1:] {
		for !within(p, c) {
			parent := filepath.Dir(c)
			if parent == c {
				return c
			}
			c = parent
		}
	}
	return c
}

// relLabel names dir in a treemap whose directories all lie in common:
// its path below common, or its own name when it is common.
func relLabel(dir, common string) string {
	if rel, err := filepath.Rel(common, dir); err == nil && rel != "." {
		return displayPath(rel)
	}
	return displayPath(filepath.Base(dir))
}

// more says how many more things there are than listed: "3 more
// files", or "" for none.
func more(n int, one, many string) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf("%d more %s", n, plural(n, one, many))
}

// fitTail cuts s to its last n characters, marking the cut with "…".
func fitTail(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

func percent(p float64) string { return strconv.FormatFloat(p, 'f', 0, 64) + " %" }

// shareOf is part's percentage of total, "< 1 %" rather than "0 %" for a
// part that is not nothing.
func shareOf(part, total int64) string {
	p := 100 * float64(part) / float64(total)
	if part > 0 && p < 0.5 {
		return "< 1 %"
	}
	return percent(p)
}

func bar(p float64) int { return int(math.Round(min(max(p, 0), 100))) }

// thousands writes n with commas between thousands: 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

var pageTemplate = template.Must(template.New("report").Parse(pageHTML))

// pageHTML is the page. Every colour of the treemap is also said in
// words: each rectangle is labelled (or numbered) and the table beside it
// has the same numbers.
const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="sifctl report">
<title>{{.Title}}</title>
<style>
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --faint: #eaeef2; --soft: #f6f8fa; --accent: #0b5cad; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 28px 20px 56px; }
h1 { font-size: 26px; line-height: 1.25; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 40px 0 6px; padding-bottom: 6px; border-bottom: 1px solid var(--line); }
.meta { color: var(--muted); margin: 0 0 10px; }
.notice { border-left: 4px solid #b7791f; background: #fdf6e3; padding: 8px 12px; margin: 0 0 12px; }
nav { border-bottom: 1px solid var(--line); padding-bottom: 10px; }
nav a { margin-right: 18px; color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
.explain { color: var(--muted); max-width: 90ch; margin: 4px 0 12px; }
.none { color: var(--muted); font-style: italic; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 14px; margin-top: 14px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; background: var(--soft); }
.card .label { color: var(--muted); font-size: 13px; font-weight: 600; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 30px; font-weight: 650; margin: 2px 0; font-variant-numeric: tabular-nums; }
.card .note { color: var(--muted); font-size: 14px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; margin-top: 8px; }
th { text-align: left; font-weight: 600; color: var(--muted); border-bottom: 2px solid var(--line); padding: 6px 8px; white-space: nowrap; }
td { border-bottom: 1px solid var(--faint); padding: 5px 8px; vertical-align: top; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.path { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 13px; word-break: break-all; }
.rank { color: var(--muted); width: 3.5em; white-space: nowrap; }
tbody + tbody { border-top: 2px solid var(--line); }
tr.first td { background: var(--soft); }
.key { font-weight: 650; }
.tag { display: inline-block; font: 600 11px/18px system-ui, sans-serif; padding: 0 7px; border-radius: 9px; background: #ddf4ff; color: #0a3069; margin-right: 6px; vertical-align: 1px; }
.tag.copy { background: #fff1e5; color: #7d3c00; }
.tag.link { background: var(--faint); color: var(--muted); }
.note { color: var(--muted); font-size: 12px; }
.more td { color: var(--muted); font-style: italic; }
.bar { display: inline-block; width: 56px; height: 8px; background: var(--faint); border-radius: 4px; margin-right: 8px; vertical-align: 1px; overflow: hidden; }
.bar span { display: block; height: 100%; background: var(--accent); }
svg.treemap { display: block; width: 100%; height: auto; border: 1px solid var(--line); border-radius: 6px; background: var(--soft); }
svg.treemap rect { stroke: #fff; stroke-width: 2; }
svg.treemap text { font: 600 13px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #1f2328; }
svg.treemap text.size { font-weight: 400; font-size: 12px; fill: #3d444d; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; border: 1px solid rgba(0,0,0,.15); }
.k0 rect, .swatch.k0 { fill: #a6c8e8; background: #a6c8e8; }
.k1 rect, .swatch.k1 { fill: #f6c28b; background: #f6c28b; }
.k2 rect, .swatch.k2 { fill: #a9d39e; background: #a9d39e; }
.k3 rect, .swatch.k3 { fill: #f2a7a8; background: #f2a7a8; }
.k4 rect, .swatch.k4 { fill: #aad7d3; background: #aad7d3; }
.k5 rect, .swatch.k5 { fill: #f3e08f; background: #f3e08f; }
.k6 rect, .swatch.k6 { fill: #d3b5cf; background: #d3b5cf; }
.k7 rect, .swatch.k7 { fill: #d2b9a8; background: #d2b9a8; }
.other rect, .swatch.other { fill: #d8dde3; background: #d8dde3; }
footer { margin-top: 48px; color: var(--muted); font-size: 13px; border-top: 1px solid var(--line); padding-top: 10px; }
@media print { nav { display: none; } h2 { break-after: avoid; } tbody { break-inside: avoid; } }
</style>
</head>
<body>
<main>
<header>
<h1>{{.Title}}</h1>
<p class="meta">{{.Generated}} · {{.Scope}}</p>
{{if .Notice}}<p class="notice" role="note"><strong>Partial:</strong> {{.Notice}}</p>
{{end}}<nav><a href="#summary">Summary</a><a href="#by-directory">Identical copies by directory</a><a href="#directories">Near-copy directories</a><a href="#similar">Similar files</a><a href="#identical">Identical files</a></nav>
</header>

<section id="summary">
<h2>Summary</h2>
<div class="cards">
{{range .Cards}}<div class="card"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div><div class="note">{{.Note}}</div></div>
{{end}}</div>
</section>

<section id="by-directory">
<h2>Identical copies by directory</h2>
{{with .Treemap}}<p class="explain">Each rectangle is a directory holding identical copies of files kept elsewhere; its area is the bytes of those copies, {{.Total}} in all. Of each set of identical files, the first by path counts as the one kept; hard links count once. The table below the map lists the same directories by number.</p>
<svg class="treemap" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="Treemap of the bytes in identical copies, by directory">
{{range .Boxes}}<g class="{{.Class}}"><title>{{.Title}}</title><rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"></rect>{{if or .Name .Rank}}<svg x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}">{{if .Name}}<text x="6" y="18">{{.Name}}</text>{{if .Size}}<text class="size" x="6" y="34">{{.Size}}</text>{{end}}{{else}}<text x="4" y="16">{{.Rank}}</text>{{end}}</svg>{{end}}</g>
{{end}}</svg>
<table class="legend">
<thead><tr><th class="rank">#</th><th>Directory</th><th class="num">Copies</th><th class="num">Bytes</th><th class="num">Share</th></tr></thead>
<tbody>
{{range .Legend}}<tr><td class="rank"><span class="swatch {{.Class}}"></span>{{.Rank}}</td><td class="path">{{.Path}}</td><td class="num">{{.Copies}}</td><td class="num">{{.Bytes}}</td><td class="num">{{.Share}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="none">No identical copies.</p>
{{end}}</section>

<section id="directories">
<h2>Near-copy directories</h2>
<p class="explain">Groups of directories that are near-copies of each other (a tree copied and edited, a backup, a vendored library), largest saving first, as <code>sifctl groups --dirs</code> finds them. The percentage is each directory's resemblance to the reference: the bytes they share over the bytes of both. The saving is what deleting every directory but the reference would reclaim without losing what the reference holds (estimated from the index).</p>
{{if .DirGroups}}<table>
<thead><tr><th class="rank">#</th><th class="num">Saving</th><th>Similarity</th><th>Directory</th><th class="num">Size</th><th class="num">Files</th></tr></thead>
{{range .DirGroups}}{{$g := .}}<tbody>
{{range $i, $r := .Rows}}<tr{{if not $i}} class="first"{{end}}><td class="rank">{{if not $i}}{{$g.Rank}}{{end}}</td><td class="num key">{{if not $i}}{{$g.Saving}}{{end}}</td>{{template "pct" $r}}<td class="path">{{template "tags" $r}}{{$r.Path}}{{if $r.Note}}<div class="note">{{$r.Note}}</div>{{end}}</td><td class="num">{{$r.Size}}</td><td class="num">{{$r.Files}}</td></tr>
{{end}}{{if .More}}<tr class="more"><td></td><td></td><td></td><td colspan="3">and {{.More}}</td></tr>
{{end}}</tbody>
{{end}}</table>
{{if .DirGroupsMore}}<p class="note">And {{.DirGroupsMore}} (--top {{.Top}}).</p>{{end}}
{{else}}<p class="none">No near-copy directories.</p>
{{end}}</section>

<section id="similar">
<h2>Groups of similar files</h2>
<p class="explain">Files of which one holds at least 25 % of another, grouped, largest group first, as <code>sifctl groups</code> finds them. Each group has a reference file; the percentage is how much of a member the reference contains, or it of the reference, whichever is more. A file linked only through another member says via which.</p>
{{if .FileGroups}}<table>
<thead><tr><th class="rank">#</th><th>Similarity</th><th>File</th><th class="num">Size</th></tr></thead>
{{range .FileGroups}}{{$g := .}}<tbody>
{{range $i, $r := .Rows}}<tr{{if not $i}} class="first"{{end}}><td class="rank">{{if not $i}}{{$g.Rank}}{{end}}</td>{{template "pct" $r}}<td class="path">{{template "tags" $r}}{{$r.Path}}{{if $r.Note}}<div class="note">{{$r.Note}}</div>{{end}}</td><td class="num">{{$r.Size}}</td></tr>
{{end}}{{if .More}}<tr class="more"><td></td><td></td><td colspan="2">and {{.More}}</td></tr>
{{end}}</tbody>
{{end}}</table>
{{if .FileGroupsMore}}<p class="note">And {{.FileGroupsMore}} (--top {{.Top}}).</p>{{end}}
{{else}}<p class="none">No groups of similar files.</p>
{{end}}</section>

<section id="identical">
<h2>Identical files</h2>
<p class="explain">Sets of files with identical content (size and SHA-256), those whose copies would free the most first: keeping one file of a set frees the bytes of the others (<code>sifctl dedupe</code> does it, and chooses the file to keep by <code>--keep</code>). Hard links to one file take its bytes once. The file marked kept is the first by path, the one the map above counts as kept.</p>
{{if .Sets}}<table>
<thead><tr><th class="rank">#</th><th class="num">Would free</th><th class="num">Files</th><th class="num">Size each</th><th>Files in the set</th></tr></thead>
{{range .Sets}}{{$s := .}}<tbody>
{{range $i, $r := .Rows}}<tr{{if not $i}} class="first"{{end}}><td class="rank">{{if not $i}}{{$s.Rank}}{{end}}</td><td class="num key">{{if not $i}}{{$s.Frees}}{{end}}</td><td class="num">{{if not $i}}{{$s.Copies}}{{end}}</td><td class="num">{{if not $i}}{{$s.Size}}{{end}}</td><td class="path">{{template "tags" $r}}{{$r.Path}}{{if $r.Note}} <span class="note">{{$r.Note}}</span>{{end}}</td></tr>
{{end}}{{if .More}}<tr class="more"><td></td><td></td><td></td><td></td><td>and {{.More}}</td></tr>
{{end}}</tbody>
{{end}}</table>
{{if .SetsMore}}<p class="note">And {{.SetsMore}} (--top {{.Top}}).</p>{{end}}
{{else}}<p class="none">No identical files.</p>
{{end}}</section>

<footer>Written by <code>sifctl report</code> from sifd's index. The same data, for programs: <code>sifctl dupes --json</code>, <code>sifctl groups --json</code>, <code>sifctl groups --dirs --json</code>.</footer>
</main>
</body>
</html>
{{define "pct"}}<td class="num">{{if .Percent}}<span class="bar"><span style="width: {{.Bar}}%"></span></span>{{.Percent}}{{end}}</td>{{end}}
{{define "tags"}}{{if .Tag}}<span class="tag{{if eq .Tag "identical copy"}} copy{{else if eq .Tag "hard link"}} link{{end}}">{{.Tag}}</span>{{end}}{{end}}
`
