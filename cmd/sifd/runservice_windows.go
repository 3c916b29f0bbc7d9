package main

// exitOnFailure: the Windows service manager learns that a service failed
// only when its process dies, so a daemon that fails on its own exits.
const exitOnFailure = true
