-- Families of keys of several blocks (simhash_create_index(..., blocks => m, key_blocks => c)):
-- one B-tree per set of c of the m blocks on _simhash_block_key(fp, lead, m), the fingerprint
-- with those blocks first, read by simhash_near's probe only (Manku et al.'s tables of several
-- blocks). Every family here is compared with brute force at every k, on fingerprints with the
-- top bit set and clear, near-copies whose flips are spread over few and many blocks, repeated
-- fingerprints (posting lists) and NULLs.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

-- The key: blocks 1 and 3 of 4 lead, then 0 and 2; a permutation of the bits, so distances stay.
SELECT to_hex(_simhash_block_key('0123456789abcdef', 10, 4)) AS blocks_1_3_lead,
       _simhash_block_key('0123456789abcdef', 1, 2) = '0123456789abcdef'::simhash64::int8 AS first_half_is_fp,
       hamming_distance('0123456789abcdef'::simhash64, 'fedcba9876543210'::simhash64)
         = (SELECT length(replace((_simhash_block_key('0123456789abcdef', 5, 5) # _simhash_block_key('fedcba9876543210', 5, 5))::bit(64)::text, '0', ''))) AS distance_kept;
SELECT try_sql($$SELECT _simhash_block_key('0123456789abcdef', 0, 4)$$);
SELECT try_sql($$SELECT _simhash_block_key('0123456789abcdef', 15, 4)$$);
SELECT try_sql($$SELECT _simhash_block_key('0123456789abcdef', 16, 4)$$);
SELECT try_sql($$SELECT _simhash_block_key('0123456789abcdef', 1, 65)$$);

-- 20,000 random rows, 2,000 near-copies (1..7 bits flipped in a run, or one bit in each of
-- several blocks), 40 rows repeating 4 fingerprints, 100 NULLs.
CREATE TABLE kt (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO kt SELECT g, hashtextextended(g::text, 21)::simhash64 FROM generate_series(1, 20000) g;
INSERT INTO kt
SELECT 100000 + id, (fp::int8 # CASE WHEN id % 2 = 0 THEN ((1::int8 << (1 + id % 7)::int4) - 1) << (id % 50)::int4
                                     ELSE (SELECT bit_or(1::int8 << ((b * 13 + id) % 64)::int4) FROM generate_series(0, (id % 8)::int4) b) END)::simhash64
  FROM kt WHERE id <= 2000;
INSERT INTO kt SELECT 200000 + g, (SELECT fp FROM kt WHERE id = 1 + g % 4) FROM generate_series(1, 40) g;
INSERT INTO kt SELECT 300000 + g, NULL FROM generate_series(1, 100) g;

-- The family alone, without a block layout: the NOTICE says what it costs and that it is read by
-- simhash_near's probe only.
SET client_min_messages = notice;
SELECT simhash_create_index('kt', 'fp', max_k => 3, blocks => 5, key_blocks => 2);
-- Rerun: nothing to do.
SELECT simhash_create_index('kt', 'fp', max_k => 3, blocks => 5, key_blocks => 2);
SET client_min_messages = warning;
SELECT source_column, blocks, key_blocks, lead, position, index FROM simhash_block_keys('kt');
-- Not block columns; no column was added.
SELECT count(*) AS block_columns FROM simhash_block_columns('kt');
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'kt'::regclass AND attnum > 0;
SELECT column_name, blocks, permuted, complete, key_blocks, advice FROM simhash_index_report('kt', 3);

-- Queries: rows of each kind with bits flipped, and fingerprints no row is near.
CREATE TABLE kq (qid int4 PRIMARY KEY, q simhash64 NOT NULL);
INSERT INTO kq SELECT g, (fp::int8 # ((1::int8 << (g % 9)::int4) - 1))::simhash64
  FROM generate_series(1, 60) g JOIN kt ON kt.id = CASE WHEN g % 3 = 0 THEN 100000 + g * 13 ELSE g * 311 END;
INSERT INTO kq SELECT 100 + g, (SELECT fp FROM kt WHERE id = g) FROM generate_series(1, 4) g;
INSERT INTO kq VALUES (200, '8000000000000000'), (201, '7fffffffffffffff'), (202, 'ffffffffffffffff'), (203, '0000000000000000');
SELECT count(*) FILTER (WHERE q::int8 < 0) > 10 AS top_bit_set, count(*) FILTER (WHERE q::int8 >= 0) > 10 AS top_bit_clear FROM kq;

-- The plan: a TID scan over the probe of the family's ten indexes, in the family's order.
EXPLAIN (COSTS OFF) SELECT id FROM kt WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM kt WHERE fp <-> '0123456789abcdef' <= 5;

-- Every query at every k through the family equals brute force. k = 12 takes more than 65,536
-- probed values: the probe reads the whole first index instead, still exact.
CREATE FUNCTION kt_mismatches(k int4, tbl text DEFAULT 'kt') RETURNS TABLE (queries int8, rows_found int8, mismatches int8)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    got int8[];
    want int8[];
    n int8 := 0;
    found int8 := 0;
    bad int8 := 0;
BEGIN
    FOR r IN SELECT * FROM kq ORDER BY qid LOOP
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
SELECT k, m.* FROM unnest('{0,1,2,3,4,5,7,9,12}'::int4[]) k, kt_mismatches(k) m;

-- Other families, each on a copy: keys of 3 of 6 blocks (20 tables, exact at k = 3), 2 of 4
-- (6 tables of 32 bits), 2 of 3 (3 tables of 43 bits) and 3 of 8 (56 tables).
CREATE FUNCTION kt_family(m int4, c int4, ks int4[])
RETURNS TABLE (family text, tables int8, k int4, queries int8, rows_found int8, mismatches int8)
LANGUAGE plpgsql AS $$
BEGIN
    DROP TABLE IF EXISTS kf;
    CREATE TABLE kf AS SELECT * FROM kt;
    PERFORM simhash_create_index('kf', 'fp', max_k => 3, blocks => m, key_blocks => c);
    FOREACH k IN ARRAY ks LOOP
        RETURN QUERY SELECT format('%s of %s', c, m), (SELECT count(*) FROM simhash_block_keys('kf')), k, x.*
          FROM kt_mismatches(k, 'kf') x;
    END LOOP;
    DROP TABLE kf;
END
$$;
SELECT * FROM kt_family(6, 3, '{0,3,5,7}');
SELECT * FROM kt_family(4, 2, '{0,2,3,6}');
-- (k = 7 on keys of 2 of 3 blocks, 43 bits: more than 65,536 values, the whole first index read
-- in ranges of its keys' first 32 bits.)
SELECT * FROM kt_family(3, 2, '{0,2,3,5,7}');
SELECT * FROM kt_family(8, 3, '{3,6}');

-- k known only at run time (a generic plan); still exact, beyond the family's reach too.
SET plan_cache_mode = force_generic_plan;
PREPARE near_k(simhash64, int4) AS SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM kt WHERE simhash_near(fp, $1, $2);
PREPARE near_k_rows(simhash64, int4) AS SELECT id FROM kt WHERE simhash_near(fp, $1, $2);
EXPLAIN (COSTS OFF) EXECUTE near_k_rows('0123456789abcdef', 3);
SELECT k, count(*) AS queries,
       count(*) FILTER (WHERE (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM kt WHERE simhash_near(fp, kq.q, k))
                              IS DISTINCT FROM (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM kt WHERE hamming_distance(fp, kq.q) + 0 <= k)) AS mismatches
  FROM unnest('{3,6,24}'::int4[]) k, kq GROUP BY k ORDER BY k;
RESET plan_cache_mode;

-- A join: a parameterized TID scan per outer row, the same pairs as brute force. Nearest first
-- and simhash_ingest read block layouts only: on a family alone they scan, still exact.
ANALYZE kt;
ANALYZE kq;
EXPLAIN (COSTS OFF) SELECT kq.qid, kt.id FROM kq JOIN kt ON simhash_near(kt.fp, kq.q, 3);
SELECT (SELECT count(*) FROM kq JOIN kt ON simhash_near(kt.fp, kq.q, 3)) AS joined,
       (SELECT count(*) FROM kq JOIN kt ON hamming_distance(kt.fp, kq.q) + 0 <= 3) AS brute;
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT array_agg(id) FROM (SELECT id FROM kt ORDER BY fp <-> kq.q, id LIMIT 7) s)
                              = (SELECT array_agg(id) FROM (SELECT id FROM kt ORDER BY hamming_distance(kt.fp, kq.q) + 0, id LIMIT 7) s))
           AS same_as_sort
  FROM kq;

-- Where the probe may not run (under OR, say), the BitmapOr form reads the family as key ranges
-- of its indexes: one per table at k = 3, with constant bounds for a constant query and bounds
-- computed from the query's own keys for a correlated one.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM kt WHERE simhash_near(fp, '0123456789abcdef', 3) OR id = 3;
SELECT count(*) AS queries, count(*) FILTER (WHERE got IS DISTINCT FROM want) AS mismatches
  FROM (SELECT (SELECT array_agg(id ORDER BY id) FROM kt WHERE simhash_near(fp, kq.q, 3) OR id = 3) AS got,
               (SELECT array_agg(id ORDER BY id) FROM kt WHERE hamming_distance(fp, kq.q) + 0 <= 3 OR id = 3) AS want
          FROM kq) s;
EXPLAIN (COSTS OFF) SELECT (SELECT count(*) FROM kt WHERE simhash_near(fp, kq.q, 3) OR id = 3) FROM kq;
RESET enable_seqscan;

-- Changes after the build: inserts split leaf pages, deletes and updates; still exact, and the
-- transaction's own changes show.
INSERT INTO kt SELECT 400000 + g, hashtextextended(g::text, 22)::simhash64 FROM generate_series(1, 5000) g;
INSERT INTO kt SELECT 500000 + g, (SELECT q FROM kq WHERE qid = 1 + g % 60) FROM generate_series(1, 120) g;
DELETE FROM kt WHERE id % 5 = 0;
UPDATE kt SET fp = (fp::int8 # 1)::simhash64 WHERE id % 7 = 0;
SELECT k, m.* FROM unnest('{0,3,7}'::int4[]) k, kt_mismatches(k) m;
BEGIN;
DELETE FROM kt WHERE id < 10000;
SELECT k, m.* FROM unnest('{3}'::int4[]) k, kt_mismatches(k) m;
ROLLBACK;

-- Beside a block layout: on 25,000 rows four blocks read fewer entries, so the probe takes
-- them; the report says which is read.
SELECT simhash_create_index('kt', 'fp', max_k => 3);
EXPLAIN (COSTS OFF) SELECT id FROM kt WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT column_name, blocks, permuted, complete, key_blocks, advice FROM simhash_index_report('kt', 3);
-- A rerun of the default call rebuilds block layouts only: the family stays.
SELECT simhash_create_index('kt', 'fp', max_k => 3, expected_rows => 1e9);
SELECT count(*) AS family_tables FROM simhash_block_keys('kt');
SELECT blocks, count(*) AS block_indexes FROM simhash_block_columns('kt') GROUP BY blocks;

-- A family missing a table serves no lookup; the report says so. A probe written by hand with
-- the family's indexes out of order, or a part of them, is refused.
CREATE TABLE kp (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO kp SELECT id, fp FROM kt WHERE id < 3000;
SELECT simhash_create_index('kp', 'fp', blocks => 5, key_blocks => 2);
DROP INDEX kp_fp_key1_3of5;
EXPLAIN (COSTS OFF) SELECT id FROM kp WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT column_name, blocks, complete, key_blocks, advice FROM simhash_index_report('kp', 3);
SELECT try_sql($$SELECT _simhash_index_probe('{kt_fp_key0_2of5,kt_fp_key0_1of5}'::regclass[], '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{kt_fp_key0_1of5}'::regclass[], '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{kt_fp_key0_1of5,kt_fp_perm1of2}'::regclass[], '0123456789abcdef', 3)$$);
-- The rebuild: the missing table only.
SET client_min_messages = notice;
SELECT simhash_create_index('kp', 'fp', blocks => 5, key_blocks => 2);
SET client_min_messages = warning;
SELECT (SELECT count(*) FROM kp WHERE simhash_near(fp, q, 3)) = (SELECT count(*) FROM kp WHERE hamming_distance(fp, q) + 0 <= 3) AS exact
  FROM (SELECT fp AS q FROM kp WHERE id = 7) s;

-- Calls the family cannot take.
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', key_blocks => 2)$$);
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', blocks => 5, key_blocks => 5)$$);
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', blocks => 12, key_blocks => 6)$$);
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', blocks => 5, key_blocks => 1)$$);
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', blocks => 5, key_blocks => 2, permuted => false)$$);
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', blocks => 5, key_blocks => 2, routed => true)$$);
SELECT try_sql($$SELECT simhash_create_index('kp', 'fp', max_k => 40, blocks => 5, key_blocks => 2)$$);
CREATE TABLE kr (id int8 PRIMARY KEY, fp simhash64);
ALTER TABLE kr ENABLE ROW LEVEL SECURITY;
SELECT try_sql($$SELECT simhash_create_index('kr', 'fp', blocks => 5, key_blocks => 2)$$);

-- What the chooser names: with the cost of each index weighed, a family costs at most half of
-- the blocks built only around ten billion rows (here max_k => 4: keys of 3 of 7 blocks against
-- two blocks); at a billion rows, k = 3, it costs about as much and is not named.
CREATE TABLE kn (id int8 PRIMARY KEY, fp simhash64);
SET client_min_messages = notice;
SELECT simhash_create_index('kn', 'fp', max_k => 4, expected_rows => 1e10);
SELECT simhash_create_index('kn', 'fp', max_k => 3, expected_rows => 1e9);
SET client_min_messages = warning;
SELECT blocks, key_blocks, tables, descents, round(pays::numeric, 2) AS pays FROM _simhash_keyed_to_build(4, 1e10);
SELECT count(*) AS none_at_1b FROM _simhash_keyed_to_build(3, 1e9);
SELECT blocks, key_blocks, tables, descents, round(pays::numeric, 2) AS pays FROM _simhash_keyed_to_build(3, 1e9, 5, 2);

-- simhash_drop_index drops the family with the rest.
SET client_min_messages = notice;
SELECT simhash_drop_index('kt', 'fp');
SET client_min_messages = warning;
SELECT count(*) AS family_left FROM simhash_block_keys('kt');
SELECT count(*) AS indexes_left FROM pg_index WHERE indrelid = 'kt'::regclass;

DROP TABLE kt, kq, kp, kr, kn;
DROP FUNCTION kt_mismatches(int4, text), kt_family(int4, int4, int4[]);
