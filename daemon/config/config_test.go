package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sif-dev/sif/index/fingerprint"
)

// TestConfigFiles loads every file in testdata. A file whose first
// lines are "# want: LINE: KEY: reason" must fail with exactly those errors,
// each prefixed with the file's name; "$DIR" stands for the directory. Other
// files must load.
func TestConfigFiles(t *testing.T) {
	dir, err := filepath.Abs("testdata")
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
			_, err = Load(file)
			if len(want) == 0 {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load: no error, want\n%s", strings.Join(want, "\n"))
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("Load error:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error %T is not a *Error", err)
			}
		})
	}
}

var simihashOn = true

func TestFileFull(t *testing.T) {
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	fc, err := Load(filepath.Join("testdata", "full.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := File{
		Path:           filepath.Join(dir, "full.toml"),
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
		SimiHash:       &simihashOn,
		LogLevel:       "debug",
		MemoryLimit:    96 << 20,
	}
	if !reflect.DeepEqual(fc, want) {
		t.Errorf("Load:\n got %+v\nwant %+v", fc, want)
	}
}

func TestFileMissing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nope.toml")
	_, err := Load(file)
	if err == nil || err.Error() != file+": no such file or directory" {
		t.Errorf("Load(missing) = %v", err)
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
		{"1.5G", 3 << 29, ""},
		{"0.5GiB", 1 << 29, ""},
		{"1.5 kb", 1500, ""},
		{"1.0001KB", 1000, ""}, // rounded down to whole bytes
		{"1MB", 1e6, ""},       // sifbench's --size
		{"512KiB", 512 << 10, ""},
		{"1GiB", 1 << 30, ""},
		{"1.5", 0, `"1.5": want a whole number of bytes`},
		{"1.5B", 0, `"1.5B": want a whole number of bytes`},
		{".5G", 0, `".5G": want a size`},
		{"1.G", 0, `"1.G": unknown unit ".G"`},
		{"1,5G", 0, `"1,5G": unknown unit ",5G"`},
		{"8388607.99999999999999T", 8388607<<40 + 1<<40 - 1, ""},
		{"8388608.5T", 0, `"8388608.5T": too large`},
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
		got, err := parseDuration(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("parseDuration(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("parseDuration(%q) error = %v, want %s...", tc.in, err, tc.err)
		case got != tc.want:
			t.Errorf("parseDuration(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestKeyPositions checks the lines the TOML library gives for keys hidden in
// strings, arrays, inline tables, dotted keys and comments.
func TestKeyPositions(t *testing.T) {
	src := `a = 1 # b = 2
"quoted key" = "c = 3"
d = [
  "e = 4", 'f = 5', { g = 6 },
]
h.i = { j = 7, k.l = 8 }

[t]
m = '''n = 9'''
[[arr]]
o = 10
[ "t2" . u ]
p = "x\"q = 11"
`
	k := newKeyPositions(src)
	for key, want := range map[string]int{
		"a": 1, "quoted key": 2, "d": 3, "h": 6, "h.i": 6, "h.i.j": 6, "h.i.k.l": 6,
		"t": 8, "t.m": 9, "arr": 10, "t2": 12, "t2.u": 12, "t2.u.p": 13,
		"b": 0, "e": 0, "n": 0, "q": 0, "t.x": 0, "a.b": 0,
	} {
		var parts toml.Key
		if key == "quoted key" {
			parts = toml.Key{key}
		} else {
			parts = strings.Split(key, ".")
		}
		if got := k.line(parts); got != want {
			t.Errorf("line(%s) = %d, want %d", key, got, want)
		}
	}
}

// FuzzParse: any text either loads or fails with *Error values, each
// naming the file; the parser never panics.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.toml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("a.b = 1\n[c.d]\ne = [{f = 2}]\n[[g]]\nh = 3\n")
	f.Fuzz(func(t *testing.T, text string) {
		_, err := parse("fuzz.toml", "/nonexistent", text)
		if err == nil {
			return
		}
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, e := range errs {
			var ce *Error
			if !errors.As(e, &ce) || !strings.HasPrefix(e.Error(), "fuzz.toml") {
				t.Fatalf("error %T %q is not an *Error naming the file", e, e)
			}
		}
	})
}
