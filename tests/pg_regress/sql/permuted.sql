-- Permuted block indexes (simhash_create_index(..., permuted => true)): one B-tree per block on
-- _simhash_permute(fp, i, m), the fingerprint rotated so that block i leads, read by the
-- leaf-page probe as key ranges. Every path that reads them (simhash_near and <-> comparisons,
-- joins, nearest first, simhash_ingest's pass, sets) is compared with brute force here, on
-- fingerprints with the top bit both set and clear (the integer opclass orders keys signed),
-- repeated fingerprints (B-tree deduplication: posting lists) and NULLs.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

-- The key: block i leads, the distance is kept.
SELECT _simhash_permute('0123456789abcdef', 0, 4) = '0123456789abcdef'::simhash64::int8 AS block0_is_fp,
       to_hex(_simhash_permute('0123456789abcdef', 1, 4)) AS block1_leads,
       to_hex(_simhash_permute('0123456789abcdef', 2, 3)) AS block2of3_leads,
       simhash_block('0123456789abcdef', 1, 4) = (_simhash_permute('0123456789abcdef', 1, 4) >> 48) & 65535 AS prefix_is_block;
SELECT try_sql($$SELECT _simhash_permute('0123456789abcdef', 4, 4)$$);
SELECT try_sql($$SELECT _simhash_permute('0123456789abcdef', 0, 1)$$);

-- 20,000 random rows, 2,000 near-copies (1..7 bits flipped), 40 rows repeating 4 fingerprints
-- (posting lists), 100 NULLs.
CREATE TABLE pt (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO pt SELECT g, hashtextextended(g::text, 11)::simhash64 FROM generate_series(1, 20000) g;
INSERT INTO pt
SELECT 100000 + id, (fp::int8 # (((1::int8 << (1 + id % 7)::int4) - 1) << (id % 50)::int4))::simhash64
  FROM pt WHERE id <= 2000;
INSERT INTO pt SELECT 200000 + g, (SELECT fp FROM pt WHERE id = 1 + g % 4) FROM generate_series(1, 40) g;
INSERT INTO pt SELECT 300000 + g, NULL FROM generate_series(1, 100) g;
SELECT simhash_create_index('pt', 'fp', permuted => true);
SELECT column_name, source_column, block, blocks, index, covering, element, permuted
  FROM simhash_block_columns('pt') ORDER BY block;
-- No column was added: the table is as it was.
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'pt'::regclass AND attnum > 0;
-- Rerun: nothing to do.
SET client_min_messages = notice;
SELECT simhash_create_index('pt', 'fp', permuted => true);
SET client_min_messages = warning;
-- Deduplication packs repeated fingerprints into posting lists, which the probe reads TID by
-- TID: the 3,500 entries of 20 bytes (3,000 of them one fingerprint) would fill about 11 pages;
-- deduplicated they fit in fewer than 8, and every copy is found.
CREATE TABLE pd (id int8, fp simhash64);
INSERT INTO pd SELECT g, CASE WHEN g <= 3000 THEN 'f00dfeedf00dfeed' ELSE hashtextextended(g::text, 5)::simhash64 END
  FROM generate_series(1, 3500) g;
SELECT simhash_create_index('pd', 'fp', permuted => true);
SELECT pg_relation_size('pd_fp_perm0of4') < 8192 * 8 AS deduplicated,
       (SELECT count(*) FROM pd WHERE simhash_near(fp, 'f00dfeedf00dfeec', 1)) AS found,
       (SELECT count(*) FROM pd WHERE hamming_distance(fp, 'f00dfeedf00dfeec') + 0 <= 1) AS brute;
EXPLAIN (COSTS OFF) SELECT count(*) FROM pd WHERE simhash_near(fp, 'f00dfeedf00dfeec', 1);
DROP TABLE pd;

-- Queries: rows of each kind, with bits flipped, and fingerprints no row is near.
CREATE TABLE pq (qid int4 PRIMARY KEY, q simhash64 NOT NULL);
INSERT INTO pq SELECT g, (fp::int8 # ((1::int8 << (g % 9)::int4) - 1))::simhash64
  FROM generate_series(1, 60) g JOIN pt ON pt.id = CASE WHEN g % 3 = 0 THEN 100000 + g * 13 ELSE g * 311 END;
INSERT INTO pq SELECT 100 + g, (SELECT fp FROM pt WHERE id = g) FROM generate_series(1, 4) g;
INSERT INTO pq VALUES (200, '8000000000000000'), (201, '7fffffffffffffff'), (202, 'ffffffffffffffff'), (203, '0000000000000000');
SELECT count(*) FILTER (WHERE q::int8 < 0) > 10 AS top_bit_set, count(*) FILTER (WHERE q::int8 >= 0) > 10 AS top_bit_clear FROM pq;

-- The plans: a TID scan over the probe of the four permuted indexes.
EXPLAIN (COSTS OFF) SELECT id FROM pt WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM pt WHERE fp <-> '0123456789abcdef' <= 7;

-- Every query at every k through the indexes equals brute force.
CREATE FUNCTION pt_mismatches(k int4, tbl text DEFAULT 'pt') RETURNS TABLE (queries int8, rows_found int8, mismatches int8)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    got int8[];
    want int8[];
    n int8 := 0;
    found int8 := 0;
    bad int8 := 0;
BEGIN
    FOR r IN SELECT * FROM pq ORDER BY qid LOOP
        EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM %I WHERE simhash_near(fp, %L::simhash64, %s)', tbl, r.q, k)
            INTO got;
        EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM %I WHERE hamming_distance(fp, %L::simhash64) + 0 <= %s', tbl, r.q, k)
            INTO want;
        n := n + 1;
        found := found + cardinality(got);
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN QUERY SELECT n, found, bad;
END
$$;
SELECT k, m.* FROM unnest('{0,1,2,3,4,5,7,9}'::int4[]) k, pt_mismatches(k) m;

-- Windows of blocks: each permuted index probed on the w blocks its key starts with, at the
-- radius that keeps the lookup exact (simhash_pg.probe_window fixes w; 0, the default, lets each
-- lookup choose by the index's size). Every window at every k equals brute force, on four blocks
-- and on seven (windows of 2 and 3 blocks probed exactly at k = 3 and 1: keys of several blocks;
-- 6 of 7 reads the whole index past MAX_PROBES).
CREATE FUNCTION pt_window_mismatches(tbl text, windows int4[], ks int4[])
RETURNS TABLE (w int4, k int4, queries int8, rows_found int8, mismatches int8)
LANGUAGE plpgsql AS $$
BEGIN
    FOREACH w IN ARRAY windows LOOP
        PERFORM set_config('simhash_pg.probe_window', w::text, true);
        FOREACH k IN ARRAY ks LOOP
            RETURN QUERY SELECT w, k, m.* FROM pt_mismatches(k, tbl) m;
        END LOOP;
    END LOOP;
END
$$;
SELECT * FROM pt_window_mismatches('pt', '{1,2,3}', '{0,2,3,5,7}');
CREATE TABLE pt7 AS SELECT * FROM pt;
SELECT simhash_create_index('pt7', 'fp', blocks => 7, permuted => true);
SELECT * FROM pt_window_mismatches('pt7', '{2,3,6}', '{0,3,5,7}');
DROP TABLE pt7;
SHOW simhash_pg.probe_window;
SELECT try_sql($$SET simhash_pg.probe_window = 64$$);
SELECT try_sql($$SET simhash_pg.probe_window = -1$$);

-- k known only at run time (a generic plan): beyond what the blocks serve, the probe reads the
-- whole first index; still exact.
SET plan_cache_mode = force_generic_plan;
PREPARE near_k(simhash64, int4) AS SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM pt WHERE simhash_near(fp, $1, $2);
-- (The plan of the lookup alone: PostgreSQL 16 and later sort the rows for array_agg(... ORDER BY).)
PREPARE near_k_rows(simhash64, int4) AS SELECT id FROM pt WHERE simhash_near(fp, $1, $2);
EXPLAIN (COSTS OFF) EXECUTE near_k_rows('0123456789abcdef', 3);
DO $$
DECLARE
    r record;
    k int4;
    got int8[];
    bad int4 := 0;
BEGIN
    FOREACH k IN ARRAY '{3,6,24}'::int4[] LOOP
        FOR r IN SELECT * FROM pq ORDER BY qid LOOP
            EXECUTE format('EXECUTE near_k(%L, %s)', r.q, k) INTO got;
            IF got IS DISTINCT FROM (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM pt WHERE hamming_distance(fp, r.q) + 0 <= k) THEN
                bad := bad + 1;
            END IF;
        END LOOP;
    END LOOP;
    RAISE WARNING 'generic plan, k = 3, 6, 24: % mismatches', bad;
END
$$;
RESET plan_cache_mode;

-- A join: a parameterized TID scan per outer row, the same pairs as brute force.
ANALYZE pt;
ANALYZE pq;
EXPLAIN (COSTS OFF) SELECT pq.qid, pt.id FROM pq JOIN pt ON simhash_near(pt.fp, pq.q, 3);
SELECT (SELECT count(*) FROM pq JOIN pt ON simhash_near(pt.fp, pq.q, 3)) AS joined,
       (SELECT count(*) FROM pq JOIN pt ON hamming_distance(pt.fp, pq.q) + 0 <= 3) AS brute;

-- Nearest first: the custom scan reads the permuted indexes; same rows as sorting everything.
EXPLAIN (COSTS OFF) SELECT id FROM pt ORDER BY fp <-> '0123456789abcdef', id LIMIT 5;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT array_agg(id) FROM (SELECT id FROM pt ORDER BY fp <-> pq.q, id LIMIT 7) s)
                              = (SELECT array_agg(id) FROM (SELECT id FROM pt ORDER BY hamming_distance(pt.fp, pq.q) + 0, id LIMIT 7) s))
           AS same_as_sort
  FROM pq;
SELECT array_agg(key ORDER BY distance, key) FROM simhash_nearest('pt', 'fp', '0123456789abcdef', 3, 'id');

-- simhash_ingest's pass reads the first permuted index whole: the same rows as brute force.
SELECT _simhash_ingest_method('pt', 'fp', 3, 5000) AS method;
SELECT _simhash_batch_near('pt', 'fp', (SELECT array_agg(q ORDER BY qid) FROM pq), k)
       = (SELECT coalesce(array_agg(qid_n ORDER BY qid_n), '{}')
            FROM (SELECT row_number() OVER (ORDER BY qid) AS qid_n, q FROM pq) b
           WHERE EXISTS (SELECT 1 FROM pt WHERE (pt.fp <-> b.q) + 0 <= k)) AS pass_is_exact, k
  FROM unnest('{0,3,7}'::int4[]) k;

-- Changes after the build: inserts split leaf pages, deletes and updates; still exact, and the
-- transaction's own changes show.
INSERT INTO pt SELECT 400000 + g, hashtextextended(g::text, 12)::simhash64 FROM generate_series(1, 5000) g;
INSERT INTO pt SELECT 500000 + g, (SELECT q FROM pq WHERE qid = 1 + g % 60) FROM generate_series(1, 120) g;
DELETE FROM pt WHERE id % 5 = 0;
UPDATE pt SET fp = (fp::int8 # 1)::simhash64 WHERE id % 7 = 0;
SELECT k, m.* FROM unnest('{0,3,7}'::int4[]) k, pt_mismatches(k) m;
BEGIN;
DELETE FROM pt WHERE id < 10000;
SELECT k, m.* FROM unnest('{3}'::int4[]) k, pt_mismatches(k) m;
ROLLBACK;

-- Beside a column layout of the same blocks, the probe prefers the permuted indexes; the
-- BitmapOr form (row-level security, where the probe may not run) uses the columns' equality.
CREATE TABLE pb (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO pb SELECT id, fp FROM pt;
SELECT simhash_create_index('pb', 'fp', permuted => false);
SELECT simhash_create_index('pb', 'fp', permuted => true);
SELECT block, column_name IS NOT NULL AS is_column, covering, permuted FROM simhash_block_columns('pb') ORDER BY block, permuted;
EXPLAIN (COSTS OFF) SELECT id FROM pb WHERE simhash_near(fp, '0123456789abcdef', 3);
CREATE ROLE simhash_permuted_user;
GRANT SELECT ON pb, pt, pq TO simhash_permuted_user;
ALTER TABLE pb ENABLE ROW LEVEL SECURITY;
ALTER TABLE pt ENABLE ROW LEVEL SECURITY;
CREATE POLICY pb_odd ON pb FOR SELECT USING (id % 2 = 1);
CREATE POLICY pt_odd ON pt FOR SELECT USING (id % 2 = 1);
SET ROLE simhash_permuted_user;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pb WHERE simhash_near(fp, '0123456789abcdef', 3);
RESET enable_seqscan;
-- Only permuted indexes: under row-level security their key ranges cannot be index conditions
-- (_simhash_permute is not leakproof), so the lookup is a sequential scan, still right.
EXPLAIN (COSTS OFF) SELECT id FROM pt WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT (SELECT array_agg(id ORDER BY id) FROM pt WHERE simhash_near(fp, q, 3))
       IS NOT DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM pt WHERE hamming_distance(fp, q) + 0 <= 3) AS same,
       count(*)
  FROM pq GROUP BY 1;
RESET ROLE;
ALTER TABLE pb DISABLE ROW LEVEL SECURITY;
ALTER TABLE pt DISABLE ROW LEVEL SECURITY;

-- Read through a view (its owner's rights apply, so the probe may not run), the BitmapOr reads
-- the permuted indexes as key ranges, one per probed block value: constant bounds for a known
-- query, bounds computed from the query's own key for a parameter or a column of another
-- table. Beyond 256 ranges (k = 11) it would cost more than it saves: a sequential scan. Every
-- form equals brute force.
CREATE VIEW pt_v AS SELECT id, fp FROM pt;
GRANT SELECT ON pt_v TO simhash_permuted_user;
SET ROLE simhash_permuted_user;
EXPLAIN (COSTS OFF) SELECT id FROM pt_v WHERE simhash_near(fp, '0123456789abcdef', 1);
SELECT k, m.* FROM unnest('{0,3,7,11}'::int4[]) k, pt_mismatches(k, 'pt_v') m;
PREPARE pt_near(simhash64) AS SELECT id FROM pt_v WHERE simhash_near(fp, $1, 3);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pt_near('0123456789abcdef');
RESET plan_cache_mode;
DEALLOCATE pt_near;
EXPLAIN (COSTS OFF) SELECT ARRAY(SELECT id FROM pt_v WHERE simhash_near(fp, q, 0)) FROM pq;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE ARRAY(SELECT id FROM pt_v WHERE simhash_near(fp, q, 0) ORDER BY id)
                              = ARRAY(SELECT id FROM pt_v WHERE hamming_distance(fp, q) + 0 <= 0 ORDER BY id)) AS k0_same,
       count(*) FILTER (WHERE ARRAY(SELECT id FROM pt_v WHERE simhash_near(fp, q, 3) ORDER BY id)
                              = ARRAY(SELECT id FROM pt_v WHERE hamming_distance(fp, q) + 0 <= 3 ORDER BY id)) AS k3_same,
       count(*) FILTER (WHERE ARRAY(SELECT id FROM pt_v WHERE simhash_near(fp, q, 7) ORDER BY id)
                              = ARRAY(SELECT id FROM pt_v WHERE hamming_distance(fp, q) + 0 <= 7 ORDER BY id)) AS k7_same
  FROM pq;
RESET ROLE;
DROP VIEW pt_v;

-- A hand-written probe must name each block's index in its place.
SELECT try_sql($$SELECT _simhash_index_probe('{pt_fp_perm1of4,pt_fp_perm0of4,pt_fp_perm2of4,pt_fp_perm3of4}', '0123456789abcdef', 3)$$);
CREATE INDEX pt_fp_int8 ON pt ((fp::int8));
SELECT try_sql($$SELECT _simhash_index_probe('{pt_fp_int8,pt_fp_perm1of4,pt_fp_perm2of4,pt_fp_perm3of4}', '0123456789abcdef', 3)$$);
DROP INDEX pt_fp_int8;

-- Keys bunched unevenly: 40 runs of 500 rows, each run one value of block 0 (16 values apart,
-- so a query's radius-1 values fall between runs, on the next run, or many pages away), the
-- other bits random. A value that starts on the page the one before ended on, on its right
-- sibling, or further right than the keys on that page suggest, is found all the same.
CREATE TABLE pu (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO pu SELECT g, ((((g / 500) * 16 + 3)::int8 << 48) | (hashtextextended(g::text, 4) & ((1::int8 << 48) - 1)))::simhash64
  FROM generate_series(0, 19999) g;
SELECT simhash_create_index('pu', 'fp', permuted => true);
SELECT k, count(*) AS queries,
       count(*) FILTER (WHERE (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM pu WHERE simhash_near(fp, q, k))
                              = (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM pu WHERE hamming_distance(fp, q) + 0 <= k))
           AS same_as_brute,
       sum((SELECT count(*) FROM pu WHERE hamming_distance(fp, q) + 0 <= k)) AS rows_found
  FROM unnest('{3,7}'::int4[]) k,
       LATERAL (SELECT (fp::int8 # (((1::int8 << (1 + id % 5)::int4) - 1) << (40 + id % 20)::int4))::simhash64 AS q
                  FROM pu WHERE id % 250 = 7) queries
 GROUP BY k ORDER BY k;
DROP TABLE pu;

-- Bad arguments.
SELECT try_sql($$SELECT simhash_create_index('pt', 'fp', permuted => true, covering => false)$$);
SELECT try_sql($$SELECT simhash_create_index('pt', 'fp', expected_rows => -1)$$);
SELECT try_sql($$SELECT simhash_create_index('pt', 'fp', expected_rows => 'NaN')$$);
SELECT try_sql($$SELECT simhash_create_index('pt', 'fp', expected_rows => 'Infinity')$$);

-- A set column: permuted indexes per element, read together.
CREATE TABLE ps (id int8 PRIMARY KEY, body text, fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 3)) STORED);
INSERT INTO ps (id, body) SELECT g, 'title number ' || (g % 500) || ' about topic ' || (g % 37) || ' and ' || (g % 11)
  FROM generate_series(1, 3000) g;
SELECT simhash_create_index('ps', 'fps', permuted => true);
SELECT count(*) AS indexes, count(DISTINCT element) AS elements, bool_and(permuted) AS permuted
  FROM simhash_block_columns('ps');
ANALYZE ps;
EXPLAIN (COSTS OFF) SELECT id FROM ps WHERE simhash_near_any(fps, simhash_set('title number 7 about topic 7 and 7', 3), 3);
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT array_agg(id ORDER BY id) FROM ps WHERE simhash_near_any(fps, q.fps, 3))
                              IS NOT DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM ps WHERE (ps.fps <-> q.fps) + 0 <= 3))
           AS same_as_brute
  FROM (SELECT fps FROM ps WHERE id % 97 = 0) q;

-- simhash_drop_index removes them, and only them.
SET client_min_messages = notice;
SELECT simhash_drop_index('pt', 'fp');
SELECT simhash_drop_index('ps', 'fps');
SELECT simhash_drop_index('pb', 'fp');
SET client_min_messages = warning;
SELECT count(*) AS left_over FROM pg_index WHERE indrelid IN ('pt'::regclass, 'ps'::regclass, 'pb'::regclass) AND NOT indisprimary;
DROP TABLE pt, pq, pb, ps;
DROP FUNCTION pt_mismatches(int4, text);
DROP ROLE simhash_permuted_user;
