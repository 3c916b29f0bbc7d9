package server

import (
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// documentedRoutes returns the routes ("METHOD /path") the file at path
// lists, found by re (whose two groups are the method and the path), in
// the order listed.
func documentedRoutes(t *testing.T, path string, re *regexp.Regexp) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// TestRoutesDocumented: every route the server registers is in package
// ipc's route table (ipc/doc.go, what go doc ./ipc shows) and among
// ipc/API.md's route headings (**`METHOD /path`**), each once, and they
// list no route the server does not have.
func TestRoutesDocumented(t *testing.T) {
	s := New(Backend{Query: &fakeBackend{}}, Options{})
	var served []string
	for _, rt := range s.routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		// The pattern is the one the server answers with.
		if _, pattern := s.mux.Handler(httptest.NewRequest(method, path, nil)); pattern != rt.pattern {
			t.Errorf("%s %s reaches the handler of %q, want %q", method, path, pattern, rt.pattern)
		}
		served = append(served, rt.pattern)
	}
	if len(served) == 0 {
		t.Fatal("the server lists no routes")
	}
	const method = `(GET|POST|PUT|PATCH|DELETE)`
	docs := []struct {
		file string
		re   *regexp.Regexp
	}{
		// In the doc comment's table: "//<tab>METHOD /v1/... what it does".
		{"../doc.go", regexp.MustCompile(`(?m)^//\t` + method + ` +(/v1/\S+)`)},
		// A route's paragraph opens with it in bold code.
		{"../API.md", regexp.MustCompile("\\*\\*`" + method + " (/v1/[^`]+)`\\*\\*")},
	}
	for _, d := range docs {
		listed := documentedRoutes(t, d.file, d.re)
		for _, p := range served {
			switch n := len(slices.DeleteFunc(slices.Clone(listed), func(l string) bool { return l != p })); n {
			case 1:
			case 0:
				t.Errorf("%s does not list %s, a route the server registers", d.file, p)
			default:
				t.Errorf("%s lists %s %d times", d.file, p, n)
			}
		}
		for _, p := range listed {
			if !slices.Contains(served, p) {
				t.Errorf("%s lists %s, which the server does not register", d.file, p)
			}
		}
	}
}
