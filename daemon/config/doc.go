// Package config reads sifd's configuration file and holds the vocabulary
// the file shares with the flags and the daemon: the values of network_fs
// and socket_access, the memory limits, the size syntax (ParseSize), the
// operator group's lookup and the check that refuses a root on a kernel
// pseudo-filesystem.
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
//
// Relative paths in roots, db and socket are taken relative to the
// directory holding the file, not the working directory; a leading "~/"
// stands for the home directory of the user sifd runs as. Load reads a
// file into a File, whose fields are named after the daemon.Config fields
// they fill. DefaultFile is the file sifd run reads when --config does not
// name one: SystemFile for root, else the user's.
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
