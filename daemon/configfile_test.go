package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
	"github.com/sif-dev/sif/watcher"
)

// TestConfigFiles loads every file in testdata/config. A file whose first
// lines are "# want: LINE: KEY: reason" must fail with exactly those errors,
// each prefixed with the file's name; "$DIR" stands for the directory. Other
// files must load.
func TestConfigFiles(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "config"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(strings.TrimSuffix(name, ".toml"), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, line := range strings.Split(string(text), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					want = append(want, file+":"+strings.ReplaceAll(w, "$DIR", dir))
				}
			}
			_, err = LoadConfigFile(file)
			if len(want) == 0 {
				if err != nil {
					t.Fatalf("LoadConfigFile: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("LoadConfigFile: no error, want\n%s", strings.Join(want, "\n"))
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("LoadConfigFile error:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *ConfigError", err)
			}
		})
	}
}

func TestConfigFileFull(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "config"))
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	fc, err := LoadConfigFile(filepath.Join("testdata", "config", "full.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := FileConfig{
		Path: filepath.Join(dir, "full.toml"),
		Config: Config{
			Roots:          []string{dir, dir, filepath.Clean(home)},
			Exclude:        []string{".git/", "node_modules/", "*.swp", "[a-c]?.tmp"},
			MinFileSize:    16,
			MaxFileSize:    256 << 20,
			SettleDelay:    250 * time.Millisecond,
			MaxSettleDelay: 5 * time.Second,
			RescanInterval: 15 * time.Minute,
			NetworkFS:      NetworkFSRefuse,
			Workers:        3,
			DB:             filepath.Join(dir, "state", "index"),
			Socket:         filepath.FromSlash("/run/sifd/test.sock"),
			MinFreeSpace:   32 << 20,
			Params:         fingerprint.Params{Scheme: fingerprint.Manber, Window: 32, Bits: 7, ModBits: 30},
		},
		LogLevel:    "debug",
		MemoryLimit: 96 << 20,
	}
	if !reflect.DeepEqual(fc, want) {
		t.Errorf("LoadConfigFile:\n got %+v\nwant %+v", fc, want)
	}
}

func TestConfigFileMissing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nope.toml")
	_, err := LoadConfigFile(file)
	if err == nil || err.Error() != file+": no such file or directory" {
		t.Errorf("LoadConfigFile(missing) = %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"0", 0, ""},
		{"4096", 4096, ""},
		{"12B", 12, ""},
		{"1K", 1024, ""},
		{"1k", 1024, ""},
		{"64KiB", 64 << 10, ""},
		{"2KB", 2000, ""},
		{"256MiB", 256 << 20, ""},
		{"256 MiB", 256 << 20, ""},
		{"3M", 3 << 20, ""},
		{"5MB", 5e6, ""},
		{"1G", 1 << 30, ""},
		{"1gib", 1 << 30, ""},
		{"1GB", 1e9, ""},
		{"2T", 2 << 40, ""},
		{"unlimited", -1, ""},
		{"", 0, `"": want a size`},
		{"MiB", 0, `"MiB": want a size`},
		{"-1", 0, `"-1": want a size`},
		{"1.5G", 0, `"1.5G": unknown unit ".5G"`},
		{"10 parsecs", 0, `"10 parsecs": unknown unit "parsecs"`},
		{"9223372036854775807", 1<<63 - 1, ""},
		{"9223372036854775808", 0, `"9223372036854775808": too large`},
		{"8388608T", 0, `"8388608T": too large`},
	} {
		got, err := ParseSize(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseSize(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("ParseSize(%q) error = %v, want %s...", tc.in, err, tc.err)
		case got != tc.want:
			t.Errorf("ParseSize(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"0", 0, ""},
		{"0s", 0, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{" 2s ", 2 * time.Second, ""},
		{"1m30s", 90 * time.Second, ""},
		{"1.5h", 90 * time.Minute, ""},
		{"-1s", 0, `"-1s": want 0 or more`},
		{"500", 0, `"500": want a duration`},
		{"10 seconds", 0, `"10 seconds": want a duration`},
		{"", 0, `"": want a duration`},
	} {
		got, err := ParseDuration(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseDuration(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("ParseDuration(%q) error = %v, want %s...", tc.in, err, tc.err)
		case got != tc.want:
			t.Errorf("ParseDuration(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestKeyLines checks the key scanner on TOML that hides keys in strings,
// arrays, inline tables and comments.
func TestKeyLines(t *testing.T) {
	src := `a = 1 # b = 2
"quoted key" = """
c = 3
"""
d = [
  "e = 4", 'f = 5', { g = 6 },
]
h.i = { j = 7, k.l = 8 }

[t]
m = '''
n = 9'''
[[arr]]
o = 10
[ "t2" . u ]
p = "x\"q = 11"
`
	got := keyLines(src)
	want := map[string]int{
		"a": 1, `"quoted key"`: 2, "d": 5, "d.g": 6, "h": 8, "h.i": 8, "h.i.j": 8, "h.i.k": 8, "h.i.k.l": 8,
		"t": 10, "t.m": 11, "arr": 13, "arr.o": 14, "t2": 15, "t2.u": 15, "t2.u.p": 16,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keyLines:\n got %v\nwant %v", got, want)
	}
}

// TestKeyLinesEnds feeds the scanner broken TOML, which it must not loop on.
func TestKeyLinesEnds(t *testing.T) {
	for _, src := range []string{"[", "a = [", "a = {", `a = "`, `a = """`, "= = =", "]]]", "a = [}", "a.", "[a", "a = {b = [}"} {
		keyLines(src)
	}
}

func FuzzKeyLines(f *testing.F) {
	for _, s := range []string{"a = 1", "[t]\nb = [1, {c = 2}]", `"k" = """x"""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		keyLines(src)
	})
}

// TestPackagedConfigFile checks the configuration file the Debian package
// installs as /etc/sifd/config.toml: as shipped, every key commented out,
// it loads and sets nothing; uncommented, each "#key = value" line is a
// valid setting equal to the default, and together they name every key
// sifd accepts.
func TestPackagedConfigFile(t *testing.T) {
	path := filepath.Join("..", "packaging", "deb", "config.toml")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := LoadConfigFile(path)
	if err != nil {
		t.Fatalf("the shipped file: %v", err)
	}
	if !reflect.DeepEqual(fc.Config, Config{}) || fc.LogLevel != "" {
		t.Errorf("the shipped file sets %+v, log level %q; want nothing", fc.Config, fc.LogLevel)
	}

	// The settings are the lines "#key = value" and "#[scheme]".
	root := t.TempDir()
	chunkKeys := map[string]bool{"min_chunk": true, "avg_chunk": true, "max_chunk": true}
	manberKeys := map[string]bool{"window": true, "bits": true, "mod_bits": true, "min_bits": true, "target": true}
	uncomment := func(chunks bool) (string, []string) {
		var out, keys []string
		table := ""
		for _, line := range strings.Split(string(text), "\n") {
			if line == "#[scheme]" {
				table = "scheme."
				keys = append(keys, "scheme")
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
			case table != "" && key == "scheme" && chunks:
				line = `#scheme = "chunks"`
			case table != "" && !chunks && chunkKeys[key], table != "" && chunks && manberKeys[key]:
				continue
			}
			out = append(out, line[1:])
		}
		return strings.Join(out, "\n") + "\n", keys
	}
	manber, keys := uncomment(false)
	slices.Sort(keys)
	known := slices.Sorted(slices.Values(knownKeys))
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
		file := filepath.Join(dir, c.name+".toml")
		if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		fc, err := LoadConfigFile(file)
		if err != nil {
			t.Errorf("%s settings uncommented: %v\n%s", c.name, err, c.text)
			continue
		}
		want := Config{
			Roots: []string{root}, Exclude: []string{".git/", "node_modules/", "*.swp"},
			MaxFileSize: DefaultMaxFileSize, SettleDelay: watcher.DefaultSettleDelay, MaxSettleDelay: watcher.DefaultMaxSettleDelay,
			RescanInterval: DefaultRescanInterval, NetworkFS: NetworkFSScan, DB: SystemDB, Socket: ipc.SystemSocket,
			SocketAccess: SocketAll, OperatorGroup: "root", MinFreeSpace: DefaultMinFreeSpace,
			Params: c.params,
		}
		if !reflect.DeepEqual(fc.Config, want) || fc.LogLevel != "info" {
			t.Errorf("%s settings uncommented:\n got %+v, log level %q\nwant %+v (the defaults)", c.name, fc.Config, fc.LogLevel, want)
		}
	}
}
