package main

// The Debian source of the accuracy corpus: the documentation of binary
// packages of two suites, fetched from Debian's archive. A version is a
// suite ("bookworm"), or a suite and the package's name there when it is
// not the set's name for it ("bookworm/postgresql-doc-15").

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// debMirror is the Debian archive packages are fetched from.
const debMirror = "http://deb.debian.org/debian"

var debSource = &accSource{Kind: "deb", From: "Debian's archive (" + debMirror + "/pool/..., found in dists/SUITE/main/binary-all/Packages.xz), unpacked with dpkg-deb", Fetch: fetchDeb}

// docsSet is the documentation set: manual pages, and HTML manuals
// generated from one template per project, bookworm's indexed and
// trixie's queried.
var docsSet = []moduleVersions{
	{"manpages", []string{"bookworm"}, []string{"trixie"}},
	{"manpages-dev", []string{"bookworm"}, []string{"trixie"}},
	{"libssl-doc", []string{"bookworm"}, []string{"trixie"}},
	{"tcl8.6-doc", []string{"bookworm"}, []string{"trixie"}},
	{"perl-doc", []string{"bookworm"}, []string{"trixie"}},
	{"debian-policy", []string{"bookworm"}, []string{"trixie"}},
	{"git-doc", []string{"bookworm"}, []string{"trixie"}},
	{"zsh-doc", []string{"bookworm"}, []string{"trixie"}},
	{"sphinx-doc", []string{"bookworm"}, []string{"trixie"}},
	{"cmake-doc", []string{"bookworm"}, []string{"trixie"}},
	{"postgresql-doc", []string{"bookworm/postgresql-doc-15"}, []string{"trixie/postgresql-doc-17"}},
}

// debEntry is a package's entry in a suite's index.
type debEntry struct {
	Filename string // in the archive, such as pool/main/m/manpages/manpages_6.03-2_all.deb
	SHA256   string
}

// debIndexes are the suites' indexes read so far, by suite.
var debIndexes struct {
	sync.Mutex
	m map[string]map[string]debEntry
}

// debIndex returns the architecture-independent packages of suite's main
// component, downloading its index into cache unless it is there.
func debIndex(ctx context.Context, cache, suite string) (map[string]debEntry, error) {
	debIndexes.Lock()
	defer debIndexes.Unlock()
	if idx, ok := debIndexes.m[suite]; ok {
		return idx, nil
	}
	xz := filepath.Join(cache, suite+"-Packages.xz")
	url := debMirror + "/dists/" + suite + "/main/binary-all/Packages.xz"
	if err := download(ctx, url, xz); err != nil {
		return nil, fmt.Errorf("debian %s index: %w", suite, err)
	}
	cmd := exec.CommandContext(ctx, "xz", "-dc", xz)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("debian %s index: xz -dc %s: %v: %s", suite, xz, err, strings.TrimSpace(stderr.String()))
	}
	idx, err := parsePackages(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("debian %s index %s: %w", suite, xz, err)
	}
	if debIndexes.m == nil {
		debIndexes.m = map[string]map[string]debEntry{}
	}
	debIndexes.m[suite] = idx
	return idx, nil
}

// parsePackages reads a Packages index: stanzas of "Field: value" lines
// separated by blank lines. A stanza without Filename is an error.
func parsePackages(r io.Reader) (map[string]debEntry, error) {
	idx := map[string]debEntry{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name string
	var e debEntry
	end := func() error {
		if name == "" {
			return nil
		}
		if e.Filename == "" {
			return fmt.Errorf("package %s: no Filename", name)
		}
		idx[name] = e
		name, e = "", debEntry{}
		return nil
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if err := end(); err != nil {
				return nil, err
			}
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case "Package":
			name = v
		case "Filename":
			e.Filename = v
		case "SHA256":
			e.SHA256 = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := end(); err != nil {
		return nil, err
	}
	return idx, nil
}

// fetchDeb downloads the package pkg of the suite v names into cache,
// checks its SHA-256 against the suite's index, and unpacks its
// documentation into dst.
func fetchDeb(ctx context.Context, cache, pkg, v, dst string) error {
	suite, name, ok := strings.Cut(v, "/")
	if !ok {
		name = pkg
	}
	idx, err := debIndex(ctx, cache, suite)
	if err != nil {
		return err
	}
	e, ok := idx[name]
	if !ok {
		return fmt.Errorf("debian %s: no package %s in its main/binary-all index", suite, name)
	}
	deb := filepath.Join(cache, path.Base(e.Filename))
	if err := download(ctx, debMirror+"/"+e.Filename, deb); err != nil {
		return fmt.Errorf("debian %s %s: %w", suite, name, err)
	}
	b, err := os.ReadFile(deb)
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != e.SHA256 {
		os.Remove(deb)
		return fmt.Errorf("debian %s %s: %s has SHA-256 %x, the index says %s", suite, name, deb, sum, e.SHA256)
	}
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("debian %s %s: dpkg-deb: %w", suite, name, err)
	}
	_, _, uerr := unpackTar(out, dst, docsOnly)
	if uerr != nil {
		io.Copy(io.Discard, out)
	}
	werr := cmd.Wait()
	switch {
	case uerr != nil:
		return fmt.Errorf("debian %s %s: %s: %w", suite, name, deb, uerr)
	case werr != nil:
		return fmt.Errorf("debian %s %s: dpkg-deb --fsys-tarfile %s: %v: %s", suite, name, deb, werr, strings.TrimSpace(stderr.String()))
	}
	return nil
}
