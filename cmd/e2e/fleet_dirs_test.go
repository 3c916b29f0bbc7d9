//go:build linux

package e2e

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/ipc"
)

// fleetDirJSON is sifctl similar --json --fleet DIR's answer.
type fleetDirJSON struct {
	Query      string     `json:"query"`
	Dir        bool       `json:"dir"`
	Size       int64      `json:"size"`
	Files      int        `json:"files"`
	FleetError *ipc.Error `json:"fleet_error"`
	Matches    []fleetDirMatch
}

type fleetDirMatch struct {
	Host               string   `json:"host"`
	Path               string   `json:"path"`
	Size               int64    `json:"size"`
	IndexedFiles       int64    `json:"indexed_files"`
	Containment        float64  `json:"containment"`
	ReverseContainment *float64 `json:"reverse_containment"`
	Resemblance        *float64 `json:"resemblance"`
	SharedBytes        int64    `json:"shared_bytes"`
	Files              struct {
		Identical, Similar, Missing int
	} `json:"files"`
	Measure string `json:"measure"`
}

func (e *env) fleetSimilarDir(args ...string) (result, fleetDirJSON) {
	e.t.Helper()
	r := e.sifctl(append([]string{"similar", "--json"}, args...)...)
	var out fleetDirJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.Dir {
		e.t.Fatalf("similar --json %v: exit %d, %v: %q (stderr %s)", args, r.code, err, r.stdout, r.stderr)
	}
	return r, out
}

// byHostPath finds the match of host's dir.
func (d *fleetDirJSON) byHostPath(host, dir string) *fleetDirMatch {
	for i, m := range d.Matches {
		if m.Host == host && m.Path == dir {
			return &d.Matches[i]
		}
	}
	return nil
}

// TestFleetSimilarDir: `sifctl similar --fleet DIR` lists the directories
// on every host of the fleet that hold a good part of DIR: beta's edited
// copy of alpha's directory as beta:DIR', measured as beta's own daemon
// measures it (its totals from the fleet), beside alpha's own copy as
// without --fleet; with the database stopped, alpha's own answer, the
// error and exit 2.
func TestFleetSimilarDir(t *testing.T) {
	srv := pgtest.Start(t, nil)
	srv.CreateDB("fleet")
	url := srv.URL("fleet")
	alpha, beta := fleetHost(t, "alpha", url), fleetHost(t, "beta", url)
	proj := project(700)
	dir := filepath.Join(alpha.root, "proj")
	writeTree(t, dir, proj)
	backup := filepath.Join(alpha.root, "backup", "proj")
	writeTree(t, backup, proj)
	// beta's copy: two files edited, one removed, one of its own.
	mirror := map[string][]byte{}
	for rel, b := range proj {
		mirror[rel] = b
	}
	mirror["src/util.go"] = edit(1, proj["src/util.go"], 0.15)
	mirror["docs/guide.txt"] = edit(2, proj["docs/guide.txt"], 0.15)
	delete(mirror, "src/x/token.go")
	mirror["NOTES"] = words(800, 4000)
	betaDir := filepath.Join(beta.root, "mirror", "proj")
	writeTree(t, betaDir, mirror)
	var mirrorBytes, qBytes, identicalBytes, editedBytes int64
	for rel, b := range mirror {
		mirrorBytes += int64(len(b))
		if rel == "src/util.go" || rel == "docs/guide.txt" {
			editedBytes += int64(len(b))
		} else if rel != "NOTES" {
			identicalBytes += int64(len(b))
		}
	}
	for _, b := range proj {
		qBytes += int64(len(b))
	}
	alpha.startFleet()
	beta.startFleet()
	alpha.published("alpha published")
	beta.published("beta published")

	r, out := alpha.fleetSimilarDir("--fleet", dir)
	if r.code != 0 || out.FleetError != nil || out.Files != len(proj) || out.Size != qBytes {
		t.Fatalf("similar --fleet DIR: exit %d, %+v\n%s", r.code, out, r.stderr)
	}
	// alpha's own copy, as without --fleet, now with its host.
	own := out.byHostPath("alpha", backup)
	if own == nil || own.Containment != 100 || own.ReverseContainment == nil || *own.ReverseContainment != 100 ||
		own.Files.Identical != len(proj) || own.Size != qBytes {
		t.Errorf("alpha's own copy: %+v; want 100%% both ways, all identical", own)
	}
	// beta's copy: 7 files identical, 2 similar, 1 missing; its size and
	// files (its own NOTES with them) come from the fleet.
	b := out.byHostPath("beta", betaDir)
	if b == nil {
		t.Fatalf("similar --fleet DIR does not list beta's copy %s: %+v", betaDir, out.Matches)
	}
	if b.Files.Identical != 7 || b.Files.Similar != 2 || b.Files.Missing != 1 || b.IndexedFiles != 10 || b.Size != mirrorBytes ||
		b.Measure != ipc.MeasureEstimated {
		t.Errorf("beta's copy: %+v; want 7 identical, 2 similar, 1 missing, 10 files of %d bytes", *b, mirrorBytes)
	}
	lo, hi := 100*float64(identicalBytes)/float64(qBytes), 100*float64(identicalBytes+editedBytes)/float64(qBytes)
	if b.Containment <= lo || b.Containment >= hi {
		t.Errorf("beta's copy holds %.2f%% of DIR; want between %.2f%% (its identical files) and %.2f%% (its edited ones whole)", b.Containment, lo, hi)
	}
	if b.ReverseContainment == nil || b.Resemblance == nil {
		t.Fatalf("beta's copy has no reverse containment or resemblance: %+v", *b)
	}
	lo, hi = 100*float64(identicalBytes)/float64(mirrorBytes), 100*float64(identicalBytes+editedBytes)/float64(mirrorBytes)
	if *b.ReverseContainment <= lo || *b.ReverseContainment >= hi {
		t.Errorf("beta's copy: %.2f%% of it is in DIR; want between %.2f%% and %.2f%%", *b.ReverseContainment, lo, hi)
	}
	// Nothing else: not beta's mirror/ (it adds nothing), not DIR itself.
	if len(out.Matches) != 2 {
		t.Errorf("similar --fleet DIR lists %d directories, want alpha's copy and beta's: %+v", len(out.Matches), out.Matches)
	}

	// The fleet's estimate of beta's copy is what beta's daemon says of
	// it, asked about the same DIR without the fleet.
	r, local := beta.fleetSimilarDir(dir)
	var lb *fleetDirMatch
	for i, m := range local.Matches {
		if m.Path == betaDir {
			lb = &local.Matches[i]
		}
	}
	if r.code != 0 || lb == nil {
		t.Fatalf("similar DIR on beta: exit %d, %+v\n%s", r.code, local, r.stderr)
	}
	if math.Abs(lb.Containment-b.Containment) > 1 || math.Abs(*lb.ReverseContainment-*b.ReverseContainment) > 1 ||
		math.Abs(*lb.Resemblance-*b.Resemblance) > 1 || lb.Size != b.Size || lb.IndexedFiles != b.IndexedFiles || lb.Files != b.Files {
		t.Errorf("the fleet's answer for beta's copy differs from beta's own:\nfleet %+v\nbeta  %+v", *b, *lb)
	}
	t.Logf("beta's copy: fleet %.2f%% / reverse %.2f%% / resemblance %.2f%%; beta's own daemon %.2f%% / %.2f%% / %.2f%%",
		b.Containment, *b.ReverseContainment, *b.Resemblance, lb.Containment, *lb.ReverseContainment, *lb.Resemblance)

	// Text names each directory's host.
	r = alpha.sifctl("similar", "--fleet", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "beta:"+betaDir+"  ") || !strings.Contains(r.stdout, "alpha:"+backup+"  ") {
		t.Errorf("similar --fleet DIR as text: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Who may ask: not dave.
	if r := alpha.sifctlAs(asDave, "similar", "--fleet", dir); r.code != 2 || !strings.Contains(r.stderr, "asking the fleet is for root") {
		t.Errorf("similar --fleet DIR as a user outside the ask group: exit %d %q", r.code, r.stderr)
	}

	// sifctl fleet hosts: both hosts, with their roots; this one marked.
	r = alpha.sifctl("fleet", "hosts")
	if r.code != 0 || !strings.Contains(r.stdout, "2 hosts in the fleet:") || !strings.Contains(r.stdout, "* alpha  last heard from") ||
		!strings.Contains(r.stdout, "  beta  last heard from") || !strings.Contains(r.stdout, "    "+beta.root+"\n") {
		t.Errorf("fleet hosts: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var hosts ipc.FleetHostsResponse
	if r = alpha.sifctl("fleet", "hosts", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &hosts) != nil ||
		hosts.Host != "alpha" || len(hosts.Hosts) != 2 || hosts.Hosts[1].Host != "beta" || len(hosts.Hosts[1].Roots) != 1 || hosts.Hosts[1].Roots[0].Path != beta.root {
		t.Errorf("fleet hosts --json: exit %d %+v\n%s%s", r.code, hosts, r.stdout, r.stderr)
	}

	// The database stopped: alpha's own directories, the error, exit 2.
	srv.Stop()
	if r := alpha.sifctl("fleet", "hosts", "--json"); r.code != 2 || !strings.Contains(r.stdout, `"fleet_unavailable"`) || !strings.Contains(r.stderr, "fleet unavailable") {
		t.Errorf("fleet hosts with the database stopped: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r, out = alpha.fleetSimilarDir("--fleet", dir)
	if r.code != 2 || out.FleetError == nil || out.FleetError.Code != ipc.CodeFleetDown ||
		!strings.Contains(r.stderr, "the directories listed are this host's only") {
		t.Fatalf("similar --fleet DIR with the database stopped: exit %d, %+v\n%s", r.code, out, r.stderr)
	}
	if len(out.Matches) != 1 || out.byHostPath("alpha", backup) == nil || out.Matches[0].Containment != 100 {
		t.Errorf("similar --fleet DIR with the database stopped: %+v; want alpha's own copy only", out.Matches)
	}
	if r := alpha.sifctl("similar", "--fleet", dir); r.code != 2 || !strings.Contains(r.stdout, "alpha:"+backup) || strings.Contains(r.stdout, "beta:") {
		t.Errorf("similar --fleet DIR as text with the database stopped: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	srv.Start()
}
