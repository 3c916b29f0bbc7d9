package main

// Unpacking the archives of the accuracy corpus: npm tarballs and the
// data of Debian packages are tar streams, whose entries are written
// under a version's directory once their names are found safe.

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// tarPlan says where a tar entry goes: Name, slash-separated and relative
// to the directory unpacked into, or Skip to leave the entry out; with
// Gunzip, the entry is gzip data whose decompressed bytes are written.
type tarPlan struct {
	Name   string
	Skip   bool
	Gunzip bool
}

// cleanEntryName returns the name of a tar entry with any leading "./"
// removed, or an error naming it when it is absolute or has a ".."
// element, so that no entry is written outside the directory unpacked
// into.
func cleanEntryName(name string) (string, error) {
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) || (len(name) > 1 && name[1] == ':') {
		return "", fmt.Errorf("tar entry %q: absolute path", name)
	}
	for _, el := range strings.Split(strings.ReplaceAll(name, `\`, "/"), "/") {
		if el == ".." {
			return "", fmt.Errorf("tar entry %q: climbs out of the archive with ..", name)
		}
	}
	name = path.Clean(name)
	if name == "." {
		return "", nil
	}
	return name, nil
}

// unpackTar writes the regular files of the tar stream r under dst, each
// where plan says (plan gets the entry's cleaned name and never an empty
// one). A hard link is written as a copy of its target when the target
// was written; symbolic links, devices and the like are left out, and
// directories are made as files need them. It returns the files written
// and their bytes. An entry whose name or planned name is absolute or
// climbs out with "..", or whose gzip data is bad, is an error naming it.
func unpackTar(r io.Reader, dst string, plan func(name string) tarPlan) (files int, bytes int64, err error) {
	tr := tar.NewReader(r)
	written := map[string]string{} // cleaned entry name → file written
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, bytes, nil
		}
		if err != nil && !(errors.Is(err, tar.ErrInsecurePath) && hdr != nil) {
			return files, bytes, fmt.Errorf("read tar: %w", err)
		}
		name, err := cleanEntryName(hdr.Name) // refuses what ErrInsecurePath flags, naming it
		if err != nil {
			return files, bytes, err
		}
		if name == "" {
			continue
		}
		var src io.Reader = tr
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
		case tar.TypeLink:
			target, err := cleanEntryName(hdr.Linkname)
			if err != nil {
				return files, bytes, fmt.Errorf("tar entry %q: link target: %w", hdr.Name, err)
			}
			from, ok := written[target]
			if !ok {
				continue
			}
			b, err := os.ReadFile(from)
			if err != nil {
				return files, bytes, err
			}
			src = strings.NewReader(string(b))
		default:
			continue
		}
		p := plan(name)
		if p.Skip {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(p.Name)) {
			return files, bytes, fmt.Errorf("tar entry %q: would be written at %q, outside the directory", hdr.Name, p.Name)
		}
		if p.Gunzip && hdr.Typeflag != tar.TypeLink {
			zr, err := gzip.NewReader(src)
			if err != nil {
				return files, bytes, fmt.Errorf("tar entry %q: gunzip: %w", hdr.Name, err)
			}
			src = zr
		}
		out := filepath.Join(dst, filepath.FromSlash(p.Name))
		n, err := writeFileFrom(out, src)
		if err != nil {
			return files, bytes, fmt.Errorf("tar entry %q: %w", hdr.Name, err)
		}
		written[name] = out
		files++
		bytes += n
	}
}

// writeFileFrom writes r to a new file at p, making its directory.
func writeFileFrom(p string, r io.Reader) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// stripFirst is the plan of an npm tarball: its files are under one top
// directory (package/ for most, another name for some), which is left out.
func stripFirst(name string) tarPlan {
	_, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" {
		return tarPlan{Skip: true}
	}
	return tarPlan{Name: rest}
}

// docTrees are the documentation trees kept of a Debian package.
var docTrees = []string{"usr/share/doc/", "usr/share/man/", "usr/share/info/", "usr/share/gtk-doc/", "usr/share/help/"}

// docsOnly is the plan of a Debian package's data: only the files under
// docTrees are kept, and gzip-compressed ones (manual pages, changelogs)
// are gunzipped without their .gz, so that their text is compared.
func docsOnly(name string) tarPlan {
	for _, t := range docTrees {
		if strings.HasPrefix(name, t) {
			if base, ok := strings.CutSuffix(name, ".gz"); ok {
				return tarPlan{Name: base, Gunzip: true}
			}
			return tarPlan{Name: name}
		}
	}
	return tarPlan{Skip: true}
}
