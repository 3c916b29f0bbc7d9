package fleet

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// What a directory query (sifctl similar --fleet DIR) needs of the fleet
// besides the matches of its files: the hosts with their published
// roots, the tops of their directories, and the files and bytes each host
// published under a directory. See doc.go, "Asking".

// Host is a host of the fleet as its row in sif_hosts says.
type Host struct {
	Name string
	// Roots are its published roots.
	Roots    []string
	LastSeen time.Time
	Version  string
}

// Hosts returns the hosts of the fleet heard from within silence (0:
// all), by name.
func Hosts(ctx context.Context, db Querier, silence time.Duration) ([]Host, error) {
	rows, err := db.Query(ctx, `SELECT name, roots, last_seen, version FROM sif_hosts
		WHERE last_seen > now() - $1::interval ORDER BY name`, intervalOf(silence))
	if err != nil {
		return nil, fmt.Errorf("fleet: hosts: %w", err)
	}
	defer rows.Close()
	var out []Host
	for rows.Next() {
		var h Host
		var roots [][]byte
		if err := rows.Scan(&h.Name, &roots, &h.LastSeen, &h.Version); err != nil {
			return nil, fmt.Errorf("fleet: hosts: %w", err)
		}
		for _, r := range roots {
			h.Roots = append(h.Roots, string(r))
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: hosts: %w", err)
	}
	return out, nil
}

// HostDir is a directory on a host of the fleet: an absolute path as the
// host names it.
type HostDir struct {
	Host string
	Path string
}

// DirTotal is what a host published under one directory: its files and
// their bytes. Truncated says the count stopped at the cap asked; Files
// and Bytes are then lower bounds.
type DirTotal struct {
	Files     int64
	Bytes     int64
	Truncated bool
}

// dirTotalsSQL counts, for each directory asked (its host's id and the
// range of paths below it, by whole components), the host's files in
// that range, at most $4 of them, in one round trip. Each count is a
// scan of the host's rows (the primary key's host_id prefix) filtered by
// the range, stopped at the cap.
const dirTotalsSQL = `
SELECT t.files, t.bytes
FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) WITH ORDINALITY AS d(host_id, lo, hi, i)
CROSS JOIN LATERAL (
	SELECT count(*) AS files, coalesce(sum(x.size), 0)::bigint AS bytes FROM (
		SELECT f.size FROM sif_files f
		WHERE f.host_id = d.host_id AND f.path >= d.lo AND f.path < d.hi
		LIMIT $4
	) x
) t
ORDER BY d.i
`

// DirTotals returns, for each of dirs in order, the files and bytes its
// host published under it (by whole path components: /a/b holds /a/b/x,
// not /a/bc), each count stopped after maxFiles files (at least 1), all
// in one round trip. A host the fleet does not know holds nothing.
func DirTotals(ctx context.Context, db Querier, dirs []HostDir, maxFiles int) ([]DirTotal, error) {
	if maxFiles < 1 {
		return nil, fmt.Errorf("fleet: dir totals: max files %d: want 1 or more", maxFiles)
	}
	out := make([]DirTotal, len(dirs))
	if len(dirs) == 0 {
		return out, nil
	}
	hosts := make([]int64, len(dirs))
	lo, hi := make([][]byte, len(dirs)), make([][]byte, len(dirs))
	for i, d := range dirs {
		hosts[i] = HostID(d.Host)
		lo[i], hi[i] = treeRange(d.Path)
	}
	rows, err := db.Query(ctx, dirTotalsSQL, hosts, lo, hi, maxFiles+1)
	if err != nil {
		return nil, fmt.Errorf("fleet: dir totals: %w", err)
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		if i == len(out) {
			return nil, fmt.Errorf("fleet: dir totals: more rows than the %d directories asked", len(dirs))
		}
		t := &out[i]
		if err := rows.Scan(&t.Files, &t.Bytes); err != nil {
			return nil, fmt.Errorf("fleet: dir totals: %w", err)
		}
		if t.Files > int64(maxFiles) {
			// One more than the cap: there are more. Bytes counts that
			// one too, still a lower bound.
			t.Files, t.Truncated = int64(maxFiles), true
		}
		i++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("fleet: dir totals: %w", err)
	}
	if i != len(out) {
		return nil, fmt.Errorf("fleet: dir totals: %d rows for %d directories", i, len(dirs))
	}
	return out, nil
}

// treeRange returns the range [lo, hi) of the paths below dir by whole
// components: dir and its separator, to dir and the byte after the
// separator. The separator is '/', or '\' for a path written the Windows
// way (no '/', a '\'): the host that published it named it so.
func treeRange(dir string) (lo, hi []byte) {
	sep := byte('/')
	if !strings.Contains(dir, "/") && strings.Contains(dir, `\`) {
		sep = '\\'
	}
	dir = strings.TrimRight(dir, string(sep))
	lo = append([]byte(dir), sep)
	hi = append([]byte(dir), sep+1)
	return lo, hi
}
