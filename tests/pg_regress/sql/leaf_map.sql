-- The leaf map (src/leaf_scan/leaf_map.rs): after a few lookups of a block index, a backend
-- reads the level above its leaves once and then goes straight to the leaf page of a probed
-- value, instead of descending from the root. The map is a guess, taken only when the page it
-- names is a live leaf holding a key below the value; otherwise the probe descends. Here the
-- index changes under the map (page splits, deleted and recycled pages, REINDEX, a TRUNCATE
-- rolled back) and every lookup is compared with brute force. Autovacuum is off for the table:
-- its statistics updates would drop the map at random moments.
SET client_min_messages = warning;

CREATE TABLE lm (id int8 PRIMARY KEY, fp simhash64) WITH (autovacuum_enabled = off);
-- The first rows have the top bit clear: no key of block 0's index is negative.
INSERT INTO lm SELECT g, (hashtextextended(g::text, 3) & x'7fffffffffffffff'::int8)::simhash64 FROM generate_series(1, 30000) g;
SELECT simhash_create_index('lm', 'fp', permuted => true);
-- Queries: rows with 0..8 bits flipped (rows that the DELETE below keeps), and fingerprints no
-- row is near.
CREATE TABLE lq (qid int4 PRIMARY KEY, q simhash64 NOT NULL);
INSERT INTO lq SELECT g, (fp::int8 # ((1::int8 << (g % 9)::int4) - 1))::simhash64
  FROM generate_series(1, 40) g JOIN lm ON lm.id = g * 710;
INSERT INTO lq SELECT 100 + g, hashtextextended(g::text, 99)::simhash64 FROM generate_series(1, 10) g;
-- Below every key of block 0: the map's guess for it, the leftmost leaf page, holds no key
-- below the value, so the probe descends instead.
INSERT INTO lq VALUES (200, '8001000000000000');

-- What the probe finds at k against brute force on the same rows, as "found missed extra".
CREATE FUNCTION lm_check(k int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE found bigint; missed bigint; extra bigint;
BEGIN
    CREATE TEMP TABLE lm_idx ON COMMIT DROP AS
        SELECT q.qid, t.id FROM lq q CROSS JOIN LATERAL (SELECT id FROM lm WHERE simhash_near(lm.fp, q.q, k)) t;
    CREATE TEMP TABLE lm_brute ON COMMIT DROP AS
        SELECT q.qid, t.id FROM lq q JOIN lm t ON hamming_distance(t.fp, q.q) + 0 <= k;
    SELECT count(*) INTO found FROM lm_idx;
    SELECT count(*) INTO missed FROM (SELECT * FROM lm_brute EXCEPT SELECT * FROM lm_idx) m;
    SELECT count(*) INTO extra FROM (SELECT * FROM lm_idx EXCEPT SELECT * FROM lm_brute) e;
    DROP TABLE lm_idx, lm_brute;
    RETURN format('%s found, %s missed, %s extra', found, missed, extra);
END $$;
-- The lateral lookup is the probe, once per query.
EXPLAIN (COSTS OFF) SELECT q.qid, t.id FROM lq q CROSS JOIN LATERAL (SELECT id FROM lm WHERE simhash_near(lm.fp, q.q, 7)) t;

-- No map before the first lookups; one after.
SELECT count(*) AS maps FROM _simhash_leaf_map('lm_fp_perm0of4');
SELECT k, lm_check(k) FROM (VALUES (0), (3), (7), (8)) v(k);
SELECT leaf_pages > 50 AS mapped, guesses > 100 AS used, missed BETWEEN 1 AND guesses / 4 AS few_missed
  FROM _simhash_leaf_map('lm_fp_perm0of4');

-- Page splits under the map: 30,000 more rows, spread over the whole key space.
INSERT INTO lm SELECT g, hashtextextended(g::text, 4)::simhash64 FROM generate_series(30001, 60000) g;
SELECT k, lm_check(k) FROM (VALUES (3), (7)) v(k);

-- Deleted pages: nine rows in ten gone, so VACUUM deletes the leaf pages they emptied, then
-- recycles them and the next inserts reuse them elsewhere in the index. (VACUUM's statistics
-- update invalidates the index's cache entry in every backend, which drops their maps too.)
DELETE FROM lm WHERE id % 10 <> 0;
VACUUM lm;
VACUUM lm;
INSERT INTO lm SELECT g, hashtextextended(g::text, 5)::simhash64 FROM generate_series(60001, 90000) g;
SELECT k, lm_check(k) FROM (VALUES (3), (7)) v(k);
-- A map whose guesses miss often is read again.
SELECT k, lm_check(k) FROM (VALUES (7), (7), (7)) v(k);
SELECT missed * 4 <= guesses AS mostly_taken FROM _simhash_leaf_map('lm_fp_perm0of4');

-- REINDEX gives the index a new file: the map goes with the old one.
REINDEX INDEX lm_fp_perm0of4;
SELECT count(*) AS maps FROM _simhash_leaf_map('lm_fp_perm0of4');
SELECT k, lm_check(k) FROM (VALUES (3), (7)) v(k);

-- A file made in this transaction is not mapped: TRUNCATE empties the index in place, and a
-- rollback brings the old file back.
BEGIN;
TRUNCATE lm;
INSERT INTO lm SELECT g, (hashtextextended(g::text, 3) & x'7fffffffffffffff'::int8)::simhash64 FROM generate_series(1, 20000) g;
SELECT k, lm_check(k) FROM (VALUES (3), (7), (7), (7)) v(k);
SELECT count(*) AS maps FROM _simhash_leaf_map('lm_fp_perm0of4');
ROLLBACK;
SELECT k, lm_check(k) FROM (VALUES (3), (7)) v(k);

-- Covering block indexes are mapped the same way.
SELECT simhash_drop_index('lm', 'fp');
SELECT simhash_create_index('lm', 'fp', permuted => false);
SELECT k, lm_check(k) FROM (VALUES (0), (3), (7), (8)) v(k);
SELECT leaf_pages > 10 AS mapped, guesses > 100 AS used
  FROM _simhash_leaf_map((SELECT index FROM simhash_block_columns('lm') WHERE block = 0)::regclass);

-- A temporary table's indexes live in local buffers: mapped the same way, found without hints.
CREATE TEMP TABLE lt (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO lt SELECT g, hashtextextended(g::text, 3)::simhash64 FROM generate_series(1, 30000) g;
SELECT simhash_create_index('lt', 'fp', permuted => true);
ANALYZE lt;
SELECT count(*) AS found,
       count(*) = (SELECT count(*) FROM lq q JOIN lt t ON hamming_distance(t.fp, q.q) + 0 <= 7) AS as_brute_force
  FROM lq q CROSS JOIN LATERAL (SELECT id FROM lt WHERE simhash_near(lt.fp, q.q, 7)) t;
SELECT leaf_pages > 50 AS mapped, guesses > 100 AS used FROM _simhash_leaf_map('lt_fp_perm0of4');
DROP TABLE lt;

DROP FUNCTION lm_check(int);
DROP TABLE lm, lq;
