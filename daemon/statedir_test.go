package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// An index directory left by a sif that kept its state files in it: the
// first start moves the roots file and the run marker to the state
// directory, and both still take effect (the added root is indexed, the
// unclean previous run is noticed); the index directory keeps neither.
func TestStateMigratedFromIndexDirectory(t *testing.T) {
	root, added := t.TempDir(), t.TempDir()
	db := filepath.Join(t.TempDir(), "db")
	if err := os.MkdirAll(db, 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rootsFile{Added: []string{added}})
	if err := os.WriteFile(filepath.Join(db, rootsFileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db, markerName), []byte("123 1000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, logs := startDaemon(t, Config{Roots: []string{root}, DB: db})
	if got, want := d.rootPaths(), []string{root, added}; !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("roots %q, want %q: the old roots file was not honoured", got, want)
	}
	if !d.Status().UncleanStart {
		t.Error("the old run marker did not make the start unclean")
	}
	for _, name := range stateFiles {
		if _, err := os.Stat(filepath.Join(db, name)); !os.IsNotExist(err) {
			t.Errorf("%s still in the index directory: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(StateDir(db), rootsFileName)); err != nil {
		t.Errorf("roots file not in the state directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(StateDir(db), markerName)); err != nil {
		t.Errorf("this run's marker not in the state directory: %v", err)
	}
	if err := d.RemoveRoot(added); err != nil {
		t.Fatal(err)
	}
	rf, err := d.loadRootsFile()
	if err != nil || len(rf.Added) != 0 {
		t.Errorf("roots file after removing the added root: %+v, %v\n%s", rf, err, logs)
	}
	if _, err := os.Stat(filepath.Join(db, rootsFileName)); !os.IsNotExist(err) {
		t.Errorf("a roots change wrote to the index directory: %v", err)
	}
}

// A state file found in both places: the state directory's wins and the
// old one is left alone.
func TestStateMigrationKeepsNewer(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	state := StateDir(db)
	for _, dir := range []string{db, state} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(db, rootsFileName), []byte(`{"added":["/old"]}`), 0o600)
	os.WriteFile(filepath.Join(state, rootsFileName), []byte(`{"added":["/new"]}`), 0o600)
	d := &Daemon{cfg: Config{DB: db}, log: discardLogger()}
	if err := migrateState(db, d.log); err != nil {
		t.Fatal(err)
	}
	rf, err := d.loadRootsFile()
	if err != nil || !slices.Equal(rf.Added, []string{"/new"}) {
		t.Errorf("roots file %+v, %v; want the state directory's", rf, err)
	}
	if _, err := os.Stat(filepath.Join(db, rootsFileName)); err != nil {
		t.Errorf("old roots file: %v; want it left alone", err)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// An index directory emptied under the daemon (its files deleted, the
// directory kept) is noticed, though no state file of the daemon's is in it
// to go missing, and the index is rebuilt; the state directory is untouched.
func TestIndexDirectoryEmptied(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("some text to index, long enough to be read"), 0o600)
	db := filepath.Join(t.TempDir(), "db")
	d, logs := startDaemon(t, Config{Roots: []string{root}, DB: db})
	ents, err := os.ReadDir(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		os.RemoveAll(filepath.Join(db, e.Name()))
	}
	deadline := time.Now().Add(20 * time.Second)
	for d.Status().IndexRebuilt == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no rebuild after the index directory was emptied\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := d.Status(); st.IndexRebuilt.Reason != "the index directory was emptied" {
		t.Errorf("rebuild reason %q", st.IndexRebuilt.Reason)
	}
	if _, err := os.Stat(filepath.Join(StateDir(db), markerName)); err != nil {
		t.Errorf("run marker after the rebuild: %v", err)
	}
}
