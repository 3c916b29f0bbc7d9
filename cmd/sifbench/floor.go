package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

// floorResult is the work a first scan cannot skip, done in this process
// with no index: what sifd's CPU and its speed-up with 2 workers are
// weighed against.
type floorResult struct {
	// CPUSecs is the CPU (user and system, the process's) of one pass
	// with 1 worker: walk the tree, open, stat, read and SHA-256 every
	// file, and sketch each distinct content once, without SimiHash.
	CPUSecs float64 `json:"cpu_seconds"`
	// OneSecs and TwoSecs are the medians of the wall times of the same
	// pass with 1 and with 2 workers, the walk on a goroutine of its own
	// as in sifd; TwoOverOne is this machine's speed-up on work that
	// shares nothing but the page cache.
	OneSecs    float64 `json:"one_worker_seconds"`
	TwoSecs    float64 `json:"two_workers_seconds"`
	TwoOverOne float64 `json:"two_workers_speedup"`
}

// measureFloor times floorPass over dir runs times with 1 worker and as
// many with 2, in turn, and returns the medians.
func measureFloor(dir string, runs int) (*floorResult, error) {
	var cpus, ones, twos []float64
	for range max(runs, 1) {
		for _, workers := range []int{1, 2} {
			if err := warm(dir); err != nil {
				return nil, err
			}
			c0, err := cpuSeconds(os.Getpid())
			if err != nil {
				return nil, err
			}
			t0 := time.Now()
			if err := floorPass(dir, workers); err != nil {
				return nil, err
			}
			wall := since(t0)
			c1, err := cpuSeconds(os.Getpid())
			if err != nil {
				return nil, err
			}
			if workers == 1 {
				ones = append(ones, wall)
				cpus = append(cpus, c1-c0)
			} else {
				twos = append(twos, wall)
			}
		}
	}
	r := &floorResult{CPUSecs: median(cpus), OneSecs: median(ones), TwoSecs: median(twos)}
	r.TwoOverOne = r.OneSecs / r.TwoSecs
	return r, nil
}

// floorPass walks dir on one goroutine and hands every regular file to
// workers goroutines, which open, stat, read and SHA-256 it, and sketch its
// content with the default parameters and no SimiHash unless a file of the
// same SHA-256 was sketched before: the reading, hashing and
// fingerprinting a first scan of dir does, without the index.
func floorPass(dir string, workers int) error {
	paths := make(chan string, 256)
	var (
		mu   sync.Mutex
		seen = make(map[[32]byte]struct{})
		errs = make(chan error, workers+1)
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			sk, err := fingerprint.NewSketcher(fingerprint.DefaultParams(), func(fingerprint.Fingerprint) {})
			if err != nil {
				errs <- err
				return
			}
			sk.SkipSimiHash()
			var buf []byte
			for p := range paths {
				if buf, err = readAll(p, buf); err != nil {
					errs <- err
					continue
				}
				sum := sha256.Sum256(buf)
				mu.Lock()
				_, dup := seen[sum]
				seen[sum] = struct{}{}
				mu.Unlock()
				if !dup {
					sk.Reset()
					sk.Write(buf)
					sk.Finish()
				}
			}
		})
	}
	werr := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type().IsRegular() {
			paths <- p
		}
		return err
	})
	close(paths)
	wg.Wait()
	close(errs)
	if werr != nil {
		return werr
	}
	return <-errs
}

// readAll reads the file p into buf, grown to the file's size, and returns
// it.
func readAll(p string, buf []byte) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	buf = buf[:0]
	if fi, err := f.Stat(); err == nil && int64(cap(buf)) < fi.Size()+1 {
		buf = make([]byte, 0, fi.Size()+1)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+k]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// sha256Floor is sha256sum over every regular file of a tree in as many
// processes at once, each given its share of the files (splitBySize):
// reading and hashing every byte on every core, the floor a first scan's
// time to ready is weighed against.
type sha256Floor struct {
	dir   string
	lists [][]byte // each process's file names, NUL-terminated
}

// newSHA256Floor lists the regular files under dir and splits them for
// procs processes.
func newSHA256Floor(dir string, procs int) (*sha256Floor, error) {
	var files []sizedFile
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files = append(files, sizedFile{rel, fi.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	f := &sha256Floor{dir: dir}
	for _, part := range splitBySize(files, procs) {
		var b bytes.Buffer
		for _, name := range part {
			b.WriteString(name)
			b.WriteByte(0)
		}
		f.lists = append(f.lists, b.Bytes())
	}
	return f, nil
}

// time runs the processes at once over a warm page cache and returns
// their wall time.
func (f *sha256Floor) time(ctx context.Context) (float64, error) {
	if err := warm(f.dir); err != nil {
		return 0, err
	}
	cmds := make([]*exec.Cmd, len(f.lists))
	t0 := time.Now()
	for k := range cmds {
		cmds[k] = exec.CommandContext(ctx, "xargs", "-0", "sha256sum")
		cmds[k].Dir, cmds[k].Stderr = f.dir, os.Stderr
		cmds[k].Stdin = bytes.NewReader(f.lists[k])
		if err := cmds[k].Start(); err != nil {
			return 0, fmt.Errorf("sha256sum: %w", err)
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return 0, fmt.Errorf("sha256sum: %w", err)
		}
	}
	return since(t0), nil
}

// sizedFile is a file's name and size.
type sizedFile struct {
	name string
	size int64
}

// splitBySize splits files into procs lists of about the same total size:
// the largest first, each to the list holding the fewest bytes so far.
func splitBySize(files []sizedFile, procs int) [][]string {
	files = slices.Clone(files)
	sort.SliceStable(files, func(i, j int) bool { return files[i].size > files[j].size })
	parts := make([][]string, procs)
	sizes := make([]int64, procs)
	for _, f := range files {
		k := 0
		for j := range sizes {
			if sizes[j] < sizes[k] {
				k = j
			}
		}
		sizes[k] += f.size
		parts[k] = append(parts[k], f.name)
	}
	return parts
}
