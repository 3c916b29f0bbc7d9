//go:build !linux

package watcher

import "context"

func walkTree(ctx context.Context, dir string, o WalkOptions, excluded func(p string, isDir bool) bool, fn func(Entry) error) error {
	return walkPortable(ctx, dir, o, excluded, fn)
}
