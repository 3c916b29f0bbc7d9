package config

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"strings"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

// tomlType names the TOML type of a decoded value, for errors.
func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date-time"
	default:
		return fmt.Sprintf("a %T", v)
	}
}

// The value types below implement toml.Unmarshaler: each checks the TOML
// value's type and range. The decoder wraps their errors in a
// toml.ParseError with the key and its line.

// pathList is a list of non-empty strings.
type pathList []string

func (l *pathList) UnmarshalTOML(v any) error {
	s, err := stringList(v)
	if err != nil {
		return err
	}
	for i, e := range s {
		if e == "" {
			return fmt.Errorf("element %d is empty", i+1)
		}
	}
	*l = s
	return nil
}

// globList is a list of exclusion patterns in path.Match syntax; a
// trailing "/" makes a pattern match directories only.
type globList []string

func (l *globList) UnmarshalTOML(v any) error {
	s, err := stringList(v)
	if err != nil {
		return err
	}
	for _, g := range s {
		if err := checkGlob(g); err != nil {
			return fmt.Errorf("%q: %w", g, err)
		}
	}
	*l = s
	return nil
}

// checkGlob checks that g is an exclusion pattern: path.Match syntax,
// optionally ending in "/".
func checkGlob(g string) error {
	pat := strings.TrimSuffix(g, "/")
	if pat == "" {
		return errors.New("empty pattern")
	}
	if _, err := path.Match(pat, ""); err != nil {
		return errors.New("bad pattern: want path.Match syntax (*, ?, [a-z], \\ quotes)")
	}
	return nil
}

func stringList(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array of strings, not %s", tomlType(v))
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("element %d: want a string, not %s", i+1, tomlType(e))
		}
		out = append(out, s)
	}
	return out, nil
}

// pathString is a non-empty string.
type pathString string

func (p *pathString) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a path (a string), not %s", tomlType(v))
	}
	if s == "" {
		return errors.New("empty; leave the key out for the default")
	}
	*p = pathString(s)
	return nil
}

// boolean is true or false.
type boolean bool

func (b *boolean) UnmarshalTOML(v any) error {
	x, ok := v.(bool)
	if !ok {
		return fmt.Errorf("want true or false, not %s", tomlType(v))
	}
	*b = boolean(x)
	return nil
}

// count is an integer of 0 or more.
type count int

func (c *count) UnmarshalTOML(v any) error {
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("want an integer, not %s", tomlType(v))
	}
	if n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("%d: want 0 or more", n)
	}
	*c = count(n)
	return nil
}

// size is a number of bytes: an integer, or a string such as "256MiB".
type size int64

func (s *size) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("%d: want 0 or more bytes", v)
		}
		*s = size(v)
		return nil
	case string:
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*s = size(n)
		return nil
	}
	return fmt.Errorf("want a size (an integer, or a string such as \"256MiB\"), not %s", tomlType(v))
}

// minFreeSpace is the free space kept under the index: a size of 1 byte
// or more, or "none" (-1) to keep none. 0 is refused: it would read as
// "none" here and means the default to Config.
type minFreeSpace int64

func (m *minFreeSpace) UnmarshalTOML(v any) error {
	if s, ok := v.(string); ok && strings.EqualFold(strings.TrimSpace(s), "none") {
		*m = -1
		return nil
	}
	var n size
	if err := n.UnmarshalTOML(v); err != nil {
		return err
	}
	switch {
	case n < 0: // "unlimited"
		return fmt.Errorf("%v: want a size such as \"64MiB\", or \"none\" to keep no room", v)
	case n == 0:
		return fmt.Errorf("%v: leave the key out for the default (%.1f MiB), or write \"none\" to keep no room", v, float64(DefaultMinFreeSpace)/(1<<20))
	}
	*m = minFreeSpace(n)
	return nil
}

// duration is a non-negative time.Duration written as a string, "500ms".
type duration time.Duration

func (d *duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a duration string such as \"500ms\" or \"2s\", not %s", tomlType(v))
	}
	x, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(x)
	return nil
}

// logLevel is one of slog's level names.
type logLevel string

func (l *logLevel) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a string, not %s", tomlType(v))
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(s)); err != nil {
		return fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	*l = logLevel(strings.ToLower(s))
	return nil
}

// networkFS is what to do with roots on filesystems without events.
type networkFS string

func (n *networkFS) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok || (s != NetworkFSScan && s != NetworkFSRefuse) {
		if ok {
			return fmt.Errorf("%q: want %q or %q", s, NetworkFSScan, NetworkFSRefuse)
		}
		return fmt.Errorf("want %q or %q, not %s", NetworkFSScan, NetworkFSRefuse, tomlType(v))
	}
	*n = networkFS(s)
	return nil
}

// socketAccess is who may connect to the socket.
type socketAccess string

func (a *socketAccess) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok || (s != SocketAll && s != SocketOwner) {
		if ok {
			return fmt.Errorf("%q: want %q or %q", s, SocketAll, SocketOwner)
		}
		return fmt.Errorf("want %q or %q, not %s", SocketAll, SocketOwner, tomlType(v))
	}
	*a = socketAccess(s)
	return nil
}

// groupName is a group that exists on this machine, by name or gid.
type groupName string

func (g *groupName) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a group name or a numeric gid as a string, not %s", tomlType(v))
	}
	if _, err := LookupGroup(s); err != nil {
		return err
	}
	*g = groupName(s)
	return nil
}

// schemeName is a fingerprint scheme's name; Normalize checks it.
type schemeName string

func (n *schemeName) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want %q or %q, not %s", fingerprint.Manber, fingerprint.Chunks, tomlType(v))
	}
	*n = schemeName(s)
	return nil
}

// urlFile is the name of the file holding the fleet database's URL: a
// non-empty string that does not look like a URL itself, which an error
// would otherwise quote, password and all.
type urlFile string

func (u *urlFile) UnmarshalTOML(v any) error {
	var p pathString
	if err := p.UnmarshalTOML(v); err != nil {
		return err
	}
	if s := string(p); strings.Contains(s, "://") || strings.Contains(s, "=") && strings.ContainsAny(s, " \t") {
		return errors.New("this is the database URL, not the name of a file holding it: write the URL in a file of mode 0600 and name that file here")
	}
	*u = urlFile(p)
	return nil
}

// fleetHost is this host's name in the fleet (checkHost).
type fleetHost string

func (h *fleetHost) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a host name (a string), not %s", tomlType(v))
	}
	if err := checkHost(s); err != nil {
		return fmt.Errorf("%w; want printable UTF-8 of at most %d bytes without \"/\", or leave the key out for the hostname", err, maxHostLen)
	}
	*h = fleetHost(s)
	return nil
}

// silence is how long the fleet waits for a host before leaving it out of
// answers: a duration of MinFleetSilence or more.
type silence time.Duration

func (s *silence) UnmarshalTOML(v any) error {
	var d duration
	if err := d.UnmarshalTOML(v); err != nil {
		return err
	}
	if time.Duration(d) < MinFleetSilence {
		return fmt.Errorf("%q: want %v or more", v, MinFleetSilence)
	}
	*s = silence(d)
	return nil
}

// timeout is how long a fleet query may take: more than 0, at most
// MaxFleetTimeout.
type timeout time.Duration

func (t *timeout) UnmarshalTOML(v any) error {
	var d duration
	if err := d.UnmarshalTOML(v); err != nil {
		return err
	}
	if d <= 0 || time.Duration(d) > MaxFleetTimeout {
		return fmt.Errorf("%q: want more than 0 and at most %s", v, strings.TrimSuffix(MaxFleetTimeout.String(), "0s"))
	}
	*t = timeout(d)
	return nil
}

// askGroup is ask_group: a group that exists on this machine, as
// operator_group, or DefaultFleetAskGroup, which need not (writing the
// default is leaving the key out).
type askGroup string

func (g *askGroup) UnmarshalTOML(v any) error {
	if s, ok := v.(string); ok && s == DefaultFleetAskGroup {
		*g = askGroup(s)
		return nil
	}
	var n groupName
	if err := n.UnmarshalTOML(v); err != nil {
		return err
	}
	*g = askGroup(n)
	return nil
}
