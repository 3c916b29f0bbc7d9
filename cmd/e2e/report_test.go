//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sif-dev/sif/ipc"
)

// TestReportInBrowser drives `sifctl report --html` through the real
// daemon on a tree with identical files, two near-copies and a copied
// directory, then opens the page in headless Chromium, with no network:
// the rendered page has its sections, the files' names (one with markup
// in it, shown as text), the bytes the copies would free, the near-copy
// directories and files, and a screenshot of it is a picture, not a blank.
func TestReportInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("this test renders the report in headless Chromium: install Debian's chromium package (apt-get install chromium): %v", err)
	}
	e := newEnv(t)
	big := words(31, 1<<20)
	for _, p := range []string{"media/iso/disk.iso", "home/bob/isos/disk.iso", "home/alice/Downloads/disk.iso"} {
		e.write(p, big)
	}
	odd := e.write(`home/alice/notes & "plans" <v2>.txt`, words(32, 4000))
	e.write("home/bob/notes.txt", words(32, 4000))
	draft := words(33, 30000)
	e.write("docs/report.txt", draft)
	e.write("drafts/report-v2.txt", edit(34, draft, 0.05))
	writeTree(t, filepath.Join(e.root, "orig", "proj"), project(100))
	writeTree(t, filepath.Join(e.root, "backup", "2024", "proj"), project(100))
	e.start()

	out := filepath.Join(e.dir, "report.html")
	r := e.sifctl("report", "--html", out)
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("report --html: exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?i)\b(src|href)\s*=\s*"([^"]*)"`).FindAllSubmatch(page, -1) {
		if string(m[1]) != "href" || !bytes.HasPrefix(m[2], []byte("#")) {
			t.Errorf("the page refers to something outside it: %s", m[0])
		}
	}
	for _, bad := range []string{"http://", "https://", "url(", "@import"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("the page holds %q", bad)
		}
	}

	var dupes ipc.DupesResponse
	if r := e.sifctl("dupes", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &dupes) != nil {
		t.Fatalf("dupes --json: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	freed := dupes.Totals.RedundantBytes
	if freed < 1<<20 || freed >= 10<<20 {
		t.Fatalf("dupes frees %d bytes: the test wants between 1 and 10 MiB, printed as N.N MiB", freed)
	}

	dom := chromiumRun(t, chromium, "--dump-dom", "file://"+out)
	for _, want := range []string{
		"<title>File server report", "<h2>Summary</h2>", "<h2>Identical copies by directory</h2>",
		"<h2>Near-copy directories</h2>", "<h2>Groups of similar files</h2>", "<h2>Identical files</h2>",
		fmt.Sprintf(`<div class="label">Identical copies</div><div class="value">%.1f MiB</div>`, float64(freed)/(1<<20)),
		filepath.Join(e.root, "media/iso/disk.iso"), filepath.Join(e.root, "home/alice/Downloads/disk.iso"),
		filepath.Join(e.root, "home/alice/notes &amp; \"plans\" &lt;v2&gt;.txt"),
		filepath.Join(e.root, "orig/proj"), filepath.Join(e.root, "backup/2024/proj"),
		filepath.Join(e.root, "docs/report.txt"), filepath.Join(e.root, "drafts/report-v2.txt"),
		"1.0 MiB", // each disk.iso's set frees two of them: 2.0 MiB, at 1.0 MiB each
		"2.0 MiB",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, "<v2>") {
		t.Errorf("the name %s became markup in the rendered page", odd)
	}
	if n := strings.Count(dom, "<rect "); n < 3 {
		t.Errorf("the treemap has %d rectangles, want one per directory of copies", n)
	}
	if t.Failed() {
		t.Logf("rendered page:\n%s", dom)
	}

	// --prefix: the files under home/ only, their totals asked of sifd.
	home := filepath.Join(e.dir, "home.html")
	if r := e.sifctl("report", "--prefix", filepath.Join(e.root, "home"), "--html", home); r.code != 0 {
		t.Fatalf("report --prefix: exit %d: %s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(home); err != nil || !bytes.Contains(b, []byte(filepath.Join(e.root, "home/bob/isos/disk.iso"))) ||
		bytes.Contains(b, []byte(filepath.Join(e.root, "media"))) || !bytes.Contains(b, []byte("the files under "+filepath.Join(e.root, "home"))) ||
		!bytes.Contains(b, []byte(`<div class="value">2.0 MiB</div><div class="note">4 files</div>`)) {
		t.Errorf("report --prefix home: %v; want the files under home only, 2 disk.iso and 2 notes:\n%s", err, b)
	}

	shot := filepath.Join(e.dir, "report.png")
	chromiumRun(t, chromium, "--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars", "file://"+out)
	checkScreenshot(t, shot, 1280, 2000)
}

// chromiumRun runs headless Chromium on args with a profile of its own
// and no network (every host name unresolvable, a proxy that is not
// there), and returns its standard output.
func chromiumRun(t *testing.T, chromium string, args ...string) string {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless=new", "--no-sandbox", "--disable-gpu",
		"--disable-dev-shm-usage", "--user-data-dir=" + filepath.Join(home, "profile"), "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9"}, args...)...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_CACHE_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// checkScreenshot fails unless path is a PNG of w by h pixels that shows
// something: many colours, as the treemap's and the text's.
func checkScreenshot(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		t.Errorf("screenshot of %v, want %dx%d", b, w, h)
	}
	colours := map[[3]uint32]bool{}
	for y := 0; y < h; y += 3 {
		for x := 0; x < w; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	if len(colours) < 50 {
		t.Errorf("screenshot %s has %d colours: a blank page, or nearly", path, len(colours))
	}
}
