package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// dirTotals answers POST /v1/dirs/totals: the indexed files and bytes in
// each directory tree asked, counting only the files the caller may read
// (as every answer does), each count bounded by the request's max_files.
// A backend whose Query does not implement index.DirTotaler answers 404.
func (s *Server) dirTotals(w http.ResponseWriter, r *http.Request, c *caller, req *ipc.DirTotalsRequest) {
	start := received(r)
	dt, ok := s.q.(index.DirTotaler)
	if !ok {
		notSupported(w, r)
		return
	}
	if n := len(req.Dirs); n > ipc.MaxDirTotals {
		writeError(w, http.StatusRequestEntityTooLarge, ipc.CodeTooLarge,
			fmt.Sprintf("dirs: %d directories, more than the %d this daemon takes in one request", n, ipc.MaxDirTotals))
		return
	}
	if req.MaxFiles < 0 {
		writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, fmt.Sprintf("max_files %d: want 0 (the default) or a count", req.MaxFiles))
		return
	}
	dirs := make([]string, len(req.Dirs))
	for i, d := range req.Dirs {
		p, err := reqPath(fmt.Sprintf("dirs[%d].path", i), d.Path, d.PathRaw)
		if err == nil && p == "" {
			err = fmt.Errorf("dirs[%d].path: empty; want an absolute directory", i)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, ipc.CodeBadRequest, err.Error())
			return
		}
		dirs[i] = p
	}
	opts := index.DirTotalsOptions{MaxFiles: min(req.MaxFiles, ipc.MaxDirMaxFiles)}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = ipc.DefaultDirMaxFiles
	}
	if v := c.view(); v != nil {
		opts.Visible = visibleTo(v)
	}
	ts, err := dt.DirTotals(r.Context(), dirs, &opts)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := ipc.DirTotalsResponse{Dirs: make([]ipc.DirTotal, len(ts))}
	for i, t := range ts {
		// Answer with the path as asked, so a client matches answers to
		// questions by position or by path.
		out.Dirs[i] = ipc.DirTotal{FilePath: req.Dirs[i], Files: t.Files, Bytes: t.Bytes, Truncated: t.Truncated}
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}
