package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

// copyModCache copies every version of the modules named in spec (a
// comma-separated list of module paths, such as
// golang.org/x/tools,golang.org/x/net) found in the Go module cache into
// dst, one directory per module version, and returns the corpus's name,
// its number of files and their total size. Versions of one module share
// most of their files byte for byte, as any tree of releases does.
func copyModCache(spec, dst string) (name string, files int, bytes int64, err error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", 0, 0, fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	cache := strings.TrimSpace(string(out))
	var versions []string
	for _, mod := range strings.Split(spec, ",") {
		mod = strings.TrimSpace(mod)
		if mod == "" {
			continue
		}
		// The module cache escapes upper-case letters as !x; the modules
		// asked for here are given in the cache's spelling.
		matches, err := filepath.Glob(filepath.Join(cache, filepath.FromSlash(mod)+"@*"))
		if err != nil {
			return "", 0, 0, fmt.Errorf("--modcache %s: %w", mod, err)
		}
		if len(matches) == 0 {
			return "", 0, 0, fmt.Errorf("--modcache: no version of %s in %s (go mod download %s@VERSION fetches one)", mod, cache, mod)
		}
		versions = append(versions, matches...)
	}
	if len(versions) == 0 {
		return "", 0, 0, errors.New("--modcache: no module named")
	}
	sort.Strings(versions)
	for _, v := range versions {
		rel, _ := filepath.Rel(cache, v)
		n, b, err := copyTree(v, filepath.Join(dst, rel))
		if err != nil {
			return "", 0, 0, fmt.Errorf("copying %s: %w", v, err)
		}
		files += n
		bytes += b
	}
	name = fmt.Sprintf("%d versions of %s from %s", len(versions), spec, cache)
	return name, files, bytes, nil
}

// sketchTree runs fingerprint's Sketcher with the default parameters over
// every regular file under dir, as its benchmark does (the fingerprints
// counted, not collected; without SimiHash, as sifd runs it, when
// noSimi), and returns the CPU time the sketching took on its thread,
// reading excluded.
func sketchTree(dir string, noSimi bool) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := 0
	sk, err := fingerprint.NewSketcher(fingerprint.DefaultParams(), func(fingerprint.Fingerprint) { n++ })
	if err != nil {
		return 0, err
	}
	if noSimi {
		sk.SkipSimiHash()
	}
	var buf []byte
	var cpu time.Duration
	err = filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		if buf, err = readAll(p, buf); err != nil {
			return err
		}
		t0 := threadCPU()
		sk.Reset()
		sk.Write(buf)
		sk.Finish()
		cpu += threadCPU() - t0
		return nil
	})
	if n == 0 && err == nil {
		err = fmt.Errorf("%s: the sketcher emitted nothing", dir)
	}
	return cpu.Seconds(), err
}

// profileScan runs sifd on a fresh index of corpus with --pprof, and saves
// its CPU profile over the scan (secs seconds, the time a scan took, plus
// a margin) to cf.cpuProfile and its heap profile once ready to
// cf.memProfile.
func profileScan(ctx context.Context, sifd, corpus, work string, secs float64, cf *corpusFlags) error {
	if err := warm(corpus); err != nil {
		return err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	os.MkdirAll(work, 0o755)
	d, err := launchDaemon(sifd, corpus, work, "--workers", "2", "--pprof", addr)
	if err != nil {
		return err
	}
	defer d.stop()
	cpuDone := make(chan error, 1)
	if cf.cpuProfile != "" {
		go func() {
			seconds := int(math.Ceil(secs)) + 1
			var err error
			for range 200 { // the listener comes up a moment after the start
				if err = fetchProfile(ctx, addr, fmt.Sprintf("profile?seconds=%d", seconds), cf.cpuProfile); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			cpuDone <- err
		}()
	} else {
		cpuDone <- nil
	}
	if err := d.waitReady(ctx); err != nil {
		return err
	}
	if cf.memProfile != "" {
		if err := fetchProfile(ctx, addr, "heap", cf.memProfile); err != nil {
			return err
		}
	}
	if err := <-cpuDone; err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	return nil
}
