//go:build linux

package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
)

// TestFleetSimiHash: two hosts whose indexes keep SimiHash keys publish
// them to the fleet; alpha asks similar --by simihash --fleet of a file
// and gets beta's copy edited in a few bytes, as beta:PATH with its
// distances, and not beta's different file of the same size.
func TestFleetSimiHash(t *testing.T) {
	query, edited, other := simiFiles(t)

	srv := pgtest.Start(t, nil)
	srv.CreateDB("fleet")
	url := srv.URL("fleet")
	alpha, beta := fleetHost(t, "alpha", url), fleetHost(t, "beta", url)
	q := alpha.write("q/transport.go", query)
	ed := beta.write("a/transport-edited.go", edited)
	beta.write("c/different.go", other[:len(query)])
	for _, h := range []*env{alpha, beta} {
		h.start("--config", filepath.Join(h.dir, "sifd.toml"), "--socket-access", "all", "--simihash")
	}
	alpha.published("alpha published")
	beta.published("beta published")

	r := alpha.sifctl("similar", "--by", "simihash", "--fleet", "--json", q)
	var out struct {
		simiJSON
		Matches []struct {
			Host         string `json:"host"`
			Path         string `json:"path"`
			KeyDistance  uint64 `json:"key_distance"`
			KeyTolerance uint64 `json:"key_tolerance"`
			SumDistance  uint64 `json:"sum_distance"`
			SumTolerance uint64 `json:"sum_tolerance"`
			Identical    bool   `json:"identical"`
		} `json:"matches"`
		FleetError any `json:"fleet_error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || out.FleetError != nil {
		t.Fatalf("similar --by simihash --fleet --json: exit %d, %v, fleet error %v\n%s%s", r.code, err, out.FleetError, r.stdout, r.stderr)
	}
	if len(out.Matches) != 1 {
		t.Fatalf("matches %+v, want beta's edited copy alone", out.Matches)
	}
	m := out.Matches[0]
	if m.Host != "beta" || m.Path != ed || m.Identical || m.SumDistance == 0 ||
		m.KeyDistance > m.KeyTolerance || m.SumDistance > m.SumTolerance || m.SumTolerance != out.SumTolerance {
		t.Errorf("match %+v: want beta:%s, not identical, within the tolerances (key %d, sum %d)", m, ed, out.KeyTolerance, out.SumTolerance)
	}
	t.Logf("beta:%s: key distance %d of %d, sum distance %d of %d", filepath.Base(m.Path), m.KeyDistance, m.KeyTolerance, m.SumDistance, m.SumTolerance)

	r = alpha.sifctl("similar", "--by", "simihash", "--fleet", q)
	if r.code != 0 || !strings.Contains(r.stdout, "beta:"+ed) || strings.Contains(r.stdout, "different.go") {
		t.Errorf("similar --by simihash --fleet: exit %d, want beta:%s listed and not different.go:\n%s%s", r.code, ed, r.stdout, r.stderr)
	}
}
