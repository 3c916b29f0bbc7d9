//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// The sizes of issue 20's generated families.
const (
	familySize  = 2000 // typing stubs made from one template, differing in one line
	localeCount = 300  // tables sharing about 90 % of their text
	headerFiles = 5000 // files with their own content under one licence header
)

// templateTree is the tree TestTemplateFamilies indexes.
type templateTree struct {
	family, locales, headers []string // paths, in order
	template                 []byte   // the family's template, placeholder line and all
	header                   []byte   // the licence header
	isFamily, isLocale       map[string]bool
	isHeader                 map[string]bool
}

// TestTemplateFamilies indexes issue 20's tree of small files (256 B to
// 4 KiB): 2,000 typing stubs made from one template, differing in one
// line; 300 locale tables sharing about 90 % of their text; and 5,000
// files with their own content under one licence header. Every
// fingerprint of a stub or a table is in more than max_df (200) files, so
// a query of one is a template query: its family is the answer, the
// closest first, with its size (total) and each member flagged template,
// also while the daemon restarts. The header still links no two of the
// 5,000 files, in similar and in groups, and only a query that is the
// header alone answers them.
func TestTemplateFamilies(t *testing.T) {
	e := newEnv(t)
	began := time.Now()
	tr := makeTemplateTree(t, e.root)
	t.Logf("generated %d files in %v", len(tr.family)+len(tr.locales)+len(tr.headers), time.Since(began).Round(time.Millisecond))
	member := tr.family[1234]

	// During the first scan: an answer may be partial, but never an
	// error other than "not serving", and never led by another file
	// than one of the family.
	began = time.Now()
	e.startNoWait()
	e.awaitSocket()
	asked := e.askUntilReady(member, tr, 3*time.Minute, "first scan", false)
	scan := time.Since(began)
	st := e.status()
	if n := len(tr.family) + len(tr.locales) + len(tr.headers); st.Index.Files != uint64(n) {
		t.Fatalf("%d files indexed, want %d", st.Index.Files, n)
	}
	t.Logf("first scan of %d files (%d bytes): %v (race %v); %s", st.Index.Files, st.Index.Bytes, scan.Round(time.Millisecond), raceEnabled, asked)

	// 1. A member of the family: the other 1,999 answer, the closest first.
	out := e.templateQuery(member)
	requireTemplate(t, "family member", out, familySize-1, familySize-1)
	requireFamily(t, "family member", out, tr.isFamily, 90)
	e.logElapsed(member, "family member")

	// 2. The template itself, from outside the root: all 2,000 answer.
	tmpl := filepath.Join(e.dir, "template.d.ts")
	must(t, os.WriteFile(tmpl, tr.template, 0o644))
	out = e.templateQuery(tmpl)
	requireTemplate(t, "template", out, familySize, familySize)
	requireFamily(t, "template", out, tr.isFamily, 90)
	e.logElapsed(tmpl, "template")

	// 2b. basis: a new member of the family, not indexed (one line of it
	// rewritten), finds a member as its basis, with a delta smaller than
	// the file compressed.
	newMember := filepath.Join(e.dir, "new-member.d.ts")
	body, err := os.ReadFile(member)
	must(t, err)
	must(t, os.WriteFile(newMember, editLines(body, 1), 0o644))
	br := e.sifctl("basis", "--json", newMember)
	var basis ipc.BasisResponse
	if br.code != 0 || json.Unmarshal([]byte(br.stdout), &basis) != nil || basis.Basis == nil {
		t.Fatalf("basis of a new family member: exit %d, %s%s", br.code, br.stdout, br.stderr)
	}
	if !tr.isFamily[basis.Basis.Path] || basis.Basis.EstimatedBytes >= basis.CompressedBytes {
		t.Errorf("basis of a new family member: %s, a delta of %d bytes (compressed %d); want a family member and less",
			basis.Basis.Path, basis.Basis.EstimatedBytes, basis.CompressedBytes)
	}
	t.Logf("basis of a new family member: %s, delta %d bytes of %d (compressed %d)",
		filepath.Base(basis.Basis.Path), basis.Basis.EstimatedBytes, basis.Size, basis.CompressedBytes)

	// 3. A locale table: the other 299, each holding about 90 % of it.
	locale := tr.locales[42]
	out = e.templateQuery(locale)
	requireTemplate(t, "locale table", out, localeCount-1, localeCount-1)
	requireFamily(t, "locale table", out, tr.isLocale, 75)
	if len(out.Matches) > 0 && out.Matches[0].Containment > 97 {
		t.Errorf("locale table: the first match contains %.1f %% of it; its own 10 %% of lines should be missing", out.Matches[0].Containment)
	}
	e.logElapsed(locale, "locale table")

	// 4. Only the licence header: the files that hold it are its family.
	hdr := filepath.Join(e.dir, "header.js")
	must(t, os.WriteFile(hdr, tr.header, 0o644))
	out = e.templateQuery("--limit", "20", hdr)
	requireTemplate(t, "licence header alone", out, headerFiles, headerFiles)
	if len(out.Matches) != 20 {
		t.Errorf("licence header alone, --limit 20: %d matches", len(out.Matches))
	}
	requireFamily(t, "licence header alone", out, tr.isHeader, 90)
	e.logElapsed(hdr, "licence header alone")

	// 5. A file with its own content under the header is judged on that
	// content: not a template query, and no other header file answers,
	// while an edited copy of it finds it first.
	own := tr.headers[777]
	out = e.templateQuery(own)
	if out.Template || out.TooFew {
		t.Errorf("a header file with its own content: template %v, too_few %v; want neither", out.Template, out.TooFew)
	}
	for _, m := range out.Matches {
		if tr.isHeader[m.Path] {
			t.Errorf("a header file with its own content lists %s (%.1f %%, template %v): the header made them similar", m.Path, m.Containment, m.Template)
		}
	}
	step := 10 // 500 queries: a second, but 20 s under -race
	if raceEnabled {
		step = 50
	}
	e.requireNoHeaderTemplates(tr, step)
	body, err = os.ReadFile(own)
	must(t, err)
	edited := filepath.Join(e.dir, "edited.js")
	must(t, os.WriteFile(edited, editLines(body, 3), 0o644))
	out = e.templateQuery(edited)
	if out.Template || len(out.Matches) == 0 || out.Matches[0].Path != own || out.Matches[0].Containment < 50 {
		t.Errorf("an edited copy of %s: template %v, matches %s; want the original first", own, out.Template, matchSummary(out.Matches, 3))
	}
	for _, m := range out.Matches[min(1, len(out.Matches)):] {
		if tr.isHeader[m.Path] {
			t.Errorf("an edited copy of %s also lists %s (%.1f %%)", own, m.Path, m.Containment)
		}
	}

	// 6. groups: the family is one group, the tables another, and no
	// group holds two header files.
	e.requireTemplateGroups(tr)

	// 7. --limit in the text output: the family's size and how many more.
	r := e.sifctl("similar", "--limit", "5", member)
	if r.code != 0 {
		t.Errorf("similar --limit 5 %s: exit %d: %s", member, r.code, r.stderr)
	}
	want := fmt.Sprintf("and %d more files (--limit)", familySize-1-5)
	if !strings.Contains(r.stdout, "  template: most of this file is found in more than 200 files; 1999 files hold") ||
		!strings.Contains(r.stdout, want) || strings.Count(r.stdout, "%  ") != 5 || strings.Count(r.stdout, "  template\n") != 5 {
		t.Errorf("similar --limit 5, text: want a template line, 5 matches each marked template, and %q; got\n%s", want, r.stdout)
	}
	out = e.templateQuery("--limit", "5", member)
	if len(out.Matches) != 5 || out.Total != familySize-1 {
		t.Errorf("similar --limit 5 --json: %d matches, total %d; want 5, %d", len(out.Matches), out.Total, familySize-1)
	}

	// 8. While the daemon restarts: asked as soon as the socket is back,
	// the answer is "not serving" or the whole family, never another.
	e.stop()
	began = time.Now()
	e.startNoWait()
	e.awaitSocket()
	asked = e.askUntilReady(member, tr, 3*time.Minute, "restart", true)
	t.Logf("restart: ready after %v; %s", time.Since(began).Round(time.Millisecond), asked)
	out = e.templateQuery(member)
	requireTemplate(t, "family member after the restart", out, familySize-1, familySize-1)
	e.stop()
}

// templateLine is one line of sifctl similar --json, with the fields of a
// template query (decoded here, not through ipc, to run against older
// daemons too).
type templateLine struct {
	Query        string          `json:"query"`
	Fingerprints int             `json:"fingerprints"`
	Skipped      int             `json:"skipped"`
	TooFew       bool            `json:"too_few"`
	Template     bool            `json:"template"`
	Total        int             `json:"total"`
	Checked      int             `json:"checked"`
	Matches      []templateMatch `json:"matches"`
}

type templateMatch struct {
	Path        string  `json:"path"`
	Size        int64   `json:"size"`
	Containment float64 `json:"containment"`
	Resemblance float64 `json:"resemblance"`
	Identical   bool    `json:"identical"`
	Measure     string  `json:"measure"`
	Template    bool    `json:"template"`
}

// templateQuery runs sifctl similar --json with args and returns its one
// line; exit 0 or 1 (nothing found) are answers, anything else fails.
func (e *env) templateQuery(args ...string) templateLine {
	e.t.Helper()
	r := e.sifctl(append([]string{"similar", "--json"}, args...)...)
	if r.code > 1 {
		e.t.Fatalf("similar %v: exit %d: %s", args, r.code, r.stderr)
	}
	var l templateLine
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		e.t.Fatalf("similar --json %v: %v\n%.500s", args, err, r.stdout)
	}
	return l
}

// requireTemplate fails unless out is a template query whose family,
// before the limit, has lo to hi files.
func requireTemplate(t *testing.T, what string, out templateLine, lo, hi int) {
	t.Helper()
	if !out.Template || out.Total < lo || out.Total > hi || len(out.Matches) == 0 {
		t.Errorf("%s: template %v, total %d, %d matches (%d fingerprints, %d skipped, too_few %v); want a template query answered by %d to %d files",
			what, out.Template, out.Total, len(out.Matches), out.Fingerprints, out.Skipped, out.TooFew, lo, hi)
	}
}

// requireFamily fails unless every match is of the family and flagged
// template, and those measured on their bytes (the first) contain at
// least least percent of the query.
func requireFamily(t *testing.T, what string, out templateLine, family map[string]bool, least float64) {
	t.Helper()
	bad := 0
	for i, m := range out.Matches {
		ok := family[m.Path] && m.Template && (m.Measure != ipc.MeasureExact || m.Containment >= least)
		if i > 0 && ok {
			p := out.Matches[i-1]
			ok = p.Containment > m.Containment || p.Containment == m.Containment && p.Resemblance >= m.Resemblance ||
				p.Measure == ipc.MeasureExact && m.Measure != ipc.MeasureExact
		}
		if !ok {
			if bad++; bad <= 5 {
				t.Errorf("%s: match %d: %s %.1f %% (resemblance %.1f %%, %s, template %v): want a file of the family, flagged template, at least %.0f %% if exact, in order",
					what, i, m.Path, m.Containment, m.Resemblance, m.Measure, m.Template, least)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d bad matches of %d", what, bad, len(out.Matches))
	}
	exact := 0
	for _, m := range out.Matches {
		if m.Measure == ipc.MeasureExact {
			exact++
		}
	}
	if len(out.Matches) > 0 && (exact == 0 || out.Matches[0].Measure != ipc.MeasureExact) {
		t.Errorf("%s: %d of %d matches measured on their bytes, the first %q; want the first checked", what, exact, len(out.Matches), out.Matches[0].Measure)
	}
	t.Logf("%s: total %d, %d matches; first %s", what, out.Total, len(out.Matches), matchSummary(out.Matches, 3))
}

func matchSummary(ms []templateMatch, n int) string {
	var b strings.Builder
	for i, m := range ms[:min(n, len(ms))] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.1f%%/%.1f%% %s", filepath.Base(m.Path), m.Containment, m.Resemblance, m.Measure)
		if m.Template {
			b.WriteString(" template")
		}
	}
	return "[" + b.String() + "]"
}

// logElapsed asks the query of path once more through the client library,
// to log the time the daemon took (elapsed_ns), which sifctl does not
// print.
func (e *env) logElapsed(path, what string) {
	e.t.Helper()
	c := ipc.NewClient(e.socket)
	ctx := context.Background()
	info, err := c.Info(ctx)
	must(e.t, err)
	sk, d, err := ipc.QueryFile(path, info.Params, ipc.ReadOptions{})
	must(e.t, err)
	var times []string
	modes := []bool{false, true} // checked, as sifctl asks, and on the index's estimates alone
	if raceEnabled {
		modes = modes[:1] // each takes seconds
	}
	for _, fast := range modes {
		req := ipc.NewSimilarRequest(path, sk)
		req.Attach(d)
		req.Fast = fast
		resp, err := c.Similar(ctx, req)
		must(e.t, err)
		times = append(times, fmt.Sprintf("%v (fast %v, %d matches)", time.Duration(resp.ElapsedNs).Round(10*time.Microsecond), fast, len(resp.Matches)))
	}
	e.t.Logf("%s: elapsed in the daemon %s", what, strings.Join(times, ", "))
}

// askUntilReady asks the similar query of member as soon as it is called
// and again until the daemon is ready, and fails on an error other than
// "not serving", an answer led by a file not of the family, or, with whole
// (the index holds every file, as after a restart), an answer other than
// the whole family. It returns a summary of the answers.
func (e *env) askUntilReady(member string, tr *templateTree, limit time.Duration, what string, whole bool) string {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	var notServing, nothing, partial, template, all int
	ask := func() {
		e.t.Helper()
		r := e.sifctl("similar", "--json", "--limit", "10", member)
		switch {
		case r.code == 2 && (strings.Contains(r.stderr, "no sifd is listening") || strings.Contains(r.stderr, "unavailable") || strings.Contains(r.stderr, "shutting down")):
			notServing++
			return
		case r.code == 1 && whole:
			e.t.Fatalf("%s: similar %s found nothing; want its family: %s", what, member, r.stdout)
		case r.code == 1:
			nothing++
			return
		case r.code != 0:
			e.t.Fatalf("%s: similar %s: exit %d: %s", what, member, r.code, r.stderr)
		}
		var l templateLine
		if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
			e.t.Fatalf("%s: similar --json: %v\n%.500s", what, err, r.stdout)
		}
		if len(l.Matches) == 0 || !tr.isFamily[l.Matches[0].Path] {
			e.t.Fatalf("%s: similar %s: led by %s; want a file of the family first", what, member, matchSummary(l.Matches, 3))
		}
		for _, m := range l.Matches {
			if !tr.isFamily[m.Path] {
				e.t.Errorf("%s: similar %s lists %s, not of the family", what, member, m.Path)
			}
		}
		switch {
		case l.Template && l.Total == familySize-1:
			all++
		case whole:
			e.t.Fatalf("%s: similar %s: template %v, total %d; want the whole family, %d files", what, member, l.Template, l.Total, familySize-1)
		case l.Template:
			template++
		default:
			partial++
		}
	}
	for {
		select {
		case <-e.waited:
			e.t.Fatalf("%s: sifd exited: %v\n%s", what, e.exit, e.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not ready after %v\n%s", what, limit, e.logs.String())
		}
		ask()
		st, err := statusOnce(e)
		if err == nil && st.State == "ready" {
			break
		}
		if err != nil && !ipc.NotServing(err) {
			e.t.Fatalf("%s: status: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Sprintf("asked while %s: %d not serving, %d nothing, %d partial answers not template, %d template answers of part of the family, %d of all of it",
		what, notServing, nothing, partial, template, all)
}

// requireNoHeaderTemplates asks, through the client library, the query
// of every step-th header file, and fails if one is a template query or
// lists another header file: each has more content of its own than
// header.
func (e *env) requireNoHeaderTemplates(tr *templateTree, step int) {
	e.t.Helper()
	c := ipc.NewClient(e.socket)
	ctx := context.Background()
	info, err := c.Info(ctx)
	must(e.t, err)
	began := time.Now()
	asked, bad := 0, 0
	for i := 0; i < len(tr.headers); i += step {
		p := tr.headers[i]
		sk, err := ipc.SketchFile(p, info.Params)
		must(e.t, err)
		req := ipc.NewSimilarRequest(p, sk)
		req.Fast, req.Limit = true, 3
		resp, err := c.Similar(ctx, req)
		must(e.t, err)
		asked++
		others := 0
		for _, m := range resp.Matches {
			if tr.isHeader[m.Path] {
				others++
			}
		}
		if resp.Template || others > 0 {
			if bad++; bad <= 5 {
				st, _ := os.Stat(p)
				e.t.Errorf("header file %s (%d bytes, %d of its own): template %v, %d of %d fingerprints skipped, %d files (%d header files among the first %d): the header made it similar to them",
					p, st.Size(), st.Size()-int64(len(tr.header)), resp.Template, resp.Skipped, resp.Fingerprints, resp.Total, others, len(resp.Matches))
			}
		}
	}
	e.t.Logf("header files asked: %d in %v; %d template queries or answered by header files", asked, time.Since(began).Round(time.Millisecond), bad)
}

// groupsLine is sifctl groups --json, decoded with the template flag.
type groupsLine struct {
	Groups []struct {
		Reference templateGroupFile   `json:"reference"`
		Members   []templateGroupFile `json:"members"`
	} `json:"groups"`
	ElapsedNs int64 `json:"elapsed_ns"`
}

type templateGroupFile struct {
	Path     string          `json:"path"`
	Percent  float64         `json:"percent"`
	Via      json.RawMessage `json:"via"`
	Copies   json.RawMessage `json:"copies"`
	Template bool            `json:"template"`
}

// requireTemplateGroups fails unless sifctl groups puts the family in one
// group of its own, each member flagged template, the locale tables in
// another, and no two header files in one group.
func (e *env) requireTemplateGroups(tr *templateTree) {
	e.t.Helper()
	began := time.Now()
	r := e.sifctl("groups", "--json")
	took := time.Since(began)
	if r.code > 1 { // 1: no groups, which the checks below report
		e.t.Fatalf("groups --json: exit %d: %s", r.code, r.stderr)
	}
	var g groupsLine
	if err := json.Unmarshal([]byte(r.stdout), &g); err != nil {
		e.t.Fatalf("groups --json: %v\n%.500s", err, r.stdout)
	}
	e.t.Logf("groups: %d groups, %v in the daemon, %v for sifctl", len(g.Groups), time.Duration(g.ElapsedNs).Round(time.Millisecond), took.Round(time.Millisecond))
	familyGroups, localeGroups := 0, 0
	for _, grp := range g.Groups {
		var family, locales, headers, untemplated int
		for i, f := range append(grp.Members, grp.Reference) {
			switch {
			case tr.isFamily[f.Path]:
				family++
				if i < len(grp.Members) && !f.Template {
					untemplated++
				}
			case tr.isLocale[f.Path]:
				locales++
			case tr.isHeader[f.Path]:
				headers++
			}
		}
		n := len(grp.Members) + 1
		if family > 0 {
			familyGroups++
			if family != familySize || n != familySize || untemplated > 0 {
				e.t.Errorf("groups: a group of %d files holds %d of the family (want all %d, alone), %d members not flagged template", n, family, familySize, untemplated)
			}
		}
		if locales > 0 {
			localeGroups++
			if locales != localeCount || n != localeCount {
				e.t.Errorf("groups: a group of %d files holds %d of the locale tables; want all %d, alone", n, locales, localeCount)
			}
		}
		if headers > 1 {
			e.t.Errorf("groups: a group holds %d header files (reference %s): the header made them similar", headers, grp.Reference.Path)
		}
	}
	if familyGroups != 1 || localeGroups != 1 {
		e.t.Errorf("groups: the family is in %d groups, the locale tables in %d; want 1 each", familyGroups, localeGroups)
	}

	// The text output says which members are linked through a template.
	r = e.sifctl("groups")
	if r.code > 1 {
		e.t.Fatalf("groups: exit %d: %s", r.code, r.stderr)
	}
	marked := 0
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasSuffix(line, "  template") && strings.Contains(line, "/family/") {
			marked++
		}
	}
	if marked != familySize-1 {
		e.t.Errorf("groups, text: %d lines of the family end with \"template\", want %d", marked, familySize-1)
	}
}

// editLines replaces n lines of b, spread over its second half (past the
// licence header), with new text.
func editLines(b []byte, n int) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	r := rand.New(rand.NewPCG(2020, 3))
	for i := range n {
		at := len(lines)/2 + i*len(lines)/(2*n+1)
		if at < len(lines) {
			lines[at] = string(words(r.Uint64(), 60)) + "\n"
		}
	}
	return []byte(strings.Join(lines, ""))
}

// vocabulary of the generated code and tables.
var tmplWords = strings.Fields(`account action active address admin alert align amount anchor apply
archive asset attach audio author avatar badge balance banner batch billing block border bounds
branch browser buffer bundle button cache calendar camera canvas caption card cart category cell
channel chart checkbox circle client clip cloud collapse color column command comment config
confirm connect contact context control cookie country cover credit crop currency cursor
dashboard debug delete device dialog digest direction display document domain download draft drag
drawer editor element email empty entry event expand field filter focus folder footer format
frame gallery gateway grid handle header height helper hidden history hover image index input
invoice label language layout limit loader location login margin marker media menu message mobile
modal module monitor network notice number offset option order origin output owner padding panel
parent password payment pending picker pixel player plugin popup portal preview price print
profile progress prompt provider query queue radio range rating reader record region remote
render report request reset resize review route scale schema screen scroll search section select
sender session setting shadow share sheet shipping signal slider source spinner stack status
storage stream submit summary switch table target task theme thread ticket timer title toast
toggle token toolbar tooltip track transfer trigger upload vendor version video viewport volume
wallet widget width wizard worker`)

func tmplWord(r *rand.Rand) string { return tmplWords[r.IntN(len(tmplWords))] }

func upper(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// placeholder is the template's line that each stub fills with its name.
const placeholder = `export declare const Icon: IconComponent<"__ICON__">; // __ICON__.svg`

// stubTemplate is the template of the family: the TypeScript typing stub
// a generator writes for every icon of a set, about 1.6 KB.
func stubTemplate() string {
	r := rand.New(rand.NewPCG(20, 1))
	types := []string{"string", "number", "boolean", "IconSize", "IconTone", "() => void", "ReadonlyArray<string>"}
	var b strings.Builder
	b.WriteString("// Generated by gen-icons from assets/svg: do not edit by hand.\n")
	b.WriteString(`import type { ForwardRefExoticComponent, RefAttributes, SVGProps } from "react";` + "\n")
	b.WriteString(`import type { IconBaseProps, IconSize, IconTone } from "../types";` + "\n\n")
	iface := func() {
		name := upper(tmplWord(r)) + upper(tmplWord(r))
		fmt.Fprintf(&b, "export interface %sProps extends IconBaseProps {\n", name)
		for range 3 + r.IntN(4) {
			fmt.Fprintf(&b, "  readonly %s%s?: %s;\n", tmplWord(r), upper(tmplWord(r)), types[r.IntN(len(types))])
		}
		b.WriteString("}\n\n")
	}
	for b.Len() < 800 {
		iface()
	}
	b.WriteString("export type IconComponent<N extends string> = ForwardRefExoticComponent<IconBaseProps & { name: N }>;\n")
	b.WriteString(placeholder + "\n\n")
	for b.Len() < 1500 {
		fmt.Fprintf(&b, "export declare function use%s%s(size?: IconSize): %s;\n", upper(tmplWord(r)), upper(tmplWord(r)), types[r.IntN(len(types))])
	}
	b.WriteString("export default Icon;\n")
	return b.String()
}

// licenceHeader is the header of the 5,000 files, about 700 bytes.
const licenceHeader = `/*
 * Copyright (c) 2019-2026 The Northwind Widgets Authors. All rights reserved.
 *
 * Licensed under the Northwind Open Licence, version 2.1 (the "Licence");
 * you may not use this file except in compliance with the Licence. You may
 * obtain a copy of the Licence in the LICENCE file at the root of this
 * source tree, or at https://northwind.example/licence/2.1.
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the Licence is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the Licence for the specific language governing permissions and
 * limitations under the Licence.
 */
`

// localeTable is locale i's table: 70 lines of keys and strings, of which
// the first 4 (the locale's own settings) and 3 in the middle (its
// translated strings) are its own, and the rest the fallback text every
// table shares.
func localeTable(i int) string {
	shared := rand.New(rand.NewPCG(30, 1))
	own := rand.New(rand.NewPCG(31, uint64(i)))
	pseudo := func(r *rand.Rand, n int) string {
		ws := make([]string, n)
		for k := range ws {
			w := make([]byte, 3+r.IntN(7))
			for j := range w {
				w[j] = byte('a' + r.IntN(26))
			}
			ws[k] = string(w)
		}
		return upper(strings.Join(ws, " "))
	}
	var b strings.Builder
	b.WriteString("{\n")
	fmt.Fprintf(&b, "  \"locale\": \"%c%c-%c%c\",\n", 'a'+i%26, 'a'+i/26%26, 'A'+i/7%26, 'A'+i/3%26)
	fmt.Fprintf(&b, "  \"language.name\": %q,\n", pseudo(own, 2))
	fmt.Fprintf(&b, "  \"format.date\": %q,\n", []string{"DD/MM/YYYY", "MM/DD/YYYY", "YYYY-MM-DD", "D. M. YYYY"}[i%4]+" "+pseudo(own, 1))
	fmt.Fprintf(&b, "  \"format.number\": \"%c###%c##0.00 %s\",\n", ",. '"[i%4], ".,"[i%2], pseudo(own, 1))
	for line := 4; line < 69; line++ {
		key := tmplWord(shared) + "." + tmplWord(shared) + "." + tmplWord(shared)
		value := upper(tmplWord(shared)) + " " + tmplWord(shared) + " " + tmplWord(shared)
		if line >= 33 && line < 36 {
			value = pseudo(own, 3)
		}
		fmt.Fprintf(&b, "  %q: %q,\n", key, value)
	}
	b.WriteString("  \"end\": true\n}\n")
	return b.String()
}

// proseWords are the words of prose: about 4,000 made-up words.
var proseWords = strings.Fields(string(words(424242, 30000)))

// prose makes n bytes of lines of words from seed, like words but a word
// at a time (the tree's 10 MB of it take seconds under -race byte by
// byte).
func prose(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x9a05e))
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(proseWords[r.IntN(len(proseWords))])
		if r.IntN(12) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

// makeTemplateTree writes the tree under root.
func makeTemplateTree(t *testing.T, root string) *templateTree {
	t.Helper()
	tr := &templateTree{isFamily: map[string]bool{}, isLocale: map[string]bool{}, isHeader: map[string]bool{}}
	write := func(rel, content string) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if len(content) < 256 || len(content) > 4096 {
			t.Fatalf("%s: %d bytes, want 256 B to 4 KiB", rel, len(content))
		}
		return p
	}
	tmpl := stubTemplate()
	tr.template = []byte(tmpl)
	r := rand.New(rand.NewPCG(21, 1))
	for i := range familySize {
		name := tmplWord(r) + "-" + tmplWord(r) + "-" + strconv.Itoa(i)
		p := write(fmt.Sprintf("family/%s.d.ts", name), strings.ReplaceAll(tmpl, "__ICON__", name))
		tr.family = append(tr.family, p)
		tr.isFamily[p] = true
	}
	for i := range localeCount {
		p := write(fmt.Sprintf("locales/l%03d.json", i), localeTable(i))
		tr.locales = append(tr.locales, p)
		tr.isLocale[p] = true
	}
	tr.header = []byte(licenceHeader)
	for i := range headerFiles {
		// Its own content, larger than the header: 0.8 to 3.4 KB.
		n := len(licenceHeader) + 100 + int(uint64(i)*2654435761%uint64(4096-2*len(licenceHeader)-100))
		own := prose(uint64(700000+i), n)
		p := write(fmt.Sprintf("headers/p%02d/m%04d.js", i%50, i), licenceHeader+own)
		tr.headers = append(tr.headers, p)
		tr.isHeader[p] = true
	}
	return tr
}
