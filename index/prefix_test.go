package index

import "testing"

func TestInTree(t *testing.T) {
	for _, tc := range []struct {
		path, prefix string
		want         bool
	}{
		{"/a/b", "", true},
		{"/a/b", "/", true},
		{"/a/b", "/a/b", true},
		{"/a/b/x", "/a/b", true},
		{"/a/b/x", "/a/b/", true},
		{"/a/b/x", "/a/b//", true},
		{"/a/bin", "/a/b", false},
		{"/a/bin/x", "/a/b/", false},
		{"/a", "/a/b", false},
		{"/a/b", "/a/b/x", false},
		{"/ab", "/a", false},
	} {
		if got := InTree(tc.path, tc.prefix); got != tc.want {
			t.Errorf("InTree(%q, %q) = %v, want %v", tc.path, tc.prefix, got, tc.want)
		}
	}
}
