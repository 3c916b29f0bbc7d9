package index

import (
	"errors"

	"github.com/sif-dev/sif/index/fingerprint"
)

var errTODO = errors.New("index: not implemented yet")

// Index is a Pebble-backed sif index.
type Index struct{ params fingerprint.Params }

func Open(dir string, opts *Options) (*Index, error) { return nil, errTODO }

func (ix *Index) Params() fingerprint.Params { return ix.params }
func (ix *Index) Close() error               { return errTODO }
func (ix *Index) Sync() error                { return errTODO }
func (ix *Index) Put(meta FileMeta, sk *fingerprint.Sketch) (FileRecord, error) {
	return FileRecord{}, errTODO
}
func (ix *Index) Remove(path string) error                             { return errTODO }
func (ix *Index) Rename(oldPath string, meta FileMeta) error           { return errTODO }
func (ix *Index) Lookup(path string) (FileRecord, error)               { return FileRecord{}, errTODO }
func (ix *Index) Files(prefix string, fn func(FileRecord) error) error { return errTODO }
func (ix *Index) Similar(q Query, opts QueryOptions) (*Result, error)  { return nil, errTODO }
func (ix *Index) Groups(opts GroupOptions) ([]Group, error)            { return nil, errTODO }
func (ix *Index) Dupes(prefix string) ([]DupeSet, error)               { return nil, errTODO }
func (ix *Index) Stats() (Stats, error)                                { return Stats{}, errTODO }
func (ix *Index) Check() (*CheckReport, error)                         { return nil, errTODO }
