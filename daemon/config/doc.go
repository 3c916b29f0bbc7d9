// Package config reads sifd's configuration file and holds the vocabulary
// the file shares with the flags and the daemon: the values of network_fs
// and socket_access, the memory limits, the size syntax (ParseSize), the
// operator group's lookup, the check that refuses a root on a kernel
// pseudo-filesystem, and the fleet's settings (Fleet).
//
// # The file
//
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
//	socket_access = "all"              # or "owner"
//	operator_group = "sif-operators"   # a group name or a numeric gid
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
//	simihash = false                   # SimiHash keys, for similar --by simihash
//
//	[fleet]                            # publish to, and ask, the fleet index
//	url_file = "/etc/sifd/fleet.url"   # holds the database URL; or $SIF_FLEET_URL
//	host = "fs1"                       # this host's name; default: the hostname
//	publish = ["/srv/src"]             # default none: only ask
//	silence = "10m"                    # a host silent this long is left out
//	timeout = "2s"                     # a slower fleet query fails
//	ask_group = "sif-fleet"            # may ask, besides root and sifd's user
//
// Relative paths in roots, db, socket, url_file and publish are taken
// relative to the directory holding the file, not the working directory;
// a leading "~/" stands for the home directory of the user sifd runs as. Load reads a
// file into a File, whose fields are named after the daemon.Config fields
// they fill. DefaultFile is the file sifd run reads when --config does not
// name one: SystemFile for root, else the user's.
//
// # The fleet
//
// The fleet index is a database, spoken to with the PostgreSQL wire
// protocol, that many hosts' sifd publish to and ask. A file without a
// [fleet] table leaves the fleet off (File.Fleet is nil); with one, even
// empty, sifd uses it, and Load fills in the defaults of the keys left
// out. Publish names the directories whose files this host publishes:
// the host, path, size, mtime and content id of each file, and each
// content's sampled fingerprints, size and strong hash; never file bytes.
// None: the host only asks. Silence is how long a host may go unheard
// before the fleet's answers leave it out; Timeout bounds a fleet query.
// Root, the daemon's user and the members of AskGroup may ask. A group
// ask_group names must exist when the file is loaded, as operator_group's
// must; the default, sif-fleet, need not, written or left out: a group
// that does not exist has no members (Fleet.AskGID).
//
// The database URL, which holds its password, is never in this file (every
// local user may read it) nor on a command line: a url key is refused.
// Fleet.URL reads it from $SIF_FLEET_URL or from the file url_file names,
// which only its owner, root or the daemon's user, may read or write; it
// is checked when it is read, each time, not when the configuration is
// loaded. An empty [fleet] therefore loads, and URL says that no URL is
// set if neither gives one. No error shows the URL.
//
// # File, flags and defaults
//
// Three layers make the configuration sifd runs with, each over the one
// below: the defaults, the file, the flags. cmd/sifd starts from the
// File's values, replaces each one whose flag was given on the command
// line (--root flags replace the file's roots, not add to them), and hands
// the result, a daemon.Config, to the daemon. A value still zero there
// means its default, which the daemon fills in (daemon.Config says which),
// so a file may not write a zero that would mean something else:
// min_free_space = 0 is refused ("none" keeps no room). On SIGHUP, sifd loads the file
// again and applies the same flags over it; a file with an error leaves the
// running configuration in place.
//
// # Errors
//
// Every problem with a file is an *Error that renders as
// "FILE:LINE: KEY: reason", e.g.
//
//	/etc/sifd/config.toml:4: max_size: "12 parsecs": unknown unit "parsecs": ...
//
// The TOML library (github.com/BurntSushi/toml) gives the line: of a syntax
// error, and of a key whose value a field type refuses (each field's type
// in values.go checks its TOML type and range as it is decoded). Problems
// found after decoding, an unknown key (all of them are reported, joined
// with errors.Join; keys are spelled exactly, "Workers" is unknown) or two
// settings that contradict each other, take the line of the key from the
// same library (lines.go). Only a file that cannot be read has no line.
package config
