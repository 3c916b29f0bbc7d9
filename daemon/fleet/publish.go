package fleet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sif-dev/sif/index"
	"github.com/sif-dev/sif/ipc"
)

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	// Host is this host's name in the fleet.
	Host string
	// Roots are the published roots: files under them are published,
	// others are not (and are removed from the fleet if they were).
	Roots []string
	// Pool reaches the fleet database.
	Pool *pgxpool.Pool
	// Index returns the daemon's index as it is now (it may be swapped
	// for a rebuilt one); the publisher reads its change journal.
	Index func() *index.Index
	// Version is this sif's version, stored with the host.
	Version string
	// Logger receives the publisher's log lines; nil discards them.
	Logger *slog.Logger
	// BatchFiles is how many files one publishing transaction carries;
	// 0 means DefaultBatchFiles.
	BatchFiles int
	// Poll is how often the journal is looked at when nothing wakes the
	// publisher (Kick); 0 means one second.
	Poll time.Duration
	// Heartbeat is how often the host's last_seen is moved on when there
	// is nothing to publish; 0 means one minute.
	Heartbeat time.Duration
}

// MaxBackoff caps the wait between tries after an error: a database back
// from an outage is found within it.
var MaxBackoff = 5 * time.Second

// RoundTimeout bounds one step of publishing (a batch, or one run of file
// ids of a whole comparison): a database that stops answering fails the
// round, which is tried again, rather than hold the publisher forever.
var RoundTimeout = 2 * time.Minute

// SweepEvery is how often a publisher sweeps the contents no file holds
// (Sweep).
var SweepEvery = time.Hour

// DefaultBatchFiles is the number of files one publishing transaction
// carries by default.
const DefaultBatchFiles = 1000

// A Publisher keeps this host's rows of the fleet database equal to the
// published part of the local index. See doc.go, "Publishing".
type Publisher struct {
	cfg  PublisherConfig
	log  *slog.Logger
	kick chan struct{}

	mu sync.Mutex
	st ipc.FleetStatus
	// pendingSince is when the journal was last seen empty and then found
	// not to be: the age of the oldest change not yet published, within a
	// poll.
	pendingSince time.Time
	lastBeat     time.Time
	fleetID      string
	// joined says join succeeded since the last error; only Run's
	// goroutine uses it.
	joined bool
}

// NewPublisher returns a publisher; Run runs it.
func NewPublisher(cfg PublisherConfig) *Publisher {
	if cfg.BatchFiles <= 0 {
		cfg.BatchFiles = DefaultBatchFiles
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{cfg: cfg, log: log, kick: make(chan struct{}, 1)}
	p.st.Host = cfg.Host
	p.st.Publishing = slices.Clone(cfg.Roots)
	return p
}

// Kick wakes the publisher: the index changed.
func (p *Publisher) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Status returns the state of the link now.
func (p *Publisher) Status() ipc.FleetStatus {
	ix := p.cfg.Index()
	n, more, err := ix.JournalLen(1_000_000)
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	if err == nil {
		st.Pending, st.PendingMore = n, more
	}
	if n > 0 && !p.pendingSince.IsZero() {
		st.LagSecs = time.Since(p.pendingSince).Seconds()
	}
	return st
}

// Run publishes until ctx is done. Errors (the database down, refusing
// the credentials, a schema from a newer sif) are logged and kept for the
// status, and the publisher tries again, backing off from 1 s to MaxBackoff (5 s);
// nothing is lost meanwhile: the notes wait in the local index.
func (p *Publisher) Run(ctx context.Context) {
	backoff := time.Second
	lastSweep := time.Now()
	for ctx.Err() == nil {
		if p.joined && time.Since(lastSweep) >= SweepEvery {
			// Contents a failed drop or a forgotten host left unheld.
			lastSweep = time.Now()
			if n, err := Sweep(ctx, p.cfg.Pool); err != nil {
				p.log.Debug("fleet: sweeping unheld contents failed; trying again later", "err", err)
			} else if n > 0 {
				p.log.Info("fleet: unheld contents dropped", "contents", n)
			}
		}
		busy, err := p.round(ctx)
		if err != nil && ctx.Err() == nil {
			p.failed(err)
			if !sleep(ctx, backoff, nil) {
				return
			}
			backoff = min(2*backoff, MaxBackoff)
			continue
		}
		backoff = time.Second
		if !busy && !sleep(ctx, p.cfg.Poll, p.kick) {
			return
		}
	}
}

func sleep(ctx context.Context, d time.Duration, kick <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-kick:
	}
	return true
}

func (p *Publisher) failed(err error) {
	p.joined = false // the database may have been replaced: join it again
	p.mu.Lock()
	was := p.st.LastError
	p.st.Connected = false
	p.st.LastError = err.Error()
	p.st.ErrorAt = time.Now()
	p.mu.Unlock()
	if was != err.Error() {
		p.log.Warn("fleet: publishing failed; trying again", "err", err)
	}
}

// mark is the journal mark the publisher keeps in the local index: the
// fleet database, host, roots and batch number its rows there stand at.
type mark struct {
	Fleet string   `json:"fleet"`
	Host  string   `json:"host"`
	Gen   int64    `json:"gen"`
	Roots [][]byte `json:"roots"` // raw bytes: roots need not be UTF-8
	// SimiHash is set when the index keeps SimiHash keys: a mark written
	// without it (by a sif whose fleet held no keys) makes the publisher
	// compare its rows again, and send the files whose contents the fleet
	// holds without their keys (diffRange).
	SimiHash bool `json:"simihash,omitempty"`
}

func (m *mark) encode() []byte {
	b, _ := json.Marshal(m)
	return b
}

func (p *Publisher) markFor(fleetID string, gen int64) *mark {
	m := &mark{Fleet: fleetID, Host: p.cfg.Host, Gen: gen, SimiHash: p.cfg.Index().SimiHash()}
	for _, r := range p.cfg.Roots {
		m.Roots = append(m.Roots, []byte(r))
	}
	return m
}

// HostID is the id of host name in the fleet tables: the first 8 bytes of
// its SHA-256, big-endian, as a signed 64-bit number.
func HostID(name string) int64 {
	h := sha256.Sum256([]byte(name))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// ContentID is the id of the content of strong hash strong in the fleet
// tables: its first 8 bytes, big-endian, as a signed 64-bit number.
func ContentID(strong [32]byte) int64 { return int64(binary.BigEndian.Uint64(strong[:8])) }

// round does one step of publishing: join the fleet if need be, then
// compare the whole index with the fleet's rows (when the mark does not
// match the database) or publish one batch of notes, and beat the heart.
// busy says there may be more to do at once.
func (p *Publisher) round(parent context.Context) (busy bool, err error) {
	ctx, cancel := context.WithTimeout(parent, RoundTimeout)
	defer cancel()
	ix := p.cfg.Index()
	if !p.joined {
		if err := p.join(ctx); err != nil {
			return false, err
		}
		p.joined = true
	}
	gen, err := p.hostGen(ctx)
	if err != nil {
		return false, err
	}
	raw, err := ix.JournalMark()
	if err != nil {
		return false, err
	}
	want := p.markFor(p.fleetID, gen).encode()
	if !bytes.Equal(raw, want) {
		if err := p.resync(parent, ix, gen, raw); err != nil {
			return false, err
		}
		return true, nil
	}
	es, err := ix.Journal(0, p.cfg.BatchFiles, nil)
	if err != nil {
		return false, err
	}
	if len(es) == 0 {
		p.mu.Lock()
		p.pendingSince = time.Time{}
		beat := time.Since(p.lastBeat) >= p.cfg.Heartbeat
		p.mu.Unlock()
		if beat {
			return false, p.heartbeat(ctx)
		}
		return false, nil
	}
	p.mu.Lock()
	if p.pendingSince.IsZero() {
		p.pendingSince = time.Now()
	}
	p.mu.Unlock()
	v, err := ix.View()
	if err != nil {
		return false, err
	}
	defer v.Close()
	var b batch
	for _, e := range es {
		rec, found, err := v.File(e.ID)
		if err != nil {
			return false, err
		}
		if found && p.published(rec.Path) {
			b.set = append(b.set, rec)
		} else {
			b.del = append(b.del, int64(e.ID))
		}
	}
	if err := p.apply(ctx, v, gen, &b); err != nil {
		return false, err
	}
	if err := ix.JournalDone(es, p.markFor(p.fleetID, gen+1).encode()); err != nil {
		return false, err
	}
	p.published1(len(es))
	return len(es) == p.cfg.BatchFiles, nil
}

// published reports whether path is under a published root.
func (p *Publisher) published(path string) bool { return inRoots(path, p.cfg.Roots) }

func (p *Publisher) published1(n int) {
	p.mu.Lock()
	p.st.Connected = true
	p.st.LastError = ""
	p.st.Published += int64(n)
	p.st.LastPublished = time.Now()
	p.lastBeat = time.Now()
	p.mu.Unlock()
}

// join makes sure the schema is there and current, the fleet's parameters
// are this index's, and this host has its row.
func (p *Publisher) join(ctx context.Context) error {
	fleetID, err := Migrate(ctx, p.cfg.Pool)
	if err != nil {
		return err
	}
	params, err := json.Marshal(p.cfg.Index().Params())
	if err != nil {
		return err
	}
	if err := SetParams(ctx, p.cfg.Pool, string(params)); err != nil {
		return err
	}
	roots := make([][]byte, 0, len(p.cfg.Roots))
	for _, r := range p.cfg.Roots {
		roots = append(roots, []byte(r))
	}
	_, err = p.cfg.Pool.Exec(ctx, `
		INSERT INTO sif_hosts (host_id, name, roots, version, last_seen) VALUES ($1, $2, $3, $4, now())
		ON CONFLICT (host_id) DO UPDATE SET roots = excluded.roots, version = excluded.version, last_seen = now()`,
		HostID(p.cfg.Host), p.cfg.Host, roots, p.cfg.Version)
	if err != nil {
		return fmt.Errorf("fleet: joining as host %q: %w", p.cfg.Host, err)
	}
	p.mu.Lock()
	p.fleetID = fleetID
	p.st.Connected = true
	p.st.LastError = ""
	p.lastBeat = time.Now()
	p.mu.Unlock()
	return nil
}

func (p *Publisher) hostGen(ctx context.Context) (int64, error) {
	var gen int64
	err := p.cfg.Pool.QueryRow(ctx, `SELECT gen FROM sif_hosts WHERE host_id = $1`, HostID(p.cfg.Host)).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("fleet: reading host %q: %w", p.cfg.Host, err)
	}
	return gen, nil
}

func (p *Publisher) heartbeat(ctx context.Context) error {
	_, err := p.cfg.Pool.Exec(ctx, `UPDATE sif_hosts SET last_seen = now() WHERE host_id = $1`, HostID(p.cfg.Host))
	if err != nil {
		return fmt.Errorf("fleet: heartbeat: %w", err)
	}
	p.mu.Lock()
	p.lastBeat = time.Now()
	p.st.Connected = true
	p.st.LastError = ""
	p.mu.Unlock()
	return nil
}

// resync compares the fleet's rows for this host with the whole index, in
// runs of file ids, and publishes what differs; then sets the mark. The
// journal's notes are kept: a change made during the comparison is
// published again after it, which is harmless.
func (p *Publisher) resync(ctx context.Context, ix *index.Index, gen int64, had []byte) error {
	p.log.Info("fleet: comparing this host's fleet rows with the index", "host", p.cfg.Host, "mark", string(had))
	p.setResyncing(true)
	defer p.setResyncing(false)
	start := time.Now()
	var sent, compared int
	after := uint32(0)
	for {
		if err := p.resyncStep(ctx, ix, &gen, &after, &compared, &sent); err != nil {
			return err
		}
		if after == ^uint32(0) {
			break
		}
	}
	if err := ix.JournalDone(nil, p.markFor(p.fleetID, gen).encode()); err != nil {
		return err
	}
	p.log.Info("fleet: host rows compared", "host", p.cfg.Host, "files", compared, "published", sent, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// resyncStep compares one run of file ids after *after, moving *after on
// (to ^0 after the last run) and *gen with each batch sent.
func (p *Publisher) resyncStep(parent context.Context, ix *index.Index, gen *int64, after *uint32, compared, sent *int) error {
	ctx, cancel := context.WithTimeout(parent, RoundTimeout)
	defer cancel()
	// The notes of the files this run compares, taken before its view:
	// the comparison publishes what they noted, so they are removed with
	// it, and the journal is not sent again after a first publication. A
	// change made after this keeps its note (a new sequence number); notes
	// past the run are left.
	notes, err := ix.Journal(*after, 2*p.cfg.BatchFiles, nil)
	if err != nil {
		return err
	}
	v, err := ix.View()
	if err != nil {
		return err
	}
	defer v.Close()
	var local []index.FileRecord
	last, more, err := v.FilesAfter(*after, p.cfg.BatchFiles, func(rec index.FileRecord) error {
		if p.published(rec.Path) {
			local = append(local, rec)
		}
		return nil
	})
	if err != nil {
		return err
	}
	hi := int64(last)
	if !more {
		hi = 1 << 32
	}
	b, err := diffRange(ctx, p.cfg.Pool, HostID(p.cfg.Host), int64(*after), hi, local, ix.SimiHash())
	if err != nil {
		return err
	}
	if len(b.set) > 0 || len(b.del) > 0 {
		if err := p.apply(ctx, v, *gen, &b); err != nil {
			return err
		}
		*gen++
	}
	for len(notes) > 0 && int64(notes[len(notes)-1].ID) > hi {
		notes = notes[:len(notes)-1]
	}
	if len(notes) > 0 {
		if err := ix.JournalDone(notes, nil); err != nil {
			return err
		}
	}
	*compared += len(local)
	*sent += len(b.set) + len(b.del)
	p.published1(len(b.set) + len(b.del))
	*after = last
	if !more {
		*after = ^uint32(0)
	}
	return nil
}

func (p *Publisher) setResyncing(on bool) {
	p.mu.Lock()
	p.st.Resyncing = on
	p.mu.Unlock()
}

// batch is one publishing transaction: files to set (as they are in the
// index) and file ids to remove.
type batch struct {
	set []index.FileRecord
	del []int64
}

// errGenMoved: the host's batch number in the database is not the one the
// publisher expected (another publisher under this host's name, or a
// restored database): compare everything again.
var errGenMoved = errors.New("fleet: this host's rows changed under the publisher (another sifd with the same host name?)")

// apply publishes b in one transaction, taking the host's batch number
// from gen to gen+1, and then drops the contents no file holds any more.
func (p *Publisher) apply(ctx context.Context, v *index.View, gen int64, b *batch) error {
	var orphans []int64
	var err error
	for try := 0; ; try++ {
		orphans, err = p.applyOnce(ctx, v, gen, b)
		if err == nil || try == 3 || !retryable(err) {
			break
		}
	}
	if err != nil {
		return err
	}
	if len(orphans) > 0 {
		if _, err := dropContents(ctx, p.cfg.Pool, orphans); err != nil {
			p.log.Debug("fleet: dropping unheld contents failed; the next sweep will", "err", err)
		}
	}
	return nil
}

func (p *Publisher) applyOnce(ctx context.Context, v *index.View, gen int64, b *batch) (orphans []int64, err error) {
	// The contents the fleet lacks go first, in a transaction of their
	// own: hosts adding one content at once wait for each other only
	// while its row and postings go in, not for the whole of a batch.
	// A content in and its files not (a failure in between) is held by
	// no file, as a dropped file's content may be: the batch sent again
	// finds it, and a sweep drops it if it is never sent again. A content
	// dropped between the two by another host's drop fails the batch on
	// its foreign key, and the batch is tried again (retryable).
	if err := p.putContentsTx(ctx, v, b.set); err != nil {
		return nil, err
	}
	tx, err := p.cfg.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	host := HostID(p.cfg.Host)
	var dbGen int64
	if err := tx.QueryRow(ctx, `SELECT gen FROM sif_hosts WHERE host_id = $1 FOR UPDATE`, host).Scan(&dbGen); err != nil {
		return nil, fmt.Errorf("fleet: reading host %q: %w", p.cfg.Host, err)
	}
	if dbGen != gen {
		return nil, errGenMoved
	}
	ids := make([]int64, 0, len(b.set)+len(b.del))
	for i := range b.set {
		ids = append(ids, int64(b.set[i].ID))
	}
	ids = append(ids, b.del...)
	// The contents the changed files held: some may be held by no file
	// once this batch is in.
	rows, err := tx.Query(ctx, `SELECT DISTINCT content_id FROM sif_files WHERE host_id = $1 AND file_id = ANY($2) AND content_id IS NOT NULL`, host, ids)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	orphans, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if len(b.del) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM sif_files WHERE host_id = $1 AND file_id = ANY($2)`, host, b.del); err != nil {
			return nil, fmt.Errorf("fleet: removing files: %w", err)
		}
	}
	if len(b.set) > 0 {
		n := len(b.set)
		fid, size, mtime := make([]int64, n), make([]int64, n), make([]int64, n)
		paths := make([][]byte, n)
		content := make([]*int64, n)
		for i := range b.set {
			rec := &b.set[i]
			fid[i], size[i], mtime[i], paths[i] = int64(rec.ID), rec.FileMeta.Size, rec.MtimeNs, []byte(rec.Path)
			if rec.Strong != ([32]byte{}) {
				c := ContentID(rec.Strong)
				content[i] = &c
			}
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO sif_files (host_id, file_id, path, size, mtime, content_id)
			SELECT $1, f, p, s, m, c FROM unnest($2::bigint[], $3::bytea[], $4::bigint[], $5::bigint[], $6::bigint[]) AS u(f, p, s, m, c)
			ON CONFLICT (host_id, file_id) DO UPDATE SET path = excluded.path, size = excluded.size,
				mtime = excluded.mtime, content_id = excluded.content_id`,
			host, fid, paths, size, mtime, content)
		if err != nil {
			return nil, fmt.Errorf("fleet: publishing files: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE sif_hosts SET gen = gen + 1, last_seen = now() WHERE host_id = $1`, host); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("fleet: committing a batch: %w", err)
	}
	return orphans, nil
}
