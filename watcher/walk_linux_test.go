package watcher

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// walkRecord is what a walk reported, as comparable text: its entries in
// order, with their lstat when they carry one, and the directories OnDir
// was given.
func walkRecord(t *testing.T, walk func(context.Context, string, WalkOptions, func(p string, isDir bool) bool, func(Entry) error) error,
	dir string, o WalkOptions) (entries, dirs []string, err error) {
	t.Helper()
	o.OnDir = func(d string) error { dirs = append(dirs, d); return nil }
	// The exclusion as Walk builds it.
	excluded := func(string, bool) bool { return false }
	if o.Exclude != nil {
		root := filepath.Clean(o.Root)
		excluded = func(p string, isDir bool) bool {
			rel, _ := relPath(root, filepath.Clean(p))
			return o.Exclude.Match(rel, isDir)
		}
	}
	err = walk(context.Background(), dir, o, excluded, func(e Entry) error {
		s := fmt.Sprintf("%q %v err=%v", e.Path, e.Kind, e.Err)
		if e.Info != nil {
			st := e.Info.Sys().(*syscall.Stat_t)
			s += fmt.Sprintf(" name=%q size=%d mode=%v mtime=%v dir=%v dev=%d ino=%d ctime=%v",
				e.Info.Name(), e.Info.Size(), e.Info.Mode(), e.Info.ModTime(), e.Info.IsDir(), st.Dev, st.Ino, st.Ctim)
		}
		entries = append(entries, s)
		return nil
	})
	return entries, dirs, err
}

// The Linux walk reports what the portable one (filepath.WalkDir) does, in
// the same order, on a tree of every kind of entry, with odd names, with
// and without exclusions, lstat or not, from the root or below it.
func TestWalkMatchesPortable(t *testing.T) {
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 9))
	names := []string{"a", "B", "z.go", "x.swp", ".hidden", "sp ace", "\xff\xferaw", "é", "node_modules", "build", "10", "9", "a.b", "_"}
	dirs := []string{root}
	for i := range 400 {
		parent := dirs[rng.IntN(len(dirs))]
		p := filepath.Join(parent, names[rng.IntN(len(names))]+fmt.Sprint(i%7))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		var err error
		switch k := rng.IntN(10); {
		case k < 3:
			if err = os.Mkdir(p, 0o755); err == nil {
				dirs = append(dirs, p)
			}
		case k < 7:
			err = os.WriteFile(p, make([]byte, rng.IntN(3000)), fs.FileMode(0o600+rng.IntN(0o100)))
		case k == 7:
			err = os.Symlink(dirs[rng.IntN(len(dirs))], p) // to a directory, maybe a loop
		case k == 8:
			err = os.Symlink("nowhere", p)
		default:
			err = syscall.Mkfifo(p, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dirs[len(dirs)-1]), 0o755|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	ex, err := NewExclude([]string{"node_modules/", "*.swp", "/build*/", "a*/B*"})
	if err != nil {
		t.Fatal(err)
	}
	file := ""
	for _, d := range dirs {
		es, _ := os.ReadDir(d)
		for _, e := range es {
			if e.Type().IsRegular() {
				file = filepath.Join(d, e.Name())
			}
		}
	}
	for _, tc := range []struct {
		name string
		dir  string
		o    WalkOptions
	}{
		{"all", root, WalkOptions{}},
		{"noinfo", root, WalkOptions{NoInfo: true}},
		{"exclude", root, WalkOptions{Root: root, Exclude: ex}},
		{"below", dirs[len(dirs)/2], WalkOptions{Root: root, Exclude: ex}},
		{"unclean", root + "/./", WalkOptions{}},
		{"file", file, WalkOptions{}},
		{"symlink", filepath.Join(root, "link-root"), WalkOptions{}},
		{"missing", filepath.Join(root, "missing"), WalkOptions{}},
	} {
		if tc.name == "symlink" {
			if err := os.Symlink(root, tc.dir); err != nil {
				t.Fatal(err)
			}
		}
		got, gotDirs, gotErr := walkRecord(t, walkTree, tc.dir, tc.o)
		want, wantDirs, wantErr := walkRecord(t, walkPortable, tc.dir, tc.o)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v, want %v", tc.name, gotErr, wantErr)
		}
		if !slices.Equal(gotDirs, wantDirs) {
			t.Errorf("%s: OnDir saw %q,\nwant %q", tc.name, gotDirs, wantDirs)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: entries differ:\n got %d: %s\nwant %d: %s", tc.name, len(got), strings.Join(got, "\n     "), len(want), strings.Join(want, "\n     "))
		}
		if tc.name == "all" && len(got) < 150 {
			t.Errorf("the tree has %d entries: too few to tell", len(got))
		}
	}
}

// Deeper than maxHeldDirs, the walk reaches entries by their whole path,
// finds the same, and keeps no more descriptors open than it promises.
func TestWalkDeepTree(t *testing.T) {
	root := t.TempDir()
	p := root
	for i := range maxHeldDirs + 20 {
		p = filepath.Join(p, fmt.Sprintf("d%d", i%10))
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	openFDs := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	base := openFDs()
	most := 0
	n := 0
	err := walkTree(context.Background(), root, WalkOptions{}, func(string, bool) bool { return false }, func(e Entry) error {
		if e.Kind != Regular || e.Info == nil || e.Info.Size() != 1 {
			t.Errorf("%s: %v %v", e.Path, e.Kind, e.Info)
		}
		n++
		most = max(most, openFDs()-base)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != maxHeldDirs+20 {
		t.Errorf("found %d files, want %d", n, maxHeldDirs+20)
	}
	// One more for ReadDir's own descriptor of /proc/self/fd.
	if most > maxHeldDirs+1 {
		t.Errorf("%d descriptors open at once, want at most %d", most, maxHeldDirs+1)
	}
	if got, want := fmt.Sprint(walkRecord(t, walkTree, root, WalkOptions{})), fmt.Sprint(walkRecord(t, walkPortable, root, WalkOptions{})); got != want {
		t.Errorf("the walks differ:\n got %s\nwant %s", got, want)
	}
}

// A directory replaced between its listing and its opening is reported
// as what it has become: a symlink is not followed out of the tree, a
// file is a file, and one removed has vanished.
func TestWalkDirectoryReplaced(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"gone", "to-file", "to-link", "zkeep"} {
		if err := os.MkdirAll(filepath.Join(root, d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	replace := func(dir string) error {
		switch filepath.Base(dir) {
		case "gone":
			return os.RemoveAll(dir)
		case "to-file":
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			return os.WriteFile(dir, []byte("now a file"), 0o644)
		case "to-link":
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
			return os.Symlink("/", dir)
		}
		return nil
	}
	var got []string
	err := walkTree(context.Background(), root, WalkOptions{OnDir: replace}, func(string, bool) bool { return false }, func(e Entry) error {
		rel, _ := filepath.Rel(root, e.Path)
		s := rel + "=" + e.Kind.String()
		if e.Info != nil {
			s += fmt.Sprintf("(%d)", e.Info.Size())
		}
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gone=vanished", "to-file=regular(10)", "to-link=symlink"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// An entry whose type the filesystem does not give (DT_UNKNOWN) is
// lstat'ed for it.
func TestWalkUnknownType(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "in"), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "f"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	for _, noInfo := range []bool{false, true} {
		var got []string
		w := &linuxWalk{ctx: context.Background(), o: WalkOptions{NoInfo: noInfo}, excluded: func(string, bool) bool { return false },
			buf: make([]byte, direntBufSize), fn: func(e Entry) error {
				s := filepath.Base(e.Path) + "=" + e.Kind.String()
				if e.Info != nil {
					s += fmt.Sprintf("(%d)", e.Info.Size())
				}
				got = append(got, s)
				return nil
			}}
		fd, err := openDir(-100, root) // AT_FDCWD
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"d", "f", "l", "nothing"} {
			if err := w.entry(fd, root, dirent{name, syscall.DT_UNKNOWN}, 1); err != nil {
				t.Fatal(err)
			}
		}
		syscall.Close(fd)
		want := []string{"in=regular(5)", "f=regular(3)", "l=symlink", "nothing=vanished"}
		if noInfo {
			want = []string{"in=regular", "f=regular", "l=symlink", "nothing=vanished"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("NoInfo %v: got %q, want %q", noInfo, got, want)
		}
	}
}

// BenchmarkWalk times the Linux walk against the portable one over a
// tree of 600 directories and 6,000 files: listing only (a first scan),
// and with an lstat of every file (a restart's scan).
func BenchmarkWalk(b *testing.B) {
	root := b.TempDir()
	for d := range 600 {
		dir := filepath.Join(root, fmt.Sprintf("m%02d", d%20), fmt.Sprintf("v%d", d/20), "pkg")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%d.go", f)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	none := func(string, bool) bool { return false }
	for _, impl := range []struct {
		name string
		walk func(context.Context, string, WalkOptions, func(string, bool) bool, func(Entry) error) error
	}{{"linux", walkTree}, {"portable", walkPortable}} {
		for _, noInfo := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/noinfo=%v", impl.name, noInfo), func(b *testing.B) {
				for b.Loop() {
					n := 0
					if err := impl.walk(context.Background(), root, WalkOptions{NoInfo: noInfo}, none, func(Entry) error { n++; return nil }); err != nil || n != 6000 {
						b.Fatal(n, err)
					}
				}
			})
		}
	}
}
