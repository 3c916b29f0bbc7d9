package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/watcher"
)

// TestPackagedConfigFile checks the configuration file the Debian package
// installs as /etc/sifd/config.toml: as shipped, every key commented out,
// it loads and sets nothing; uncommented, each "#key = value" line is a
// valid setting equal to the default, and together they name every key
// sifd accepts.
func TestPackagedConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "packaging", "deb", "config.toml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := config.Load(path)
	if err != nil {
		t.Fatalf("the shipped file: %v", err)
	}
	if want := (config.File{Path: fc.Path}); !reflect.DeepEqual(fc, want) {
		t.Errorf("the shipped file sets %+v; want nothing", fc)
	}

	// The settings are the lines "#key = value" and "#[scheme]".
	root := t.TempDir()
	chunkKeys := map[string]bool{"min_chunk": true, "avg_chunk": true, "max_chunk": true}
	manberKeys := map[string]bool{"window": true, "bits": true, "mod_bits": true, "min_bits": true, "target": true}
	uncomment := func(chunks bool) (string, []string) {
		var out, keys []string
		table := ""
		for _, line := range strings.Split(string(text), "\n") {
			if name, ok := strings.CutPrefix(line, "#["); ok && strings.HasSuffix(name, "]") {
				name = strings.TrimSuffix(name, "]")
				table = name + "."
				keys = append(keys, name)
				out = append(out, line[1:])
				continue
			}
			key, _, ok := strings.Cut(strings.TrimPrefix(line, "#"), " = ")
			if !strings.HasPrefix(line, "#") || !ok || strings.ContainsAny(key, " #") {
				continue
			}
			keys = append(keys, table+key)
			switch {
			case key == "roots":
				line = "#roots = [" + strconv.Quote(root) + "]"
			case key == "operator_group":
				line = `#operator_group = "root"` // one that exists everywhere
			case table == "scheme." && key == "scheme" && chunks:
				line = `#scheme = "chunks"`
			case table == "scheme." && !chunks && chunkKeys[key], table == "scheme." && chunks && manberKeys[key]:
				continue
			}
			out = append(out, line[1:])
		}
		return strings.Join(out, "\n") + "\n", keys
	}
	manber, keys := uncomment(false)
	slices.Sort(keys)
	known := slices.Sorted(slices.Values(config.KnownKeys))
	if !slices.Equal(keys, known) {
		t.Errorf("%s shows the keys %q, want every key sifd accepts: %q", path, keys, known)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		params     fingerprint.Params
	}{
		{"manber", manber, fingerprint.DefaultParams()},
		{"chunks", func() string { s, _ := uncomment(true); return s }(), fingerprint.Params{Scheme: fingerprint.Chunks, MinChunk: 64, AvgChunk: 256, MaxChunk: 2048}},
	} {
		simihash := index.DefaultSimiHash // the template shows the default
		file := filepath.Join(dir, c.name+".toml")
		if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		fc, err := config.Load(file)
		if err != nil {
			t.Errorf("%s settings uncommented: %v\n%s", c.name, err, c.text)
			continue
		}
		want := config.File{
			Path:  file,
			Roots: []string{root}, Exclude: []string{".git/", "node_modules/", "*.swp"},
			MaxFileSize: daemon.DefaultMaxFileSize, SettleDelay: watcher.DefaultSettleDelay, MaxSettleDelay: watcher.DefaultMaxSettleDelay,
			RescanInterval: daemon.DefaultRescanInterval, NetworkFS: config.NetworkFSScan, DB: daemon.SystemDB, Socket: ipc.SystemSocket,
			SocketAccess: config.SocketAll, OperatorGroup: "root", MinFreeSpace: config.DefaultMinFreeSpace,
			Params: c.params, SimiHash: &simihash, LogLevel: "info", MemoryLimit: config.DefaultMemoryLimit,
		}
		// [fleet] has examples where it has no defaults.
		if fl := fc.Fleet; fl == nil {
			t.Errorf("%s settings uncommented: no [fleet]", c.name)
		} else {
			host, err := fl.HostName(func() (string, error) { return "", errors.New("no hostname") })
			if fl.URLFile != "/etc/sifd/fleet.url" || err != nil || host != "fs1" || !slices.Equal(fl.Publish, []string{"/srv"}) ||
				fl.Silence != config.DefaultFleetSilence || fl.Timeout != config.DefaultFleetTimeout || fl.AskGroup != config.DefaultFleetAskGroup {
				t.Errorf("%s settings uncommented: [fleet] is %+v; want the defaults and the examples", c.name, fl)
			}
			if !strings.Contains(string(text), "\n#ask_group = "+strconv.Quote(config.DefaultFleetAskGroup)+"\n") {
				t.Errorf("%s does not show ask_group's default, %q", path, config.DefaultFleetAskGroup)
			}
			fc.Fleet = nil
		}
		if !reflect.DeepEqual(fc, want) {
			t.Errorf("%s settings uncommented:\n got %+v\nwant %+v (the defaults)", c.name, fc, want)
		}
	}
}
