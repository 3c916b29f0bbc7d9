package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/sif-dev/sif/daemon/config"
	"github.com/sif-dev/sif/index/fingerprint"
	"github.com/sif-dev/sif/ipc"
)

// SystemStateDir is the system-wide sifd's state directory, the only one
// the system service may write besides its socket's. The index lives in it,
// so that an index moved aside (older format, damage) stays writable.
const SystemStateDir = "/var/lib/sifd"

// SystemDB is where a system-wide sifd keeps its index.
const SystemDB = SystemStateDir + "/index"

// DefaultMaxFileSize is the largest file indexed when no limit is set.
const DefaultMaxFileSize = 256 << 20

// DefaultRescanInterval is how often what cannot be watched is rescanned.
const DefaultRescanInterval = 30 * time.Minute

// DefaultProgressEvery is how often a scan logs its progress.
const DefaultProgressEvery = 5 * time.Second

// Places returns the index directory and the socket c runs with, and the
// socket's permission bits, with the defaults filled in as Run fills them.
func (c Config) Places() (db, socket string, mode os.FileMode) {
	if c.DB == "" {
		c.DB = DefaultDB()
	}
	if c.Socket == "" {
		c.Socket = ipc.DefaultSocket()
	}
	if c.SocketAccess == "" {
		c.SocketAccess = defaultSocketAccess(c.Socket)
	}
	return c.DB, c.Socket, c.socketMode()
}

// defaultSocketAccess is who may connect to socket when the configuration
// does not say: every user to the system socket, else the owner.
func defaultSocketAccess(socket string) string {
	if socket == ipc.SystemSocket {
		return config.SocketAll
	}
	return config.SocketOwner
}

// socketMode returns the socket's permission bits for c.SocketAccess.
func (c *Config) socketMode() os.FileMode {
	if c.SocketAccess == config.SocketAll {
		return 0o666
	}
	return 0o600
}

// Config is what sifd runs with. The zero value of a field means its
// default.
type Config struct {
	Roots  []string
	DB     string // index directory; default DefaultDB()
	Socket string // default ipc.DefaultSocket()
	// Workers read and fingerprint files; 0 means one per core.
	Workers int
	// Params are the fingerprint parameters; zero means those stored in an
	// existing index, or fingerprint.DefaultParams() for a new one.
	Params fingerprint.Params
	// SimiHash is whether the index keeps SimiHash keys, for SimiFind
	// (index.Options.SimiHash); nil means what an existing index stores,
	// or index.DefaultSimiHash for a new one.
	SimiHash *bool
	// MaxFileSize skips larger files; 0 means DefaultMaxFileSize, negative
	// means no limit.
	MaxFileSize int64
	// MinFileSize skips smaller files; 0 means none is skipped for its size.
	MinFileSize int64
	// Exclude lists the glob patterns (path.Match syntax) of paths not to
	// index, such as ".git/", "node_modules/" or "*.swp"; a pattern ending
	// in "/" matches directories only (see watcher.Exclude).
	Exclude []string
	// SettleDelay is how long a changed file must be quiet before it is
	// read again; 0 means the watcher's default.
	SettleDelay time.Duration
	// MaxSettleDelay bounds how long a file that keeps changing waits
	// after its first change; 0 means the watcher's default.
	MaxSettleDelay time.Duration
	// MaxSettling bounds the paths settling one by one; past it, changes
	// are kept per directory and the directory rescanned once it settles.
	// 0 means watcher.DefaultMaxPending.
	MaxSettling int
	// RescanInterval is how often roots on filesystems without change
	// events, and directories that could not be watched, are rescanned; 0
	// means DefaultRescanInterval.
	RescanInterval time.Duration
	// NetworkFS says what to do with a root on a filesystem that sends no
	// change events (NFS, SMB, FUSE, proc): [config.NetworkFSScan] (the default)
	// rescans it every RescanInterval, [config.NetworkFSRefuse] refuses it.
	NetworkFS string
	// EventBuffer is the capacity of the queue between the kernel's event
	// reader and the daemon; 0 means the watcher's default. Tests make it
	// tiny to force event loss.
	EventBuffer uint
	// DropEvents, when positive, makes the watcher drop every
	// DropEvents-th event and report it lost (fault injection for tests).
	DropEvents int
	// MinFreeSpace is the free space, in bytes, kept on the filesystem of
	// the index: below it, index writes are put on hold until there is
	// room again. 0 means [config.DefaultMinFreeSpace], or a quarter of the
	// filesystem's size where that is less (space.go); negative means none
	// is kept (writes stop only when they fail).
	MinFreeSpace int64
	// NoWatch turns watching off: roots are scanned at start and then
	// every RescanInterval, like roots without events.
	NoWatch bool
	// ShutdownTimeout bounds how long a shutdown waits for work in flight;
	// 0 means 10s. Past it, sifd exits without closing the index cleanly
	// (the index stays consistent; the next start reconciles).
	ShutdownTimeout time.Duration
	// Reload, if set, is called on SIGHUP for a new configuration. Roots,
	// exclusions and size limits apply at once; other changes (the rescan
	// interval among them) are logged as needing a restart. If Reload
	// fails, the running configuration stays.
	Reload func() (Config, error)
	// ProgressEvery is how often a scan logs its progress (and the first
	// scan tells the Notifier); 0 means DefaultProgressEvery.
	ProgressEvery time.Duration
	// Notifier, if set, is told when the daemon serves queries, how the
	// first scan goes, and when it stops (see Notifier). sifd run sets
	// one that speaks systemd's notify protocol.
	Notifier Notifier
	// SocketAccess says who may connect to the socket: [config.SocketAll], every
	// local user (mode 0666; each caller's answers name only the files it
	// may read), or [config.SocketOwner], the daemon's own user and root (0600).
	// "" means [config.SocketAll] for the system socket (ipc.SystemSocket) and
	// [config.SocketOwner] for any other, such as a per-user daemon's.
	SocketAccess string
	// SocketCheckEvery is how often the socket file is checked: if it
	// was removed or replaced, the daemon listens again on a new one at
	// the same path. 0 means server.DefaultCheckEvery (2s).
	SocketCheckEvery time.Duration
	// OperatorGroup names a group, or gives a numeric gid, whose members
	// may change the daemon (add and remove roots, ask for rescans) besides
	// root and the daemon's own user. "" means no group.
	OperatorGroup string
	Version       string
	Logger        *slog.Logger // nil discards
	// LogLevel is the level Logger was set up with: "debug", "info",
	// "warn" or "error" ("" when unknown). LevelVar, when set, is the
	// level of Logger's handler: a reload that changes LogLevel sets it at
	// once. Without LevelVar a change is logged as needing a restart.
	LogLevel string
	LevelVar *slog.LevelVar
	// Fleet links the daemon to a fleet index; nil means none.
	Fleet *FleetConfig
}

// DefaultDB returns the index directory used when none is named:
// SystemDB for root, else the per-user state directory.
func DefaultDB() string {
	if os.Geteuid() == 0 {
		return SystemDB
	}
	return filepath.Join(ipc.UserStateDir(), "index")
}

// withDefaults fills in defaults and checks the roots: each must exist and
// be a directory. Roots are made absolute with symlinks resolved, and roots
// inside other roots are dropped.
func (c Config) withDefaults() (Config, error) {
	if len(c.Roots) == 0 {
		return c, errors.New("no roots: name at least one directory with --root or in the configuration file")
	}
	if c.DB == "" {
		c.DB = DefaultDB()
	}
	if c.Socket == "" {
		c.Socket = ipc.DefaultSocket()
	}
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.MaxFileSize == 0 {
		c.MaxFileSize = DefaultMaxFileSize
	}
	if c.RescanInterval <= 0 {
		c.RescanInterval = DefaultRescanInterval
	}
	if c.MinFreeSpace == 0 {
		c.MinFreeSpace = config.DefaultMinFreeSpace
	}
	switch c.NetworkFS {
	case "":
		c.NetworkFS = config.NetworkFSScan
	case config.NetworkFSScan, config.NetworkFSRefuse:
	default:
		return c, fmt.Errorf("network_fs %q: want %q or %q", c.NetworkFS, config.NetworkFSScan, config.NetworkFSRefuse)
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if _, err := newFilter(c); err != nil {
		return c, fmt.Errorf("exclude: %w", err)
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	switch c.SocketAccess {
	case "":
		c.SocketAccess = defaultSocketAccess(c.Socket)
	case config.SocketAll, config.SocketOwner:
	default:
		return c, fmt.Errorf("socket_access %q: want %q (every local user, answers filtered by their rights) or %q (the daemon's user and root)",
			c.SocketAccess, config.SocketAll, config.SocketOwner)
	}
	if c.OperatorGroup != "" {
		if _, err := config.LookupGroup(c.OperatorGroup); err != nil {
			return c, fmt.Errorf("operator_group: %w", err)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	roots, err := cleanRoots(c.Roots)
	if err != nil {
		return c, err
	}
	c.Roots = roots
	db, err := filepath.Abs(c.DB)
	if err != nil {
		return c, fmt.Errorf("db %s: %w", c.DB, err)
	}
	c.DB = db
	if c.Fleet != nil {
		f := *c.Fleet
		c.Fleet = &f
		if err := c.checkFleet(); err != nil {
			return c, err
		}
	}
	return c, nil
}

func cleanRoots(in []string) ([]string, error) {
	var roots []string
	for _, r := range in {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", r, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", r, err)
		}
		st, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("root %s: %w", r, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("root %s: not a directory", r)
		}
		if err := config.CheckRootFS(r, real); err != nil {
			return nil, err
		}
		roots = append(roots, real)
	}
	sort.Strings(roots)
	out := roots[:0]
	for _, r := range roots {
		if len(out) > 0 && under(r, out[len(out)-1]) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// under reports whether path is root or lies below it.
func under(path, root string) bool {
	if path == root {
		return true
	}
	return strings.HasPrefix(path, dirPrefix(root))
}

// dirPrefix returns root with exactly one trailing separator.
func dirPrefix(root string) string {
	if strings.HasSuffix(root, string(filepath.Separator)) {
		return root
	}
	return root + string(filepath.Separator)
}
