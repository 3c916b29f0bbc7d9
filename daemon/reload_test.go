package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/watcher"
)

// reloader stands for the configuration file: reload (SIGHUP) reads
// what set last put there.
type reloader struct {
	mu   sync.Mutex
	cfg  Config
	err  error
	read int
}

func (r *reloader) set(c Config, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cfg, r.err = c, err
}

func (r *reloader) load() (Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read++
	return r.cfg, r.err
}

// reloadDaemon runs a bubbleDaemon on *cfg, whose Reload reads what the
// returned reloader was last set to (*cfg to begin with). It names the
// index, socket and workers in *cfg, so that a configuration derived from
// it changes only what the test changes.
func reloadDaemon(t *testing.T, cfg *Config) (*Daemon, *lockedBuffer, *reloader) {
	t.Helper()
	cfg.DB = filepath.Join(t.TempDir(), "db")
	cfg.Socket = filepath.Join(t.TempDir(), "s.sock")
	cfg.Workers = 2
	rl := &reloader{cfg: *cfg}
	c := *cfg
	c.Reload = rl.load
	d, logs := bubbleDaemon(t, c)
	return d, logs, rl
}

// reloadNow reloads the configuration, as on SIGHUP, and lets what the
// reload started finish.
func reloadNow(d *Daemon) {
	d.reload()
	synctest.Wait()
}

func rootPathsOf(st []ipc.RootStatus) []string {
	var out []string
	for _, r := range st {
		out = append(out, r.Path)
	}
	return out
}

// A reload applies the roots of the new configuration at once, with
// sifctl's changes, which win: a root the configuration drops loses its
// files' records, one it adds is scanned, a root removed with sifctl
// roots remove stays out though the configuration names it, one added
// with sifctl roots add stays though it does not; roots that stay keep
// their records and are not rescanned when the filters did not change.
// Reloading the same configuration changes nothing.
func TestReloadRoots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, b, c, e := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c"), filepath.Join(base, "e")
		files := map[string][]byte{}
		for i, dir := range []string{a, b, c, e} {
			files[filepath.Join(dir, "1.txt")] = words(uint64(10*i+1), 800)
			files[filepath.Join(dir, "2.txt")] = words(uint64(10*i+2), 800)
		}
		writeFiles(t, files)
		cfg := Config{Roots: []string{a, b}}
		d, logs, rl := reloadDaemon(t, &cfg)
		if err := d.AddRoot(e); err != nil {
			t.Fatal(err)
		}
		if err := d.RemoveRoot(b); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		scansE := rootNamed(t, d, e).status().Scans

		// The configuration drops a and adds c; it names b, which sifctl
		// removed, and not e, which sifctl added.
		nc := cfg
		nc.Roots = []string{b, c}
		rl.set(nc, nil)
		reloadNow(d)
		st := d.Status()
		if got, want := rootPathsOf(st.Roots), []string{c, e}; !slices.Equal(got, want) {
			t.Errorf("roots after the reload: %q, want %q", got, want)
		}
		if got := st.RemovedRoots; len(got) != 1 || got[0].Exact() != b {
			t.Errorf("removed roots in the status: %+v, want %s", got, b)
		}
		for dir, want := range map[string][]string{a: nil, b: nil, c: {"1.txt", "2.txt"}, e: {"1.txt", "2.txt"}} {
			if got := recordsUnder(d, dir); !slices.Equal(got, want) {
				t.Errorf("records under %s after the reload: %q, want %q", dir, got, want)
			}
		}
		for _, r := range st.Roots {
			if r.State != ipc.RootPolling {
				t.Errorf("root %s after the reload: %s (%s), want it scanned and %s", r.Path, r.State, r.Reason, ipc.RootPolling)
			}
		}
		if got := rootNamed(t, d, c).status(); got.Source != sourceConfig || got.Scans != 1 {
			t.Errorf("root added by the reload: source %q, %d scans, want %q and 1", got.Source, got.Scans, sourceConfig)
		}
		if got := rootNamed(t, d, e).status(); got.Source != sourceAdded || got.Scans != scansE {
			t.Errorf("root added with sifctl: source %q, %d scans, want %q and no new scan (%d)", got.Source, got.Scans, sourceAdded, scansE)
		}
		for _, line := range []string{
			`msg="reload: root" root=` + c + ` source=config`,
			`msg="reload: root" root=` + e + ` source=added`,
			`msg="reload: root: configured root not in effect" root=` + b + ` source=removed-by-sifctl`,
			`msg="configuration reloaded" roots_added=[` + c + `] roots_removed=[` + a + `] filters_changed=false`,
		} {
			if !strings.Contains(logs.String(), line) {
				t.Errorf("log lacks %s\n%s", line, logs.String())
			}
		}

		// The same configuration again: nothing changes.
		scans := map[string]uint64{}
		for _, r := range d.Roots() {
			scans[r.Path] = r.Scans
		}
		stats, _ := d.ix.Stats()
		reloadNow(d)
		for _, r := range d.Roots() {
			if r.Scans != scans[r.Path] {
				t.Errorf("the same configuration reloaded: root %s scanned again", r.Path)
			}
		}
		if s, _ := d.ix.Stats(); s.Files != stats.Files || !slices.Equal(d.rootPaths(), []string{c, e}) {
			t.Errorf("the same configuration reloaded: roots %q, %d files; want [c e], %d files", d.rootPaths(), s.Files, stats.Files)
		}
		if !strings.Contains(logs.String(), `msg="configuration reloaded" roots_added=[] roots_removed=[] filters_changed=false`) {
			t.Errorf("second reload not logged as changing nothing\n%s", logs.String())
		}
		if strings.Contains(logs.String(), "takes effect at restart") {
			t.Errorf("a reload that changes no key logged one as needing a restart\n%s", logs.String())
		}
	})
}

// Exclusions and size limits apply at once: every root the reload did not
// add is reconciled, so files now excluded or out of the limits lose their
// records and files now included are read; files that stay are not read
// again. A change of the minimum size alone is a change of the filters.
func TestReloadFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, c := filepath.Join(base, "a"), filepath.Join(base, "c")
		writeFiles(t, map[string][]byte{
			filepath.Join(a, "keep.txt"):  words(1, 1000), // about 6 KB
			filepath.Join(a, "x.log"):     words(2, 1000),
			filepath.Join(a, "y.tmp"):     words(3, 1000),
			filepath.Join(a, "big.txt"):   words(4, 4000), // about 24 KB
			filepath.Join(a, "small.txt"): []byte("a few bytes of text\n"),
			filepath.Join(c, "1.txt"):     words(5, 1000),
		})
		cfg := Config{Roots: []string{a}, Exclude: []string{"*.log"}, MaxFileSize: 16 << 10}
		d, logs, rl := reloadDaemon(t, &cfg)
		if got, want := recordsUnder(d, a), []string{"keep.txt", "small.txt", "y.tmp"}; !slices.Equal(got, want) {
			t.Fatalf("records at start: %q, want %q", got, want)
		}
		read := d.count.snapshot().Indexed

		nc := cfg
		nc.Roots = []string{a, c}
		nc.Exclude = []string{"*.tmp"}
		nc.MaxFileSize = 64 << 10
		rl.set(nc, nil)
		reloadNow(d)
		if got, want := recordsUnder(d, a), []string{"big.txt", "keep.txt", "small.txt", "x.log"}; !slices.Equal(got, want) {
			t.Errorf("records after exclusions and the size limit changed: %q, want %q", got, want)
		}
		// big.txt, x.log and c's file are read; keep.txt and small.txt are not.
		if n := d.count.snapshot().Indexed - read; n != 3 {
			t.Errorf("the reload read %d files, want 3 (big.txt, x.log, and c/1.txt)", n)
		}
		if got := rootNamed(t, d, c).status(); got.Scans != 1 || !slices.Equal(recordsUnder(d, c), []string{"1.txt"}) {
			t.Errorf("root added by the reload: %d scans, records %q; want one scan (its first), 1.txt", got.Scans, recordsUnder(d, c))
		}
		if !strings.Contains(logs.String(), `msg="configuration reloaded" roots_added=[`+c+`] roots_removed=[] filters_changed=true`) {
			t.Errorf("reload not logged\n%s", logs.String())
		}
		if !slices.Equal(d.cfg.Exclude, nc.Exclude) || d.cfg.MaxFileSize != nc.MaxFileSize {
			t.Errorf("running configuration: exclude %q, max size %d; want %q, %d", d.cfg.Exclude, d.cfg.MaxFileSize, nc.Exclude, nc.MaxFileSize)
		}

		nc.MinFileSize = 100
		rl.set(nc, nil)
		reloadNow(d)
		if got, want := recordsUnder(d, a), []string{"big.txt", "keep.txt", "x.log"}; !slices.Equal(got, want) {
			t.Errorf("records after the minimum size changed: %q, want %q", got, want)
		}

		// A lower maximum: files now above it lose their records.
		nc.MaxFileSize = 16 << 10
		rl.set(nc, nil)
		reloadNow(d)
		if got, want := recordsUnder(d, a), []string{"keep.txt", "x.log"}; !slices.Equal(got, want) {
			t.Errorf("records after the maximum size was lowered: %q, want %q", got, want)
		}
	})
}

// Keys that cannot change while sifd runs are each logged as taking
// effect at restart, and left as they are.
func TestReloadRestartKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := t.TempDir()
		writeFiles(t, map[string][]byte{filepath.Join(a, "1.txt"): words(1, 1000)})
		cfg := Config{Roots: []string{a}}
		d, logs, rl := reloadDaemon(t, &cfg)
		old := d.cfg
		other := fingerprint.DefaultParams()
		other.Window++
		nc := old
		nc.DB += ".new"
		nc.Socket += ".new"
		nc.SocketAccess = config.SocketAll
		nc.OperatorGroup = strconv.Itoa(os.Getegid())
		nc.Workers++
		nc.Params = other
		nc.SettleDelay += time.Second
		nc.MaxSettleDelay += time.Second
		nc.RescanInterval += time.Minute
		nc.NetworkFS = config.NetworkFSRefuse
		nc.MinFreeSpace += 1 << 20
		if old.SocketAccess == nc.SocketAccess || old.NetworkFS == nc.NetworkFS {
			t.Fatalf("test configuration changes nothing: socket access %q, network fs %q", old.SocketAccess, old.NetworkFS)
		}
		rl.set(nc, nil)
		reloadNow(d)
		for _, key := range []string{"db", "socket", "socket_access", "operator_group", "workers", "scheme", "settle_delay",
			"max_settle_delay", "rescan_interval", "network_fs", "min_free_space"} {
			if n := strings.Count(logs.String(), `msg="configuration change takes effect at restart" key=`+key+"\n"); n != 1 {
				t.Errorf("key %s logged %d times as taking effect at restart, want once", key, n)
			}
		}
		now := d.cfg
		if now.DB != old.DB || now.Socket != old.Socket || now.SocketAccess != old.SocketAccess || now.OperatorGroup != old.OperatorGroup ||
			now.Workers != old.Workers || now.Params != old.Params || now.SettleDelay != old.SettleDelay || now.MaxSettleDelay != old.MaxSettleDelay ||
			now.RescanInterval != old.RescanInterval || now.NetworkFS != old.NetworkFS || now.MinFreeSpace != old.MinFreeSpace {
			t.Errorf("restart-only keys changed in the running configuration: %+v, was %+v", now, old)
		}
		if d.ix.Params() == other {
			t.Error("the index's scheme changed on reload")
		}
	})
}

// An invalid configuration is refused: logged, named in the status, and
// the running configuration stays, its roots, filters and records
// included. A new root that cannot be added is refused alone: named in
// the status while the rest of the reload applies.
func TestReloadRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := t.TempDir()
		a, b, n := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "an") // n sorts before b
		writeFiles(t, map[string][]byte{
			filepath.Join(a, "1.txt"): words(1, 1000),
			filepath.Join(a, "2.log"): words(2, 1000),
			filepath.Join(b, "1.txt"): words(3, 1000),
			filepath.Join(n, "1.txt"): words(4, 1000),
		})
		notDir := filepath.Join(base, "file")
		writeFiles(t, map[string][]byte{notDir: []byte("not a directory\n")})
		cfg := Config{Roots: []string{a}, Exclude: []string{"*.log"}, NetworkFS: config.NetworkFSRefuse}
		d, logs, rl := reloadDaemon(t, &cfg)
		want := recordsUnder(d, a)

		for _, tc := range []struct {
			name   string
			err    error
			change func(*Config)
			status string // in the last errors
		}{
			{"the file does not parse", errors.New(`/etc/sifd/config.toml:3: max_size: "12 parsecs": unknown unit`), nil,
				`reload: /etc/sifd/config.toml:3: max_size: "12 parsecs": unknown unit`},
			{"a root is not a directory", nil, func(c *Config) { c.Roots = []string{a, notDir}; c.Exclude = nil }, "reload: root " + notDir},
			{"no roots", nil, func(c *Config) { c.Roots = nil; c.Exclude = nil }, "reload: no roots"},
			{"a bad exclusion", nil, func(c *Config) { c.Roots = []string{b}; c.Exclude = []string{"[x"} }, "reload: exclude: "},
		} {
			nc := cfg
			if tc.change != nil {
				tc.change(&nc)
			}
			rl.set(nc, tc.err)
			before := strings.Count(logs.String(), `msg="reload failed: keeping the running configuration"`)
			reloadNow(d)
			if strings.Count(logs.String(), `msg="reload failed: keeping the running configuration"`) != before+1 {
				t.Errorf("%s: refusal not logged\n%s", tc.name, logs.String())
			}
			if countLines(d.Status().LastError, tc.status) != 1 {
				t.Errorf("%s: last errors %q, want one with %q", tc.name, d.Status().LastError, tc.status)
			}
			if got := d.rootPaths(); !slices.Equal(got, []string{a}) {
				t.Errorf("%s: roots %q, want the running ones [%s]", tc.name, got, a)
			}
			if !slices.Equal(d.cfg.Exclude, cfg.Exclude) {
				t.Errorf("%s: exclusions %q, want the running ones %q", tc.name, d.cfg.Exclude, cfg.Exclude)
			}
			if got := recordsUnder(d, a); !slices.Equal(got, want) {
				t.Errorf("%s: records %q, want %q kept", tc.name, got, want)
			}
		}
		if rl.read != 4 {
			t.Errorf("configuration read %d times, want 4", rl.read)
		}

		// n is on a filesystem without events, which the configuration
		// refuses; b is fine.
		old := detectFS
		detectFS = func(p string) (watcher.FSKind, string, error) {
			if p == n {
				return watcher.NetworkFS, "nfs", nil
			}
			return old(p)
		}
		t.Cleanup(func() { detectFS = old })
		nc := cfg
		nc.Roots = []string{a, b, n}
		rl.set(nc, nil)
		reloadNow(d)
		if got := d.rootPaths(); !slices.Equal(got, []string{a, b}) {
			t.Errorf("roots after a reload adding a refused root: %q, want [%s %s]", got, a, b)
		}
		if countLines(d.Status().LastError, "reload: root "+n+": on a network filesystem (nfs)") != 1 {
			t.Errorf("last errors %q, want the refused root named", d.Status().LastError)
		}
		if got := recordsUnder(d, b); !slices.Equal(got, []string{"1.txt"}) {
			t.Errorf("records under %s, added with the refused root: %q", b, got)
		}
		if !strings.Contains(logs.String(), `msg="configuration reloaded" roots_added=[`+b+`] roots_removed=[] filters_changed=false`) {
			t.Errorf("reload with a refused root not logged as done\n%s", logs.String())
		}
	})
}
