package main

// The npm source of the accuracy corpus: package tarballs from the npm
// registry, fetched over HTTPS and unpacked without their top directory.

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// npmRegistry is where npm tarballs are fetched from.
const npmRegistry = "https://registry.npmjs.org"

var npmSource = &accSource{Kind: "npm", From: "the npm registry (" + npmRegistry + "/NAME/-/NAME-VERSION.tgz)", Fetch: fetchNpm}

// jsTuning and jsHeldout are the npm sets: two disjoint sets of projects,
// each with sources, TypeScript typings (.d.ts), stylesheets, locale
// tables, per-function modules and minified bundles, and families of
// files made from one template (core-js and lodash's modules in one,
// @babel/runtime's helpers, its wrappers of core-js and date-fns's
// functions in the other).
var (
	jsTuning = []moduleVersions{
		{"moment", []string{"2.24.0", "2.27.0", "2.29.1"}, []string{"2.29.4", "2.30.1"}},
		{"lodash", []string{"4.17.11", "4.17.15"}, []string{"4.17.21"}},
		{"lodash-es", []string{"4.17.15"}, []string{"4.17.21"}},
		{"core-js", []string{"3.20.0", "3.25.0", "3.30.0"}, []string{"3.36.0", "3.40.0"}},
		{"bootstrap", []string{"4.6.0", "5.1.3", "5.2.3"}, []string{"5.3.3"}},
		{"@types/node", []string{"16.18.0", "18.11.0"}, []string{"20.11.0"}},
		{"ajv", []string{"8.11.0", "8.12.0"}, []string{"8.17.1"}},
	}
	jsHeldout = []moduleVersions{
		{"date-fns", []string{"2.28.0", "2.29.3"}, []string{"2.30.0"}},
		{"rxjs", []string{"7.5.0", "7.8.0"}, []string{"7.8.1"}},
		{"highlight.js", []string{"10.7.3", "11.5.0", "11.8.0"}, []string{"11.10.0"}},
		{"@babel/runtime", []string{"7.20.0", "7.22.0"}, []string{"7.24.0", "7.26.0"}},
		{"@babel/runtime-corejs3", []string{"7.22.0"}, []string{"7.26.0"}},
	}
)

// npmTarballURL is the registry's address of the tarball of pkg at
// version v: a scoped package's tarball is named without its scope.
func npmTarballURL(pkg, v string) string {
	return npmRegistry + "/" + pkg + "/-/" + path.Base(pkg) + "-" + v + ".tgz"
}

// fetchNpm downloads the tarball of pkg at version v into cache, unless
// it is there, and unpacks it into dst.
func fetchNpm(ctx context.Context, cache, pkg, v, dst string) error {
	tgz := filepath.Join(cache, strings.ReplaceAll(pkg, "/", "_")+"-"+v+".tgz")
	if err := download(ctx, npmTarballURL(pkg, v), tgz); err != nil {
		return fmt.Errorf("npm %s@%s: %w", pkg, v, err)
	}
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("npm %s@%s: %s: %w", pkg, v, tgz, err)
	}
	if _, _, err := unpackTar(zr, dst, stripFirst); err != nil {
		return fmt.Errorf("npm %s@%s: %s: %w", pkg, v, tgz, err)
	}
	return nil
}

// download writes what url answers into the file p, unless p is there
// already; it writes a temporary file first, so an interrupted download
// leaves nothing at p.
func download(ctx context.Context, url, p string) error {
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".download-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}
