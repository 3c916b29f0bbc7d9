package main

// The accuracy corpus: several versions of real packages of one kind (Go
// modules, npm packages, Debian packages' documentation), fetched by the
// source of that kind and kept in a directory that later runs reuse. A
// set is a list of packages, each with older versions, which are indexed,
// and newer versions, which most queries come from.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// moduleVersions are the versions of one package of an accuracy set: a Go
// module, an npm package or a Debian package, named by Path.
type moduleVersions struct {
	Path    string   `json:"path"`
	Indexed []string `json:"indexed"` // older versions: indexed
	Newer   []string `json:"newer"`   // newer versions: queries come from them
}

// accSource fetches packages of one kind.
type accSource struct {
	Kind string // go, npm or deb
	// From says where the packages come from, for --help.
	From string
	// Fetch writes the files of version v of package pkg under dst.
	// cache is a directory it may keep downloads in across sets and runs.
	Fetch func(ctx context.Context, cache, pkg, v, dst string) error
}

// accSet is one accuracy set: its packages and the source that fetches them.
type accSet struct {
	Source   *accSource
	About    string // what the set holds, for --help
	Packages []moduleVersions
}

var (
	goSource = &accSource{Kind: "go", From: "the Go module proxy (go mod download)", Fetch: fetchGoModule}
	// npmSource and debSource are in accuracy_npm.go and accuracy_deb.go.
)

// accuracySets split the packages by project: a project is in one set
// only, so what is tuned on a tuning set is judged on projects it never
// saw. tuning and heldout are Go modules; js-tuning and js-heldout npm
// packages (sources, TypeScript typings, stylesheets, locale tables,
// per-function modules, minified bundles); docs the documentation of
// Debian packages (manual pages and generated HTML manuals), bookworm's
// indexed and trixie's queried.
var accuracySets = map[string]accSet{
	"tuning": {goSource, "Go modules", []moduleVersions{
		{"golang.org/x/text", []string{"v0.9.0", "v0.14.0", "v0.20.0"}, []string{"v0.24.0", "v0.30.0"}},
		{"golang.org/x/net", []string{"v0.20.0", "v0.25.0", "v0.30.0"}, []string{"v0.33.0", "v0.40.0"}},
		{"golang.org/x/crypto", []string{"v0.20.0", "v0.25.0"}, []string{"v0.30.0", "v0.33.0"}},
		{"github.com/spf13/cobra", []string{"v1.2.1", "v1.5.0", "v1.7.0"}, []string{"v1.8.0", "v1.9.1"}},
		{"github.com/spf13/viper", []string{"v1.10.0", "v1.14.0", "v1.16.0"}, []string{"v1.18.2", "v1.20.1"}},
		{"github.com/BurntSushi/toml", []string{"v0.4.1", "v1.1.0", "v1.2.1"}, []string{"v1.3.2", "v1.5.0"}},
		{"github.com/pkg/errors", []string{"v0.8.0", "v0.8.1"}, []string{"v0.9.1"}},
		{"github.com/google/uuid", []string{"v1.1.2", "v1.3.0"}, []string{"v1.5.0", "v1.6.0"}},
		{"github.com/gorilla/mux", []string{"v1.6.2", "v1.7.4"}, []string{"v1.8.1"}},
	}},
	"heldout": {goSource, "Go modules", []moduleVersions{
		{"golang.org/x/tools", []string{"v0.20.0", "v0.24.0", "v0.28.0"}, []string{"v0.30.0", "v0.36.0"}},
		{"golang.org/x/sys", []string{"v0.20.0", "v0.25.0", "v0.30.0"}, []string{"v0.33.0", "v0.40.0"}},
		{"go.uber.org/zap", []string{"v1.19.0", "v1.21.0", "v1.24.0", "v1.26.0"}, []string{"v1.27.0", "v1.28.0"}},
		{"github.com/stretchr/testify", []string{"v1.6.1", "v1.7.0", "v1.8.0", "v1.8.4"}, []string{"v1.9.0", "v1.11.1"}},
		{"github.com/sirupsen/logrus", []string{"v1.4.2", "v1.6.0", "v1.8.1"}, []string{"v1.9.0", "v1.9.3"}},
		{"gopkg.in/yaml.v2", []string{"v2.2.2", "v2.2.8", "v2.3.0"}, []string{"v2.4.0"}},
		{"github.com/google/go-cmp", []string{"v0.4.0", "v0.5.0", "v0.5.5"}, []string{"v0.5.9", "v0.7.0"}},
		{"github.com/spf13/pflag", []string{"v1.0.3", "v1.0.5"}, []string{"v1.0.7", "v1.1.0"}},
	}},
	"js-tuning":  {npmSource, "npm packages", jsTuning},
	"js-heldout": {npmSource, "npm packages", jsHeldout},
	"docs":       {debSource, "Debian documentation, /usr/share/{doc,man,info} with .gz files gunzipped", docsSet},
}

// setNames lists the accuracy sets in order.
func setNames() []string {
	names := make([]string, 0, len(accuracySets))
	for n := range accuracySets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lookupSet returns the set called name, or an error naming it and the
// sets there are.
func lookupSet(name string) (accSet, error) {
	s, ok := accuracySets[name]
	if !ok {
		return accSet{}, fmt.Errorf("set %q: no such set; want one of %s", name, strings.Join(setNames(), ", "))
	}
	return s, nil
}

// describeSets tells the sets, their sources and packages, for --help.
func describeSets() string {
	var b strings.Builder
	for _, n := range setNames() {
		s := accuracySets[n]
		fmt.Fprintf(&b, "  %s: %s from %s\n", n, s.About, s.Source.From)
		for _, p := range s.Packages {
			fmt.Fprintf(&b, "      %s: indexed %s; queried %s\n", p.Path, strings.Join(p.Indexed, " "), strings.Join(p.Newer, " "))
		}
	}
	return b.String()
}

// accCorpus is an assembled set: IndexRoot holds the older versions, one
// directory per package version, NewerRoot the newer ones.
type accCorpus struct {
	Set       string
	IndexRoot string
	NewerRoot string
	Modules   []moduleVersions
}

// versionDir is the directory name of version v of package pkg.
func versionDir(pkg, v string) string {
	return strings.ReplaceAll(pkg, "/", "_") + "@" + strings.ReplaceAll(v, "/", "_")
}

// assembleIndexed assembles af's set (assembleSet) and lists the files of
// its indexed tree with their SHA-256 (hashFiles).
func assembleIndexed(ctx context.Context, af *accFlags) (*accCorpus, []corpusFile, error) {
	corpus, err := assembleSet(ctx, af.dir, af.set)
	if err != nil {
		return nil, nil, err
	}
	indexed, err := hashFiles(corpus.IndexRoot, 0)
	if err != nil {
		return nil, nil, err
	}
	return corpus, indexed, nil
}

// assembleSet fetches the packages of set into dir/set unless a complete
// copy of the same package list is there already (its complete.json).
// Downloads that a source keeps are in dir/.downloads.
func assembleSet(ctx context.Context, dir, set string) (*accCorpus, error) {
	s, err := lookupSet(set)
	if err != nil {
		return nil, err
	}
	mods := s.Packages
	root, err := filepath.Abs(filepath.Join(dir, set))
	if err != nil {
		return nil, err
	}
	c := &accCorpus{Set: set, IndexRoot: filepath.Join(root, "index"), NewerRoot: filepath.Join(root, "newer"), Modules: mods}
	want, _ := json.MarshalIndent(mods, "", "  ")
	marker := filepath.Join(root, "complete.json")
	if have, err := os.ReadFile(marker); err == nil && bytes.Equal(have, want) {
		return c, nil
	}
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("assemble %s: %w", root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("assemble %s: %w", root, err)
	}
	cache := filepath.Join(dir, ".downloads", s.Source.Kind)
	if s.Source.Kind == "go" {
		cache = root // go mod download runs there, outside any module
	}
	for _, m := range mods {
		for _, grp := range []struct {
			dst string
			vs  []string
		}{{c.IndexRoot, m.Indexed}, {c.NewerRoot, m.Newer}} {
			for _, v := range grp.vs {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if err := s.Source.Fetch(ctx, cache, m.Path, v, filepath.Join(grp.dst, versionDir(m.Path, v))); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := os.WriteFile(marker, want, 0o644); err != nil {
		return nil, err
	}
	return c, nil
}
