package e2e

import (
	"slices"
	"strings"
	"testing"
)

// oddNames are files of one content whose names hold a newline, a space,
// an apostrophe and a byte that is not UTF-8, with the names ls quotes
// them by (the root's path needs no quoting), in path order.
var oddNames = []struct{ name, quoted string }{
	{"caf\xe9.txt", "'ROOT/caf'$'\\351''.txt'"},
	{"it's.txt", `"ROOT/it's.txt"`},
	{"new\nline.txt", "'ROOT/new'$'\\n''line.txt'"},
	{"plain.txt", "ROOT/plain.txt"},
	{"with space.txt", "'ROOT/with space.txt'"},
}

// oddEnv indexes the oddNames files and, similar to them, an edited copy
// named "b<TAB>v2.txt"; it returns the env, the files' paths (the edited
// copy's last) and their names quoted.
func oddEnv(t *testing.T) (e *env, paths, quoted []string) {
	e = newEnv(t)
	text := words(241, 20000)
	for _, n := range oddNames {
		paths = append(paths, e.write(n.name, text))
		quoted = append(quoted, strings.ReplaceAll(n.quoted, "ROOT", e.root))
	}
	paths = append(paths, e.write("b\tv2.txt", edit(242, text, 0.05)))
	quoted = append(quoted, "'"+e.root+"/b'$'\\t''v2.txt'")
	e.start()
	return e, paths, quoted
}

// nulRecords splits --null output into its records, checking that it
// ends with a NUL.
func nulRecords(t *testing.T, what, out string) []string {
	t.Helper()
	if !strings.HasSuffix(out, "\x00") {
		t.Fatalf("%s: output does not end with NUL: %q", what, out)
	}
	return strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
}

// TestDupesQuotedNames: dupes prints each name as ls quotes it, one line
// each, and with -0 each name as it is, ended by NUL, and an empty record
// after the set.
func TestDupesQuotedNames(t *testing.T) {
	e, paths, quoted := oddEnv(t)
	r := e.sifctl("dupes")
	want := "5 identical files of 20000 bytes:\n  " + strings.Join(quoted[:5], "\n  ") + "\n1 set, 5 files: 4 redundant copies, 80000 bytes\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("dupes: exit %d, stdout\n%s\nwant\n%s(stderr %q)", r.code, r.stdout, want, r.stderr)
	}
	r = e.sifctl("dupes", "-0")
	if want := strings.Join(paths[:5], "\x00") + "\x00\x00"; r.code != 0 || r.stdout != want {
		t.Errorf("dupes -0: exit %d, stdout %q, want %q (stderr %q)", r.code, r.stdout, want, r.stderr)
	}
	r = e.sifctl("dupes", "--null", "--json")
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--null and --json are two forms of output: give one of them") {
		t.Errorf("dupes --null --json: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestSimilarQuotedNames: similar quotes the query and its matches, one
// line each; -0 prints the matches' names, raw, one record each.
func TestSimilarQuotedNames(t *testing.T) {
	e, paths, quoted := oddEnv(t)
	q := paths[2] // the name with a newline
	r := e.sifctl("similar", q)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 6 || !strings.HasPrefix(lines[0], quoted[2]+" (20000 bytes, ") {
		t.Fatalf("similar: exit %d, want a header and 5 matches, one line each:\n%s(stderr %q)", r.code, r.stdout, r.stderr)
	}
	for i, n := range quoted {
		if i == 2 {
			continue
		}
		want := "  " + n + "  20000  identical"
		if i == 5 {
			want = "  " + n + "  "
		}
		if !slices.ContainsFunc(lines[1:], func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("similar lacks a line with %q:\n%s", want, r.stdout)
		}
	}

	r = e.sifctl("similar", "-0", q)
	got := nulRecords(t, "similar -0", r.stdout)
	want := slices.Concat(paths[:2], paths[3:])
	slices.Sort(got)
	slices.Sort(want)
	if r.code != 0 || !slices.Equal(got, want) {
		t.Errorf("similar -0: exit %d, records %q, want %q (stderr %q)", r.code, got, want, r.stderr)
	}
}

// TestGroupsNullRecords: groups quotes every name in its text, and -0
// prints the group's files raw, then an empty record.
func TestGroupsNullRecords(t *testing.T) {
	e, paths, quoted := oddEnv(t)
	r := e.sifctl("groups")
	named := 0
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, e.root) {
			named++
			if !slices.ContainsFunc(quoted, func(q string) bool { return strings.Contains(l, " "+q+" ") || strings.HasSuffix(l, " "+q) }) {
				t.Errorf("groups: line %q names no file as quoted", l)
			}
		}
	}
	if r.code != 0 || named != len(paths) {
		t.Errorf("groups: exit %d, %d lines name a file, want %d:\n%s(stderr %q)", r.code, named, len(paths), r.stdout, r.stderr)
	}

	r = e.sifctl("groups", "-0")
	got := nulRecords(t, "groups -0", r.stdout)
	if r.code != 0 || len(got) != len(paths)+1 || got[len(got)-1] != "" {
		t.Fatalf("groups -0: exit %d, records %q, want the %d files and an empty record (stderr %q)", r.code, got, len(paths), r.stderr)
	}
	got = got[:len(paths)]
	want := slices.Clone(paths)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("groups -0: records %q, want %q", got, want)
	}
}
