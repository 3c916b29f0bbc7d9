package daemon

import "os"

// canList returns nil if the daemon may list directory dir, else why not.
func canList(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	return f.Close()
}

// canRead returns nil if the daemon may read the file at path.
func canRead(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}
