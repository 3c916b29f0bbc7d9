-- sif's fleet postings over several PostgreSQL servers (15 or later).
--
-- sif_postings, a row per (fingerprint key, content) and by far the fleet's
-- largest table, is hash-partitioned on key, one partition per shard
-- server, reached from the coordinator (the database sifd connects to)
-- through postgres_fdw. The other tables stay on the coordinator, which
-- sifd creates on its first start as usual. Run this file with psql before
-- the first sifd joins: first on each shard, then on the coordinator.
--
-- On shard N (0, 1, ...), as the role the coordinator will sign in as
-- (shard_user below), in the shard's database:
--
--   psql -X -v shard=0 -f partitioned-postings.sql 'postgres://sif@shard0.example.org/sif'
--
-- On the coordinator, as a superuser (postgres_fdw needs one to be
-- installed), in the fleet database:
--
--   psql -X -v shards='host=shard0.example.org dbname=sif sslmode=verify-full, host=shard1.example.org dbname=sif sslmode=verify-full' \
--        -v shard_user=sif -v fleet_user=sif -f partitioned-postings.sql 'postgres://postgres@db.example.org/sif'
--
-- The placeholders, all psql variables (-v name=value):
--   shard          on a shard: its number, from 0.
--   shards         on the coordinator: each shard's connection options,
--                  libpq keywords (host, port, dbname, sslmode, ...; values
--                  without spaces), shards separated by commas, shard 0
--                  first. One partition per shard: the count is fixed
--                  here (moving to more shards means a new table).
--   shard_user     the role the coordinator signs in as on every shard.
--   shard_password its password; asked for when not given (better than -v,
--                  which other users may see in the process list).
--   fleet_user     the role sifd connects to the coordinator as: it is
--                  given sif_postings and the mapping to the shards.
--                  Default: the role running this file.
--
-- sif itself needs no extension: only this layout does.

\set ON_ERROR_STOP on

\if :{?shard}

-- A shard: one partition, with the primary key that makes the lookup of a
-- key an index range scan.
CREATE TABLE sif_postings_:shard (
	key integer NOT NULL,
	content_id bigint NOT NULL,
	weight integer NOT NULL,
	PRIMARY KEY (key, content_id)
);

\elif :{?shards}

\if :{?shard_user}
\else
DO $$ BEGIN RAISE EXCEPTION 'partitioned-postings.sql: set shard_user (-v shard_user=ROLE), the role the coordinator signs in as on the shards'; END $$;
\endif
\if :{?shard_password}
\else
\prompt 'password of the shards'' role: ' shard_password
\endif
\if :{?fleet_user}
\else
SELECT current_user AS fleet_user \gset
\endif

BEGIN;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;

-- The shards, numbered from 0 in the order given.
CREATE TEMP TABLE sif_shards ON COMMIT DROP AS
	SELECT n - 1 AS i, trim(conn) AS conn
	FROM regexp_split_to_table(:'shards', ',') WITH ORDINALITY AS s(conn, n)
	WHERE trim(conn) <> '';

-- A server per shard. batch_size makes an INSERT send its rows a thousand
-- at a time rather than one per round trip; fetch_size reads a thousand
-- rows per round trip; async_capable lets a query read every shard at
-- once.
SELECT format('CREATE SERVER sif_shard_%s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (%s, batch_size %L, fetch_size %L, async_capable %L)',
		i,
		(SELECT string_agg(format('%I %L', m[1], m[2]), ', ') FROM regexp_matches(conn, '(\w+)=(\S+)', 'g') AS m),
		'1000', '1000', 'true')
	FROM sif_shards ORDER BY i \gexec
SELECT format('CREATE USER MAPPING FOR %I SERVER sif_shard_%s OPTIONS (user %L, password %L)',
		:'fleet_user', i, :'shard_user', :'shard_password')
	FROM sif_shards ORDER BY i \gexec

-- The postings, each partition a table on its shard. A partitioned table
-- whose partitions are foreign tables has no primary key: sif inserts a
-- content's postings only with its sif_contents row, so they are never
-- inserted twice.
CREATE TABLE sif_postings (
	key integer NOT NULL,
	content_id bigint NOT NULL,
	weight integer NOT NULL
) PARTITION BY HASH (key);
SELECT format('CREATE FOREIGN TABLE sif_postings_%s PARTITION OF sif_postings FOR VALUES WITH (MODULUS %s, REMAINDER %s) SERVER sif_shard_%s OPTIONS (table_name %L)',
		i, (SELECT count(*) FROM sif_shards), i, i, 'sif_postings_' || i)
	FROM sif_shards ORDER BY i \gexec
ALTER TABLE sif_postings OWNER TO :"fleet_user";
SELECT format('ALTER FOREIGN TABLE sif_postings_%s OWNER TO %I', i, :'fleet_user') FROM sif_shards ORDER BY i \gexec

-- Lets a query's GROUP BY key run on each shard (one round trip per shard)
-- instead of bringing every posting to the coordinator.
SELECT format('ALTER DATABASE %I SET enable_partitionwise_aggregate = on', current_database()) \gexec
COMMIT;

\else
DO $$ BEGIN RAISE EXCEPTION 'partitioned-postings.sql: set shard (-v shard=N) on a shard, or shards (-v shards=...) on the coordinator; see the file''s head'; END $$;
\endif
