package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/term"

	"github.com/sif-dev/sif/daemon/config"
)

// sizeFlag is a flag of a number of bytes in sifd's size syntax
// (config.ParseSize: 4096, 100K, 1.5GiB, 1GB), 0 or more.
type sizeFlag struct{ p *int64 }

func (f sizeFlag) String() string { return strconv.FormatInt(*f.p, 10) }
func (f sizeFlag) Type() string   { return "size" }

func (f sizeFlag) Set(s string) error {
	n, err := config.ParseSize(s)
	if err != nil || n < 0 {
		return errors.New("want a size, such as 4096, 100K, 1MiB or 1.5G (K, M, G, T: powers of 1024; KB, MB, GB, TB: of 1000)")
	}
	*f.p = n
	return nil
}

// isTerminal says whether w is a terminal, as the text output for people
// differs from the one programs read.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// bytesExact writes n bytes as a number programs can read back.
func bytesExact(n int64) string { return fmt.Sprintf("%d bytes", n) }

// humanBytes writes n bytes for people, in powers of 1024 as ls -h and
// sifd's sizes do: 1000 bytes, 293 KiB, 1.2 GiB. Below 10 units one
// decimal is kept; a value that would round to 1024 units takes the next.
func humanBytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n), -1
	for v >= 1023.5 && u < len(units)-1 {
		v /= 1024
		u++
	}
	switch {
	case u < 0 && n == 1:
		return "1 byte"
	case u < 0:
		return bytesExact(n)
	case v < 9.95:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[u]
}
