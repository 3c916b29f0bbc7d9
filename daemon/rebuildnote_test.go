package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/index"
)

// A rebuild that had to restart the process leaves a note; the next
// process finishes it: the damaged index is moved aside before it is
// opened (unless its directory was deleted), the status says the index
// was rebuilt and why, and the note is read once.
func TestRebuildNoteFinishedAfterRestart(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		name := "damaged"
		if deleted {
			name = "deleted"
		}
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(base, "db")
			cfg := Config{Roots: []string{root}, DB: db, Socket: filepath.Join(base, "s.sock"), NoWatch: true,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if !deleted {
				// The damaged index, still in place.
				ix, err := index.Open(db, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := ix.Close(); err != nil {
					t.Fatal(err)
				}
			}
			reason := "verification: a block's checksum does not match"
			if deleted {
				reason = "the index directory was deleted"
			}
			if err := leaveRebuildNote(StateDir(db), reason, deleted); err != nil {
				t.Fatal(err)
			}

			d, err := open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var st = d.faults.rebuilt
			if err := d.ix.Close(); err != nil {
				t.Fatal(err)
			}
			if st == nil || st.Reason != reason {
				t.Fatalf("index_rebuilt after the restart: %+v, want the reason %q", st, reason)
			}
			switch {
			case deleted && st.MovedTo != "":
				t.Errorf("index directory deleted: moved to %q, want nowhere", st.MovedTo)
			case !deleted && !strings.HasPrefix(st.MovedTo, db+".corrupt"):
				t.Errorf("damaged index moved to %q, want %s.corrupt-TIME", st.MovedTo, db)
			case !deleted:
				if _, err := os.Stat(filepath.Join(st.MovedTo, "LOCK")); err != nil {
					t.Errorf("the damaged index is not where the status says: %v", err)
				}
			}
			if _, err := os.Stat(filepath.Join(StateDir(db), rebuildNoteName)); !os.IsNotExist(err) {
				t.Errorf("the note is still there after the start (%v): the next start would rebuild again", err)
			}

			// The next start, with no note, opens the new index as it is.
			d, err = open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			st = d.faults.rebuilt
			if err := d.ix.Close(); err != nil {
				t.Fatal(err)
			}
			if st != nil {
				t.Errorf("a start after the rebuild reports %+v, want no rebuild", st)
			}
		})
	}
}

// A rebuild whose damaged index cannot be closed returns ErrRestart and
// leaves the note the next process finishes the rebuild from.
func TestRebuildWedgedLeavesNote(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(base, "db")
	d, err := open(Config{Roots: []string{root}, DB: db, Socket: filepath.Join(base, "s.sock"), NoWatch: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func(*index.Index) error) { abandonIndex = f }(abandonIndex)
	abandonIndex = func(ix *index.Index) error {
		_ = ix.Close()
		return fmt.Errorf("closing: %w", index.ErrWedged)
	}
	const reason = "the index directory was deleted"
	if err := d.rebuild(reason, true); !errors.Is(err, ErrRestart) {
		t.Fatalf("rebuild with the index wedged: %v, want ErrRestart", err)
	}
	n := takeRebuildNote(StateDir(db), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n == nil || n.Reason != reason || !n.Deleted || n.At.IsZero() {
		t.Fatalf("note left for the next process: %+v, want reason %q, deleted", n, reason)
	}
}
