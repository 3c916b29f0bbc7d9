package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/user"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// FleetURLEnv is the environment variable that may hold the fleet
// database's URL instead of the file named by url_file.
const FleetURLEnv = "SIF_FLEET_URL"

// Defaults of the [fleet] table's keys, and the bounds of its durations.
const (
	DefaultFleetSilence  = 10 * time.Minute
	DefaultFleetTimeout  = 2 * time.Second
	DefaultFleetAskGroup = "sif-fleet"

	MinFleetSilence = 30 * time.Second // the least silence a file may set
	MaxFleetTimeout = time.Minute      // the most timeout a file may set
)

// maxHostLen is the longest host name, in bytes.
const maxHostLen = 255

// maxURLFileSize is the most of url_file that URL reads: a URL with a few
// hosts and TLS options is well under it.
const maxURLFileSize = 64 << 10

// ErrNoFleetURL is returned, wrapped, by Fleet.URL when neither url_file
// nor SIF_FLEET_URL names the database.
var ErrNoFleetURL = errors.New("fleet: no database URL")

// Fleet is the [fleet] table: this host publishes the files under some of
// its roots to the fleet index, a database that speaks the PostgreSQL wire
// protocol, and asks it on behalf of local callers. File.Fleet is nil when
// the file has no [fleet] table; an empty table turns the fleet on with
// the defaults, and then needs a URL (see URL).
//
// Load fills in the defaults of Silence, Timeout and AskGroup, so a Fleet
// from Load has them set; Host stays "" when the file leaves it out (see
// HostName) and URLFile when the file names none.
type Fleet struct {
	// URLFile is url_file, the absolute path of a file holding the
	// database's URL, or "" if the file does not set it. The URL itself
	// is never in the configuration file, which every local user may
	// read, nor on a command line: it holds the database's password.
	// URL reads it.
	URLFile string

	// Host is host, this host's name in the fleet, or "" for the
	// machine's hostname (HostName resolves it): printable UTF-8 of at
	// most 255 bytes, without "/".
	Host string

	// Publish is publish, the absolute paths of the directories whose
	// files are published to the fleet: each one of the roots in effect
	// or under one (the daemon checks that). None: this host publishes
	// nothing and only asks.
	Publish []string

	// Silence is silence: a host the fleet has not heard from for this
	// long is left out of answers. At least MinFleetSilence.
	Silence time.Duration

	// Timeout is timeout: a fleet query that takes longer fails with
	// "fleet unavailable". More than 0, at most MaxFleetTimeout.
	Timeout time.Duration

	// AskGroup is ask_group, a group name or a numeric gid whose members
	// may ask the fleet, besides root and the daemon's user. A group set
	// in the file must exist when the file is loaded, as operator_group
	// must; the default, DefaultFleetAskGroup, need not, whether written
	// or left out (see AskGID).
	AskGroup string

	// file is the configuration file's path, for messages.
	file string
}

// URL returns the fleet database's URL: the value of SIF_FLEET_URL in
// getenv (os.Getenv when nil) if it is set, else the contents of the file
// URLFile, without leading and trailing white space. Both set is an
// error, so that a forgotten one does not silently win; neither is an
// error wrapping ErrNoFleetURL.
//
// The file must be a regular file (a symbolic link to one will do) that
// neither its group nor others may read or write, owned by root or by the
// user sifd runs as; on Windows, where modes do not say who may read a
// file, its ACL is left to the operator. URL reads the file each time it
// is called. The URL must be a postgres:// or postgresql:// URL or a
// key=value connection string, checked only for its syntax: the fleet
// client parses it with pgx.ParseConfig.
//
// No error names the URL or any part of it: it holds the password.
func (f *Fleet) URL(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	env := getenv(FleetURLEnv)
	switch {
	case env != "" && f.URLFile != "":
		return "", fmt.Errorf("fleet: the database URL is set twice, by url_file in [fleet] of %s (%s) and by %s in sifd's environment: keep one", f.configName(), f.URLFile, FleetURLEnv)
	case env != "":
		u := strings.TrimSpace(env)
		if err := checkFleetURL(u); err != nil {
			return "", fmt.Errorf("fleet: %s: %w", FleetURLEnv, err)
		}
		return u, nil
	case f.URLFile == "":
		return "", fmt.Errorf("%w: set url_file in [fleet] of %s or %s in sifd's environment", ErrNoFleetURL, f.configName(), FleetURLEnv)
	}
	u, err := readURLFile(f.URLFile)
	if err != nil {
		return "", fmt.Errorf("fleet: %w", err)
	}
	if err := checkFleetURL(u); err != nil {
		return "", fmt.Errorf("fleet: %s: %w", f.URLFile, err)
	}
	return u, nil
}

func (f *Fleet) configName() string {
	if f.file == "" {
		return "the configuration file"
	}
	return f.file
}

// readURLFile reads the URL file at path, refusing one that is not
// private (checkPrivate).
func readURLFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", pathError(path, err)
	}
	if err := checkURLFile(path, st); err != nil {
		return "", err
	}
	fh, err := os.Open(path)
	if err != nil {
		return "", pathError(path, err)
	}
	defer fh.Close()
	// The file checked may have been replaced since: check the one open.
	if st, err = fh.Stat(); err != nil {
		return "", pathError(path, err)
	}
	if err := checkURLFile(path, st); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxURLFileSize+1))
	if err != nil {
		return "", pathError(path, err)
	}
	if len(b) > maxURLFileSize {
		return "", fmt.Errorf("%s: more than %d KiB: want one database URL", path, maxURLFileSize>>10)
	}
	return strings.TrimSpace(string(b)), nil
}

func checkURLFile(path string, st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%s): want a file holding the database URL", path, fileKind(st.Mode()))
	}
	return checkPrivate(path, st)
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return m.Type().String()
	}
}

// pathError renders err, about path, as "path: reason".
func pathError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// checkFleetURL checks the syntax of a database URL: a postgres:// or
// postgresql:// URL, or a libpq key=value connection string, as
// pgx.ParseConfig tells them apart. Its errors never quote u.
func checkFleetURL(u string) error {
	if u == "" {
		return errors.New("empty: want a postgres:// URL or a key=value connection string")
	}
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		if _, err := url.Parse(u); err != nil {
			// url.Error quotes the URL: say what is wrong without it.
			return errors.New("not a valid URL (a reserved character in the user name or the password must be %-escaped, such as %40 for @)")
		}
		return nil
	}
	if scheme, _, ok := strings.Cut(u, "://"); ok {
		if validScheme(scheme) {
			return fmt.Errorf("scheme %q: want postgres:// or postgresql://", scheme)
		}
		return errors.New("want a postgres:// or postgresql:// URL or a key=value connection string")
	}
	return checkKeywordValue(u)
}

// validScheme reports whether s is a URL scheme (RFC 3986), and so safe to
// quote in an error.
func validScheme(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// checkKeywordValue checks a libpq connection string, "host=h dbname=d
// password='a b'", with the grammar of pgconn's parser: keywords and
// values separated by "=", pairs by white space, a value in single quotes
// may hold spaces, a backslash escapes the next character. Its errors name
// keywords, never values.
func checkKeywordValue(s string) error {
	const space = " \t\n\r\v\f"
	pairs := 0
	for s = strings.TrimLeft(s, space); s != ""; s = strings.TrimLeft(s, space) {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return errors.New("want a postgres:// URL or key=value pairs, found text without \"=\"")
		}
		key := strings.Trim(s[:eq], space)
		if !validKeyword(key) {
			return errors.New("key=value connection string: a keyword is not a word of letters, digits and _")
		}
		s = strings.TrimLeft(s[eq+1:], space)
		switch {
		case s == "":
		case s[0] == '\'':
			end := 1
			for ; end < len(s) && s[end] != '\''; end++ {
				if s[end] == '\\' {
					end++
				}
			}
			if end >= len(s) {
				return fmt.Errorf("key=value connection string: the quoted value of %s has no closing quote", key)
			}
			s = s[end+1:]
		default:
			end := 0
			for ; end < len(s) && !strings.ContainsRune(space, rune(s[end])); end++ {
				if s[end] == '\\' {
					end++
					if end == len(s) {
						return fmt.Errorf("key=value connection string: the value of %s ends in a backslash", key)
					}
				}
			}
			s = s[min(end, len(s)):]
		}
		pairs++
	}
	if pairs == 0 {
		return errors.New("empty: want a postgres:// URL or a key=value connection string")
	}
	return nil
}

func validKeyword(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// HostName returns this host's name in the fleet: Host if the file sets
// it, else the machine's name from hostname (os.Hostname when nil),
// checked as host is.
func (f *Fleet) HostName(hostname func() (string, error)) (string, error) {
	if f.Host != "" {
		return f.Host, nil
	}
	if hostname == nil {
		hostname = os.Hostname
	}
	h, err := hostname()
	if err != nil {
		return "", fmt.Errorf("fleet: this host's name: %w; set host in [fleet] of %s", err, f.configName())
	}
	if err := checkHost(h); err != nil {
		return "", fmt.Errorf("fleet: this host's name %w; set host in [fleet] of %s", err, f.configName())
	}
	return h, nil
}

// checkHost checks a host's name in the fleet. Its errors start with the
// name, quoted.
func checkHost(h string) error {
	switch {
	case h == "":
		return errors.New(`"": empty`)
	case !utf8.ValidString(h):
		return fmt.Errorf("%q: not UTF-8", h)
	case len(h) > maxHostLen:
		return fmt.Errorf("%q: %d bytes, more than %d", h, len(h), maxHostLen)
	case strings.TrimSpace(h) != h:
		return fmt.Errorf("%q: begins or ends with white space", h)
	}
	for _, c := range h {
		switch {
		case c == '/':
			return fmt.Errorf("%q: holds a \"/\"", h)
		case !unicode.IsPrint(c):
			return fmt.Errorf("%q: holds the unprintable character %U", h, c)
		}
	}
	return nil
}

// AskGID resolves AskGroup with lookup (LookupGroup when nil). A group
// that does not exist has no members: ok is false and err nil, so only
// root and the daemon's user may ask. Any other failure is an error.
func (f *Fleet) AskGID(lookup func(string) (uint32, error)) (gid uint32, ok bool, err error) {
	if f.AskGroup == "" {
		return 0, false, nil
	}
	if lookup == nil {
		lookup = LookupGroup
	}
	gid, err = lookup(f.AskGroup)
	if err != nil {
		var unknown user.UnknownGroupError
		if errors.As(err, &unknown) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("fleet: ask_group: %w", err)
	}
	return gid, true, nil
}
