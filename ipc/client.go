package ipc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sif-dev/sif/index/fingerprint"
)

// Client errors. Check them with errors.Is; errors the daemon reports are
// *Error values.
var (
	// ErrNoDaemon: nothing listens on the socket.
	ErrNoDaemon = errors.New("ipc: no sifd is listening")
	// ErrNotSif: something answers on the socket, but not sif's API.
	ErrNotSif = errors.New("ipc: the socket does not speak sif's API")
	// ErrDenied: the socket's permissions keep this user out.
	ErrDenied = errors.New("ipc: permission denied on the socket")
	// ErrBusy: the daemon answered 503 busy to every try; the error also
	// wraps the daemon's last *Error.
	ErrBusy = errors.New("ipc: sifd is busy")
)

// Client talks to one daemon. It is safe for concurrent use.
//
// A request the daemon answers 503 busy (it serves as many requests as it
// takes at once) is sent again, up to four more times by default
// (ClientOptions), after the delay the daemon asks for in Retry-After, or a
// growing one when it asks for none; then it fails with ErrBusy.
type Client struct {
	socket string
	hc     *http.Client
	// busyTries is how often a request is sent while the daemon is busy,
	// and busyMaxDelay caps the delay between two tries.
	busyTries    int
	busyMaxDelay time.Duration
}

// ClientOptions shape a Client. The zero value means the defaults.
type ClientOptions struct {
	// BusyTries is how often a request is sent while the daemon answers
	// it 503 busy, the first time included; 0 means 5, and 1 fails with
	// ErrBusy at the first busy answer.
	BusyTries int
	// BusyMaxDelay caps the delay between two tries; 0 means 5 s.
	BusyMaxDelay time.Duration
}

// NewClient returns a client for the daemon listening on socket, with the
// default options. It does not connect until a request is made.
func NewClient(socket string) *Client { return NewClientWith(socket, ClientOptions{}) }

// NewClientWith returns a client for the daemon listening on socket,
// shaped by o. It does not connect until a request is made.
func NewClientWith(socket string, o ClientOptions) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		// Keep a connection per request in flight, up to the daemon's
		// default concurrency, for callers that query concurrently.
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	// No Timeout: requests end with their context, and POST /v1/wait may
	// rightly take up to MaxWait.
	c := &Client{socket: socket, hc: &http.Client{Transport: tr}, busyTries: 5, busyMaxDelay: 5 * time.Second}
	if o.BusyTries > 0 {
		c.busyTries = o.BusyTries
	}
	if o.BusyMaxDelay > 0 {
		c.busyMaxDelay = o.BusyMaxDelay
	}
	return c
}

// Socket returns the socket path the client talks to.
func (c *Client) Socket() string { return c.socket }

// Info returns the daemon's parameters and counts.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var out Info
	if err := c.do(ctx, http.MethodGet, "/v1/info", nil, &out); err != nil {
		return nil, err
	}
	if out.Params.Scheme == "" {
		return nil, fmt.Errorf("%w: %s: /v1/info has no params", ErrNotSif, c.socket)
	}
	return &out, nil
}

// Similar sends a one-against-all query.
func (c *Client) Similar(ctx context.Context, req *SimilarRequest) (*SimilarResponse, error) {
	var out SimilarResponse
	if err := c.do(ctx, http.MethodPost, "/v1/similar", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DirTotals asks for the indexed files and bytes in each directory tree
// of dirs (absolute paths), counting only what the caller may read, at
// most maxFiles per directory (0: the daemon's default). The answer has
// one DirTotal per directory, in order. More than MaxDirTotals directories
// are sent in several requests.
func (c *Client) DirTotals(ctx context.Context, dirs []string, maxFiles int) (*DirTotalsResponse, error) {
	hd := make([]HostDir, len(dirs))
	for i, d := range dirs {
		hd[i] = HostDir{FilePath: NewFilePath(d)}
	}
	return c.FleetDirTotals(ctx, hd, maxFiles)
}

// FleetDirTotals is DirTotals for directories on hosts of the fleet: a
// HostDir with a Host other than this host's is counted from what that
// host published (the fleet database), one with none from this index.
func (c *Client) FleetDirTotals(ctx context.Context, dirs []HostDir, maxFiles int) (*DirTotalsResponse, error) {
	out := &DirTotalsResponse{Dirs: make([]DirTotal, 0, len(dirs))}
	for len(dirs) > 0 {
		n := min(len(dirs), MaxDirTotals)
		req := DirTotalsRequest{Dirs: dirs[:n], MaxFiles: maxFiles}
		var part DirTotalsResponse
		if err := c.do(ctx, http.MethodPost, "/v1/dirs/totals", &req, &part); err != nil {
			return nil, err
		}
		if len(part.Dirs) != n {
			return nil, fmt.Errorf("%w: %s: /v1/dirs/totals answered %d directories of %d", ErrNotSif, c.socket, len(part.Dirs), n)
		}
		out.Dirs = append(out.Dirs, part.Dirs...)
		out.ElapsedNs += part.ElapsedNs
		dirs = dirs[n:]
	}
	return out, nil
}

// GroupsOptions shape Groups; the zero value means the daemon's defaults.
type GroupsOptions struct {
	Threshold float64 // percent; 0 means 25
	MaxDF     int
	AllTypes  bool // link text and binary files too
	Prefix    string
	MinShared int // fingerprints two files must share to be linked; 0 means the daemon's default, DefaultMinShared
	// Links asks for each group's links, with their containments both
	// ways (Group.Links).
	Links bool
	// By BySimiHash asks for groups by SimiHash (of an index with SimiHash
	// keys), which take only Prefix and Tolerances; "" groups by
	// fingerprints.
	By string
	// Tolerances are SimiFind's (By BySimiHash); zero fields mean the
	// defaults.
	Tolerances fingerprint.Tolerances
	// RequestID names the request, so that Client.Work can ask how far it
	// has come while it runs: letters, digits and dashes, at most 64
	// (NewRequestID makes one). "" names none.
	RequestID string
}

// Groups asks for all groups of similar files, and returns them whole.
// GroupsEach takes them one at a time instead.
func (c *Client) Groups(ctx context.Context, o GroupsOptions) (*GroupsResponse, error) {
	out := &GroupsResponse{Groups: []Group{}}
	sum, err := c.GroupsEach(ctx, o, func(g Group) error {
		out.Groups = append(out.Groups, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Threshold, out.ElapsedNs, out.By, out.SimiHash = sum.Threshold, sum.ElapsedNs, sum.By, sum.SimiHash
	return out, nil
}

// GroupsEach asks for all groups of similar files and calls fn with each
// as it arrives, in the daemon's order (largest first), holding one at a
// time: the daemon streams its answer (see GET /v1/groups). It returns the
// rest of the answer, Threshold, By, SimiHash and ElapsedNs, with Groups
// nil. fn is
// called on the caller's goroutine; when it fails, GroupsEach hangs up
// and returns its error. An answer cut short by the daemon (it failed
// after it began to send, or the connection broke) is an error wrapping
// ErrCutShort, after fn has seen the groups that arrived whole.
func (c *Client) GroupsEach(ctx context.Context, o GroupsOptions, fn func(Group) error) (*GroupsResponse, error) {
	v := url.Values{}
	if o.Threshold != 0 {
		v.Set("threshold", strconv.FormatFloat(o.Threshold, 'f', -1, 64))
	}
	if o.MaxDF != 0 {
		v.Set("max_df", strconv.Itoa(o.MaxDF))
	}
	if o.AllTypes {
		v.Set("all_types", "1")
	}
	if o.Prefix != "" {
		v.Set("prefix", o.Prefix)
	}
	if o.MinShared != 0 {
		v.Set("min_shared", strconv.Itoa(o.MinShared))
	}
	if o.Links {
		v.Set("links", "1")
	}
	if o.By != "" {
		v.Set("by", o.By)
	}
	if o.RequestID != "" {
		v.Set("request_id", o.RequestID)
	}
	for name, f := range map[string]float64{"key": o.Tolerances.Key, "size_ratio": o.Tolerances.SizeRatio, "sum": o.Tolerances.Sum} {
		if f != 0 {
			v.Set(name, strconv.FormatFloat(f, 'f', -1, 64))
		}
	}
	var out GroupsResponse
	var fnErr error
	err := c.doStream(ctx, http.MethodGet, "/v1/groups?"+v.Encode(), func(r io.Reader) error {
		return decodeGroups(r, &out, func(g Group) error {
			fnErr = fn(g)
			return fnErr
		})
	})
	switch {
	case fnErr != nil:
		return nil, fnErr
	case err != nil:
		return nil, err
	}
	return &out, nil
}

// ErrCutShort: the daemon's answer ended before it was whole.
var ErrCutShort = errors.New("ipc: the answer was cut short")

// decodeGroups reads a GroupsResponse from r, calling fn with each group
// instead of keeping it, and the other fields into out. Fields it does not
// know are skipped, in any order. A group whose links do not name two of
// its files, or carry a percentage out of 0..100, is an error: fn never
// sees it.
func decodeGroups(r io.Reader, out *GroupsResponse, fn func(Group) error) error {
	each := func(g Group) error {
		for _, l := range g.Links {
			if err := l.check(1 + len(g.Members)); err != nil {
				return fmt.Errorf("groups: group of %s: %w", g.Reference.Path, err)
			}
		}
		return fn(g)
	}
	return decodeStreamed(r, "groups", each, func(key string, dec *json.Decoder) (bool, error) {
		switch key {
		case "threshold":
			return true, dec.Decode(&out.Threshold)
		case "elapsed_ns":
			return true, dec.Decode(&out.ElapsedNs)
		case "by":
			return true, dec.Decode(&out.By)
		case "simihash":
			return true, dec.Decode(&out.SimiHash)
		}
		return false, nil
	})
}

// decodeStreamed reads from r one JSON object whose field list is an
// array, decoding its elements one at a time and calling fn with each
// (an error of fn's is returned as is); every other field is offered to
// field, which decodes the value of a key it knows and reports it, and
// the value of a key it does not know is skipped. Fields come in any
// order.
func decodeStreamed[T any](r io.Reader, list string, fn func(T) error, field func(key string, dec *json.Decoder) (bool, error)) error {
	dec := json.NewDecoder(r)
	delim := func(want json.Delim) error {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if t != want {
			return fmt.Errorf("got %v, want %q", t, want)
		}
		return nil
	}
	if err := delim('{'); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if key == list {
			if err := delim('['); err != nil {
				return fmt.Errorf("%s: %w", list, err)
			}
			for dec.More() {
				var v T
				if err := dec.Decode(&v); err != nil {
					return fmt.Errorf("%s: %w", list, err)
				}
				if err := fn(v); err != nil {
					return err
				}
			}
			if err := delim(']'); err != nil {
				return fmt.Errorf("%s: %w", list, err)
			}
			continue
		}
		known, err := field(key, dec)
		if err == nil && !known {
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return fmt.Errorf("%v: %w", t, err)
		}
	}
	return delim('}')
}

// Dupes asks for the sets of identical files under prefix ("" for all),
// and returns them whole. DupesEach takes them one at a time instead.
func (c *Client) Dupes(ctx context.Context, prefix string) (*DupesResponse, error) {
	out := &DupesResponse{Sets: []DupeSet{}}
	totals, err := c.DupesEach(ctx, prefix, func(s DupeSet) error {
		out.Sets = append(out.Sets, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Totals = totals
	return out, nil
}

// DupesEach asks for the sets of identical files under prefix ("" for
// all) and calls fn with each as it arrives, in the daemon's order
// (largest files first), holding one at a time; it returns the answer's
// totals. An error from fn stops the answer and is returned as is. An
// answer that ends midway returns an error wrapping ErrCutShort, after fn
// has seen the sets that came whole.
func (c *Client) DupesEach(ctx context.Context, prefix string, fn func(DupeSet) error) (DupesTotals, error) {
	return c.DupesWith(ctx, DupesOptions{Prefix: prefix}, fn)
}

// FleetDupesEach is DupesEach asked of the fleet index: the sets of
// identical files across every host of the fleet (each file with its
// Host), those with a file of this host under prefix when prefix is not
// "".
func (c *Client) FleetDupesEach(ctx context.Context, prefix string, fn func(DupeSet) error) (DupesTotals, error) {
	return c.DupesWith(ctx, DupesOptions{Prefix: prefix, Fleet: true}, fn)
}

// DupesOptions select the sets of GET /v1/dupes. The zero value asks for
// all of them.
type DupesOptions struct {
	// Prefix keeps the files under this directory tree; with Fleet, the
	// sets with a file of this host under it.
	Prefix string
	// In keeps the sets with at least one file under this directory
	// tree, with all their files (what is here and also elsewhere). Not
	// with Fleet.
	In string
	// MinSize keeps the sets of files of at least this many bytes (1
	// leaves out empty files).
	MinSize int64
	// Fleet asks the fleet index (FleetDupesEach).
	Fleet bool
}

// DupesWith is DupesEach with the sets chosen by o.
func (c *Client) DupesWith(ctx context.Context, o DupesOptions, fn func(DupeSet) error) (DupesTotals, error) {
	q := url.Values{}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.In != "" {
		q.Set("in", o.In)
	}
	if o.MinSize > 0 {
		q.Set("min_size", strconv.FormatInt(o.MinSize, 10))
	}
	if o.Fleet {
		q.Set("fleet", "1")
	}
	return c.dupesEach(ctx, q, fn)
}

func (c *Client) dupesEach(ctx context.Context, q url.Values, fn func(DupeSet) error) (DupesTotals, error) {
	p := "/v1/dupes"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var totals DupesTotals
	var fnErr error
	err := c.doStream(ctx, http.MethodGet, p, func(r io.Reader) error {
		return decodeDupes(r, &totals, func(s DupeSet) error {
			if err := fn(s); err != nil {
				fnErr = err
				return err
			}
			return nil
		})
	})
	if fnErr != nil {
		return DupesTotals{}, fnErr
	}
	return totals, err
}

// decodeDupes reads a DupesResponse from r, calling fn with each set
// instead of keeping it, and the totals into totals. Fields it does not
// know are skipped, in any order.
func decodeDupes(r io.Reader, totals *DupesTotals, fn func(DupeSet) error) error {
	return decodeStreamed(r, "sets", fn, func(key string, dec *json.Decoder) (bool, error) {
		if key == "totals" {
			return true, dec.Decode(totals)
		}
		return false, nil
	})
}

// Status asks what the daemon is doing.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var out Status
	if err := c.do(ctx, http.MethodGet, "/v1/status", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Work asks how far the request named id (GroupsOptions.RequestID) has
// come. A request the daemon does not know, or no longer runs, is an
// *Error of code CodeNotFound.
func (c *Client) Work(ctx context.Context, id string) (*Work, error) {
	var out Work
	if err := c.do(ctx, http.MethodGet, "/v1/work?id="+url.QueryEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NewRequestID returns a random name for a request (GroupsOptions.RequestID).
func NewRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidRequestID reports whether id may name a request: 1 to 64 letters,
// digits and dashes.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Roots lists the daemon's roots. Daemons that cannot change their roots
// answer with an *Error of code CodeNotFound.
func (c *Client) Roots(ctx context.Context) (*RootsResponse, error) {
	var out RootsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/roots", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddRoot makes the directory at path, which must be absolute, a root: the
// daemon watches and indexes it, and remembers it across restarts. It
// returns the roots after the change.
func (c *Client) AddRoot(ctx context.Context, path string) (*RootsResponse, error) {
	return c.changeRoots(ctx, "add", path)
}

// RemoveRoot stops watching the root at path, which must be absolute; the
// daemon drops its files from the index and forgets it. It returns the
// roots after the change.
func (c *Client) RemoveRoot(ctx context.Context, path string) (*RootsResponse, error) {
	return c.changeRoots(ctx, "remove", path)
}

func (c *Client) changeRoots(ctx context.Context, action, path string) (*RootsResponse, error) {
	p, raw := PathFields(path)
	var out RootsResponse
	if err := c.do(ctx, http.MethodPost, "/v1/roots", &RootsRequest{Action: action, Path: p, PathRaw: raw}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rescan asks for a reconcile of path, an absolute path to a root or a
// directory under one, or of every root when path is "". It returns once
// the directories are queued, not when they have been scanned; Wait for
// that.
func (c *Client) Rescan(ctx context.Context, path string) (*RescanResponse, error) {
	p, raw := PathFields(path)
	var out RescanResponse
	if err := c.do(ctx, http.MethodPost, "/v1/rescan", &RescanRequest{Path: p, PathRaw: raw}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Wait returns once the daemon has applied every change made to the roots
// before the call. timeout bounds the wait on the daemon's side: 0 means
// DefaultWait, and more than MaxWait is cut to MaxWait. When it runs out the
// error is an *Error of code CodeTimeout. Cancelling ctx hangs up, which
// ends the wait in the daemon too.
func (c *Client) Wait(ctx context.Context, timeout time.Duration) (*WaitResponse, error) {
	if timeout < 0 {
		return nil, fmt.Errorf("ipc: wait timeout %s: must not be negative", timeout)
	}
	// The daemon cuts the timeout to MaxWait anyway; cutting it here keeps
	// the rounding up from overflowing. Rounding up keeps a timeout under a
	// millisecond from becoming 0, the default.
	timeout = min(timeout, MaxWait)
	ms := (timeout + time.Millisecond - 1).Milliseconds()
	// The request has no deadline of its own (c.hc has no Timeout, and do
	// sets none), so only ctx and the daemon's timeout end it.
	var out WaitResponse
	if err := c.do(ctx, http.MethodPost, "/v1/wait", &WaitRequest{TimeoutMs: ms}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// NewSimilarRequest builds a query from a sketch. path may be empty.
func NewSimilarRequest(path string, sk *fingerprint.Sketch) *SimilarRequest {
	return &SimilarRequest{QuerySketch: NewQuerySketch(path, sk)}
}

// SketchFile reads and fingerprints the regular file at path with p for
// a query: without the SimiHash sum table and key, which no query
// carries (fingerprint.SketchQuery). It refuses directories and special
// files (fifos, sockets, devices) at once, naming the path and what it
// is: it opens the file without blocking and checks what it is before
// reading. A file that changed while it was read is an error wrapping
// ErrChanged (see SketchFileContext).
func SketchFile(path string, p fingerprint.Params) (*fingerprint.Sketch, error) {
	return SketchFileContext(context.Background(), path, p)
}

// OpenRegular opens path for reading as the queries do: anything but a
// regular file is refused at once (a fifo without blocking), and errors
// name the path. The caller closes the file.
func OpenRegular(path string) (*os.File, error) { return openChecked(path) }

// openChecked opens the regular file at path for a query, without
// blocking, refusing directories and special files with an error naming
// the path and what it is.
func openChecked(path string) (*os.File, error) {
	f, _, err := openStat(path)
	return f, err
}

// openStat is openChecked, returning also what Stat said of the open
// file.
func openStat(path string) (*os.File, os.FileInfo, error) {
	f, err := openQuery(path)
	if err != nil {
		// A socket cannot be opened at all: say what it is.
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() && !st.IsDir() {
			return nil, nil, fmt.Errorf("%s: is %s, not a regular file", path, fileKind(st.Mode()))
		}
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("%s: %w", path, pe.Err)
		}
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	switch m := st.Mode(); {
	case m.IsDir():
		f.Close()
		return nil, nil, fmt.Errorf("%s: is a directory", path)
	case !m.IsRegular():
		f.Close()
		return nil, nil, fmt.Errorf("%s: is %s, not a regular file", path, fileKind(m))
	}
	return f, st, nil
}

// fileKind names the type of a file that is not regular nor a directory.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a fifo (named pipe)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSymlink != 0:
		return "a symlink"
	}
	return "a special file (" + m.Type().String() + ")"
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("ipc: encoding request: %w", err)
		}
		body = b
	}
	return c.send(ctx, method, path, in != nil, body, func(r io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(r, 1<<30))
		if err != nil {
			return fmt.Errorf("ipc: reading response from %s: %w", c.socket, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrNotSif, c.socket, err)
		}
		return nil
	})
}

// doStream sends a request without a body and hands the body of a
// successful answer to read as it arrives. read's errors are taken for
// failures to decode the answer (ErrNotSif), or to receive it whole
// (ErrCutShort): a caller whose read fails for reasons of its own keeps
// its error and tells it apart.
func (c *Client) doStream(ctx context.Context, method, path string, read func(io.Reader) error) error {
	return c.send(ctx, method, path, false, nil, func(r io.Reader) error {
		rr := &bodyReader{r: r}
		err := read(rr)
		switch {
		case err == nil:
			return nil
		case rr.err != nil && ctx.Err() != nil:
			return ctx.Err()
		case rr.err != nil:
			return fmt.Errorf("%w: reading response from %s: %w", ErrCutShort, c.socket, rr.err)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: %s: the answer ended early", ErrCutShort, c.socket)
		}
		return fmt.Errorf("%w: %s: %v", ErrNotSif, c.socket, err)
	})
}

// bodyReader keeps the error of reading a response body, other than its
// end.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// send sends a request, again while the daemon answers busy, and hands
// the body of a successful answer to read; it reads an error answer
// itself.
func (c *Client) send(ctx context.Context, method, path string, hasBody bool, body []byte, read func(io.Reader) error) error {
	start := time.Now()
	delay := 100 * time.Millisecond
	for try := 1; ; try++ {
		status, header, b, err := c.roundTrip(ctx, method, path, hasBody, body, read)
		if errors.Is(err, errDropped) && readOnly(method, path) && try < c.busyTries {
			// The daemon closed the connection before it answered: one
			// of its user's idlest when the user is at its share of
			// connections (or a new one it had to close to make room).
			// A request that only reads is sent again on a new
			// connection, at once the first time.
			if try > 1 && !sleepCtx(ctx, time.Duration(try)*10*time.Millisecond) {
				return ctx.Err()
			}
			continue
		}
		if err != nil {
			return err
		}
		if status/100 == 2 {
			return nil
		}
		var eb errorBody
		if json.Unmarshal(b, &eb) != nil || eb.Error == nil || eb.Error.Code == "" {
			return fmt.Errorf("%w: %s answered %d %s", ErrNotSif, c.socket, status, http.StatusText(status))
		}
		if eb.Error.Code != CodeBusy {
			return eb.Error
		}
		if try >= c.busyTries {
			return fmt.Errorf("%w at %s (still after %d tries in %s): %w",
				ErrBusy, c.socket, try, time.Since(start).Round(time.Millisecond), eb.Error)
		}
		if s, err := strconv.Atoi(header.Get("Retry-After")); err == nil && s >= 0 {
			delay = time.Duration(s) * time.Second
		} else if try > 1 {
			delay *= 2
		}
		if !sleepCtx(ctx, min(delay, c.busyMaxDelay)) {
			return ctx.Err()
		}
	}
}

// sleepCtx waits for d, or until ctx is done; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// readOnly reports whether the request only reads, so that sending it
// again is harmless: a GET, a query with its fingerprints in the body, or
// a wait.
func readOnly(method, path string) bool {
	switch {
	case method == http.MethodGet:
		return true
	case method != http.MethodPost:
		return false
	}
	switch path {
	case "/v1/similar", "/v1/basis", "/v1/dirs/totals", "/v1/wait":
		return true
	}
	return false
}

// errDropped is what a droppedError is: the connection was closed before
// the answer came.
var errDropped = errors.New("ipc: the daemon closed the connection before it answered")

// droppedError is a connection closed under a request (reset, broken
// pipe, or an end before the answer's first byte).
type droppedError struct{ err error }

func (e *droppedError) Error() string   { return e.err.Error() }
func (e *droppedError) Is(t error) bool { return t == errDropped }
func (e *droppedError) Unwrap() error   { return e.err }

// dropped reports whether err, from sending a request, says that the
// connection was closed before an answer came.
func dropped(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || // closed by the transport, seeing the daemon close it
		// net/http's own word for a kept connection the daemon closed
		// before the request went out (an unexported error).
		strings.Contains(err.Error(), "server closed idle connection")
}

// roundTrip sends one request. A successful answer's body goes to read,
// whose error it returns; another answer's body is read whole and
// returned.
func (c *Client) roundTrip(ctx context.Context, method, path string, hasBody bool, body []byte, read func(io.Reader) error) (int, http.Header, []byte, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://sifd"+path, rd)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("ipc: %w", err)
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isNoDaemon(err) {
			return 0, nil, nil, fmt.Errorf("%w at %s", ErrNoDaemon, c.socket)
		}
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			return 0, nil, nil, fmt.Errorf("%w %s", ErrDenied, c.socket)
		}
		if ctx.Err() != nil {
			return 0, nil, nil, ctx.Err()
		}
		if dropped(err) {
			return 0, nil, nil, fmt.Errorf("%w: %s: %w", ErrNotSif, c.socket, &droppedError{err})
		}
		return 0, nil, nil, fmt.Errorf("%w: %s: %v", ErrNotSif, c.socket, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, resp.Header, nil, read(resp.Body)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("ipc: reading response from %s: %w", c.socket, err)
	}
	return resp.StatusCode, resp.Header, b, nil
}

// NotServing reports whether err, from a request to the daemon, says that
// no daemon serves on the socket at the moment, as while one is starting
// or restarting: nothing listens there (no socket file, or one left by a
// daemon that died: ErrNoDaemon), or the daemon answered with CodeUnavailable
// because it is shutting down. Asking again later may succeed. A socket
// the caller may not use (ErrDenied) is not such an error.
func NotServing(err error) bool {
	var e *Error
	return errors.Is(err, ErrNoDaemon) || errors.As(err, &e) && e.Code == CodeUnavailable
}

func isNoDaemon(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist)
}
