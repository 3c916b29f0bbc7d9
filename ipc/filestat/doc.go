// Package filestat reads from an fs.FileInfo what sif tells one state of
// a file from another by, beyond its size and modification time: its
// status change time (ctime), which changes with every write and with a
// change of owner or mode, and which no one can set back.
//
// The daemon (the metadata of an indexed file) and the client (the stamp
// of a query file, package ipc) share it; it sits under ipc because the
// client must stay light: it needs the standard library only.
package filestat
