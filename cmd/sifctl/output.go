package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/sif-dev/sif/ipc"
)

// Output helpers shared by the commands: JSON lines and lists written as
// they come, counts with their nouns, exact paths.

// jsonList writes the list of a JSON object as its elements come: the
// object up to the list's "[" (open) before the first, a comma before each
// other. The caller writes what follows the list.
type jsonList struct {
	open string
	n    int // the elements written
}

func (l *jsonList) add(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sep := ","
	if l.n == 0 {
		sep = l.open
	}
	l.n++
	_, err = io.WriteString(w, sep+string(b))
	return err
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := ipc.MarshalJSONLine(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// count renders n with its noun, e.g. "1 set", "2 sets".
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// exactPath returns a wire path's exact bytes.
func exactPath(p, raw string) string {
	if e, err := ipc.JoinPath(p, raw); err == nil {
		return e
	}
	return p
}
