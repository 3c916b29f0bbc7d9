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
// A directory of another host of the fleet (HostDir.Host) is counted by
// the fleet, in one call for all of them: for those who may ask the
// fleet, 404 no_fleet without one, 503 fleet_unavailable when it fails.
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
	maxFiles := min(req.MaxFiles, ipc.MaxDirMaxFiles)
	if maxFiles == 0 {
		maxFiles = ipc.DefaultDirMaxFiles
	}
	// This host's directories, and the others' (by index into req.Dirs).
	var local, remote []int
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
		if d.Host == "" {
			local = append(local, i)
			continue
		}
		if len(remote) == 0 && !s.mayAskFleet(w, c) {
			return
		}
		if d.Host == s.fleet.Host() {
			local = append(local, i)
		} else {
			remote = append(remote, i)
		}
	}
	out := ipc.DirTotalsResponse{Dirs: make([]ipc.DirTotal, len(req.Dirs))}
	for i, d := range req.Dirs {
		// Answer with the directory as asked, so a client matches answers
		// to questions by position or by path.
		out.Dirs[i] = ipc.DirTotal{Host: d.Host, FilePath: d.FilePath}
	}
	if len(remote) > 0 {
		hd := make([]ipc.HostDir, len(remote))
		for j, i := range remote {
			hd[j] = ipc.HostDir{Host: req.Dirs[i].Host, FilePath: ipc.NewFilePath(dirs[i])}
		}
		ts, err := s.fleet.DirTotals(r.Context(), hd, maxFiles)
		if err == nil && len(ts) != len(hd) {
			err = fmt.Errorf("%d totals for %d directories", len(ts), len(hd))
		}
		if err != nil {
			s.fleetFailed(w, err)
			return
		}
		for j, i := range remote {
			t := &out.Dirs[i]
			t.Files, t.Bytes, t.Truncated = ts[j].Files, ts[j].Bytes, ts[j].Truncated
		}
	}
	if len(local) > 0 {
		opts := index.DirTotalsOptions{MaxFiles: maxFiles}
		if v := c.view(); v != nil {
			opts.Visible = visibleTo(v)
		}
		paths := make([]string, len(local))
		for j, i := range local {
			paths[j] = dirs[i]
		}
		ts, err := dt.DirTotals(r.Context(), paths, &opts)
		if err != nil {
			s.fail(w, err)
			return
		}
		for j, i := range local {
			t := &out.Dirs[i]
			t.Files, t.Bytes, t.Truncated = ts[j].Files, ts[j].Bytes, ts[j].Truncated
		}
	}
	out.ElapsedNs = time.Since(start).Nanoseconds()
	writeJSON(w, out)
}
