package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The repository's documents, from its root: the README, which the package
// installs, and the documents it links to beside the code.
var docFiles = []string{
	"README.md",
	"packaging/README.md",
	"ipc/API.md",
	"cmd/sifbench/RESULTS.md",
	"index/fingerprint/SCHEMES.md",
}

// readmeMaxLines is how long the README may grow: it is the front door,
// a few screens; reference material goes beside what it describes.
const readmeMaxLines = 320

// TestDocLinks: every relative link in the documents names a file of the
// repository, and every #anchor a heading of the document it points into
// (GitHub's anchors); the README stays a few screens long.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move reference material next to what it describes", n, readmeMaxLines)
	}
	for _, doc := range docFiles {
		for _, problem := range checkLinks(root, doc) {
			t.Error(problem)
		}
	}
}

// TestCheckLinks holds checkLinks to what it must find, on a small tree.
func TestCheckLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sub/B.md", "# B\n\n## What `sifd run` does\n\n## Accuracy beside ssdeep and TLSH\n\n## Twice\n\n## Twice\n")
	write("sub/x.txt", "x\n")
	write("A.md", "# A\n\n"+
		"[ok](sub/B.md) [ok](sub/B.md#what-sifd-run-does) [ok](sub/B.md#twice-1) [ok](#a) [ok](sub/x.txt)\n"+
		"[ok, over two\nlines](sub/B.md#accuracy-beside-ssdeep-and-tlsh) [ok](https://example.org/missing)\n"+
		"`[not a link](nowhere.md)`\n\n"+
		"```\n[not a link either](nowhere.md)\n```\n\n"+
		"[bad](missing.md) [bad](sub/B.md#no-such-heading) [bad](#nor-here) [bad](sub/B.md#twice-2)\n")
	got := checkLinks(root, "A.md")
	want := []string{
		`A.md:12: link "missing.md": no such file`,
		`A.md:12: link "sub/B.md#no-such-heading": sub/B.md has no heading "no-such-heading"`,
		`A.md:12: link "#nor-here": A.md has no heading "nor-here"`,
		`A.md:12: link "sub/B.md#twice-2": sub/B.md has no heading "twice-2"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkLinks found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var (
	fence      = regexp.MustCompile("(?m)^ {0,3}```.*$")
	codeSpan   = regexp.MustCompile("`[^`]*`")
	mdLink     = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)\)`)
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// checkLinks returns what is wrong with the relative links of the markdown
// file doc (slash-separated, relative to root), one line each.
func checkLinks(root, doc string) []string {
	text, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	prose := stripCode(string(text))
	for _, m := range mdLink.FindAllStringSubmatchIndex(prose, -1) {
		target := prose[m[4]:m[5]]
		if target == "" || linkScheme.MatchString(target) {
			continue
		}
		line := 1 + strings.Count(prose[:m[4]], "\n")
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s", doc, line, target, fmt.Sprintf(format, args...)))
		}
		file, anchor, _ := strings.Cut(target, "#")
		into := doc
		if file != "" {
			into = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(doc), file)))
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(into))); err != nil {
				bad("no such file")
				continue
			}
		}
		if anchor == "" {
			continue
		}
		anchors, err := headingAnchors(filepath.Join(root, filepath.FromSlash(into)))
		if err != nil {
			bad("%v", err)
		} else if !anchors[anchor] {
			bad("%s has no heading %q", into, anchor)
		}
	}
	return problems
}

// stripCode blanks out fenced code blocks and code spans, keeping the
// newlines so that offsets still give line numbers.
func stripCode(s string) string {
	lines := strings.SplitAfter(s, "\n")
	in := false
	for i, l := range lines {
		if fence.MatchString(strings.TrimRight(l, "\n")) {
			in = !in
			lines[i] = "\n"
			continue
		}
		if in {
			lines[i] = "\n"
		}
	}
	return codeSpan.ReplaceAllStringFunc(strings.Join(lines, ""), func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n"))
	})
}

// headingAnchors returns the anchors GitHub gives the headings of the
// markdown file at path: the heading's text, lowercased, with what is not
// a letter, digit, space, hyphen or underscore dropped and spaces made
// hyphens; a repeated anchor gets -1, -2... in order.
func headingAnchors(path string) (map[string]bool, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	in := false
	for l := range strings.SplitSeq(string(text), "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		m := heading.FindStringSubmatch(l)
		if in || m == nil {
			continue
		}
		title := mdLink.ReplaceAllString(m[2], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors, nil
}
