//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sif-dev/sif/daemon/fleet"
	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/ipc"
)

// The fleet, through the real binaries: sifd daemons as separate hosts
// (their own roots, indexes, sockets and host names) publish into one
// PostgreSQL database started by the test, and every fault ends with each
// host's rows equal to its index (sifctl fleet check).

// fleetHost starts a host of a test fleet: a daemon publishing its root
// under name, with the database's URL in a 0600 file.
func fleetHost(t *testing.T, name, url string) *env {
	t.Helper()
	e := newEnv(t)
	e.setFleet(name, url)
	return e
}

// setFleet writes the env's configuration file with a [fleet] table.
func (e *env) setFleet(name, url string) {
	e.t.Helper()
	urlFile := filepath.Join(e.dir, "fleet.url")
	must(e.t, os.WriteFile(urlFile, []byte(url+"\n"), 0o600))
	if os.Geteuid() == 0 {
		// sifd runs as nobody, and reads only a file no one else may.
		must(e.t, os.Chown(urlFile, nobody, nobody))
	}
	cfg := fmt.Sprintf("[fleet]\nurl_file = %q\nhost = %q\npublish = [%q]\nsilence = \"30s\"\nask_group = \"%d\"\n", urlFile, name, e.root, gidOps)
	must(e.t, os.WriteFile(filepath.Join(e.dir, "sifd.toml"), []byte(cfg), 0o644))
}

func (e *env) startFleet() {
	e.t.Helper()
	e.start("--config", filepath.Join(e.dir, "sifd.toml"), "--socket-access", "all")
}

// published waits until the host has published every change, connected.
func (e *env) published(what string) *ipc.Status {
	e.t.Helper()
	return e.until(60*time.Second, what, func(st *ipc.Status) bool {
		f := st.Fleet
		return f != nil && f.Connected && f.LastError == "" && f.Pending == 0 && !f.Resyncing
	})
}

// fleetCheck runs sifctl fleet check --json and fails unless the host's
// rows equal its index.
func (e *env) fleetCheck(wantFiles int) ipc.FleetCheck {
	e.t.Helper()
	r := e.sifctl("fleet", "check", "--json")
	var rep ipc.FleetCheck
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		e.t.Fatalf("sifctl fleet check --json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if r.code != 0 || !rep.OK || rep.Files != wantFiles || rep.Rows != wantFiles {
		e.t.Fatalf("fleet check: exit %d, %+v; want ok with %d files\n%s", r.code, rep, wantFiles, r.stderr)
	}
	return rep
}

func fleetCount(t *testing.T, url, sql string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFleetPublish(t *testing.T) {
	srv := pgtest.Start(t, nil)
	srv.CreateDB("fleet")
	url := srv.URL("fleet")
	alpha, beta := fleetHost(t, "alpha", url), fleetHost(t, "beta", url)
	for i := range 12 {
		alpha.write(fmt.Sprintf("src/f%02d.txt", i), words(uint64(i), 6000))
	}
	// beta holds copies of two of alpha's files, an edited one, and a
	// file of its own; a file under a name not valid UTF-8 too.
	beta.write("copy1.txt", words(1, 6000))
	beta.write("copy2.txt", words(2, 6000))
	beta.write("edited.txt", edit(3, words(3, 6000), 0.2))
	beta.write("own.txt", words(100, 6000))
	beta.write("bad-\xff-name.txt", words(101, 3000))
	alpha.startFleet()
	beta.startFleet()
	alpha.published("alpha published")
	beta.published("beta published")
	alpha.fleetCheck(12)
	beta.fleetCheck(5)
	// 12 + 3 new contents; copy1 and copy2 are stored once.
	if n := fleetCount(t, url, `SELECT count(*) FROM sif_contents`); n != 15 {
		t.Fatalf("%d contents in the fleet, want 15 (the copies once)", n)
	}
	if n := fleetCount(t, url, `SELECT count(DISTINCT host_id) FROM sif_files f JOIN sif_contents c USING (content_id) WHERE c.content_id IN (SELECT content_id FROM sif_files GROUP BY content_id HAVING count(*) > 1)`); n != 2 {
		t.Fatalf("shared contents are held by %d hosts, want 2", n)
	}
	if r := alpha.sifctl("status"); !strings.Contains(r.stdout, "fleet: host alpha, connected; publishes "+alpha.root) {
		t.Fatalf("status text does not show the fleet link:\n%s", r.stdout)
	}

	t.Run("similar across the fleet", func(t *testing.T) {
		// A file outside both roots, a copy of alpha's f02 and beta's
		// copy2, and an edited one of f05.
		q := filepath.Join(alpha.dir, "q2.txt")
		must(t, os.WriteFile(q, words(2, 6000), 0o644))
		r, out := alpha.similar("--fleet", q)
		if r.code != 0 || len(out) != 1 {
			t.Fatalf("similar --fleet: exit %d %s", r.code, r.stderr)
		}
		hosts := map[string]ipc.Match{}
		for _, m := range out[0].Matches {
			hosts[m.Host+":"+filepath.Base(m.Path)] = m
		}
		a, b := hosts["alpha:f02.txt"], hosts["beta:copy2.txt"]
		if !a.Identical || !b.Identical || a.Measure == ipc.MeasureEstimated || b.Measure != ipc.MeasureEstimated {
			t.Fatalf("similar --fleet: want alpha's f02 checked and beta's copy2 estimated, both identical; got %+v", out[0].Matches)
		}
		q5 := filepath.Join(alpha.dir, "q5.txt")
		must(t, os.WriteFile(q5, edit(3, words(3, 6000), 0.2), 0o644))
		_, out = alpha.similar("--fleet", "--fast", q5)
		var beta3, alpha3 *ipc.Match
		for i, m := range out[0].Matches {
			switch m.Host + ":" + filepath.Base(m.Path) {
			case "beta:edited.txt":
				beta3 = &out[0].Matches[i]
			case "alpha:f03.txt":
				alpha3 = &out[0].Matches[i]
			}
		}
		if beta3 == nil || alpha3 == nil || !beta3.Identical || alpha3.Containment < 50 {
			t.Fatalf("similar --fleet of an edited copy: want beta's identical edited.txt and alpha's f03 (the original); got %+v", out[0].Matches)
		}
		// Text names the host; a signature asks the fleet as well.
		if r := alpha.sifctl("similar", "--fleet", q); !strings.Contains(r.stdout, "beta:"+filepath.Join(beta.root, "copy2.txt")) {
			t.Fatalf("similar --fleet text does not name beta's copy:\n%s", r.stdout)
		}
		sig := alpha.sifctl("sketch", q)
		sigFile := filepath.Join(alpha.dir, "q2.sig")
		must(t, os.WriteFile(sigFile, []byte(sig.stdout), 0o644))
		if r := alpha.sifctl("similar", "--fleet", "--signature", sigFile); r.code != 0 || !strings.Contains(r.stdout, "beta:") {
			t.Fatalf("similar --fleet --signature: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		// Identical files across the fleet: alpha's f01 and f02 with
		// beta's copies, each set on two hosts.
		r = alpha.sifctl("dupes", "--fleet", "--json")
		var dupes ipc.DupesResponse
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &dupes) != nil {
			t.Fatalf("dupes --fleet: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var sets []string
		for _, set := range dupes.Sets {
			var names []string
			for _, f := range set.Files {
				names = append(names, f.Host+":"+filepath.Base(f.Path))
			}
			sets = append(sets, fmt.Sprintf("%d hosts %v", set.Hosts, names))
		}
		slices.Sort(sets) // equal redundant bytes: in content id order
		if want := []string{"2 hosts [alpha:f01.txt beta:copy1.txt]", "2 hosts [alpha:f02.txt beta:copy2.txt]"}; !slices.Equal(sets, want) {
			t.Fatalf("dupes --fleet: %v, want %v", sets, want)
		}
		if r := alpha.sifctl("dupes", "--fleet", "--prefix", filepath.Join(alpha.root, "src/f02.txt")); r.code != 0 ||
			!strings.Contains(r.stdout, "2 identical files of 6000 bytes on 2 hosts") || strings.Contains(r.stdout, "f01") {
			t.Fatalf("dupes --fleet --prefix: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		// Which host holds the best basis: a file only alpha has a near
		// copy of, asked of beta with its signature alone.
		q6 := filepath.Join(beta.dir, "q6.txt")
		must(t, os.WriteFile(q6, edit(9, words(5, 6000), 0.05), 0o644))
		r = run(t, "/bin/sh", "-c", fmt.Sprintf("%s --socket %s sketch %s | %s --socket %s basis --fleet --json --signature -", sifctlBin, beta.socket, q6, sifctlBin, beta.socket))
		var bl struct {
			Basis     *ipc.BasisCandidate `json:"basis"`
			Estimated bool                `json:"estimated"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &bl) != nil || bl.Basis == nil || !bl.Estimated ||
			bl.Basis.Host != "alpha" || filepath.Base(bl.Basis.Path) != "f05.txt" || bl.Basis.EstimatedBytesHigh == 0 {
			t.Fatalf("sketch | basis --fleet --signature - on beta: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		// Who may ask: the ask group (bob) yes; dave no.
		if r := alpha.sifctlAs(asBob, "similar", "--fleet", "--fast", q); r.code != 0 || !strings.Contains(r.stdout, "beta:") {
			t.Fatalf("similar --fleet as a member of the ask group: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := alpha.sifctlAs(asDave, "similar", "--fleet", "--fast", q); r.code != 2 || !strings.Contains(r.stderr, "asking the fleet is for root") {
			t.Fatalf("similar --fleet as a user outside the ask group: exit %d %q", r.code, r.stderr)
		}
	})

	t.Run("database that stops answering", func(t *testing.T) {
		// The server hangs (SIGSTOP): a fleet query gives up after the
		// fleet's timeout (2 s by default) with this host's answer.
		q := filepath.Join(alpha.dir, "q2.txt")
		srv.Pause()
		start := time.Now()
		r, out := alpha.similar("--fleet", "--fast", q)
		took := time.Since(start)
		srv.Resume()
		if r.code != 2 || len(out) != 1 || len(out[0].Matches) == 0 ||
			!strings.Contains(r.stdout, "did not answer within 2s") || took > 10*time.Second {
			t.Fatalf("similar --fleet with the database hung: exit %d after %v\n%s%s", r.code, took, r.stdout, r.stderr)
		}
		for _, m := range out[0].Matches {
			if m.Host != "alpha" {
				t.Fatalf("similar --fleet with the database hung lists %s's %s", m.Host, m.Path)
			}
		}
		alpha.published("alpha's link back after the database answered again")
	})

	t.Run("database killed while files change", func(t *testing.T) {
		srv.Kill()
		alpha.write("src/new.txt", words(200, 5000))
		alpha.write("src/f00.txt", words(201, 5000))
		must(t, os.Remove(filepath.Join(alpha.root, "src/f01.txt")))
		alpha.sifctl("wait")
		st := alpha.until(30*time.Second, "the link down in the status", func(st *ipc.Status) bool {
			return st.Fleet != nil && !st.Fleet.Connected && st.Fleet.LastError != "" && st.Fleet.Pending > 0
		})
		t.Logf("with the database down: %+v", *st.Fleet)
		// Local answers go on.
		q := filepath.Join(alpha.dir, "query.txt")
		must(t, os.WriteFile(q, words(2, 6000), 0o644))
		if r, out := alpha.similar(q); r.code != 0 || len(out) != 1 || len(out[0].Matches) == 0 {
			t.Fatalf("similar with the database down: exit %d %s", r.code, r.stderr)
		}
		if r := alpha.sifctl("fleet", "check"); r.code != 2 || !strings.Contains(r.stderr, "fleet unavailable") {
			t.Fatalf("fleet check with the database down: exit %d, %q", r.code, r.stderr)
		}
		// A fleet query: this host's matches, the error, exit 2.
		r, out := alpha.similar("--fleet", q)
		if r.code != 2 || len(out) != 1 || len(out[0].Matches) == 0 || !strings.Contains(r.stdout, `"fleet_error":{"code":"fleet_unavailable"`) {
			t.Fatalf("similar --fleet with the database down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, m := range out[0].Matches {
			if m.Host != "alpha" {
				t.Fatalf("similar --fleet with the database down lists %s's %s", m.Host, m.Path)
			}
		}
		srv.Start()
		alpha.published("alpha caught up after the database came back")
		alpha.fleetCheck(12)
		beta.fleetCheck(5)
	})

	t.Run("database down when sifd starts", func(t *testing.T) {
		alpha.stop()
		srv.Stop()
		alpha.write("src/while-down.txt", words(300, 4000))
		alpha.startFleet()
		alpha.until(30*time.Second, "the link down at start", func(st *ipc.Status) bool {
			return st.Fleet != nil && !st.Fleet.Connected && st.Fleet.LastError != ""
		})
		srv.Start()
		alpha.published("alpha published after a start without the database")
		alpha.fleetCheck(13)
	})

	t.Run("restored from an older dump", func(t *testing.T) {
		dump := filepath.Join(t.TempDir(), "fleet.dump")
		srv.Dump("fleet", dump)
		for i := range 4 {
			alpha.write(fmt.Sprintf("src/after-dump-%d.txt", i), words(uint64(400+i), 4000))
		}
		must(t, os.Remove(filepath.Join(alpha.root, "src/f03.txt")))
		alpha.sifctl("wait")
		alpha.published("alpha published after the dump")
		alpha.fleetCheck(16)
		srv.Restore(dump, "fleet")
		// The restored rows lack the last changes: sifd notices the batch
		// number went back, compares, and publishes what differs.
		alpha.write("src/nudge.txt", words(500, 4000))
		alpha.sifctl("wait")
		alpha.published("alpha converged after the restore")
		alpha.fleetCheck(17)
		beta.fleetCheck(5)
	})

	t.Run("schema of a newer sif", func(t *testing.T) {
		alpha.stop()
		srv.Exec("fleet", `UPDATE sif_schema SET version = 99`)
		alpha.startFleet()
		st := alpha.until(30*time.Second, "the newer schema refused", func(st *ipc.Status) bool {
			return st.Fleet != nil && strings.Contains(st.Fleet.LastError, "99")
		})
		if !strings.Contains(st.Fleet.LastError, "upgrade sif") {
			t.Fatalf("newer schema: last error %q does not say what to do", st.Fleet.LastError)
		}
		srv.Exec("fleet", fmt.Sprintf(`UPDATE sif_schema SET version = %d`, fleet.SchemaVersion))
		alpha.published("alpha published once the schema was its own again")
		alpha.fleetCheck(17)
	})

	t.Run("sifd and the database killed in the middle of publishing", func(t *testing.T) {
		gamma := fleetHost(t, "gamma", url)
		const n = 1500
		for i := range n {
			gamma.write(fmt.Sprintf("d%02d/g%04d.txt", i%30, i), words(uint64(10_000+i), 600))
		}
		midway := func(st *ipc.Status) bool {
			return st.Fleet != nil && st.Fleet.Published > 0 && (st.Fleet.Pending > 0 || st.Fleet.Resyncing)
		}
		gamma.startFleet()
		gamma.until(60*time.Second, "gamma midway through publishing", midway)
		gamma.kill()
		gamma.startFleet()
		gamma.until(60*time.Second, "gamma midway again", func(st *ipc.Status) bool {
			return st.Fleet != nil && st.Fleet.Connected
		})
		srv.Kill()
		srv.Start()
		gamma.published("gamma published after both were killed")
		gamma.fleetCheck(n)
		alpha.fleetCheck(17)
		gamma.stop()
		r := alpha.sifctl("fleet", "forget", "gamma")
		if r.code != 0 {
			t.Fatalf("forgetting gamma: exit %d %s", r.code, r.stderr)
		}
	})

	t.Run("forget a host", func(t *testing.T) {
		beta.stop()
		r := alpha.sifctl("fleet", "forget", "beta", "--json")
		var out ipc.FleetForgetResponse
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Files != 5 || out.Contents != 4 {
			// Beta's own three, and copy1's, which alpha no longer holds
			// (f01 was removed above); copy2's stays with alpha's f02.
			t.Fatalf("fleet forget beta: exit %d %s %s; want 5 files and 4 contents", r.code, r.stdout, r.stderr)
		}
		if r := alpha.sifctl("fleet", "forget", "beta"); r.code != 2 || !strings.Contains(r.stderr, "no such host") {
			t.Fatalf("forgetting beta again: exit %d %q", r.code, r.stderr)
		}
		alpha.fleetCheck(17)
	})
}

// Wrong credentials: the link says why in the status, and local answers
// go on.
func TestFleetWrongCredentials(t *testing.T) {
	srv := pgtest.Start(t, nil)
	srv.CreateRole("sif", "right")
	srv.CreateDBOwnedBy("fleet", "sif")
	e := newEnv(t)
	e.setFleet("alpha", strings.Replace(srv.URLFor("sif", "right", "fleet"), "right", "wrong", 1))
	e.write("a.txt", words(1, 5000))
	e.startFleet()
	st := e.until(30*time.Second, "the refused credentials in the status", func(st *ipc.Status) bool {
		return st.Fleet != nil && st.Fleet.LastError != ""
	})
	if !strings.Contains(st.Fleet.LastError, "password authentication failed") || strings.Contains(st.Fleet.LastError, "wrong") {
		t.Fatalf("last error %q: want pgx's authentication error, without the password", st.Fleet.LastError)
	}
	q := filepath.Join(e.dir, "query.txt")
	must(t, os.WriteFile(q, words(1, 5000), 0o644))
	if r, _ := e.similar(q); r.code != 0 {
		t.Fatalf("similar with the fleet refused: exit %d %s", r.code, r.stderr)
	}
	e.stop()
	e.setFleet("alpha", srv.URLFor("sif", "right", "fleet"))
	e.startFleet()
	e.published("published with the right password")
	e.fleetCheck(1)
}

// A daemon without a [fleet] says so to every fleet request.
func TestFleetNone(t *testing.T) {
	e := newEnv(t)
	q := e.write("a.txt", words(1, 5000))
	e.start()
	for _, args := range [][]string{{"similar", "--fleet", q}, {"fleet", "hosts"}, {"fleet", "check"}, {"fleet", "forget", "x"}} {
		if r := e.sifctl(args...); r.code != 2 || !strings.Contains(r.stderr, "has no fleet") {
			t.Errorf("sifctl %v on a daemon without a fleet: exit %d %q", args, r.code, r.stderr)
		}
	}
	if st := e.status(); st.Fleet != nil {
		t.Errorf("status of a daemon without a fleet shows one: %+v", st.Fleet)
	}
}
