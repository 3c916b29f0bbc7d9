package index

import (
	"os"
	"strings"
)

// InTree reports whether path lies in the directory tree prefix, matching
// whole path components: "/a/b" holds "/a/b" and "/a/b/x" but not
// "/a/bin". Trailing separators of prefix are ignored, and "" or "/"
// holds every path. This is how the PathPrefix of QueryOptions and
// GroupOptions and the prefix of Dupes select files.
func InTree(path, prefix string) bool {
	for len(prefix) > 1 && isSep(prefix[len(prefix)-1]) {
		prefix = prefix[:len(prefix)-1]
	}
	if prefix == "" || len(prefix) == 1 && isSep(prefix[0]) {
		return prefix == "" || strings.HasPrefix(path, prefix)
	}
	rest, ok := strings.CutPrefix(path, prefix)
	return ok && (rest == "" || isSep(rest[0]))
}

func isSep(c byte) bool { return c == '/' || c == os.PathSeparator }
