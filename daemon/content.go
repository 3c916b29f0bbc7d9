package daemon

import (
	"errors"
	"fmt"
	"io"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc/server"
)

// OpenIndexed implements server.ContentOpener: it opens an indexed file for a
// check of a query's candidates, as the workers open files (no final
// symlink followed, no blocking on special files), and returns its current
// metadata. A file that vanished, became a symlink or is no longer regular
// is server.ErrGone.
func (d *Daemon) OpenIndexed(path string) (io.ReadCloser, index.FileMeta, error) {
	f, err := openNoFollow(path)
	if err != nil {
		err = classifyOpen(path, err)
		if errors.Is(err, errVanished) || errors.Is(err, errSymlink) {
			return nil, index.FileMeta{}, fmt.Errorf("%w: %w", server.ErrGone, err)
		}
		return nil, index.FileMeta{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, index.FileMeta{}, fmt.Errorf("%s: %w: %v", path, errUnreadable, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, index.FileMeta{}, fmt.Errorf("%w: %s: %w (%s)", server.ErrGone, path, errSpecial, st.Mode().Type())
	}
	dev, ino := fileID(st)
	return f, index.FileMeta{Path: path, Size: st.Size(), MtimeNs: st.ModTime().UnixNano(), Dev: dev, Ino: ino, Mode: uint32(st.Mode())}, nil
}
