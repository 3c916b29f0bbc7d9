package main

// The simulated fleet of the fleet benchmark: hosts whose files share
// contents as a company's file servers do, planned from a seed. Each
// content's bytes are a function of the seed and its number alone, so a
// content can be made again (an edited version's bytes are its original's,
// edited) and the fleet is the same on every machine.

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/sif-dev/sif/index/fingerprint"
)

// The kinds of file in a fleet.
const (
	fUnique = iota // a content found nowhere else in the fleet (when planned)
	fCopy          // an exact copy of a file on another host
	fEdit          // an edited version of a file on another host
)

// The shares of the fleet, in files: fleetShareCopy of them are exact
// copies of a file on another host (the same content: a replica, a file
// mailed around, a vendored tree), fleetShareEdit edited versions of a file
// on another host (a new content whose fingerprints overlap the
// original's: a later draft, a patched config), and the rest unique
// contents. A copy or an edit picks its original uniformly among the files
// planned before it on other hosts, so popular contents gain copies as
// the fleet grows, and an edit may be of an edit. Unique contents are
// text or binary, of the million benchmark's sizes (200 B to 8 KiB, with
// a few of up to 1 MiB and fewer of up to 8 MiB).
const (
	fleetShareCopy   = 0.30
	fleetShareEdit   = 0.10
	fleetShareBinary = 0.25 // of the unique contents
)

// fContent is one planned content.
type fContent struct {
	Origin int32 // fEdit: the content it edits; -1 for a unique content
	Size   int32 // a unique content's size; an edit's original's
	Binary bool
	Edit   uint8 // an edit: how (mEditSubstitute, mEditTruncate, mEditInsert)
}

// fFile is one planned file.
type fFile struct {
	Host    int32
	Kind    uint8
	Content int32
	Dir     int32 // a directory of its host
}

// fleetPlan is the plan of a fleet: its contents, and its files, host
// i%Hosts holding file i.
type fleetPlan struct {
	Seed     uint64
	Hosts    int
	Contents []fContent
	Files    []fFile
}

// planFleet plans a fleet of files files over hosts hosts from seed.
func planFleet(hosts, files int, seed uint64) *fleetPlan {
	r := rand.New(rand.NewPCG(seed, 0x666c656574))
	p := &fleetPlan{Seed: seed, Hosts: hosts, Files: make([]fFile, files)}
	dirs := max(1, files/hosts/mFilesPerDir)
	logUniform := func(lo, hi int) int32 {
		return int32(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	}
	// other picks a file planned before i on a host other than h, or -1.
	other := func(i int, h int32) int {
		for range 16 {
			if i == 0 {
				return -1
			}
			if j := r.IntN(i); p.Files[j].Host != h {
				return j
			}
		}
		return -1
	}
	for i := range p.Files {
		f := &p.Files[i]
		f.Host = int32(i % hosts)
		f.Dir = int32(r.IntN(dirs))
		x := r.Float64()
		switch j := other(i, f.Host); {
		case x < fleetShareCopy && j >= 0:
			f.Kind, f.Content = fCopy, p.Files[j].Content
		case x < fleetShareCopy+fleetShareEdit && j >= 0:
			o := p.Files[j].Content
			f.Kind, f.Content = fEdit, int32(len(p.Contents))
			p.Contents = append(p.Contents, fContent{Origin: o, Size: p.Contents[o].Size, Binary: p.Contents[o].Binary,
				Edit: [4]uint8{mEditSubstitute, mEditSubstitute, mEditTruncate, mEditInsert}[r.IntN(4)]})
		default:
			c := fContent{Origin: -1, Binary: r.Float64() < fleetShareBinary}
			switch y := r.Float64(); {
			case y < mShareLarge:
				c.Size = logUniform(mLargeLo, mLargeHi)
			case y < mShareLarge+mShareMedium:
				c.Size = logUniform(mMediumLo, mMediumHi)
			default:
				c.Size = logUniform(mSmallLo, mSmallHi)
			}
			f.Kind, f.Content = fUnique, int32(len(p.Contents))
			p.Contents = append(p.Contents, c)
		}
	}
	return p
}

// path is file i's path: under its host's root.
func (p *fleetPlan) path(i int) string {
	f := p.Files[i]
	ext := ".txt"
	if p.Contents[f.Content].Binary {
		ext = ".bin"
	}
	return p.root(int(f.Host)) + "/d" + strconv.Itoa(int(f.Dir)) + "/f" + strconv.Itoa(i) + ext
}

// root is host h's published root.
func (p *fleetPlan) root(h int) string { return fmt.Sprintf("/srv/host%02d", h) }

// hostName is host h's name in the fleet.
func (p *fleetPlan) hostName(h int) string { return fmt.Sprintf("host%02d", h) }

// content returns the bytes of content c.
func (p *fleetPlan) content(c int) []byte {
	k := p.Contents[c]
	r := rand.New(rand.NewPCG(p.Seed, uint64(c)|1<<40))
	if k.Origin < 0 {
		if !k.Binary {
			return randomText(r, int(k.Size))
		}
		b := make([]byte, k.Size)
		for j := 0; j < len(b); j += 8 {
			x := r.Uint64()
			for i := j; i < min(j+8, len(b)); i++ {
				b[i] = byte(x)
				x >>= 8
			}
		}
		copy(b, "\x7fBIN\x00\x00\x01\x00") // a header with NULs, as binary formats have
		return b
	}
	b := p.content(int(k.Origin))
	switch k.Edit {
	case mEditSubstitute:
		return substitute(r, b, 0.02+0.28*r.Float64())
	case mEditTruncate:
		n := len(b) * (40 + r.IntN(51)) / 100
		return append(b[:n:n], randomText(r, 1+len(b)/4)...)
	}
	runs := 1 + r.IntN(3)
	add := max(1, int(float64(len(b))*(0.02+0.18*r.Float64()))/runs)
	for range runs {
		at := r.IntN(len(b) + 1)
		b = append(b[:at:at], append(randomText(r, add), b[at:]...)...)
	}
	return b
}

// sketchAll sketches every content of p from its bytes with the real
// fingerprint code, on one goroutine per core, and returns the sketches
// by content and the bytes sketched.
func (p *fleetPlan) sketchAll(ctx context.Context, params fingerprint.Params) ([]*fingerprint.Sketch, int64, error) {
	out := make([]*fingerprint.Sketch, len(p.Contents))
	var next, total atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range runtime.GOMAXPROCS(0) {
		g.Go(func() error {
			for ctx.Err() == nil {
				c := int(next.Add(1) - 1)
				if c >= len(out) {
					return nil
				}
				b := p.content(c)
				sk, err := fingerprint.SketchReader(bytes.NewReader(b), params)
				if err != nil {
					return fmt.Errorf("sketching content %d: %w", c, err)
				}
				out[c] = sk
				total.Add(int64(len(b)))
			}
			return ctx.Err()
		})
	}
	err := g.Wait()
	return out, total.Load(), err
}

// fleetMix counts a plan's files by kind and its contents.
type fleetMix struct {
	Files    int `json:"files"`
	Unique   int `json:"unique_files"`
	Copies   int `json:"copies_of_other_hosts_files"`
	Edits    int `json:"edited_versions_of_other_hosts_files"`
	Contents int `json:"distinct_contents"`
	// Shared counts the contents held by files on two hosts or more.
	Shared int `json:"contents_on_two_hosts_or_more"`
}

func (p *fleetPlan) mix() fleetMix {
	m := fleetMix{Files: len(p.Files), Contents: len(p.Contents)}
	first := make([]int32, len(p.Contents))
	shared := make([]bool, len(p.Contents))
	for i := range first {
		first[i] = -1
	}
	for _, f := range p.Files {
		switch f.Kind {
		case fUnique:
			m.Unique++
		case fCopy:
			m.Copies++
		case fEdit:
			m.Edits++
		}
		switch h := first[f.Content]; {
		case h < 0:
			first[f.Content] = f.Host
		case h != f.Host && !shared[f.Content]:
			shared[f.Content] = true
			m.Shared++
		}
	}
	return m
}

// hostFiles lists the files of each host, by number.
func (p *fleetPlan) hostFiles() [][]int {
	out := make([][]int, p.Hosts)
	for i, f := range p.Files {
		out[f.Host] = append(out[f.Host], i)
	}
	return out
}
