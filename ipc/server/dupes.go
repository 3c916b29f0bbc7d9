package server

import (
	"encoding/hex"
	"slices"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// dupesResponse converts the index's sets of identical files to their wire
// form, with the redundant copies of each set and the totals. Hard links
// to one inode count as one copy on disk. When canRead is not nil, only the
// files it accepts are listed and counted, and a set left with fewer than
// two files is dropped: a copy the caller cannot see makes no set.
func dupesResponse(sets []index.DupeSet, canRead func(string) bool) ipc.DupesResponse {
	out := ipc.DupesResponse{Sets: make([]ipc.DupeSet, 0, len(sets))}
	for i := range sets {
		d := &sets[i]
		if canRead != nil {
			kept := *d
			kept.Files = slices.DeleteFunc(slices.Clone(d.Files), func(f index.FileMeta) bool { return !canRead(f.Path) })
			if len(kept.Files) < 2 {
				continue
			}
			d = &kept
		}
		set := ipc.DupeSet{Size: d.Size, Strong: hex.EncodeToString(d.Strong[:]), Inodes: d.Inodes(),
			Files: make([]ipc.DupeFile, 0, len(d.Files))}
		set.RedundantFiles, set.RedundantBytes = d.Redundant()
		for j, link := range d.HardLinkOf() {
			f := ipc.DupeFile{FilePath: ipc.NewFilePath(d.Files[j].Path)}
			if link != "" {
				l := ipc.NewFilePath(link)
				f.HardLinkOf = &l
			}
			set.Files = append(set.Files, f)
		}
		out.Sets = append(out.Sets, set)
		out.Totals.Sets++
		out.Totals.Files += len(set.Files)
		out.Totals.RedundantFiles += set.RedundantFiles
		out.Totals.RedundantBytes += set.RedundantBytes
	}
	return out
}
