package main

// The fleet benchmark's multi-node database (--multinode): three
// PostgreSQL servers set up as packaging/fleet/partitioned-postings.sql
// says, a coordinator holding sif's tables and two shards holding
// sif_postings' partitions.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sif-dev/sif/daemon/fleet/pgserver"
)

// partitionedSQL is the operator's setup of the postings over shard
// servers, relative to the repository root, where sifbench runs.
var partitionedSQL = filepath.Join("packaging", "fleet", "partitioned-postings.sql")

// fleetShards is the number of shard servers of the multi-node setup.
const fleetShards = 2

// The multi-node setup's shared buffers: fleetSettings' 512 MB over the
// three servers of this one machine, by what each holds. The postings
// are four fifths of the database's bytes (RESULTS.md, "A fleet") and
// are split over the shards; the coordinator's tables are the rest. Each
// server then caches about the same share of what it holds.
const (
	coordinatorSharedBuffers = "128MB"
	shardSharedBuffers       = "192MB"
)

// multiPG is the multi-node setup: the coordinator, which the fleet
// connects to, and the shards, each a PostgreSQL server of this process's
// own in a temporary directory.
type multiPG struct {
	coord  *pgserver.Server
	shards []*pgserver.Server
}

// startMultinode starts the shards, then the coordinator, and applies
// partitionedSQL to each with psql, as an operator would: sif_postings on
// the coordinator is then a partitioned table, each partition a
// postgres_fdw foreign table on a shard, before any host migrates. The
// hosts sign in to the coordinator as its superuser, as they do to the
// one server; the coordinator signs in to the shards as theirs, whose
// password is the same on both (the SQL takes one).
func startMultinode() (_ fleetDatabase, err error) {
	if _, err := os.Stat(partitionedSQL); err != nil {
		return nil, fmt.Errorf("--multinode: %w (run sifbench from the repository root)", err)
	}
	m := &multiPG{}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	shardPW := rand.Text()
	var conns []string
	for i := range fleetShards {
		s, err := startFleetServer(shardSharedBuffers, shardPW)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		m.shards = append(m.shards, s)
		if err := runPartitionedSQL(s, "shard="+strconv.Itoa(i)); err != nil {
			return nil, err
		}
		conns = append(conns, fmt.Sprintf("host=%s port=%d dbname=postgres", s.Dir(), s.Port()))
	}
	if m.coord, err = startFleetServer(coordinatorSharedBuffers, ""); err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if err := runPartitionedSQL(m.coord, "shards="+strings.Join(conns, ", "),
		"shard_user="+m.shards[0].User(), "shard_password="+shardPW, "fleet_user="+m.coord.User()); err != nil {
		return nil, err
	}
	return m, nil
}

// startFleetServer starts one server of the multi-node setup: the one
// server's settings, with sharedBuffers; password "" means a random one.
func startFleetServer(sharedBuffers, password string) (*pgserver.Server, error) {
	settings := maps.Clone(fleetSettings)
	settings["shared_buffers"] = sharedBuffers
	return pgserver.Start(&pgserver.Options{MaxConnections: 200, Password: password, Settings: settings})
}

// runPartitionedSQL runs partitionedSQL with psql as srv's superuser in
// its database postgres, with the psql variables vars (name=value).
func runPartitionedSQL(srv *pgserver.Server, vars ...string) error {
	args := []string{"-X", "-q", "-f", partitionedSQL}
	for _, v := range vars {
		args = append(args, "-v", v)
	}
	cmd := exec.Command(filepath.Join(srv.Bin(), "psql"), append(args, srv.URL("postgres"))...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("psql -f %s -v %s on %s: %v\n%s", partitionedSQL, strings.SplitN(vars[0], "=", 2)[0], srv.Dir(), err, out)
	}
	return nil
}

func (m *multiPG) URL() string { return m.coord.URL("postgres") }

func (m *multiPG) Nodes() []string {
	urls := []string{m.coord.URL("postgres")}
	for _, s := range m.shards {
		urls = append(urls, s.URL("postgres"))
	}
	return urls
}

// Stop stops every server, the coordinator first, so that no host sees a
// coordinator whose shards are gone: the outage is the whole database's,
// as the one server's is. (A shard alone down while the coordinator
// answers is daemon/fleet's TestMultinodePublish.)
func (m *multiPG) Stop() error {
	err := m.coord.Stop()
	for _, s := range m.shards {
		err = errors.Join(err, s.Stop())
	}
	return err
}

// Start starts every server, the shards first, so that the coordinator
// reaches them from its first statement.
func (m *multiPG) Start() error {
	for i, s := range m.shards {
		if err := s.Start(); err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return m.coord.Start()
}

func (m *multiPG) Close() error {
	var err error
	if m.coord != nil {
		err = m.coord.Close()
	}
	for _, s := range m.shards {
		err = errors.Join(err, s.Close())
	}
	return err
}

func (m *multiPG) Describe() string {
	others := maps.Clone(fleetSettings)
	delete(others, "shared_buffers")
	return fmt.Sprintf("%d PostgreSQL %s servers on Unix sockets, set up by %s: a coordinator holding sif's tables (shared_buffers=%s), "+
		"sif_postings hash-partitioned on key over %d shard servers through postgres_fdw (shared_buffers=%s each); "+
		"an outage stops them all; each server: %s",
		1+fleetShards, filepath.Base(filepath.Dir(m.coord.Bin())), filepath.ToSlash(partitionedSQL), coordinatorSharedBuffers,
		fleetShards, shardSharedBuffers, settingsText(others))
}
