// Package filestat reads from an fs.FileInfo what sif tells one state of
// a file from another by, beyond its size and modification time: its
// status change time (ctime), which changes with every write and with a
// change of owner or mode, and which no one can set back.
//
// It is internal to sif: the daemon (the metadata of an indexed file)
// and the client (the stamp of a query file, package ipc) share it, and
// it keeps the client light (standard library only).
package filestat
