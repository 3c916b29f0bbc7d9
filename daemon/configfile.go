package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sif-dev/sif/index/fingerprint"
)

// A configuration file is TOML. Every key is optional:
//
//	roots = ["/srv/src", "docs"]      # directories to index
//	exclude = [".git/", "node_modules/", "*.swp"]
//	min_size = 0                       # bytes: an integer, or a string with a unit
//	max_size = "256MiB"                # "unlimited" for no limit
//	settle_delay = "500ms"
//	max_settle_delay = "10s"
//	rescan_interval = "30m"            # roots without events, unwatched directories
//	network_fs = "scan"                # or "refuse": roots on NFS, SMB, FUSE
//	workers = 0                        # 0: one per core
//	db = "/var/lib/sifd/index"
//	socket = "/run/sifd/sifd.sock"
//	log_level = "info"                 # debug, info, warn or error
//	memory_limit = "128MiB"            # soft limit of the Go heap; "unlimited"
//	min_free_space = "64MiB"           # kept free under the index; "none"
//
//	[scheme]                           # fingerprint.Params, for a new index
//	scheme = "manber"
//	window = 40
//	bits = 9
//	mod_bits = 64
//	min_bits = 2                       # small files: down to 2 bits,
//	target = 16                        # for at least 16 fingerprints
//	# min_chunk, avg_chunk, max_chunk for scheme = "chunks"
//
// Relative paths in roots, db and socket are taken relative to the
// directory holding the configuration file, not the working directory; a
// leading "~/" stands for the home directory of the user sifd runs as.

// Paths of the configuration file read when none is named.
const (
	SystemConfigFile = "/etc/sifd/config.toml" // for root
	userConfigFile   = "sifd/config.toml"      // under the user's config dir
)

// DefaultConfigFile returns the configuration file sifd reads when none is
// named, if it exists: SystemConfigFile for root, else
// $XDG_CONFIG_HOME/sifd/config.toml (~/.config/sifd/config.toml); on
// Windows, sifd\config.toml under %AppData%.
func DefaultConfigFile() string {
	if runtime.GOOS == "windows" {
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, filepath.FromSlash(userConfigFile))
		}
		return ""
	}
	if os.Geteuid() == 0 {
		return SystemConfigFile
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, userConfigFile)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", userConfigFile)
}

// FileConfig is what a configuration file says.
type FileConfig struct {
	// Path is the file's absolute path.
	Path string
	// Config holds the values the file sets; a key the file leaves out is
	// the field's zero value, which means its default. Paths are absolute.
	// Logger and Version are never set.
	Config Config
	// LogLevel is the file's log_level, one of "debug", "info", "warn" and
	// "error", or "" if the file has none.
	LogLevel string
	// MemoryLimit is the file's memory_limit in bytes: the soft limit of
	// the Go heap of the process (sifd sets it at start), -1 for
	// "unlimited", 0 if the file has none.
	MemoryLimit int64
}

// ConfigError is a problem with a configuration file. LoadConfigFile
// returns one, or several joined with errors.Join.
type ConfigError struct {
	File   string
	Line   int    // 1-based; 0 if the problem is not on one line
	Key    string // dotted, e.g. "scheme.window"; "" if not about one key
	Reason string
}

// Error renders e as "FILE:LINE: KEY: reason", leaving out what is unknown.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// LoadConfigFile reads and checks the configuration file at path. It
// depends only on the file's contents (and, to make paths absolute and
// check roots, on the file system), so it can be called again to reload
// the file. A missing file is an error: callers that read a file only if
// it exists check that first.
//
// Errors are *ConfigError values naming the file, the line and the key:
// TOML syntax, unknown keys (all of them), values of the wrong type or out
// of range, and settings that contradict each other.
func LoadConfigFile(file string) (FileConfig, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return FileConfig{}, &ConfigError{File: file, Reason: err.Error()}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		reason := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return FileConfig{}, &ConfigError{File: file, Reason: reason}
	}
	return parseConfig(file, filepath.Dir(abs), string(data))
}

// parseConfig parses the text of the configuration file named name, whose
// relative paths are relative to dir.
func parseConfig(name, dir, text string) (FileConfig, error) {
	p := &configParser{name: name, dir: dir, text: text}
	return p.parse()
}

type configParser struct {
	name, dir, text string
	lines           map[string]int // key → line, from keyLines
}

// errAt returns a ConfigError for key at the line where the file sets it.
func (p *configParser) errAt(key, format string, args ...any) *ConfigError {
	if p.lines == nil {
		p.lines = keyLines(p.text)
	}
	return &ConfigError{File: p.name, Line: p.lines[key], Key: key, Reason: fmt.Sprintf(format, args...)}
}

// fileKeys is the file's layout. Each field type checks its own value, so a
// value of the wrong type or out of range is a toml.ParseError that knows
// its key and line.
type fileKeys struct {
	Roots          pathList     `toml:"roots"`
	Exclude        globList     `toml:"exclude"`
	MinSize        size         `toml:"min_size"`
	MaxSize        size         `toml:"max_size"`
	SettleDelay    duration     `toml:"settle_delay"`
	MaxSettleDelay duration     `toml:"max_settle_delay"`
	RescanInterval duration     `toml:"rescan_interval"`
	NetworkFS      networkFS    `toml:"network_fs"`
	Workers        count        `toml:"workers"`
	DB             pathString   `toml:"db"`
	Socket         pathString   `toml:"socket"`
	SocketAccess   socketAccess `toml:"socket_access"`
	OperatorGroup  groupName    `toml:"operator_group"`
	LogLevel       logLevel     `toml:"log_level"`
	MemoryLimit    size         `toml:"memory_limit"`
	MinFreeSpace   minFreeSpace `toml:"min_free_space"`
	Scheme         *schemeTable `toml:"scheme"`
}

type schemeTable struct {
	Scheme   schemeName `toml:"scheme"`
	Window   count      `toml:"window"`
	Bits     count      `toml:"bits"`
	ModBits  count      `toml:"mod_bits"`
	MinBits  count      `toml:"min_bits"`
	Target   count      `toml:"target"`
	MinChunk count      `toml:"min_chunk"`
	AvgChunk count      `toml:"avg_chunk"`
	MaxChunk count      `toml:"max_chunk"`
}

// knownKeys are the keys a file may set, spelled exactly (the TOML decoder
// would also accept other cases).
var knownKeys = []string{
	"roots", "exclude", "min_size", "max_size", "settle_delay", "max_settle_delay",
	"rescan_interval", "network_fs",
	"workers", "db", "socket", "socket_access", "operator_group", "log_level", "memory_limit",
	"min_free_space",
	"scheme", "scheme.scheme", "scheme.window", "scheme.bits", "scheme.mod_bits",
	"scheme.min_bits", "scheme.target",
	"scheme.min_chunk", "scheme.avg_chunk", "scheme.max_chunk",
}

func (p *configParser) parse() (FileConfig, error) {
	// A first pass into a map finds syntax errors, and a [scheme] that is
	// not a table, which the struct decoder reports without a position.
	var raw map[string]any
	md, err := toml.Decode(p.text, &raw)
	if err != nil {
		return FileConfig{}, p.decodeError(err)
	}
	if v, ok := raw["scheme"]; ok {
		if _, ok := v.(map[string]any); !ok {
			return FileConfig{}, p.errAt("scheme", "want a table, not %s", tomlType(v))
		}
	}

	var k fileKeys
	md, err = toml.Decode(p.text, &k)
	if err != nil {
		return FileConfig{}, p.decodeError(err)
	}
	if err := p.unknownKeys(md); err != nil {
		return FileConfig{}, err
	}

	fc := FileConfig{Path: filepath.Join(p.dir, filepath.Base(p.name)), LogLevel: string(k.LogLevel), MemoryLimit: int64(k.MemoryLimit)}
	if md.IsDefined("memory_limit") && fc.MemoryLimit >= 0 && fc.MemoryLimit < MinMemoryLimit {
		return FileConfig{}, p.errAt("memory_limit", "%d bytes is less than the least sifd runs in (%d MiB); \"unlimited\" for no limit", fc.MemoryLimit, MinMemoryLimit>>20)
	}
	c := &fc.Config
	c.Exclude = k.Exclude
	c.MinFileSize = int64(k.MinSize)
	c.MaxFileSize = int64(k.MaxSize)
	c.SettleDelay = time.Duration(k.SettleDelay)
	c.MaxSettleDelay = time.Duration(k.MaxSettleDelay)
	c.RescanInterval = time.Duration(k.RescanInterval)
	c.NetworkFS = string(k.NetworkFS)
	c.Workers = int(k.Workers)
	c.SocketAccess = string(k.SocketAccess)
	c.OperatorGroup = string(k.OperatorGroup)
	c.MinFreeSpace = int64(k.MinFreeSpace)
	if md.IsDefined("min_size") && md.IsDefined("max_size") && c.MaxFileSize >= 0 && c.MinFileSize > c.MaxFileSize {
		return FileConfig{}, p.errAt("min_size", "%d bytes is more than max_size (%d bytes)", c.MinFileSize, c.MaxFileSize)
	}
	if c.SettleDelay > 0 && c.MaxSettleDelay > 0 && c.MaxSettleDelay < c.SettleDelay {
		return FileConfig{}, p.errAt("max_settle_delay", "%v is less than settle_delay (%v)", c.MaxSettleDelay, c.SettleDelay)
	}
	for _, r := range k.Roots {
		abs := p.path(r)
		st, err := os.Stat(abs)
		switch {
		case err != nil:
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return FileConfig{}, p.errAt("roots", "%s: %v", abs, err)
		case !st.IsDir():
			return FileConfig{}, p.errAt("roots", "%s: not a directory", abs)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			if err := checkRootFS(abs, real); err != nil {
				return FileConfig{}, p.errAt("roots", "%s", strings.TrimPrefix(err.Error(), "root "))
			}
		}
		c.Roots = append(c.Roots, abs)
	}
	if k.DB != "" {
		c.DB = p.path(string(k.DB))
	}
	if k.Socket != "" {
		c.Socket = p.path(string(k.Socket))
	}
	if s := k.Scheme; s != nil {
		c.Params = fingerprint.Params{
			Scheme: fingerprint.Scheme(s.Scheme), Window: int(s.Window), Bits: int(s.Bits), ModBits: int(s.ModBits),
			MinBits: int(s.MinBits), Target: int(s.Target),
			MinChunk: int(s.MinChunk), AvgChunk: int(s.AvgChunk), MaxChunk: int(s.MaxChunk),
		}
		if err := p.checkParams(md, c.Params); err != nil {
			return FileConfig{}, err
		}
	}
	return fc, nil
}

// decodeError turns an error from the TOML decoder into a ConfigError.
func (p *configParser) decodeError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &ConfigError{File: p.name, Line: pe.Position.Line, Key: pe.LastKey, Reason: pe.Message}
	}
	return &ConfigError{File: p.name, Reason: strings.TrimPrefix(err.Error(), "toml: ")}
}

// unknownKeys reports every key the file sets that sifd does not know,
// outermost only (an unknown table's keys are not listed again).
func (p *configParser) unknownKeys(md toml.MetaData) error {
	unknown := map[string]bool{}
	for _, k := range md.Undecoded() {
		unknown[k.String()] = true
	}
	for _, k := range md.Keys() {
		if !slices.Contains(knownKeys, k.String()) {
			unknown[k.String()] = true
		}
	}
	var errs []error
	for _, k := range md.Keys() { // in the file's order
		ks := k.String()
		if !unknown[ks] {
			continue
		}
		delete(unknown, ks) // a key may be listed twice, e.g. [[a]]
		parentUnknown := false
		for i := 1; i < len(k); i++ {
			if _, ok := unknown[k[:i].String()]; ok || !slices.Contains(knownKeys, k[:i].String()) {
				parentUnknown = true
			}
		}
		if parentUnknown {
			continue
		}
		errs = append(errs, p.errAt(ks, "unknown key"))
	}
	return errors.Join(errs...)
}

// checkParams checks the [scheme] table with fingerprint.Params.Normalize.
func (p *configParser) checkParams(md toml.MetaData, params fingerprint.Params) error {
	n, err := params.Normalize()
	if err != nil {
		// Normalize says "fingerprint: invalid parameters: FIELD VALUE: reason".
		msg := strings.TrimPrefix(err.Error(), fingerprint.ErrParams.Error()+": ")
		field, rest, _ := strings.Cut(msg, " ")
		key := "scheme." + field
		if md.IsDefined("scheme", field) {
			msg = rest
		} else {
			key = "scheme" // a default derived from another field
		}
		return p.errAt(key, "%s", msg)
	}
	var other []string
	switch n.Scheme {
	case fingerprint.Manber:
		other = []string{"min_chunk", "avg_chunk", "max_chunk"}
	case fingerprint.Chunks:
		other = []string{"window", "bits", "mod_bits", "min_bits", "target"}
	}
	for _, f := range other {
		if md.IsDefined("scheme", f) {
			return p.errAt("scheme."+f, "applies only to scheme %q", otherScheme(n.Scheme))
		}
	}
	return nil
}

func otherScheme(s fingerprint.Scheme) fingerprint.Scheme {
	if s == fingerprint.Manber {
		return fingerprint.Chunks
	}
	return fingerprint.Manber
}

// path makes a path from the file absolute: "~/" is the home directory,
// and a relative path is relative to the file's directory.
func (p *configParser) path(s string) string {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	s = filepath.FromSlash(s)
	if !filepath.IsAbs(s) {
		s = filepath.Join(p.dir, s)
	}
	return filepath.Clean(s)
}

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

// sizeUnits are the units ParseSize accepts, in lower case. K, M, G and T
// are binary, as in GNU coreutils; KB, MB, GB and TB are decimal.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseSize parses a number of bytes: a non-negative integer followed by
// an optional unit, case-insensitively: B; K, KiB, M, MiB, G, GiB, T, TiB
// (powers of 1024); KB, MB, GB, TB (powers of 1000). "unlimited" is -1, no
// limit. Spaces between the number and the unit are allowed.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "unlimited") {
		return -1, nil
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q: want a size such as 4096, \"64KiB\", \"256MiB\", \"1G\" or \"unlimited\"", s)
	}
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q: want B, K, KiB, KB, M, MiB, MB, G, GiB, GB, T, TiB or TB", s, strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n * unit, nil
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
		return fmt.Errorf("%v: leave the key out for the default (%s), or write \"none\" to keep no room", v, humanBytes(DefaultMinFreeSpace))
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
	x, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(x)
	return nil
}

// ParseDuration parses a non-negative duration in time.ParseDuration
// syntax, such as "500ms", "2s" or "1m30s".
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as \"500ms\", \"2s\" or \"1m30s\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: want 0 or more", s)
	}
	return d, nil
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
	if _, err := lookupGroup(s); err != nil {
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

// keyLines returns the line on which each key of the TOML text src is
// first set (or its table opened), by key as toml.Key.String spells it. The
// TOML decoder does not say where a key it accepted is, and errors found
// after decoding (unknown keys, settings that contradict each other) must
// name the line. src must be valid TOML: keyLines does not check it, but
// it always ends.
func keyLines(src string) map[string]int {
	s := &keyScanner{src: src, lines: map[string]int{}}
	var table toml.Key
	for s.i < len(s.src) {
		start := s.i
		s.skipSpace(true)
		if s.i >= len(s.src) {
			break
		}
		if s.src[s.i] == '[' {
			s.i++
			if s.peek('[') {
				s.i++
			}
			s.skipSpace(false)
			at := s.i
			table = s.key()
			s.record(table, at)
			for s.i < len(s.src) && s.src[s.i] != '\n' && s.src[s.i] != '#' {
				s.i++ // "]" or "]]"
			}
		} else {
			s.keyValue(table)
		}
		if s.i == start {
			s.i++
		}
	}
	return s.lines
}

type keyScanner struct {
	src   string
	i     int
	lines map[string]int
}

func (s *keyScanner) peek(c byte) bool { return s.i < len(s.src) && s.src[s.i] == c }

// record notes that key k, and each table its dots imply, starts at
// offset at, unless they were seen before.
func (s *keyScanner) record(k toml.Key, at int) {
	line := 1 + strings.Count(s.src[:at], "\n")
	for n := 1; n <= len(k); n++ {
		ks := k[:n].String()
		if _, ok := s.lines[ks]; !ok {
			s.lines[ks] = line
		}
	}
}

// skipSpace skips blanks and comments, and newlines too if nl is set.
func (s *keyScanner) skipSpace(nl bool) {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case ' ', '\t', '\r':
			s.i++
		case '\n':
			if !nl {
				return
			}
			s.i++
		case '#':
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

// keyValue scans "key = value" in table prefix.
func (s *keyScanner) keyValue(prefix toml.Key) {
	at := s.i
	k := append(slices.Clone(prefix), s.key()...)
	s.record(k, at)
	s.skipSpace(false)
	if s.peek('=') {
		s.i++
	}
	s.skipSpace(false)
	s.value(k)
}

// key scans a dotted key.
func (s *keyScanner) key() toml.Key {
	var k toml.Key
	for {
		s.skipSpace(false)
		k = append(k, s.keyPart())
		s.skipSpace(false)
		if !s.peek('.') {
			return k
		}
		s.i++
	}
}

func (s *keyScanner) keyPart() string {
	start := s.i
	switch {
	case s.peek('"'):
		s.quoted('"', true)
		if u, err := strconv.Unquote(s.src[start:s.i]); err == nil {
			return u
		}
		return strings.Trim(s.src[start:s.i], `"`)
	case s.peek('\''):
		s.quoted('\'', false)
		return strings.Trim(s.src[start:s.i], "'")
	}
	for s.i < len(s.src) && isBareKeyChar(s.src[s.i]) {
		s.i++
	}
	return s.src[start:s.i]
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// quoted scans a one-line string opened by q.
func (s *keyScanner) quoted(q byte, escapes bool) {
	s.i++
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		c := s.src[s.i]
		s.i++
		switch {
		case escapes && c == '\\':
			s.i++
		case c == q:
			return
		}
	}
}

// multiline scans a string opened by """ or ”'.
func (s *keyScanner) multiline(q byte, escapes bool) {
	s.i += 3
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case escapes && c == '\\':
			s.i += 2
		case c == q && strings.HasPrefix(s.src[s.i:], strings.Repeat(string(q), 3)):
			s.i += 3
			for n := 0; n < 2 && s.peek(q); n++ { // up to two quotes may end the content
				s.i++
			}
			return
		default:
			s.i++
		}
	}
}

// value scans the value of key k, recording the keys of inline tables.
func (s *keyScanner) value(k toml.Key) {
	if s.i >= len(s.src) {
		return
	}
	switch rest := s.src[s.i:]; {
	case strings.HasPrefix(rest, `"""`):
		s.multiline('"', true)
	case strings.HasPrefix(rest, `'''`):
		s.multiline('\'', false)
	case rest[0] == '"':
		s.quoted('"', true)
	case rest[0] == '\'':
		s.quoted('\'', false)
	case rest[0] == '[', rest[0] == '{':
		inline := rest[0] == '{'
		s.i++
		for s.i < len(s.src) {
			start := s.i
			s.skipSpace(true)
			switch {
			case s.i >= len(s.src):
				return
			case s.peek(']') || s.peek('}'):
				s.i++
				return
			case s.peek(','):
				s.i++
			case inline:
				s.keyValue(k)
			default:
				s.value(k)
			}
			if s.i == start {
				s.i++
			}
		}
	default:
		for s.i < len(s.src) && !strings.ContainsRune(" \t\r\n,]}#", rune(s.src[s.i])) {
			s.i++
		}
	}
}
