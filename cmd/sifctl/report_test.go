package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sif-dev/sif/index"
)

// hostileName is a file name with all a page must not take as markup or
// lose: tags, an entity, quotes, a newline and bytes that are not UTF-8.
const hostileName = "/srv/x/<script>alert(1)</script> & \"q\" 'a'\nb\xff\xfe.txt"

// TestReportPage: sifctl report writes one page that names no other
// resource, whose every file name is escaped (markup shown as text, a
// newline and bytes that are not UTF-8 as escapes), with its sections and
// figures; --html - writes the same page to standard output.
func TestReportPage(t *testing.T) {
	f := &fakeDaemon{dupes: []index.DupeSet{
		{Size: 300000, Strong: [32]byte{0xab}, Files: []index.FileMeta{
			{Path: "/srv/a/big.iso", Dev: 1, Ino: 7}, {Path: "/srv/b/big.iso", Dev: 1, Ino: 7}, {Path: "/srv/c/big.iso", Dev: 1, Ino: 8}}},
		{Size: 5000, Strong: [32]byte{0xcd}, Files: []index.FileMeta{
			{Path: "/srv/a/small", Dev: 1, Ino: 9}, {Path: hostileName, Dev: 1, Ino: 10}}},
	}}
	sock := startFake(t, f)
	out := filepath.Join(t.TempDir(), "report.html")
	r := sifctl(t, "--socket", sock, "report", "--html", out)
	if r.code != exitFound || r.stdout != "" || r.stderr != "" {
		t.Fatalf("report: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	checkSelfContained(t, page)
	if !utf8.ValidString(page) {
		t.Errorf("the page is not valid UTF-8")
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "'a'\nb") {
		t.Errorf("a file name went into the page unescaped:\n%s", page)
	}
	for _, want := range []string{
		`/srv/x/&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;q&#34; &#39;a&#39;\nb\xff\xfe.txt`,
		"<h2>Summary</h2>", "<h2>Identical copies by directory</h2>", "<h2>Near-copy directories</h2>",
		"<h2>Groups of similar files</h2>", "<h2>Identical files</h2>",
		"293 KiB",             // the one copy on disk of big.iso beyond the first, hard link aside
		">1. c<", ">2</text>", // the treemap's labels: below /srv, or the rank alone in a narrow box
		"<svg class=\"treemap\"",         // drawn
		"No groups of similar files.",    // the fake daemon has none
		"hard link</span>/srv/b/big.iso", // the hard link told apart
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	r = sifctl(t, "--socket", sock, "report", "--html", "-")
	if r.code != exitFound || r.stdout != strings.Replace(page, generatedAt(page), generatedAt(r.stdout), 1) {
		t.Errorf("report --html -: exit %d, stdout %.200q, stderr %q; want the page", r.code, r.stdout, r.stderr)
	}

	// --top 1: the set that frees the most, and how many more there are.
	r = sifctl(t, "--socket", sock, "report", "--top", "1", "--html", "-")
	if r.code != exitFound || !strings.Contains(r.stdout, "And 1 more set (--top 1).") ||
		!strings.Contains(r.stdout, "/srv/c/big.iso") || strings.Contains(r.stdout, "/srv/a/small") {
		t.Errorf("report --top 1: exit %d, stdout %s, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// generatedAt is the line of page that says when it was written.
func generatedAt(page string) string {
	return regexp.MustCompile(`<p class="meta">[^<]*</p>`).FindString(page)
}

// DirTotals counts the files of the fake's identical sets under each
// directory, as the index counts its files: what the directories of a
// report need.
func (f *fakeDaemon) DirTotals(_ context.Context, dirs []string, _ *index.DirTotalsOptions) ([]index.DirTotal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]index.DirTotal, len(dirs))
	for i, d := range dirs {
		out[i].Path = d
		for _, s := range f.dupes {
			for _, fm := range s.Files {
				if within(fm.Path, d) {
					out[i].Files++
					out[i].Bytes += s.Size
				}
			}
		}
	}
	return out, nil
}

// checkSelfContained fails unless page links to nothing outside it: no
// src, every href an anchor of the page, no CSS url() nor @import, no
// address of a scheme.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|srcset|data)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)`).FindAllStringSubmatch(page, -1) {
		if strings.ToLower(m[1]) != "href" || !strings.HasPrefix(strings.Trim(m[2], `"'`), "#") {
			t.Errorf("the page refers to something outside it: %s", m[0])
		}
	}
	for _, bad := range []string{"url(", "@import", "http:", "https:", "//"} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the page holds %q: %q", bad, page[max(0, i-40):min(len(page), i+40)])
		}
	}
}

// TestReportErrors: report's errors name what was wrong, the file it
// could not write first, before asking the daemon anything; a report
// that failed leaves FILE as it was and no temporary file beside it.
func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	none := filepath.Join(dir, "none.sock") // no daemon: each fails before asking, or at it
	missing := filepath.Join(dir, "no", "such", "dir", "r.html")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"report"}, "--html FILE is required"},
		{[]string{"report", "--html", missing}, "--html " + missing + ": cannot write there: no such file or directory"},
		{[]string{"report", "--html", dir}, "--html " + dir + ": a directory"},
		{[]string{"report", "--html", "x.html", "--top", "0"}, "--top 0: want 1 or more"},
		{[]string{"--json", "report", "--html", "x.html"}, "report writes a page, not JSON"},
	} {
		r := sifctl(t, append([]string{"--socket", none}, tc.args...)...)
		r.want(t, strings.Join(tc.args, " "), exitError, "", "sifctl: "+tc.msg)
	}

	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("yesterday's"), 0o640); err != nil {
		t.Fatal(err)
	}
	r := sifctl(t, "--socket", none, "report", "--html", old)
	r.want(t, "report without a daemon", exitError, "", "no sifd is listening")
	if b, err := os.ReadFile(old); err != nil || string(b) != "yesterday's" {
		t.Errorf("a failed report changed %s: %q, %v", old, b, err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("a failed report left files beside %s: %v", old, es)
	}

	// A report that succeeds replaces the file, keeping its mode.
	sock := startFake(t, &fakeDaemon{})
	r = sifctl(t, "--socket", sock, "report", "--html", old)
	fi, err := os.Stat(old)
	if r.code != exitFound || err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("report over %s: exit %d (%s), %v, %v", old, r.code, r.stderr, fi.Mode(), err)
	}
	b, _ := os.ReadFile(old)
	for _, want := range []string{"No identical copies.", "No near-copy directories.", "No groups of similar files.", "No identical files."} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the page of an empty index lacks %q", want)
		}
	}
}

// A report made while sifd still scans says so, on the page and on
// standard error: it holds only what is indexed so far.
func TestReportDuringScan(t *testing.T) {
	sock := startFake(t, &fakeDaemon{scanning: true})
	out := filepath.Join(t.TempDir(), "report.html")
	r := sifctl(t, "--socket", sock, "report", "--html", out)
	const says = "sifd was still scanning its roots when this page was made (12 of the 40 files found so far read)"
	if r.code != exitFound || !strings.Contains(r.stderr, "sifctl report: "+says) {
		t.Errorf("report during the first scan: exit %d, stderr %q", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<p class="notice" role="note"><strong>Partial:</strong> `+says) {
		t.Errorf("the page does not say it is partial:\n%.2000s", b)
	}
}
