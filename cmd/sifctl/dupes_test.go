package main

import (
	"encoding/json"
	"testing"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// TestDupesStreamed: sifctl dupes prints each set as it arrives; the
// text (names quoted), the records of -0 (names raw, an empty record
// after each set) and the JSON are those of the whole answer, byte for
// byte, and an index without identical files says so and exits 1.
func TestDupesStreamed(t *testing.T) {
	f := &fakeDaemon{dupes: []index.DupeSet{
		{Size: 300000, Strong: [32]byte{0xab}, Files: []index.FileMeta{
			{Path: "/srv/a/big.iso", Dev: 1, Ino: 7}, {Path: "/srv/b/big.iso", Dev: 1, Ino: 7}, {Path: "/srv/c/big.iso", Dev: 1, Ino: 8}}},
		{Size: 10, Strong: [32]byte{0xcd}, Files: []index.FileMeta{
			{Path: "/srv/x \"quoted\" <&>", Dev: 1, Ino: 9}, {Path: "/srv/y", Dev: 1, Ino: 10}}},
	}}
	sock := startFake(t, f)
	r := sifctl(t, "--socket", sock, "dupes")
	wantText := `3 identical files of 300000 bytes, 2 copies on disk:
  /srv/a/big.iso
  /srv/b/big.iso  (hard link of /srv/a/big.iso)
  /srv/c/big.iso
2 identical files of 10 bytes:
  '/srv/x "quoted" <&>'
  /srv/y
2 sets, 5 files: 2 redundant copies, 300010 bytes
`
	if r.code != exitFound || r.stdout != wantText {
		t.Errorf("dupes: exit %d, stdout\n%s\nwant\n%s(stderr %q)", r.code, r.stdout, wantText, r.stderr)
	}

	r = sifctl(t, "--socket", sock, "dupes", "-0")
	wantNull := "/srv/a/big.iso\x00/srv/b/big.iso\x00/srv/c/big.iso\x00\x00/srv/x \"quoted\" <&>\x00/srv/y\x00\x00"
	if r.code != exitFound || r.stdout != wantNull {
		t.Errorf("dupes -0: exit %d, stdout %q, want %q (stderr %q)", r.code, r.stdout, wantNull, r.stderr)
	}

	r = sifctl(t, "--socket", sock, "--json", "dupes")
	whole, err := ipc.NewClient(sock).Dupes(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ipc.MarshalJSONLine(whole)
	if r.code != exitFound || r.stdout != string(want) {
		t.Errorf("dupes --json: exit %d\n got %s\nwant %s", r.code, r.stdout, want)
	}
	var back ipc.DupesResponse
	if err := json.Unmarshal([]byte(r.stdout), &back); err != nil || len(back.Sets) != 2 || back.Totals.Files != 5 {
		t.Errorf("dupes --json decodes to %+v, %v", back, err)
	}

	f.mu.Lock()
	f.dupes = nil
	f.mu.Unlock()
	r = sifctl(t, "--socket", sock, "dupes")
	r.want(t, "no dupes", exitNothing, "No identical files.\n", "")
	r = sifctl(t, "--socket", sock, "--json", "dupes")
	r.want(t, "no dupes, JSON", exitNothing, `{"sets":[],"totals":{`, "")
}
