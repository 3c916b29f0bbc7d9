package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// streamBackend's EachGroup yields n groups (testGroup), first waiting for
// gate when it is set. Before group pause it calls atPause, if set; after
// failAt groups (if above 0) it fails with errFailed.
type streamBackend struct {
	*fakeController
	n, failAt atomic.Int64 // changed between requests
	pause     int
	atPause   func()
	entered   chan struct{} // told when EachGroup starts, if set
	gate      chan struct{}
	calls     atomic.Int32
}

var errFailed = errors.New("the disk caught fire")

func (b *streamBackend) EachGroup(_ context.Context, o index.GroupOptions, fn func(index.Group) error) error {
	b.calls.Add(1)
	if b.entered != nil {
		b.entered <- struct{}{}
	}
	if b.gate != nil {
		<-b.gate
	}
	failAt := int(b.failAt.Load())
	for i := range int(b.n.Load()) {
		if i == failAt && failAt > 0 {
			return errFailed
		}
		if i == b.pause && b.atPause != nil {
			b.atPause()
		}
		g := testGroup(i)
		if o.Links {
			g.Links = []index.GroupLink{{A: 0, B: 1, AInB: 0.4567, BInA: 0.123456}}
		}
		if err := fn(g); err != nil {
			return err
		}
	}
	return nil
}

// testGroup is the i-th group of a streamBackend: a reference, a member and,
// for every third group, an identical copy.
func testGroup(i int) index.Group {
	file := func(name string, pct float64) index.GroupMember {
		m := index.GroupMember{Percent: pct}
		m.Path = fmt.Sprintf("/srv/projects/%05d/%s-%s.c", i, name, strings.Repeat("x", i%40))
		m.FileMeta.Size = int64(1000 + i)
		return m
	}
	g := index.Group{Reference: file("ref", 1), Members: []index.GroupMember{file("member", 0.4567)}}
	if i%3 == 0 {
		g.Members[0].Copies = []string{fmt.Sprintf("/srv/backup/%05d/member.c", i)}
	}
	return g
}

// wantGroups is the answer of a streamBackend of n groups, as a whole.
func wantGroups(n int, thr float64) ipc.GroupsResponse {
	want := ipc.GroupsResponse{Threshold: thr, Groups: []ipc.Group{}}
	for i := range n {
		want.Groups = append(want.Groups, wireGroup(testGroup(i)))
	}
	return want
}

// getRaw asks GET path on sock with a plain HTTP client, as a client that
// knows nothing of streaming does, and returns the status and the body.
func getRaw(t *testing.T, sock, path string) (int, []byte, error) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := hc.Get("http://sifd" + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// TestGroupsStreamed: the groups answer is sent as the backend yields it,
// not once it is whole: the backend stops halfway until the client has
// received a thousand groups, which it never would if the server held the
// answer. The answer is the one object a client reading it whole expects,
// byte for byte.
func TestGroupsStreamed(t *testing.T) {
	const n = 20_000 // some 3 MB of JSON
	arrived := make(chan struct{})
	var halted atomic.Bool
	b := &streamBackend{fakeController: newFakeController(), pause: n / 2, atPause: func() {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			halted.Store(true)
		}
	}}
	b.n.Store(n)
	sock, c := serveWith(t, b, Options{})
	got := 0
	var order []string
	sum, err := c.GroupsEach(context.Background(), ipc.GroupsOptions{Threshold: 30}, func(g ipc.Group) error {
		if got++; got == 1000 {
			close(arrived)
		}
		if got%1000 == 1 {
			order = append(order, g.Reference.Path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if halted.Load() {
		t.Errorf("no group reached the client while the backend was halfway through %d: the answer was held, not streamed", n)
	}
	if got != n || sum.Threshold != 30 || sum.ElapsedNs <= 0 || sum.Groups != nil {
		t.Errorf("GroupsEach: %d groups, summary %+v; want %d, threshold 30 and an elapsed time", got, sum, n)
	}
	for i, p := range order {
		if want := testGroup(1000 * i).Reference.Path; p != want {
			t.Fatalf("group %d: reference %s, want %s: out of order", 1000*i, p, want)
		}
	}

	// A client that reads the whole answer gets what the server sent
	// before it streamed: one ipc.GroupsResponse, encoded at once.
	status, body, err := getRaw(t, sock, "/v1/groups?threshold=30")
	if err != nil || status != http.StatusOK {
		t.Fatalf("plain GET: %d, %v", status, err)
	}
	var whole ipc.GroupsResponse
	if err := json.Unmarshal(body, &whole); err != nil {
		t.Fatalf("decoding the streamed answer whole: %v", err)
	}
	want := wantGroups(n, 30)
	want.ElapsedNs = whole.ElapsedNs
	wantBody, _ := ipc.MarshalJSONLine(want)
	if !bytes.Equal(body, wantBody) {
		t.Errorf("streamed answer (%d bytes) differs from the answer encoded whole (%d bytes)", len(body), len(wantBody))
	}
	if whole.ElapsedNs <= 0 {
		t.Errorf("elapsed_ns %d", whole.ElapsedNs)
	}

	// None: an empty list, not null.
	b.n.Store(0)
	if status, body, err := getRaw(t, sock, "/v1/groups"); err != nil || status != http.StatusOK || !strings.HasPrefix(string(body), `{"threshold":25,"groups":[],"elapsed_ns":`) {
		t.Errorf("no groups: %d %v %s", status, err, body)
	}
}

// TestGroupsLinks: with links asked for, each group carries its links as
// percentages, through the client's decoder; without, none.
func TestGroupsLinks(t *testing.T) {
	b := &streamBackend{fakeController: newFakeController()}
	b.n.Store(3)
	_, c := serveWith(t, b, Options{})
	for _, links := range []bool{false, true} {
		resp, err := c.Groups(context.Background(), ipc.GroupsOptions{Links: links})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) != 3 {
			t.Fatalf("%d groups, want 3", len(resp.Groups))
		}
		for _, g := range resp.Groups {
			want := []ipc.GroupLink(nil)
			if links {
				want = []ipc.GroupLink{{A: 0, B: 1, AInB: 45.67, BInA: 12.35}}
			}
			if !reflect.DeepEqual(g.Links, want) {
				t.Errorf("links asked for %v: group of %s has links %+v, want %+v", links, g.Reference.Path, g.Links, want)
			}
		}
	}
}

// TestGroupsCutShort: a backend that fails before the first piece is sent
// is answered with a status and code as usual; one that fails midway cuts
// the connection, so that no client takes the groups it got for all.
func TestGroupsCutShort(t *testing.T) {
	b := &streamBackend{fakeController: newFakeController()}
	b.n.Store(10_000)
	b.failAt.Store(5_000)
	sock, c := serveWith(t, b, Options{})
	got := 0
	_, err := c.GroupsEach(context.Background(), ipc.GroupsOptions{}, func(ipc.Group) error { got++; return nil })
	if !errors.Is(err, ipc.ErrCutShort) {
		t.Errorf("GroupsEach of an answer cut after 5,000 groups: %v (%d groups); want ErrCutShort", err, got)
	}
	if got == 0 || got > 5_000 {
		t.Errorf("%d groups before the cut, want some and at most 5,000", got)
	}
	if _, err := c.Groups(context.Background(), ipc.GroupsOptions{}); !errors.Is(err, ipc.ErrCutShort) {
		t.Errorf("Groups: %v, want ErrCutShort", err)
	}
	status, body, err := getRaw(t, sock, "/v1/groups")
	var whole ipc.GroupsResponse
	if err == nil && status == http.StatusOK && json.Unmarshal(body, &whole) == nil {
		t.Errorf("plain GET of an answer cut short decoded as a whole one of %d groups", len(whole.Groups))
	}

	b.failAt.Store(1) // before anything was sent
	var e *ipc.Error
	if _, err := c.Groups(context.Background(), ipc.GroupsOptions{}); !errors.As(err, &e) || e.Code != ipc.CodeInternal || !strings.Contains(e.Message, "caught fire") {
		t.Errorf("Groups failing before the first piece: %v, want an internal error naming the cause", err)
	}

	// A client that stops taking the groups hangs up; the server goes on
	// serving.
	b.failAt.Store(0)
	stop := errors.New("enough")
	got = 0
	if _, err := c.GroupsEach(context.Background(), ipc.GroupsOptions{}, func(ipc.Group) error {
		if got++; got == 10 {
			return stop
		}
		return nil
	}); err != stop {
		t.Errorf("GroupsEach with fn failing: %v, want fn's error", err)
	}
	if r, err := c.Groups(context.Background(), ipc.GroupsOptions{}); err != nil || len(r.Groups) != int(b.n.Load()) {
		t.Errorf("groups after a client hung up: %v", err)
	}
}

// TestGroupsSharedStreamed: identical groups requests that wait for the
// same slot share one computation, and each gets the whole streamed
// answer; one of them hanging up meanwhile costs the others nothing.
func TestGroupsSharedStreamed(t *testing.T) {
	const n = 5_000
	b := &streamBackend{fakeController: newFakeController(), entered: make(chan struct{}, 10), gate: make(chan struct{})}
	b.n.Store(n)
	sock, c := serveWith(t, b, Options{MaxWhole: 1, MaxWholeQueued: 2, WholeWait: 10 * time.Second})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { c.Groups(context.Background(), ipc.GroupsOptions{Threshold: 30}) })
	<-b.entered // holds the slot until the gate opens
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answers := make(chan answer, 3)
	for range 2 {
		wg.Go(func() {
			status, body, err := getRaw(t, sock, "/v1/groups?threshold=40")
			answers <- answer{status, body, err}
		})
	}
	ctx, hangUp := context.WithCancel(context.Background())
	left := make(chan error, 1)
	wg.Go(func() {
		_, err := c.Groups(ctx, ipc.GroupsOptions{Threshold: 40})
		left <- err
	})
	time.Sleep(200 * time.Millisecond) // all three queued
	hangUp()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Errorf("the client that hung up: %v", err)
	}
	close(b.gate)
	want := wantGroups(n, 40)
	for range 2 {
		a := <-answers
		var got ipc.GroupsResponse
		if a.err != nil || a.status != http.StatusOK || json.Unmarshal(a.body, &got) != nil {
			t.Fatalf("a shared groups answer: %d %v, %d bytes", a.status, a.err, len(a.body))
		}
		want.ElapsedNs = got.ElapsedNs
		if !reflect.DeepEqual(got, want) {
			t.Errorf("a shared answer of %d groups, want %d", len(got.Groups), n)
		}
	}
	<-b.entered
	if calls := b.calls.Load(); calls != 2 {
		t.Errorf("%d computations for one request and three identical ones, want 2", calls)
	}
}

// dupesBackend answers Dupes with n sets of three files, the third a hard
// link of the first.
type dupesBackend struct {
	*fakeController
	n atomic.Int64
}

func (b *dupesBackend) Dupes(context.Context, string) ([]index.DupeSet, error) {
	sets := make([]index.DupeSet, b.n.Load())
	for i := range sets {
		sets[i] = index.DupeSet{Size: int64(100_000 - i), Strong: [32]byte{byte(i), byte(i >> 8), 1}}
		for j, dir := range []string{"a", "b", "c"} {
			sets[i].Files = append(sets[i].Files, index.FileMeta{Path: fmt.Sprintf("/srv/%s/%05d.iso", dir, i), Dev: 1, Ino: uint64(10*i + 1 + j%2)}) // a and c: one inode
		}
	}
	return sets, nil
}

// TestDupesStreamed: the dupes answer, sent set by set, is byte for byte
// the one object encoded at once, totals last.
func TestDupesStreamed(t *testing.T) {
	b := &dupesBackend{fakeController: newFakeController()}
	b.n.Store(3_000)
	sock, c := serveWith(t, b, Options{})
	status, body, err := getRaw(t, sock, "/v1/dupes")
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET /v1/dupes: %d %v", status, err)
	}
	sets, _ := b.Dupes(context.Background(), "")
	want := ipc.DupesResponse{Sets: []ipc.DupeSet{}}
	for i := range sets {
		set, _ := dupeSet(&sets[i], nil)
		want.Sets = append(want.Sets, set)
		want.Totals.Sets++
		want.Totals.Files += len(set.Files)
		want.Totals.RedundantFiles += set.RedundantFiles
		want.Totals.RedundantBytes += set.RedundantBytes
	}
	wantBody, _ := ipc.MarshalJSONLine(want)
	if !bytes.Equal(body, wantBody) {
		t.Errorf("streamed dupes (%d bytes) differ from the answer encoded whole (%d bytes)", len(body), len(wantBody))
	}
	if want.Totals.RedundantFiles != 3_000 {
		t.Errorf("test data: %d redundant files, want one per set (a hard link)", want.Totals.RedundantFiles)
	}
	got, err := c.Dupes(context.Background(), "")
	if err != nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("Dupes through the client: %v, %d sets", err, len(got.Sets))
	}
	b.n.Store(0)
	if _, body, _ := getRaw(t, sock, "/v1/dupes"); string(body) != `{"sets":[],"totals":{"sets":0,"files":0,"redundant_files":0,"redundant_bytes":0}}`+"\n" {
		t.Errorf("no dupes: %s", body)
	}
}

// The default clients print is the one the index applies.
func TestDefaultMinShared(t *testing.T) {
	if ipc.DefaultMinShared != index.DefaultMinFeatures {
		t.Fatalf("ipc.DefaultMinShared %d, index.DefaultMinFeatures %d", ipc.DefaultMinShared, index.DefaultMinFeatures)
	}
}
