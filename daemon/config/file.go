package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Paths of the configuration file read when none is named.
const (
	SystemFile = "/etc/sifd/config.toml" // for root
	userFile   = "sifd/config.toml"      // under the user's config dir
)

// DefaultFile returns the configuration file sifd reads when none is
// named, if it exists: SystemFile for root, else
// $XDG_CONFIG_HOME/sifd/config.toml (~/.config/sifd/config.toml); on
// Windows, sifd\config.toml under %AppData%.
func DefaultFile() string {
	if runtime.GOOS == "windows" {
		if d, err := os.UserConfigDir(); err == nil {
			return filepath.Join(d, filepath.FromSlash(userFile))
		}
		return ""
	}
	if os.Geteuid() == 0 {
		return SystemFile
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, userFile)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", userFile)
}

// File is what a configuration file says. A key the file leaves out is its
// field's zero value, which means the daemon's default (see daemon.Config,
// whose fields of the same names these fill). Paths are absolute.
type File struct {
	// Path is the file's absolute path.
	Path string

	Roots          []string           // roots
	Exclude        []string           // exclude
	MinFileSize    int64              // min_size
	MaxFileSize    int64              // max_size; -1 for "unlimited"
	SettleDelay    time.Duration      // settle_delay
	MaxSettleDelay time.Duration      // max_settle_delay
	RescanInterval time.Duration      // rescan_interval
	NetworkFS      string             // network_fs: NetworkFSScan or NetworkFSRefuse
	Workers        int                // workers
	DB             string             // db
	Socket         string             // socket
	SocketAccess   string             // socket_access: SocketAll or SocketOwner
	OperatorGroup  string             // operator_group
	MinFreeSpace   int64              // min_free_space; -1 for "none"
	Params         fingerprint.Params // [scheme]
	// SimiHash is [scheme] simihash: whether a new index keeps SimiHash
	// keys (index.Options.SimiHash); nil when the file does not say.
	SimiHash *bool

	// LogLevel is log_level, one of "debug", "info", "warn" and "error".
	LogLevel string
	// MemoryLimit is memory_limit in bytes: the soft limit of the Go heap
	// of the process (sifd sets it at start), -1 for "unlimited".
	MemoryLimit int64

	// Fleet is the [fleet] table, nil when the file has none: then this
	// host neither publishes to the fleet nor asks it.
	Fleet *Fleet
}

// Error is a problem with a configuration file. Load returns one, or
// several joined with errors.Join.
type Error struct {
	File   string
	Line   int    // 1-based; 0 if the problem is not on one line
	Key    string // dotted, e.g. "scheme.window"; "" if not about one key
	Reason string
}

// Error renders e as "FILE:LINE: KEY: reason", leaving out what is unknown.
func (e *Error) Error() string {
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

// Load reads and checks the configuration file at path. It depends only on
// the file's contents (and, to make paths absolute and check roots, on the
// file system), so it can be called again to reload the file. A missing
// file is an error: callers that read a file only if it exists check that
// first.
//
// Errors are *Error values naming the file, the line and the key: TOML
// syntax, unknown keys (all of them), values of the wrong type or out of
// range, and settings that contradict each other.
func Load(path string) (File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return File{}, &Error{File: path, Reason: err.Error()}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		reason := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return File{}, &Error{File: path, Reason: reason}
	}
	return parse(path, filepath.Dir(abs), string(data))
}

// parse parses the text of the configuration file named name, whose
// relative paths are relative to dir.
func parse(name, dir, text string) (File, error) {
	p := &parser{name: name, dir: dir, text: text}
	return p.parse()
}

type parser struct {
	name, dir, text string
	keys            *keyPositions // made on the first error after decoding
}

// errAt returns an Error for key at the line where the file sets it.
func (p *parser) errAt(key toml.Key, format string, args ...any) *Error {
	if p.keys == nil {
		p.keys = newKeyPositions(p.text)
	}
	return &Error{File: p.name, Line: p.keys.line(key), Key: key.String(), Reason: fmt.Sprintf(format, args...)}
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
	Fleet          *fleetTable  `toml:"fleet"`
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
	SimiHash *boolean   `toml:"simihash"`
}

type fleetTable struct {
	URLFile  urlFile   `toml:"url_file"`
	Host     fleetHost `toml:"host"`
	Publish  pathList  `toml:"publish"`
	Silence  silence   `toml:"silence"`
	Timeout  timeout   `toml:"timeout"`
	AskGroup askGroup  `toml:"ask_group"`
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
	"scheme.min_chunk", "scheme.avg_chunk", "scheme.max_chunk", "scheme.simihash",
	"fleet", "fleet.url_file", "fleet.host", "fleet.publish", "fleet.silence",
	"fleet.timeout", "fleet.ask_group",
}

func (p *parser) parse() (File, error) {
	// A first pass into a map finds syntax errors, and a [scheme] or
	// [fleet] that is not a table, which the struct decoder reports
	// without a position.
	var raw map[string]any
	md, err := toml.Decode(p.text, &raw)
	if err != nil {
		return File{}, p.decodeError(err)
	}
	for _, table := range []string{"scheme", "fleet"} {
		if v, ok := raw[table]; ok {
			if _, ok := v.(map[string]any); !ok {
				return File{}, p.errAt(toml.Key{table}, "want a table, not %s", tomlType(v))
			}
		}
	}

	var k fileKeys
	md, err = toml.Decode(p.text, &k)
	if err != nil {
		return File{}, p.decodeError(err)
	}
	if err := p.unknownKeys(md); err != nil {
		return File{}, err
	}

	f := File{
		Path:           filepath.Join(p.dir, filepath.Base(p.name)),
		LogLevel:       string(k.LogLevel),
		MemoryLimit:    int64(k.MemoryLimit),
		Exclude:        k.Exclude,
		MinFileSize:    int64(k.MinSize),
		MaxFileSize:    int64(k.MaxSize),
		SettleDelay:    time.Duration(k.SettleDelay),
		MaxSettleDelay: time.Duration(k.MaxSettleDelay),
		RescanInterval: time.Duration(k.RescanInterval),
		NetworkFS:      string(k.NetworkFS),
		Workers:        int(k.Workers),
		SocketAccess:   string(k.SocketAccess),
		OperatorGroup:  string(k.OperatorGroup),
		MinFreeSpace:   int64(k.MinFreeSpace),
	}
	if md.IsDefined("memory_limit") && f.MemoryLimit >= 0 && f.MemoryLimit < MinMemoryLimit {
		return File{}, p.errAt(toml.Key{"memory_limit"}, "%d bytes is less than the least sifd runs in (%d MiB); \"unlimited\" for no limit", f.MemoryLimit, MinMemoryLimit>>20)
	}
	if md.IsDefined("min_size") && md.IsDefined("max_size") && f.MaxFileSize >= 0 && f.MinFileSize > f.MaxFileSize {
		return File{}, p.errAt(toml.Key{"min_size"}, "%d bytes is more than max_size (%d bytes)", f.MinFileSize, f.MaxFileSize)
	}
	if f.SettleDelay > 0 && f.MaxSettleDelay > 0 && f.MaxSettleDelay < f.SettleDelay {
		return File{}, p.errAt(toml.Key{"max_settle_delay"}, "%v is less than settle_delay (%v)", f.MaxSettleDelay, f.SettleDelay)
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
			return File{}, p.errAt(toml.Key{"roots"}, "%s: %v", abs, err)
		case !st.IsDir():
			return File{}, p.errAt(toml.Key{"roots"}, "%s: not a directory", abs)
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			if err := CheckRootFS(abs, real); err != nil {
				return File{}, p.errAt(toml.Key{"roots"}, "%s", strings.TrimPrefix(err.Error(), "root "))
			}
		}
		f.Roots = append(f.Roots, abs)
	}
	if k.DB != "" {
		f.DB = p.path(string(k.DB))
	}
	if k.Socket != "" {
		f.Socket = p.path(string(k.Socket))
	}
	if s := k.Scheme; s != nil {
		f.Params = fingerprint.Params{
			Scheme: fingerprint.Scheme(s.Scheme), Window: int(s.Window), Bits: int(s.Bits), ModBits: int(s.ModBits),
			MinBits: int(s.MinBits), Target: int(s.Target),
			MinChunk: int(s.MinChunk), AvgChunk: int(s.AvgChunk), MaxChunk: int(s.MaxChunk),
		}
		if err := p.checkParams(md, f.Params); err != nil {
			return File{}, err
		}
		if s.SimiHash != nil {
			on := bool(*s.SimiHash)
			f.SimiHash = &on
		}
	}
	if k.Fleet != nil || md.IsDefined("fleet") {
		fl, err := p.fleet(md, k.Fleet)
		if err != nil {
			return File{}, err
		}
		f.Fleet = fl
	}
	return f, nil
}

// fleet makes the [fleet] table's Fleet, with the defaults of the keys it
// leaves out.
func (p *parser) fleet(md toml.MetaData, t *fleetTable) (*Fleet, error) {
	if t == nil {
		t = &fleetTable{}
	}
	fl := &Fleet{
		Host:     string(t.Host),
		Silence:  DefaultFleetSilence,
		Timeout:  DefaultFleetTimeout,
		AskGroup: DefaultFleetAskGroup,
		file:     filepath.Join(p.dir, filepath.Base(p.name)),
	}
	if t.URLFile != "" {
		fl.URLFile = p.path(string(t.URLFile))
	}
	if md.IsDefined("fleet", "silence") {
		fl.Silence = time.Duration(t.Silence)
	}
	if md.IsDefined("fleet", "timeout") {
		fl.Timeout = time.Duration(t.Timeout)
	}
	if md.IsDefined("fleet", "ask_group") {
		fl.AskGroup = string(t.AskGroup)
	}
	seen := map[string]string{}
	for _, e := range t.Publish {
		abs := p.path(e)
		if first, ok := seen[abs]; ok {
			if first == e {
				return nil, p.errAt(toml.Key{"fleet", "publish"}, "%q is listed twice", e)
			}
			return nil, p.errAt(toml.Key{"fleet", "publish"}, "%q and %q are the same directory, %s", first, e, abs)
		}
		seen[abs] = e
		fl.Publish = append(fl.Publish, abs)
	}
	return fl, nil
}

// decodeError turns an error from the TOML decoder into an Error.
func (p *parser) decodeError(err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: p.name, Line: pe.Position.Line, Key: pe.LastKey, Reason: pe.Message}
	}
	return &Error{File: p.name, Reason: strings.TrimPrefix(err.Error(), "toml: ")}
}

// unknownKeys reports every key the file sets that sifd does not know,
// outermost only: for "[a.b]" or "a.b = 1", a is reported once and its keys
// are not listed again.
func (p *parser) unknownKeys(md toml.MetaData) error {
	var errs []error
	seen := map[string]bool{}
	for _, k := range md.Keys() { // in the file's order
		for i := 1; i <= len(k); i++ {
			ks := k[:i].String()
			if slices.Contains(knownKeys, ks) {
				continue
			}
			if !seen[ks] {
				seen[ks] = true
				reason := "unknown key"
				if ks == "fleet.url" {
					reason = "the database URL holds its password and this file is readable by every local user: " +
						"write the URL in a file of mode 0600 named by url_file, or in " + FleetURLEnv + " in sifd's environment"
				}
				errs = append(errs, p.errAt(k[:i], "%s", reason))
			}
			break
		}
	}
	return errors.Join(errs...)
}

// checkParams checks the [scheme] table with fingerprint.Params.Normalize.
func (p *parser) checkParams(md toml.MetaData, params fingerprint.Params) error {
	n, err := params.Normalize()
	if err != nil {
		// Normalize says "fingerprint: invalid parameters: FIELD VALUE: reason".
		msg := strings.TrimPrefix(err.Error(), fingerprint.ErrParams.Error()+": ")
		field, rest, _ := strings.Cut(msg, " ")
		key := toml.Key{"scheme", field}
		if md.IsDefined("scheme", field) {
			msg = rest
		} else {
			key = toml.Key{"scheme"} // a default derived from another field
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
			return p.errAt(toml.Key{"scheme", f}, "applies only to scheme %q", otherScheme(n.Scheme))
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
func (p *parser) path(s string) string {
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
