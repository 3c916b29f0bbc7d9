package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/sif-dev/sif/index"
)

// A rebuild that cannot close the damaged index (index.ErrWedged: Pebble
// holds its commit lock for good) ends with a restart in a new process
// (ErrRestart). That process would open the damaged index again, or find
// an empty directory and not know that its index is new. So the rebuild
// leaves a note in the state directory first: the new process reads it
// once at start, finishes the rebuild (moves the damaged index aside
// unless its directory was deleted) and reports it in the status, with
// the reason the first process had.
const rebuildNoteName = "rebuild.pending"

// rebuildNote is what a rebuild leaves for the process after a restart.
type rebuildNote struct {
	Reason  string    `json:"reason"`
	Deleted bool      `json:"deleted"` // the index directory was deleted: nothing to move aside
	At      time.Time `json:"at"`
}

// leaveRebuildNote writes the note for a rebuild of the index, with why,
// in stateDir.
func leaveRebuildNote(stateDir, reason string, deleted bool) error {
	b, err := json.Marshal(rebuildNote{Reason: reason, Deleted: deleted, At: time.Now().UTC()})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	return writeFileSync(filepath.Join(stateDir, rebuildNoteName), append(b, '\n'))
}

// takeRebuildNote reads and removes the note in stateDir. It returns nil
// when there is none; a note that cannot be read is logged and removed,
// and taken for a rebuild of unknown reason.
func takeRebuildNote(stateDir string, log *slog.Logger) *rebuildNote {
	p := filepath.Join(stateDir, rebuildNoteName)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var n rebuildNote
	if err == nil {
		err = json.Unmarshal(b, &n)
	}
	if err != nil {
		log.Warn("the note of a rebuild left by the previous run cannot be read: rebuilding the index", "path", p, "err", err)
		n = rebuildNote{Reason: "asked for by the previous run", At: time.Now().UTC()}
	}
	if err := os.Remove(p); err != nil {
		log.Warn("cannot remove the note of a rebuild", "path", p, "err", err)
	}
	return &n
}

// finishRebuild moves the index in db aside as the note asks, before it is
// opened, and returns where it went ("" if nowhere).
func finishRebuild(db string, n *rebuildNote) (string, error) {
	if n.Deleted {
		return "", nil
	}
	entries, err := os.ReadDir(db)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("db %s: %w", db, err)
	}
	return index.MoveAside(nil, db, "corrupt")
}
