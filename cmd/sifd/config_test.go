package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sif-dev/sif/daemon"
	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/index/fingerprint"
)

// TestFlagsOverrideConfigFile: the file is the base, and each flag given on
// the command line replaces its value; flags left out leave the file's.
func TestFlagsOverrideConfigFile(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "sifd.toml")
	err := os.WriteFile(file, []byte(`
roots = ["a", "b"]
db = "index"
socket = "s.sock"
workers = 2
max_size = "1MiB"
min_size = 10
log_level = "warn"
[scheme]
scheme = "manber"
window = 32
bits = 7
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var f runFlags
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fl, &f)
	err = fl.Parse([]string{"--config", file, "--root", filepath.Join(dir, "c"), "--workers", "0", "--bits", "6", "--socket", "/tmp/x.sock"})
	if err != nil {
		t.Fatal(err)
	}
	fc, err := loadConfigFile(fl, f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg, level := f.apply(fl, fc)
	want := daemon.Config{
		Roots:       []string{filepath.Join(dir, "c")}, // replaced, not added to
		DB:          filepath.Join(dir, "index"),       // the file's, relative to it
		Socket:      "/tmp/x.sock",
		Workers:     0, // a flag set to its zero value still wins
		MaxFileSize: 1 << 20,
		MinFileSize: 10,
		Params:      fingerprint.Params{Scheme: fingerprint.Manber, Window: 32, Bits: 6},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config:\n got %+v\nwant %+v", cfg, want)
	}
	if level != "warn" {
		t.Errorf("log level %q, want the file's warn", level)
	}

	// Without flags, the file's values stand; --log-level beats the file.
	f = runFlags{}
	fl = pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fl, &f)
	if err := fl.Parse([]string{"--config", file, "--log-level", "debug"}); err != nil {
		t.Fatal(err)
	}
	fc, err = loadConfigFile(fl, f.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg, level = f.apply(fl, fc)
	want = daemon.Config{
		Roots: []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}, DB: filepath.Join(dir, "index"),
		Socket: filepath.Join(dir, "s.sock"), Workers: 2, MaxFileSize: 1 << 20, MinFileSize: 10,
		Params: fingerprint.Params{Scheme: fingerprint.Manber, Window: 32, Bits: 7},
	}
	if !reflect.DeepEqual(cfg, want) || level != "debug" {
		t.Errorf("no flags: got %+v, %q; want the file's %+v, debug", cfg, level, want)
	}
}

// TestApplyCopiesEveryKey: each value of a configuration file reaches the
// daemon.Config field of the same name when no flag replaces it, so a key
// added to config.File and forgotten in apply fails here.
func TestApplyCopiesEveryKey(t *testing.T) {
	var fc config.File
	fv := reflect.ValueOf(&fc).Elem()
	for i := range fv.NumField() {
		switch fd := fv.Field(i); fd.Kind() {
		case reflect.String:
			fd.SetString(fv.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			fd.SetInt(int64(i + 1))
		case reflect.Slice:
			fd.Set(reflect.ValueOf([]string{fv.Type().Field(i).Name}))
		case reflect.Struct:
			fd.Set(reflect.ValueOf(fingerprint.Params{Scheme: fingerprint.Chunks, AvgChunk: 512}))
		case reflect.Pointer:
			if fv.Type().Field(i).Name == "Fleet" {
				continue // fleetConfig maps it, reading the URL: TestFleetConfig
			}
			if b, ok := fd.Addr().Interface().(**bool); ok {
				*b = new(bool)
				**b = true
				continue
			}
			t.Fatalf("config.File.%s: a %s; teach this test to fill it", fv.Type().Field(i).Name, fd.Kind())
		default:
			t.Fatalf("config.File.%s: a %s; teach this test to fill it", fv.Type().Field(i).Name, fd.Kind())
		}
	}
	var f runFlags
	fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fl, &f)
	cfg, level := f.apply(fl, fc)
	cv := reflect.ValueOf(cfg)
	for i := range fv.NumField() {
		name := fv.Type().Field(i).Name
		switch name {
		case "Path", "MemoryLimit": // where the file is; sifd sets the heap's limit itself
			continue
		case "Fleet": // fleetConfig: TestFleetConfig
			continue
		case "LogLevel":
			if level != fc.LogLevel {
				t.Errorf("log level %q, want the file's %q", level, fc.LogLevel)
			}
			continue
		}
		got := cv.FieldByName(name)
		if !got.IsValid() {
			t.Errorf("config.File.%s has no daemon.Config field of that name", name)
			continue
		}
		if !reflect.DeepEqual(got.Interface(), fv.Field(i).Interface()) {
			t.Errorf("daemon.Config.%s = %v, want the file's %v", name, got, fv.Field(i))
		}
	}
}

// TestConfigFileNamed: a file named with --config must exist; --config ""
// reads none.
func TestConfigFileNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.toml")
	for _, tc := range []struct {
		args    []string
		wantErr bool
	}{
		{[]string{"--config", missing}, true},
		{[]string{"--config", ""}, false},
	} {
		var f runFlags
		fl := pflag.NewFlagSet("run", pflag.ContinueOnError)
		addRunFlags(fl, &f)
		if err := fl.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		fc, err := loadConfigFile(fl, f.config)
		if (err != nil) != tc.wantErr || (err == nil && fc.Path != "") {
			t.Errorf("%q: %+v, %v", tc.args, fc, err)
		}
	}
}

// fleetConfig copies every key of [fleet] and reads the URL from its file.
func TestFleetConfig(t *testing.T) {
	urlFile := filepath.Join(t.TempDir(), "fleet.url")
	if err := os.WriteFile(urlFile, []byte("postgres://sif@db.example/fleet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIF_FLEET_URL", "")
	fc := &config.Fleet{URLFile: urlFile, Host: "fs1", Publish: []string{"/srv/a"}, Silence: time.Hour, Timeout: 3 * time.Second, AskGroup: "team"}
	got, err := fleetConfig(fc)
	if err != nil {
		t.Fatal(err)
	}
	want := &daemon.FleetConfig{URL: "postgres://sif@db.example/fleet", Host: "fs1", Publish: []string{"/srv/a"}, Silence: time.Hour, Timeout: 3 * time.Second, AskGroup: "team"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fleetConfig = %+v, want %+v", got, want)
	}
	if got, err := fleetConfig(nil); got != nil || err != nil {
		t.Fatalf("fleetConfig(nil) = %v, %v", got, err)
	}
}

// Every flag's help shows one default, printed from the value in effect
// (gendocs.CheckDefaults, which gen-docs runs before writing the pages).
func TestOneDefaultPerFlag(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(t.Context(), []string{"gen-docs", t.TempDir()}, &out, &errOut); code != exitOK {
		t.Fatalf("gen-docs: exit %d: %s", code, errOut.String())
	}
}
