-- The probe reads covering block indexes leaf page by leaf page (src/leaf_scan.rs), so here
-- the shape of the B-tree matters: one block value's entries over many leaf pages, pages
-- split by inserts and emptied by deletes, NULL fingerprints after the last value, an empty
-- index, an index it must not read (DESC), and the scan statistics. Every answer is compared
-- with brute force.
SET client_min_messages = warning;
CREATE SCHEMA leaf;
SET search_path = leaf, public;

-- Rows in three crowds: in each, block 0 (the top 16 bits) and block 3 (the low 16) are the
-- crowd's, blocks 1 and 2 are random. 4,000 rows share each block 0 and block 3 value, about
-- 15 leaf pages of entries per value. The third crowd's blocks are 65535, the largest value,
-- next to the NULLs at the end of each index.
CREATE FUNCTION crowd_fp(crowd int, seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE AS $$
    SELECT ((CASE crowd WHEN 0 THEN x'1234' WHEN 1 THEN x'8001' ELSE x'ffff' END)::bit(16)::int8 << 48
            | ((('x' || md5(seed))::bit(32)::int8) << 16)
            | (CASE crowd WHEN 0 THEN x'00ff' WHEN 1 THEN x'7ffe' ELSE x'ffff' END)::bit(16)::int8)::simhash64
$$;
CREATE TABLE crowd (id int8 PRIMARY KEY, fp simhash64);
-- The index first, then the rows: leaf pages filled by inserts and split as they go.
SELECT simhash_create_index('crowd', 'fp', permuted => false);
INSERT INTO crowd SELECT g, crowd_fp(g % 3, 'r' || g) FROM generate_series(1, 12000) g;
INSERT INTO crowd SELECT 20000 + g, NULL FROM generate_series(1, 300) g;
ANALYZE crowd;
SELECT column_name, covering FROM simhash_block_columns('crowd') ORDER BY block;

-- Queries: rows of each crowd with 0..7 of their random bits flipped, and their crowd's
-- pattern with middle bits no row has.
CREATE TABLE probes (qid int4 PRIMARY KEY, fp simhash64 NOT NULL);
INSERT INTO probes
SELECT q, ((c.fp::int8) # (((1::int8 << (q % 8)) - 1) << 20))::simhash64
  FROM generate_series(1, 60) q JOIN crowd c ON c.id = q * 97;
INSERT INTO probes SELECT 100 + c, crowd_fp(c, 'nobody') FROM generate_series(0, 2) c;

-- Every query at every k through the index equals brute force; and it is the index plan.
CREATE FUNCTION leaf_mismatches(k int4) RETURNS TABLE (queries int8, rows_found int8, mismatches int8)
LANGUAGE plpgsql AS $$
DECLARE
    q record;
    got int8[];
    want int8[];
    n int8 := 0;
    found int8 := 0;
    bad int8 := 0;
BEGIN
    FOR q IN SELECT * FROM probes ORDER BY qid LOOP
        EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM crowd WHERE simhash_near(fp, %L::simhash64, %s)', q.fp, k)
            INTO got;
        SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO want FROM crowd WHERE hamming_distance(fp, q.fp) + 0 <= k;
        n := n + 1;
        found := found + cardinality(got);
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN QUERY SELECT n, found, bad;
END
$$;
EXPLAIN (COSTS OFF) SELECT id FROM crowd WHERE simhash_near(fp, 'ffff0000ffffffff', 7);
SELECT k, m.* FROM unnest('{0,1,3,5,7}'::int4[]) k, leaf_mismatches(k) m;
-- One statement, one probe call per query (a correlated subquery): each call starts afresh.
SELECT count(*) AS queries, count(*) FILTER (WHERE got IS DISTINCT FROM want) AS mismatches
  FROM (SELECT (SELECT array_agg(id ORDER BY id) FROM crowd c WHERE simhash_near(c.fp, p.fp, 7)) AS got,
               (SELECT array_agg(id ORDER BY id) FROM crowd c WHERE hamming_distance(c.fp, p.fp) + 0 <= 7) AS want
          FROM probes p) x;

-- Empty most of crowd 1's leaf pages and let VACUUM delete them; the rest still found.
DELETE FROM crowd WHERE id % 3 = 1 AND id BETWEEN 600 AND 11400;
VACUUM crowd;
SELECT k, m.* FROM unnest('{0,3,7}'::int4[]) k, leaf_mismatches(k) m;
-- And refilled: new entries land on new and reused pages.
INSERT INTO crowd SELECT 30000 + g, crowd_fp(1, 'again' || g) FROM generate_series(1, 3000) g;
SELECT k, m.* FROM unnest('{0,3,7}'::int4[]) k, leaf_mismatches(k) m;

-- An empty index (no root page yet) and an index whose table is empty after a VACUUM.
CREATE TABLE nothing (fp simhash64);
SELECT simhash_create_index('nothing', 'fp', permuted => false);
SELECT count(*) FROM nothing WHERE simhash_near(fp, 'ffff0000ffffffff', 7);
INSERT INTO nothing SELECT crowd_fp(2, 'x' || g) FROM generate_series(1, 2000) g;
DELETE FROM nothing;
VACUUM nothing;
SELECT count(*) FROM nothing WHERE simhash_near(fp, 'ffff0000ffffffff', 7);

-- Block indexes in descending order are not read leaf by leaf: simhash_near uses them as plain
-- block indexes (BitmapOr), still exact, and a direct probe call refuses them.
CREATE TABLE downward (id int8, fp simhash64);
INSERT INTO downward SELECT id, fp FROM crowd;
ALTER TABLE downward
    ADD COLUMN b0 int8 GENERATED ALWAYS AS (simhash_block(fp, 0, 4)) STORED,
    ADD COLUMN b1 int8 GENERATED ALWAYS AS (simhash_block(fp, 1, 4)) STORED,
    ADD COLUMN b2 int8 GENERATED ALWAYS AS (simhash_block(fp, 2, 4)) STORED,
    ADD COLUMN b3 int8 GENERATED ALWAYS AS (simhash_block(fp, 3, 4)) STORED;
CREATE INDEX downward_b0 ON downward (b0 DESC) INCLUDE (fp);
CREATE INDEX downward_b1 ON downward (b1 DESC) INCLUDE (fp);
CREATE INDEX downward_b2 ON downward (b2 DESC) INCLUDE (fp);
CREATE INDEX downward_b3 ON downward (b3 DESC) INCLUDE (fp);
ANALYZE downward;
SELECT column_name, covering FROM simhash_block_columns('downward') ORDER BY block;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM downward WHERE simhash_near(fp, 'ffff0000ffffffff', 3);
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT array_agg(id ORDER BY id) FROM downward WHERE simhash_near(fp, p.fp, 3))
                  IS DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM downward WHERE hamming_distance(fp, p.fp) + 0 <= 3)) AS mismatches
  FROM probes p;
RESET enable_seqscan;
SELECT _simhash_index_probe('{downward_b0,downward_b1,downward_b2,downward_b3}', 'ffff0000ffffffff', 3);

-- The planner runs the probe to estimate the rows of a plan made for constant arguments; the
-- executor then takes that answer only while it would see the same rows. Own changes in
-- between (a new command, a rolled-back subtransaction, another role) are seen.
CREATE TABLE mine (id int8, fp simhash64);
SELECT simhash_create_index('mine', 'fp', permuted => false);
INSERT INTO mine VALUES (1, 'ffff0000ffffffff');
BEGIN;
SELECT array_agg(id ORDER BY id) FROM mine WHERE simhash_near(fp, 'ffff0000ffffffff', 3);
INSERT INTO mine VALUES (2, 'ffff0000fffffffe');
SELECT array_agg(id ORDER BY id) FROM mine WHERE simhash_near(fp, 'ffff0000ffffffff', 3);
SAVEPOINT s;
INSERT INTO mine VALUES (3, 'ffff0000fffffffc');
SELECT array_agg(id ORDER BY id) FROM mine WHERE simhash_near(fp, 'ffff0000ffffffff', 3);
ROLLBACK TO s;
SELECT array_agg(id ORDER BY id) FROM mine WHERE simhash_near(fp, 'ffff0000ffffffff', 3);
SELECT cardinality(_simhash_index_probe('{mine_fp_block0of4_fp_idx,mine_fp_block1of4_fp_idx,mine_fp_block2of4_fp_idx,mine_fp_block3of4_fp_idx}', 'ffff0000ffffffff', 3)) - 1 AS rows_found;
COMMIT;
-- PL/pgSQL keeps a simple expression's state for the whole transaction; each evaluation still
-- sees the loop's own inserts.
DO $$
DECLARE
    found int[] := '{}';
BEGIN
    FOR i IN 4..5 LOOP
        found := found || (cardinality(_simhash_index_probe('{mine_fp_block0of4_fp_idx,mine_fp_block1of4_fp_idx,mine_fp_block2of4_fp_idx,mine_fp_block3of4_fp_idx}', 'ffff0000ffffffff', 3)) - 1);
        INSERT INTO mine VALUES (i, 'ffff0000fffffffb');
    END LOOP;
    RAISE WARNING 'rows found on each turn: %', found;
END
$$;
CREATE ROLE simhash_leaf_reader;
GRANT USAGE ON SCHEMA leaf TO simhash_leaf_reader;
SET ROLE simhash_leaf_reader;
SELECT _simhash_index_probe('{mine_fp_block0of4_fp_idx,mine_fp_block1of4_fp_idx,mine_fp_block2of4_fp_idx,mine_fp_block3of4_fp_idx}', 'ffff0000ffffffff', 7);
RESET ROLE;

-- Each lookup counts as a scan of the block indexes it read (pg_stat_user_indexes.idx_scan),
-- so they do not look unused to someone hunting for indexes to drop: once, whether the
-- planner's call or the executor's did the reading. (REPEATABLE READ: under READ COMMITTED a
-- transaction of another session ending between planning and execution makes the executor
-- probe again, rightly, and count a second scan.)
BEGIN ISOLATION LEVEL REPEATABLE READ;
CREATE TEMP TABLE scans_before AS
SELECT c.relname, pg_stat_get_xact_numscans(c.oid) AS scans
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'crowd'::regclass AND c.relname LIKE '%block%';
SELECT count(*) FROM crowd WHERE simhash_near(fp, 'ffff0000ffffffff', 3);
SELECT c.relname, pg_stat_get_xact_numscans(c.oid) - b.scans AS scans
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN scans_before b USING (relname)
 WHERE i.indrelid = 'crowd'::regclass ORDER BY c.relname;
COMMIT;

DROP SCHEMA leaf CASCADE;
DROP ROLE simhash_leaf_reader;
