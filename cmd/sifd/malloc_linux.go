//go:build linux && cgo

package main

// glibc's malloc is held to two arenas, unless $MALLOC_ARENA_MAX says
// otherwise. The index's block cache and memtables are allocated with C's
// malloc, from whichever thread asks: with glibc's default of up to eight
// arenas per core, each keeps the memory its threads freed, and on a
// million files sifd's resident memory rose by 70 MB over a groups and a
// dupes answer, none of it Go's; two arenas held it flat. glibc fixes its
// arena limit when a second arena is first made, which may happen while
// the Go runtime starts: the limit is set by a constructor, when the
// program is loaded, before any thread.

/*
#include <malloc.h>
#include <stdlib.h>

__attribute__((constructor)) static void sifd_limit_malloc_arenas(void) {
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 2);
	}
}
*/
import "C"
