-- The log concurrent ingests check each other by (issue 64; the races themselves are in
-- tests/isolation/specs/ingest_concurrent.spec). What one session can show: each ingest leaves
-- one row per leaf table it inserted into, with the fingerprints it inserted; the ways that
-- hold the lock from the start (row by row, SERIALIZABLE) leave them too, serialize => false
-- does not; a row goes once no running ingest can need it; and the policies: a role reads only
-- rows of tables it may read, adds rows of its own transaction only, deletes only rows no
-- running ingest needs, and updates none.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

CREATE TABLE il_docs (id int, fp simhash64);
INSERT INTO il_docs SELECT g, (g::int8 * 7919 * 1000003)::simhash64 FROM generate_series(1, 200) g;
SELECT simhash_create_index('il_docs', 'fp', max_k => 3);
CREATE TABLE il_batch (id int, fp simhash64);
-- Two new rows, one copy of row 5, one row without a fingerprint.
INSERT INTO il_batch VALUES (1001, 'aaaaaaaaaaaaaaaa'), (1002, '5555555555555555'),
                            (1003, (5::int8 * 7919 * 1000003)::simhash64), (1004, NULL);

BEGIN;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch');
-- This transaction's row: the two new fingerprints, for the leaf, with its path.
SELECT leaf::regclass, path::regclass[], fps, xid = pg_current_xact_id() AS own
  FROM _simhash_ingest_log WHERE leaf = 'il_docs'::regclass;
COMMIT;
SELECT count(*) AS log_rows FROM _simhash_ingest_log WHERE leaf = 'il_docs'::regclass;
-- It stays until the next ingest into the table, which removes it (no running ingest can
-- need it) and leaves its own.
DELETE FROM il_docs WHERE id > 1000;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch');
SELECT count(*) AS log_rows, min(cardinality(fps)) AS fps FROM _simhash_ingest_log WHERE leaf = 'il_docs'::regclass;
-- A running ingest's key, read back from pg_locks: the horizon, rows before it can go.
BEGIN;
SELECT pg_advisory_xact_lock_shared(_simhash_ingest_key('3'::xid8));
SELECT _simhash_ingest_horizon() AS horizon;
ROLLBACK;
SELECT _simhash_ingest_horizon() = pg_snapshot_xmin(pg_current_snapshot()) AS none_held;

-- serialize => false leaves nothing; SERIALIZABLE and the row-by-row way leave their rows.
DELETE FROM il_docs WHERE id > 1000;
BEGIN;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch', 3, false);
SELECT count(*) AS own_log_rows FROM _simhash_ingest_log WHERE xid = pg_current_xact_id();
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch');
SELECT fps FROM _simhash_ingest_log WHERE xid = pg_current_xact_id();
ROLLBACK;
CREATE FUNCTION il_keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER il_keep BEFORE INSERT ON il_docs FOR EACH ROW EXECUTE FUNCTION il_keep();
BEGIN;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch');
SELECT fps FROM _simhash_ingest_log WHERE xid = pg_current_xact_id();
ROLLBACK;
DROP TRIGGER il_keep ON il_docs;

-- Row-level security on the target: its fingerprints stay out of the log (every ingest into
-- it holds the lock from its start).
ALTER TABLE il_docs ENABLE ROW LEVEL SECURITY;
BEGIN;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch');
SELECT count(*) AS own_log_rows FROM _simhash_ingest_log WHERE xid = pg_current_xact_id();
ROLLBACK;
ALTER TABLE il_docs DISABLE ROW LEVEL SECURITY;

-- A partitioned target: one row per partition inserted into, its path up to the root; a set
-- column's elements, flattened.
CREATE TABLE il_parted (id int, fps simhash64[]) PARTITION BY RANGE (id);
CREATE TABLE il_parted_lo PARTITION OF il_parted FOR VALUES FROM (0) TO (1002);
CREATE TABLE il_parted_hi PARTITION OF il_parted FOR VALUES FROM (1002) TO (2000);
CREATE TABLE il_set_batch (id int, fps simhash64[]);
INSERT INTO il_set_batch SELECT id, ARRAY[fp, NULL] FROM il_batch;
BEGIN;
SELECT * FROM simhash_ingest('il_parted', 'fps', 'il_set_batch');
SELECT leaf::regclass, path::regclass[], fps FROM _simhash_ingest_log WHERE xid = pg_current_xact_id() ORDER BY leaf::regclass::text;
ROLLBACK;

-- The policies, and what PUBLIC is granted (no UPDATE, nothing else).
SELECT c.relrowsecurity, (SELECT array_agg(a.privilege_type ORDER BY a.privilege_type) FROM aclexplode(c.relacl) a WHERE a.grantee = 0) AS public_may
  FROM pg_class c WHERE c.oid = '_simhash_ingest_log'::regclass;
SELECT p.polname, p.polcmd, pg_get_expr(p.polqual, p.polrelid) AS using, pg_get_expr(p.polwithcheck, p.polrelid) AS with_check
  FROM pg_policy p WHERE p.polrelid = '_simhash_ingest_log'::regclass ORDER BY p.polname;
-- A writer of il_docs reads the rows of il_docs; another role sees none of them.
CREATE ROLE simhash_il_writer;
CREATE ROLE simhash_il_other;
GRANT SELECT, INSERT, DELETE ON il_docs TO simhash_il_writer;
GRANT SELECT ON il_batch TO simhash_il_writer;
DELETE FROM il_docs WHERE id > 1000;
SET ROLE simhash_il_writer;
BEGIN;
SELECT * FROM simhash_ingest('il_docs', 'fp', 'il_batch');
SELECT count(*) AS rows_the_writer_reads FROM _simhash_ingest_log;
SAVEPOINT s;
SET ROLE simhash_il_other;
SELECT count(*) AS rows_another_role_reads FROM _simhash_ingest_log;
ROLLBACK TO s;
COMMIT;
-- Rows of another transaction, or of a table one may not insert into: refused.
SELECT try_sql($$INSERT INTO _simhash_ingest_log (leaf, path, fps) VALUES ('il_batch'::regclass, ARRAY['il_batch'::regclass::oid], '{}')$$);
SELECT try_sql($$INSERT INTO _simhash_ingest_log (xid, leaf, path, fps) VALUES ('3', 'il_docs'::regclass, ARRAY['il_docs'::regclass::oid], '{}')$$);
-- No updates at all.
SELECT try_sql($$UPDATE _simhash_ingest_log SET fps = '{}'$$);
-- Deleting what a running ingest may need deletes nothing.
BEGIN;
SELECT pg_advisory_xact_lock_shared(_simhash_ingest_key('3'::xid8));
WITH d AS (DELETE FROM _simhash_ingest_log RETURNING 1) SELECT count(*) AS deleted FROM d;
ROLLBACK;
SELECT count(*) AS rows_left FROM _simhash_ingest_log;
RESET ROLE;

DROP TABLE il_docs, il_batch, il_parted, il_set_batch;
DROP FUNCTION il_keep();
DROP ROLE simhash_il_writer;
DROP ROLE simhash_il_other;
