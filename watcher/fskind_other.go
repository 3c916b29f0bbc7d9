//go:build !linux

package watcher

// DetectFS tells what kind of filesystem holds path. Only Linux is
// supported: elsewhere it returns LocalFS, "unknown" and no error.
func DetectFS(path string) (kind FSKind, name string, err error) {
	return LocalFS, "unknown", nil
}
