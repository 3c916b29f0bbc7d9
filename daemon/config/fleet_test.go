package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFleetFile(t *testing.T) {
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	fc, err := Load(filepath.Join("testdata", "fleet.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Fleet{
		URLFile:  filepath.Join(dir, "secret", "fleet.url"),
		Host:     "fs1.example.org",
		Publish:  []string{dir, filepath.Join(dir, "sub", "dir")},
		Silence:  time.Hour,
		Timeout:  500 * time.Millisecond,
		AskGroup: "0",
		file:     filepath.Join(dir, "fleet.toml"),
	}
	if !reflect.DeepEqual(fc.Fleet, want) {
		t.Errorf("Fleet:\n got %+v\nwant %+v", fc.Fleet, want)
	}

	fc, err = Load(filepath.Join("testdata", "fleet-empty.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want = &Fleet{
		Silence: DefaultFleetSilence, Timeout: DefaultFleetTimeout, AskGroup: DefaultFleetAskGroup,
		file: filepath.Join(dir, "fleet-empty.toml"),
	}
	if !reflect.DeepEqual(fc.Fleet, want) {
		t.Errorf("an empty [fleet]:\n got %+v\nwant %+v (the defaults)", fc.Fleet, want)
	}

	fc, err = Load(filepath.Join("testdata", "full.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if fc.Fleet != nil {
		t.Errorf("a file without [fleet]: Fleet = %+v, want nil", fc.Fleet)
	}
}

// TestFleetParse checks each key of [fleet], in a file at /etc/sifd.
func TestFleetParse(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("no home directory: %v", err)
	}
	for _, tc := range []struct {
		name, text string
		want       *Fleet // only the fields set are compared; nil: the error
		err        string
	}{
		{"inline table", `fleet = { host = "a" }`, &Fleet{Host: "a"}, ""},
		{"dotted keys", "fleet.host = \"a\"\nfleet.timeout = \"1m\"", &Fleet{Host: "a", Timeout: time.Minute}, ""},
		{"url_file absolute", `url_file = "/run/secrets/fleet"`, &Fleet{URLFile: filepath.FromSlash("/run/secrets/fleet")}, ""},
		{"url_file relative", `url_file = "fleet.url"`, &Fleet{URLFile: filepath.FromSlash("/etc/sifd/fleet.url")}, ""},
		{"url_file home", `url_file = "~/fleet.url"`, &Fleet{URLFile: filepath.Join(home, "fleet.url")}, ""},
		{"publish relative", `publish = ["/srv/src", "../x/", "~/docs"]`, &Fleet{Publish: []string{filepath.FromSlash("/srv/src"), filepath.FromSlash("/etc/x"), filepath.Join(home, "docs")}}, ""},
		{"publish none", `publish = []`, &Fleet{}, ""},
		{"host unicode", `host = "Serveur de fichiers 1 — étage 2"`, &Fleet{Host: "Serveur de fichiers 1 — étage 2"}, ""},
		{"host 255 bytes", `host = "` + strings.Repeat("h", 255) + `"`, &Fleet{Host: strings.Repeat("h", 255)}, ""},
		{"silence least", `silence = "30s"`, &Fleet{Silence: 30 * time.Second}, ""},
		{"timeout most", `timeout = "60s"`, &Fleet{Timeout: time.Minute}, ""},
		{"ask_group gid", `ask_group = "4242"`, &Fleet{AskGroup: "4242"}, ""},
		{"ask_group name", `ask_group = "root"`, &Fleet{AskGroup: "root"}, ""},
		{"ask_group default", `ask_group = "sif-fleet"`, &Fleet{AskGroup: DefaultFleetAskGroup}, ""}, // need not exist

		{"not a table", `fleet = "on"`, nil, `/etc/sifd/c.toml:1: fleet: want a table, not a string`},
		{"url", `url = "postgres://u:pw@h/db"`, nil, `/etc/sifd/c.toml:2: fleet.url: the database URL holds its password and this file is readable by every local user: write the URL in a file of mode 0600 named by url_file, or in SIF_FLEET_URL in sifd's environment`},
		{"url dotted", `fleet.url = "postgres://u:pw@h/db"`, nil, `/etc/sifd/c.toml:1: fleet.url: the database URL holds its password`},
		{"unknown", `colour = "blue"`, nil, `/etc/sifd/c.toml:2: fleet.colour: unknown key`},
		{"url_file empty", `url_file = ""`, nil, `/etc/sifd/c.toml:2: fleet.url_file: empty; leave the key out for the default`},
		{"url_file type", `url_file = 1`, nil, `/etc/sifd/c.toml:2: fleet.url_file: want a path (a string), not an integer`},
		{"url_file a URL", `url_file = "postgresql://u:pw@h/db"`, nil, `/etc/sifd/c.toml:2: fleet.url_file: this is the database URL, not the name of a file holding it`},
		{"url_file a DSN", `url_file = "host=h password=pw"`, nil, `/etc/sifd/c.toml:2: fleet.url_file: this is the database URL, not the name of a file holding it`},
		{"host empty", `host = ""`, nil, `/etc/sifd/c.toml:2: fleet.host: "": empty; want printable UTF-8 of at most 255 bytes without "/", or leave the key out for the hostname`},
		{"host slash", `host = "a/b"`, nil, `/etc/sifd/c.toml:2: fleet.host: "a/b": holds a "/"; want`},
		{"host control", `host = "a\u0007b"`, nil, `/etc/sifd/c.toml:2: fleet.host: "a\ab": holds the unprintable character U+0007; want`},
		{"host newline", `host = "a\nb"`, nil, `/etc/sifd/c.toml:2: fleet.host: "a\nb": holds the unprintable character U+000A`},
		{"host space", `host = " a"`, nil, `/etc/sifd/c.toml:2: fleet.host: " a": begins or ends with white space`},
		{"host long", `host = "` + strings.Repeat("h", 256) + `"`, nil, `: 256 bytes, more than 255; want`},
		{"host type", `host = 1`, nil, `/etc/sifd/c.toml:2: fleet.host: want a host name (a string), not an integer`},
		{"publish empty", `publish = ["/srv", ""]`, nil, `/etc/sifd/c.toml:2: fleet.publish: element 2 is empty`},
		{"publish string", `publish = "/srv"`, nil, `/etc/sifd/c.toml:2: fleet.publish: want an array of strings, not a string`},
		{"publish twice", "publish = [\n  \"/srv\",\n  \"/srv\",\n]", nil, `/etc/sifd/c.toml:2: fleet.publish: "/srv" is listed twice`},
		{"publish same", `publish = ["/srv/a", "/srv/b/../a/"]`, nil, `/etc/sifd/c.toml:2: fleet.publish: "/srv/a" and "/srv/b/../a/" are the same directory, /srv/a`},
		{"silence short", `silence = "29s"`, nil, `/etc/sifd/c.toml:2: fleet.silence: "29s": want 30s or more`},
		{"silence syntax", `silence = "ten minutes"`, nil, `/etc/sifd/c.toml:2: fleet.silence: "ten minutes": want a duration such as "500ms", "2s" or "1m30s"`},
		{"silence type", `silence = 600`, nil, `/etc/sifd/c.toml:2: fleet.silence: want a duration string such as "500ms" or "2s", not an integer`},
		{"timeout zero", `timeout = "0s"`, nil, `/etc/sifd/c.toml:2: fleet.timeout: "0s": want more than 0 and at most 1m`},
		{"timeout long", `timeout = "61s"`, nil, `/etc/sifd/c.toml:2: fleet.timeout: "61s": want more than 0 and at most 1m`},
		{"timeout negative", `timeout = "-1s"`, nil, `/etc/sifd/c.toml:2: fleet.timeout: "-1s": want 0 or more`},
		{"ask_group missing", `ask_group = "no-such-group-sif"`, nil, `/etc/sifd/c.toml:2: fleet.ask_group: group "no-such-group-sif": group: unknown group no-such-group-sif`},
		{"ask_group type", `ask_group = 7`, nil, `/etc/sifd/c.toml:2: fleet.ask_group: want a group name or a numeric gid as a string, not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "[fleet]\n" + tc.text
			if strings.HasPrefix(tc.text, "fleet") {
				text = tc.text
			}
			f, err := parse("/etc/sifd/c.toml", filepath.FromSlash("/etc/sifd"), text)
			if tc.want == nil {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %s", err, tc.err)
				}
				if strings.Contains(err.Error(), "pw") {
					t.Errorf("error %q quotes the password", err)
				}
				var ce *Error
				if !errors.As(err, &ce) {
					t.Errorf("error %T is not a *Error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Fleet == nil {
				t.Fatal("Fleet is nil")
			}
			want := *tc.want
			want.file = "/etc/sifd/c.toml"
			if want.Silence == 0 {
				want.Silence = DefaultFleetSilence
			}
			if want.Timeout == 0 {
				want.Timeout = DefaultFleetTimeout
			}
			if want.AskGroup == "" {
				want.AskGroup = DefaultFleetAskGroup
			}
			if !reflect.DeepEqual(*f.Fleet, want) {
				t.Errorf("Fleet:\n got %+v\nwant %+v", *f.Fleet, want)
			}
		})
	}
}

// secretURL is a database URL whose password no error may show.
const secretURL = "postgres://sif:s3cr3t-pa55@db.example.org:5432/sif?sslmode=verify-full&sslrootcert=/etc/sifd/fleet-ca.pem"

// writeURLFile writes text to a file of mode perm under a new directory.
func writeURLFile(t *testing.T, text string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.url")
	if err := os.WriteFile(path, []byte(text), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return path
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFleetURL(t *testing.T) {
	private := writeURLFile(t, "\n  "+secretURL+"\n\n", 0o600)
	dsn := writeURLFile(t, "host=/run/postgresql dbname=sif user=sif password='s3cr3t pa55'\n", 0o400)
	noEnv := env(nil)
	setEnv := env(map[string]string{FleetURLEnv: " " + secretURL + " "})
	for _, tc := range []struct {
		name   string
		fleet  Fleet
		getenv func(string) string
		want   string
		err    string
	}{
		{"file", Fleet{URLFile: private}, noEnv, secretURL, ""},
		{"file 0400 key=value", Fleet{URLFile: dsn}, noEnv, "host=/run/postgresql dbname=sif user=sif password='s3cr3t pa55'", ""},
		{"environment", Fleet{}, setEnv, secretURL, ""},
		{"neither", Fleet{file: "/etc/sifd/config.toml"}, noEnv, "", "fleet: no database URL: set url_file in [fleet] of /etc/sifd/config.toml or SIF_FLEET_URL in sifd's environment"},
		{"both", Fleet{URLFile: private, file: "/etc/sifd/config.toml"}, setEnv, "", "fleet: the database URL is set twice, by url_file in [fleet] of /etc/sifd/config.toml (" + private + ") and by SIF_FLEET_URL in sifd's environment: keep one"},
		{"missing file", Fleet{URLFile: private + ".gone"}, noEnv, "", "fleet: " + private + ".gone: no such file or directory"},
		{"directory", Fleet{URLFile: filepath.Dir(private)}, noEnv, "", "fleet: " + filepath.Dir(private) + ": not a regular file (a directory): want a file holding the database URL"},
		{"empty file", Fleet{URLFile: writeURLFile(t, " \n", 0o600)}, noEnv, "", "fleet: %s: empty: want a postgres:// URL or a key=value connection string"},
		{"other scheme", Fleet{URLFile: writeURLFile(t, "mysql://sif:s3cr3t-pa55@db/sif", 0o600)}, noEnv, "", `fleet: %s: scheme "mysql": want postgres:// or postgresql://`},
		{"bad URL", Fleet{}, env(map[string]string{FleetURLEnv: "postgres://sif:s3cr3t-pa55@db:port/sif"}), "", "fleet: SIF_FLEET_URL: not a valid URL (a reserved character in the user name or the password must be %-escaped, such as %40 for @)"},
		{"bad escape", Fleet{}, env(map[string]string{FleetURLEnv: "postgres://sif:s3cr3t-pa55%zz@db/sif"}), "", "fleet: SIF_FLEET_URL: not a valid URL"},
		{"not key=value", Fleet{}, env(map[string]string{FleetURLEnv: "s3cr3t-pa55"}), "", `fleet: SIF_FLEET_URL: want a postgres:// URL or key=value pairs, found text without "="`},
		{"unterminated quote", Fleet{}, env(map[string]string{FleetURLEnv: "host=db password='s3cr3t-pa55"}), "", "fleet: SIF_FLEET_URL: key=value connection string: the quoted value of password has no closing quote"},
		{"trailing backslash", Fleet{}, env(map[string]string{FleetURLEnv: `host=db password=s3cr3t-pa55\`}), "", "fleet: SIF_FLEET_URL: key=value connection string: the value of password ends in a backslash"},
		{"bad keyword", Fleet{}, env(map[string]string{FleetURLEnv: "host=db s3cr3t-pa55=x"}), "", "fleet: SIF_FLEET_URL: key=value connection string: a keyword is not a word of letters, digits and _"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fleet.URL(tc.getenv)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("URL() = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			want := tc.err
			if strings.Contains(want, "%s") {
				want = strings.Replace(want, "%s", tc.fleet.URLFile, 1)
			}
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("URL() = %q, %v; want the error %s", got, err, want)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q shows the password", err)
			}
			if got != "" {
				t.Errorf("URL() = %q with an error", got)
			}
		})
	}
	if _, err := (&Fleet{}).URL(noEnv); !errors.Is(err, ErrNoFleetURL) {
		t.Errorf("URL() with neither = %v, not ErrNoFleetURL", err)
	}
}

func TestFleetHostName(t *testing.T) {
	hostname := func(h string, err error) func() (string, error) {
		return func() (string, error) { return h, err }
	}
	for _, tc := range []struct {
		name     string
		fleet    Fleet
		hostname func() (string, error)
		want     string
		err      string
	}{
		{"set", Fleet{Host: "fs1"}, hostname("", errors.New("not asked")), "fs1", ""},
		{"hostname", Fleet{}, hostname("build-7", nil), "build-7", ""},
		{"hostname fails", Fleet{file: "/etc/sifd/config.toml"}, hostname("", errors.New("uname: denied")), "", "fleet: this host's name: uname: denied; set host in [fleet] of /etc/sifd/config.toml"},
		{"hostname empty", Fleet{file: "/etc/sifd/config.toml"}, hostname("", nil), "", `fleet: this host's name "": empty; set host in [fleet] of /etc/sifd/config.toml`},
		{"hostname with slash", Fleet{}, hostname("a/b", nil), "", `fleet: this host's name "a/b": holds a "/"; set host in [fleet] of the configuration file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fleet.HostName(tc.hostname)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("HostName() = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Fatalf("HostName() = %q, %v; want the error %s", got, err, tc.err)
			}
		})
	}
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := (&Fleet{}).HostName(nil); err != nil || got != h {
		t.Errorf("HostName(nil) = %q, %v; want os.Hostname's %q", got, err, h)
	}
}

func TestFleetAskGID(t *testing.T) {
	for _, tc := range []struct {
		group  string
		gid    uint32
		ok     bool
		errSub string
	}{
		{"0", 0, true, ""},
		{"root", 0, true, ""},
		{"4242", 4242, true, ""},
		{"no-such-group-sif", 0, false, ""}, // no members
		{"", 0, false, ""},
	} {
		gid, ok, err := (&Fleet{AskGroup: tc.group}).AskGID(nil)
		if gid != tc.gid || ok != tc.ok || err != nil {
			t.Errorf("AskGID(%q) = %d, %v, %v; want %d, %v", tc.group, gid, ok, err, tc.gid, tc.ok)
		}
	}
	broken := func(string) (uint32, error) { return 0, errors.New("group \"x\": gid \"S-1\" is not a number") }
	if _, ok, err := (&Fleet{AskGroup: "x"}).AskGID(broken); ok || err == nil || err.Error() != `fleet: ask_group: group "x": gid "S-1" is not a number` {
		t.Errorf("AskGID with a failing lookup = %v, %v", ok, err)
	}
}

// FuzzFleetURL: checkFleetURL never panics and never quotes a password,
// wherever in the text it is.
func FuzzFleetURL(f *testing.F) {
	for _, s := range []string{
		"postgres://sif:", "@db/sif", "host=db password=", "password='", "' dbname=sif",
		"mysql://", "postgresql://[::1", `\`, "=", " ", "",
	} {
		f.Add(s, s)
	}
	f.Add("postgres://sif:", "@db:5432/sif?sslmode=verify-full")
	f.Add("host=db password='", `\' x' dbname=sif`)
	const secret = "S3CR:ET" // ":" cannot be in a scheme, which errors name
	f.Fuzz(func(t *testing.T, before, after string) {
		u := before + secret + after
		if err := checkFleetURL(u); err != nil && strings.Contains(err.Error(), "S3CR") {
			t.Fatalf("checkFleetURL(%q): %q quotes the password", u, err)
		}
	})
}
