//go:build !unix

package daemon

import (
	"errors"
	"io"
	"os"
)

// rfile is a file opened by the reader.
type rfile struct{ f *os.File }

// openRead opens path for reading as openNoFollow does.
func openRead(path string) (rfile, error) {
	f, err := openNoFollow(path)
	return rfile{f}, err
}

// read reads into b; it returns 0 and no error at the end of the file.
func (f rfile) read(b []byte) (int, error) {
	n, err := f.f.Read(b)
	if errors.Is(err, io.EOF) {
		return n, nil
	}
	return n, err
}

// stat returns what fstat says of the open file.
func (f rfile) stat() (fileStat, error) {
	st, err := f.f.Stat()
	if err != nil {
		return fileStat{}, err
	}
	return statOf(st), nil
}

func (f rfile) close() error { return f.f.Close() }
