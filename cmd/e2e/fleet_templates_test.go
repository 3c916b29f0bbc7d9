//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sif-dev/sif/daemon/fleet/pgtest"
	"github.com/sif-dev/sif/ipc"
)

// fleetTemplateLine is one line of sifctl similar --fleet --json.
type fleetTemplateLine struct {
	Template   bool             `json:"template"`
	Total      int              `json:"total"`
	Skipped    int              `json:"skipped"`
	FleetError *ipc.Error       `json:"fleet_error"`
	Matches    []fleetTemplateM `json:"matches"`
}

type fleetTemplateM struct {
	Host        string  `json:"host"`
	Path        string  `json:"path"`
	Containment float64 `json:"containment"`
	Measure     string  `json:"measure"`
	Template    bool    `json:"template"`
}

// TestFleetTemplateFamily: a file made from a template that 300 files on
// another host were made from is answered across the fleet with that
// family, each member flagged template, though no other file on its own
// host shares it; a file that only shares a licence header with 300
// files of the other host is answered with none of them.
func TestFleetTemplateFamily(t *testing.T) {
	srv := pgtest.Start(t, nil)
	srv.CreateDB("fleet")
	url := srv.URL("fleet")
	alpha, beta := fleetHost(t, "alpha", url), fleetHost(t, "beta", url)
	tmpl := stubTemplate()
	family := map[string]bool{}
	write := func(root, rel, content string) string {
		p := filepath.Join(root, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o777))
		must(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	for i := range 300 {
		name := fmt.Sprintf("icon-%03d", i)
		family[write(beta.root, "gen/"+name+".d.ts", strings.ReplaceAll(tmpl, "__ICON__", name))] = true
		write(beta.root, fmt.Sprintf("src/m%03d.js", i), licenceHeader+prose(uint64(900000+i), 1500))
	}
	member := write(alpha.root, "types/icon-alpha.d.ts", strings.ReplaceAll(tmpl, "__ICON__", "icon-alpha"))
	header := write(alpha.root, "src/own.js", licenceHeader+prose(12345, 2500))
	for i := range 20 {
		write(alpha.root, fmt.Sprintf("notes/n%02d.txt", i), prose(uint64(500+i), 3000))
	}
	alpha.startFleet()
	beta.startFleet()
	alpha.published("alpha published")
	beta.published("beta published")

	ask := func(path string, args ...string) fleetTemplateLine {
		t.Helper()
		r := alpha.sifctl(append([]string{"similar", "--fleet", "--json"}, append(args, path)...)...)
		var l fleetTemplateLine
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || r.code > 1 || l.FleetError != nil {
			t.Fatalf("similar --fleet %s: exit %d, %v, %+v\n%.500s%s", path, r.code, err, l.FleetError, r.stdout, r.stderr)
		}
		return l
	}
	out := ask(member)
	if !out.Template || len(out.Matches) != 300 || out.Total != 300 {
		t.Fatalf("a family member: template %v, total %d, %d matches, %d skipped; want beta's 300 members, flagged",
			out.Template, out.Total, len(out.Matches), out.Skipped)
	}
	for i, m := range out.Matches {
		if m.Host != "beta" || !family[m.Path] || !m.Template || m.Measure != ipc.MeasureEstimated || m.Containment < 80 {
			t.Fatalf("a family member: match %d: %+v; want a member on beta, flagged template, estimated at 80 %% or more", i, m)
		}
	}
	t.Logf("a family member: first %s:%s %.1f %%, last %.1f %%", out.Matches[0].Host, out.Matches[0].Path,
		out.Matches[0].Containment, out.Matches[len(out.Matches)-1].Containment)
	if out = ask(member, "--limit", "5"); !out.Template || len(out.Matches) != 5 {
		t.Errorf("a family member, --limit 5: template %v, %d matches; want 5, flagged", out.Template, len(out.Matches))
	}

	// The header is common across the fleet too, but a minor part of the
	// file: it is skipped, and links the file to none of beta's.
	out = ask(header)
	if out.Template {
		t.Errorf("a file with its own content under the header: answered as a template query")
	}
	for _, m := range out.Matches {
		t.Errorf("a file with its own content under the header: matched %s:%s %.1f %%", m.Host, m.Path, m.Containment)
	}
}
