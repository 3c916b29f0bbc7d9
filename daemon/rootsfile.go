package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/sif-dev/sif/ipc"
)

// The roots file in the state directory records the roots added and
// removed at run time (sifctl roots), so they outlive restarts. The roots
// in effect are those of the configuration, plus Added, minus Removed.
type rootsFile struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

const rootsFileName = "roots.json"

func (d *Daemon) rootsFilePath() string { return filepath.Join(d.stateDir(), rootsFileName) }

func (d *Daemon) loadRootsFile() (rootsFile, error) {
	var rf rootsFile
	b, err := os.ReadFile(d.rootsFilePath())
	if errors.Is(err, os.ErrNotExist) {
		return rf, nil
	}
	if err != nil {
		return rf, err
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		return rf, fmt.Errorf("%s: %w", d.rootsFilePath(), err)
	}
	return rf, nil
}

func (d *Daemon) saveRootsFile(rf rootsFile) error {
	b, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return err
	}
	name := d.rootsFilePath()
	tmp := name + ".tmp"
	if err := writeFileSync(tmp, append(b, '\n')); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

func writeFileSync(name string, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// effectiveRoots applies the roots file to the configured roots: the
// configured ones, plus those added with sifctl roots add, minus those
// removed with sifctl roots remove (which wins over the configuration,
// --root included, until the root is added again). It returns each root
// with its source.
func effectiveRoots(config []string, rf rootsFile) (paths []string, source map[string]string) {
	source = make(map[string]string)
	for _, p := range config {
		if !slices.Contains(rf.Removed, p) {
			source[p] = sourceConfig
		}
	}
	for _, p := range rf.Added {
		if _, ok := source[p]; !ok && !slices.Contains(rf.Removed, p) {
			source[p] = sourceAdded
		}
	}
	for p := range source {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// Drop roots inside other roots.
	out := paths[:0]
	for _, p := range paths {
		if len(out) > 0 && under(p, out[len(out)-1]) {
			delete(source, p)
			continue
		}
		out = append(out, p)
	}
	return out, source
}

// Sources of a root (ipc.RootStatus.Source), and the one logged for a
// configured root that is not in effect.
const (
	sourceConfig  = "config"            // the configuration file or --root
	sourceAdded   = "added"             // sifctl roots add, kept in the roots file
	sourceRemoved = "removed-by-sifctl" // configured, but sifctl roots remove took it out
)

// removedRoots returns the configured roots that the roots file takes out
// of effect (sifctl roots remove), sorted.
func removedRoots(config []string, rf rootsFile) []string {
	var out []string
	for _, p := range config {
		if slices.Contains(rf.Removed, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// logRoots logs the roots in effect, each with its source, and the
// configured roots that sifctl roots remove took out: what runs may differ
// from the configuration, and the log must say so and why.
func (d *Daemon) logRoots(what string, paths []string, source map[string]string, removed []string) {
	file := d.rootsFilePath()
	for _, p := range paths {
		d.log.Info(what, "root", p, "source", source[p])
	}
	for _, p := range removed {
		d.log.Warn(what+": configured root not in effect", "root", p, "source", sourceRemoved,
			"why", "removed with sifctl roots remove, recorded in "+file+"; sifctl roots add it to watch it again")
	}
}

// removedRoots returns the configured roots not in effect because sifctl
// roots remove took them out, for the status.
func (d *Daemon) removedRoots() []ipc.FilePath {
	rf, err := d.loadRootsFile()
	if err != nil {
		return nil
	}
	d.rmu.RLock() // not ctlMu: a reload holds it while it adds roots
	conf := d.cfg.Roots
	d.rmu.RUnlock()
	var out []ipc.FilePath
	for _, p := range removedRoots(conf, rf) {
		out = append(out, ipc.NewFilePath(p))
	}
	return out
}

// saveCurrentRoots writes the roots file from the roots in effect, for a
// state directory that was deleted (with the index directory's parent).
func (d *Daemon) saveCurrentRoots() {
	var rf rootsFile
	have := make(map[string]bool)
	for _, r := range d.rootList() {
		have[r.path] = true
		if r.source == sourceAdded {
			rf.Added = append(rf.Added, r.path)
		}
	}
	d.rmu.RLock()
	conf := d.cfg.Roots
	d.rmu.RUnlock()
	for _, p := range conf {
		if !have[p] {
			rf.Removed = append(rf.Removed, p)
		}
	}
	if len(rf.Added)+len(rf.Removed) == 0 {
		return
	}
	if err := d.saveRootsFile(rf); err != nil {
		d.log.Warn("cannot save the roots file", "err", err)
	}
}
