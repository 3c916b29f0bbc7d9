// Package e2e holds sif's end-to-end tests: they build the real sifd and
// sifctl, run sifd on a temporary root and socket, and drive it with sifctl.
// When the tests run as root, sifd runs as nobody so that file permissions
// apply to it.
package e2e
