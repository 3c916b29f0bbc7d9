package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tarEntry is an entry of a tar stream made by a test.
type tarEntry struct {
	Name, Link string
	Type       byte
	Body       []byte
}

func makeTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		typ := e.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.Name, Linkname: e.Link, Typeflag: typ, Mode: 0o644, Size: int64(len(e.Body))}
		if typ != tar.TypeReg {
			hdr.Size = 0
		}
		if typ == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write(e.Body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// treeFiles returns the regular files under dir, by slash-separated
// relative path, with their contents.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUnpackNpmTarball unpacks an npm tarball as fetchNpm does: the top
// directory, whatever its name, is left out, symbolic links are not
// written, and a hard link is a copy of its target.
func TestUnpackNpmTarball(t *testing.T) {
	for _, top := range []string{"package", "node"} {
		tgz := gzipped(t, makeTar(t, []tarEntry{
			{Name: top + "/", Type: tar.TypeDir},
			{Name: top + "/package.json", Body: []byte(`{"name":"x"}`)},
			{Name: top + "/lib/index.d.ts", Body: []byte("export {};\n")},
			{Name: top + "/lib/alias.js", Type: tar.TypeSymlink, Link: "index.d.ts"},
			{Name: top + "/lib/copy.d.ts", Type: tar.TypeLink, Link: top + "/lib/index.d.ts"},
			{Name: "./" + top + "/README.md", Body: []byte("# x\n")},
		}))
		zr, err := gzip.NewReader(bytes.NewReader(tgz))
		if err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		files, n, err := unpackTar(zr, dst, stripFirst)
		if err != nil {
			t.Fatalf("top %s: %v", top, err)
		}
		want := map[string]string{"package.json": `{"name":"x"}`, "lib/index.d.ts": "export {};\n", "lib/copy.d.ts": "export {};\n", "README.md": "# x\n"}
		got := treeFiles(t, dst)
		if len(got) != len(want) || files != len(want) || n != int64(12+11+11+4) {
			t.Errorf("top %s: unpacked %d files of %d bytes: %v; want %v", top, files, n, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("top %s: %s = %q, want %q", top, k, got[k], v)
			}
		}
	}
}

// TestUnpackRefusesEscapes checks that an entry named with an absolute
// path or a ".." element is refused, with its name in the error, and
// nothing is written outside the directory.
func TestUnpackRefusesEscapes(t *testing.T) {
	for _, bad := range []string{"/etc/passwd", "package/../../evil", "package/a/../../../evil", "../evil", `package\..\..\evil`} {
		root := t.TempDir()
		dst := filepath.Join(root, "dst")
		tb := makeTar(t, []tarEntry{{Name: "package/ok", Body: []byte("ok")}, {Name: bad, Body: []byte("evil")}})
		_, _, err := unpackTar(bytes.NewReader(tb), dst, stripFirst)
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("entry %q: error %v, want one naming it", bad, err)
		}
		if _, err := os.Stat(filepath.Join(root, "evil")); err == nil {
			t.Errorf("entry %q was written outside the directory", bad)
		}
	}
	// A link whose target climbs out is refused too.
	tb := makeTar(t, []tarEntry{{Name: "package/l", Type: tar.TypeLink, Link: "../../etc/passwd"}})
	if _, _, err := unpackTar(bytes.NewReader(tb), t.TempDir(), stripFirst); err == nil || !strings.Contains(err.Error(), "package/l") {
		t.Errorf("hard link out of the archive: error %v, want one naming it", err)
	}
	// And so is a plan that would write outside.
	tb = makeTar(t, []tarEntry{{Name: "package/x", Body: []byte("x")}})
	_, _, err := unpackTar(bytes.NewReader(tb), t.TempDir(), func(string) tarPlan { return tarPlan{Name: "../x"} })
	if err == nil || !strings.Contains(err.Error(), "package/x") {
		t.Errorf("plan out of the directory: error %v, want one naming the entry", err)
	}
}

// TestUnpackDebianDocs unpacks a Debian package's data as fetchDeb does:
// only the documentation trees are kept, and gzip-compressed manual
// pages and changelogs are written gunzipped, without .gz.
func TestUnpackDebianDocs(t *testing.T) {
	page := []byte(".TH LS 1\n.SH NAME\nls \\- list directory contents\n")
	tb := makeTar(t, []tarEntry{
		{Name: "./", Type: tar.TypeDir},
		{Name: "./usr/bin/ls", Body: []byte("\x7fELF")},
		{Name: "./usr/share/man/man1/ls.1.gz", Body: gzipped(t, page)},
		{Name: "./usr/share/man/man1/dir.1.gz", Type: tar.TypeLink, Link: "./usr/share/man/man1/ls.1.gz"},
		{Name: "./usr/share/man/man1/vdir.1.gz", Type: tar.TypeSymlink, Link: "ls.1.gz"},
		{Name: "./usr/share/doc/coreutils/changelog.Debian.gz", Body: gzipped(t, []byte("coreutils (9.1-1) unstable\n"))},
		{Name: "./usr/share/doc/coreutils/html/index.html", Body: []byte("<html></html>\n")},
		{Name: "./usr/share/info/coreutils.info.gz", Body: gzipped(t, []byte("This is coreutils.info\n"))},
		{Name: "./usr/share/locale/de/LC_MESSAGES/coreutils.mo", Body: []byte("mo")},
		{Name: "./etc/default/x", Body: []byte("x")},
	})
	dst := t.TempDir()
	if _, _, err := unpackTar(bytes.NewReader(tb), dst, docsOnly); err != nil {
		t.Fatal(err)
	}
	got := treeFiles(t, dst)
	want := map[string]string{
		"usr/share/man/man1/ls.1":                  string(page),
		"usr/share/man/man1/dir.1":                 string(page),
		"usr/share/doc/coreutils/changelog.Debian": "coreutils (9.1-1) unstable\n",
		"usr/share/doc/coreutils/html/index.html":  "<html></html>\n",
		"usr/share/info/coreutils.info":            "This is coreutils.info\n",
	}
	if len(got) != len(want) {
		t.Errorf("unpacked %v, want %v", slices.Sorted(mapKeys(got)), slices.Sorted(mapKeys(want)))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	// A .gz page that is not gzip data is an error naming it.
	tb = makeTar(t, []tarEntry{{Name: "./usr/share/man/man1/bad.1.gz", Body: []byte("not gzip")}})
	if _, _, err := unpackTar(bytes.NewReader(tb), t.TempDir(), docsOnly); err == nil || !strings.Contains(err.Error(), "bad.1.gz") {
		t.Errorf("bad gzip page: error %v, want one naming it", err)
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestParsePackages reads a Packages index of two stanzas, and refuses a
// stanza without Filename, naming its package.
func TestParsePackages(t *testing.T) {
	idx, err := parsePackages(strings.NewReader(`Package: manpages
Version: 6.03-2
Description: Manual pages about using a GNU/Linux system
 This package contains GNU/Linux manual pages for these sections:
Filename: pool/main/m/manpages/manpages_6.03-2_all.deb
SHA256: 0123

Package: git-doc
Filename: pool/main/g/git/git-doc_2.39.5_all.deb
SHA256: 4567
`))
	if err != nil {
		t.Fatal(err)
	}
	if e := idx["manpages"]; e.Filename != "pool/main/m/manpages/manpages_6.03-2_all.deb" || e.SHA256 != "0123" {
		t.Errorf("manpages: %+v", e)
	}
	if e := idx["git-doc"]; e.Filename != "pool/main/g/git/git-doc_2.39.5_all.deb" || e.SHA256 != "4567" || len(idx) != 2 {
		t.Errorf("git-doc: %+v of %d packages", e, len(idx))
	}
	if _, err := parsePackages(strings.NewReader("Package: broken\nVersion: 1\n\n")); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("stanza without Filename: error %v, want one naming the package", err)
	}
}

// TestAccuracySetSelection checks that every set names a known source and
// has packages with indexed and newer versions, that a bad set name is an
// error naming it and the sets there are, and that --help lists them.
func TestAccuracySetSelection(t *testing.T) {
	for _, name := range []string{"tuning", "heldout", "js-tuning", "js-heldout", "docs"} {
		s, err := lookupSet(name)
		if err != nil {
			t.Fatalf("set %s: %v", name, err)
		}
		if s.Source == nil || len(s.Packages) == 0 {
			t.Errorf("set %s: no source or no packages", name)
		}
		for _, p := range s.Packages {
			if len(p.Indexed) == 0 || len(p.Newer) == 0 {
				t.Errorf("set %s, %s: indexed %v, newer %v", name, p.Path, p.Indexed, p.Newer)
			}
		}
	}
	// A project is in one set of a kind only.
	seen := map[string]string{}
	for _, name := range setNames() {
		for _, p := range accuracySets[name].Packages {
			if other, ok := seen[p.Path]; ok {
				t.Errorf("%s is in sets %s and %s", p.Path, other, name)
			}
			seen[p.Path] = name
		}
	}
	_, err := assembleSet(context.Background(), t.TempDir(), "js-tunning")
	if err == nil || !strings.Contains(err.Error(), `"js-tunning"`) || !strings.Contains(err.Error(), "js-tuning") {
		t.Errorf("bad set: error %v, want one naming it and the sets there are", err)
	}
	err = run(context.Background(), []string{"accuracy", "--set", "npm"})
	if err == nil || !strings.Contains(err.Error(), `"npm"`) {
		t.Errorf("sifbench accuracy --set npm: error %v, want one naming the set", err)
	}
	d := describeSets()
	for _, want := range []string{"js-heldout: npm packages from the npm registry", "docs: Debian documentation", "tuning: Go modules from the Go module proxy", "postgresql-doc: indexed bookworm/postgresql-doc-15"} {
		if !strings.Contains(d, want) {
			t.Errorf("--help's list of sets lacks %q:\n%s", want, d)
		}
	}
}

// TestAssembleSetReusesMarker checks that a set whose complete.json
// matches its package list is not fetched again, and that one whose
// marker differs is fetched anew into an emptied directory.
func TestAssembleSetReusesMarker(t *testing.T) {
	var fetched []string
	src := &accSource{Kind: "test", From: "a test", Fetch: func(ctx context.Context, cache, pkg, v, dst string) error {
		fetched = append(fetched, pkg+"@"+v)
		return os.WriteFile(filepath.Join(mustMkdir(t, dst), "f.txt"), []byte(pkg+v), 0o644)
	}}
	accuracySets["test-set"] = accSet{Source: src, About: "test", Packages: []moduleVersions{{"a/b", []string{"1"}, []string{"2"}}}}
	defer delete(accuracySets, "test-set")
	dir := t.TempDir()
	c, err := assembleSet(context.Background(), dir, "test-set")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fetched, []string{"a/b@1", "a/b@2"}) {
		t.Errorf("fetched %v", fetched)
	}
	if b, err := os.ReadFile(filepath.Join(c.IndexRoot, "a_b@1", "f.txt")); err != nil || string(b) != "a/b1" {
		t.Errorf("indexed version: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(c.NewerRoot, "a_b@2", "f.txt")); err != nil {
		t.Error(err)
	}
	fetched = nil
	if _, err := assembleSet(context.Background(), dir, "test-set"); err != nil || len(fetched) != 0 {
		t.Errorf("second assembly fetched %v (%v), want nothing", fetched, err)
	}
	accuracySets["test-set"] = accSet{Source: src, About: "test", Packages: []moduleVersions{{"a/b", []string{"3"}, []string{"2"}}}}
	if _, err := assembleSet(context.Background(), dir, "test-set"); err != nil || len(fetched) != 2 {
		t.Errorf("changed set fetched %v (%v), want both versions", fetched, err)
	}
	if _, err := os.Stat(filepath.Join(c.IndexRoot, "a_b@1")); err == nil {
		t.Error("a version no longer in the set was kept")
	}
}

func mustMkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLatencyOf checks the percentiles of request times.
func TestLatencyOf(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := latencyOf(ds)
	if l.P50 != 100 || l.P99 != 198 || l.Max != 200 {
		t.Errorf("latency of 1..200 ms: %+v, want p50 100, p99 198, max 200", l)
	}
	if l := latencyOf(nil); l != (latency{}) {
		t.Errorf("latency of nothing: %+v", l)
	}
}
