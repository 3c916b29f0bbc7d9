// Command deb builds sif's Debian package, sif_VERSION_ARCH.deb, from this
// repository with the nfpm library:
//
//	cd packaging/deb && go run . -o ../../dist
//
// It builds sifd and sifctl (CGO_ENABLED=0, -trimpath), has them write
// their manual pages and shell completions (their hidden gen-docs
// command), renders the system unit with systemd.Render, and packs
// them with the default configuration, the sysusers.d declaration of the
// sifd user, the maintainer scripts in this directory, and the README and
// the operator's guide (packaging/README.md) as documentation. The version is
// -version, else derived from git describe (see debVersion).
//
// This directory is a module of its own, so that nfpm and what it pulls in
// stay out of the dependencies of sif's packages; the binaries it packs
// are built in the main module, with its dependencies.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/packaging/systemd"
)

// Where the package puts things.
const (
	configFile = "/etc/sifd/config.toml"
	unitFile   = "/lib/systemd/system/sifd.service"
	docDir     = "/usr/share/doc/sif"
)

// docs are the repository's documents the package installs under docDir,
// at the same paths as in the repository so that the links between them
// hold: the README, the operator's guide, and the SQL the guide gives
// for a fleet on several database servers. The keys are their names in
// the staging directory.
var docs = map[string]string{
	"README.md":                      "README.md",
	"packaging-README.md":            "packaging/README.md",
	"fleet-partitioned-postings.sql": "packaging/fleet/partitioned-postings.sql",
}

// unitArgs follow /usr/bin/sifd on the packaged unit's ExecStart line.
var unitArgs = []string{"run", "--config", configFile, "--db", daemon.SystemDB, "--socket", "/run/sifd/sifd.sock"}

//go:embed config.toml scripts init.d
var assets embed.FS

// Options say what to build. The zero value of each field means its
// default.
type Options struct {
	// Src is the repository's root; default: the directory above the
	// working directory whose go.mod is sif's.
	Src string
	// Out is the directory the .deb is written to; default: ".".
	Out string
	// Version is the Debian version; default: from git describe.
	Version string
	// Arch is the GOARCH to build for; default: runtime.GOARCH.
	Arch string
	// Maintainer is the control file's Maintainer; default: the author of
	// the last commit.
	Maintainer string
	// Log receives the commands run; nil discards.
	Log io.Writer
}

func main() {
	var o Options
	flag.StringVar(&o.Out, "o", ".", "directory to write sif_VERSION_ARCH.deb into")
	flag.StringVar(&o.Version, "version", "", "Debian version (default: from git describe)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "GOARCH to build for: amd64, arm64, 386, arm (armhf), riscv64, ppc64le, s390x")
	flag.StringVar(&o.Src, "src", "", "the sif repository (default: found above the working directory)")
	flag.StringVar(&o.Maintainer, "maintainer", "", `Maintainer field, "Name <email>" (default: the last commit's author)`)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "deb: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	o.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	path, err := Build(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "deb: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

// debArch maps GOARCH to Debian's architecture names.
var debArch = map[string]string{
	"amd64": "amd64", "arm64": "arm64", "386": "i386", "arm": "armhf",
	"riscv64": "riscv64", "ppc64le": "ppc64el", "s390x": "s390x",
}

// Build builds the package and returns the path of the .deb.
func Build(ctx context.Context, o Options) (string, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Out == "" {
		o.Out = "."
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	arch, ok := debArch[o.Arch]
	if !ok {
		return "", fmt.Errorf("-arch %s: not one of %s", o.Arch, strings.Join(slices.Sorted(mapKeys(debArch)), ", "))
	}
	var err error
	if o.Src == "" {
		if o.Src, err = findRepo(); err != nil {
			return "", err
		}
	}
	epoch, err := sourceDate(ctx, o.Src)
	if err != nil {
		return "", err
	}
	if o.Version == "" {
		describe, err := git(ctx, o.Src, "describe", "--tags", "--always", "--dirty")
		if err != nil {
			return "", fmt.Errorf("version: %w (or give -version)", err)
		}
		o.Version = debVersion(describe, epoch)
	}
	if !validVersion.MatchString(o.Version) {
		return "", fmt.Errorf("-version %q: not a Debian version (digits first, then letters, digits and .+~-)", o.Version)
	}
	if o.Maintainer == "" {
		if o.Maintainer, err = git(ctx, o.Src, "log", "-1", "--format=%an <%ae>"); err != nil {
			return "", fmt.Errorf("maintainer: %w (or give -maintainer)", err)
		}
	}

	tmp, err := os.MkdirTemp("", "sif-deb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	stage := func(name string) string { return filepath.Join(tmp, name) }

	// The binaries, and host ones to run for the docs when cross-building.
	if err := goBuild(ctx, o, "linux", o.Arch, stage("bin")); err != nil {
		return "", err
	}
	runner := stage("bin")
	if runtime.GOOS != "linux" || runtime.GOARCH != o.Arch {
		runner = stage("host")
		if err := goBuild(ctx, o, runtime.GOOS, runtime.GOARCH, runner); err != nil {
			return "", err
		}
	}
	for _, name := range []string{"sifd", "sifctl"} {
		cmd := exec.CommandContext(ctx, filepath.Join(runner, name), "gen-docs", stage("docs"))
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(epoch.Unix(), 10))
		if err := run(cmd, o.Log); err != nil {
			return "", err
		}
	}

	unit, err := systemd.Render(systemd.Unit{Packaged: true, Exec: "/usr/bin/sifd", Args: unitArgs})
	if err != nil {
		return "", err
	}
	generated := map[string]string{
		"sifd.service": unit,
		"sifd.conf":    systemd.SysusersConf,
		"copyright":    copyright,
	}
	for name, src := range docs {
		b, err := os.ReadFile(filepath.Join(o.Src, filepath.FromSlash(src)))
		if err != nil {
			return "", err
		}
		generated[name] = string(b)
	}
	for name, text := range generated {
		if err := os.WriteFile(stage(name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	if err := extractAssets(stage("assets")); err != nil {
		return "", err
	}

	var contents files.Contents
	add := func(src, dst, typ string, mode os.FileMode) {
		contents = append(contents, &files.Content{Source: src, Destination: dst, Type: typ,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: mode}})
	}
	add(stage("bin/sifd"), "/usr/bin/sifd", "", 0o755)
	add(stage("bin/sifctl"), "/usr/bin/sifctl", "", 0o755)
	add(stage("sifd.service"), unitFile, "", 0o644)
	add(stage("sifd.conf"), "/usr/lib/sysusers.d/sifd.conf", "", 0o644)
	add(stage("assets/config.toml"), configFile, files.TypeConfig, 0o644)
	// For hosts without systemd; systemd runs the unit and ignores it.
	add(stage("assets/init.d/sifd"), "/etc/init.d/sifd", files.TypeConfig, 0o755)
	add(stage("copyright"), docDir+"/copyright", "", 0o644)
	for name, src := range docs {
		add(stage(name), docDir+"/"+src, "", 0o644)
	}
	pages, err := filepath.Glob(stage("docs/man1/*.1"))
	if err != nil || len(pages) == 0 {
		return "", fmt.Errorf("gen-docs wrote no manual pages (%v)", err)
	}
	for _, p := range pages {
		if err := gzipFile(p, p+".gz", epoch); err != nil {
			return "", err
		}
		add(p+".gz", "/usr/share/man/man1/"+filepath.Base(p)+".gz", "", 0o644)
	}
	for _, name := range []string{"sifd", "sifctl"} {
		add(stage("docs/bash/"+name), "/usr/share/bash-completion/completions/"+name, "", 0o644)
		add(stage("docs/zsh/_"+name), "/usr/share/zsh/vendor-completions/_"+name, "", 0o644)
		add(stage("docs/fish/"+name+".fish"), "/usr/share/fish/vendor_completions.d/"+name+".fish", "", 0o644)
	}

	info := &nfpm.Info{
		Name:          "sif",
		Arch:          arch,
		Platform:      "linux",
		Version:       o.Version,
		VersionSchema: "none", // already a Debian version
		Section:       "utils",
		Priority:      "optional",
		Maintainer:    o.Maintainer,
		Homepage:      "https://github.com/sif-dev/sif",
		Description: `find similar files
 sif finds files that share a good part of their content, even when one is
 only partly contained in another. sifd keeps an index of approximate
 fingerprints of the files under its roots, updated as they change, and
 answers queries on a Unix socket; sifctl asks it which files are similar
 to a given one, which groups of files are similar, and which are
 identical.
 .
 The package installs sifd.service, which runs sifd as the system user
 sifd: it may read every file (CAP_DAC_READ_SEARCH) and write only its
 index in /var/lib/sifd and its socket in /run/sifd; on hosts without
 systemd, /etc/init.d/sifd runs it with the same user and capability.
 Name the directories to index in /etc/sifd/config.toml.`,
		MTime: epoch,
		Overridables: nfpm.Overridables{
			Recommends: []string{"systemd", "bash-completion"}, // bash-completion loads the completions installed below
			Contents:   contents,
			Scripts: nfpm.Scripts{
				PostInstall: stage("assets/scripts/postinst"),
				PreRemove:   stage("assets/scripts/prerm"),
				PostRemove:  stage("assets/scripts/postrm"),
			},
		},
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", fmt.Errorf("nfpm: %w", err)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.Out, deb.Default.ConventionalFileName(info))
	var buf bytes.Buffer
	if err := deb.Default.Package(info, &buf); err != nil {
		return "", fmt.Errorf("nfpm: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// copyright is /usr/share/doc/sif/copyright (Debian's machine-readable
// format).
const copyright = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: sif
Source: https://github.com/sif-dev/sif

Files: *
Copyright: the sif authors
License: none stated
 The repository carries no licence file. sifd and sifctl are built with
 Go and the modules listed in the repository's go.mod, each under its own
 licence.
`

// validVersion is a Debian upstream version (no epoch, no revision
// needed): it starts with a digit.
var validVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~-]*$`)

// debVersion turns `git describe --tags --always --dirty` output into a
// Debian version that sorts as the history does:
//
//	v1.2.3                 1.2.3
//	v1.2.3-4-gabc1234      1.2.3+git4.abc1234
//	abc1234 (no tag)       0~gitYYYYMMDD.abc1234, dated by the commit
//	...-dirty              ...+dirty
func debVersion(describe string, date time.Time) string {
	d, dirty := strings.CutSuffix(strings.TrimSpace(describe), "-dirty")
	var v string
	if m := regexp.MustCompile(`^v?([0-9].*)-([0-9]+)-g([0-9a-f]+)$`).FindStringSubmatch(d); m != nil {
		v = m[1] + "+git" + m[2] + "." + m[3]
	} else if m := regexp.MustCompile(`^v?([0-9].*)$`).FindStringSubmatch(d); m != nil && !regexp.MustCompile(`^[0-9a-f]{7,}$`).MatchString(d) {
		v = m[1]
	} else {
		v = "0~git" + date.UTC().Format("20060102") + "." + d
	}
	v = strings.ReplaceAll(v, "_", "~")
	if dirty {
		v += "+dirty"
	}
	return v
}

// sourceDate is $SOURCE_DATE_EPOCH, else the time of the last commit: the
// date of the manual pages and the files' mtime, so that two builds of one
// commit give the same package.
func sourceDate(ctx context.Context, src string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		var err error
		if s, err = git(ctx, src, "log", "-1", "--format=%ct"); err != nil {
			return time.Time{}, fmt.Errorf("source date: %w (or set SOURCE_DATE_EPOCH)", err)
		}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// goBuild builds sifd and sifctl for goos/goarch into dir.
func goBuild(ctx context.Context, o Options, goos, goarch, dir string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags=-s -w -X main.version="+o.Version, "-o", dir+string(filepath.Separator), "./cmd/sifd", "./cmd/sifctl")
	cmd.Dir = o.Src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-mod=readonly")
	if goarch == "arm" {
		cmd.Env = append(cmd.Env, "GOARM=7") // Debian's armhf
	}
	return run(cmd, o.Log)
}

// run runs cmd, logging its command line to log; its error carries the
// command's output.
func run(cmd *exec.Cmd, log io.Writer) error {
	fmt.Fprintln(log, "+", strings.Join(cmd.Args, " "))
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		log.Write(out)
	}
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	return nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// findRepo returns the nearest directory at or above the working directory
// whose go.mod declares sif's module.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && regexp.MustCompile(`(?m)^module github\.com/sif-dev/sif\s*$`).Match(mod) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no sif repository above the working directory (give -src)")
		}
		dir = parent
	}
}

// extractAssets writes the embedded configuration, maintainer scripts and
// init script into dir, the scripts executable.
func extractAssets(dir string) error {
	return fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, "scripts/") || strings.HasPrefix(p, "init.d/") {
			mode = 0o755
		}
		return os.WriteFile(dst, data, mode)
	})
}

// gzipFile compresses src into dst as Debian wants manual pages: best
// compression, no name, the given time.
func gzipFile(src, dst string, mtime time.Time) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = mtime
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
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
