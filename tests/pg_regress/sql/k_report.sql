-- simhash_k_report: what k means on a table's own rows. Every number is checked against brute
-- force on the same rows: with a sample as large as the table, the share of pairs within k is
-- the self-join's, and the recall the known pairs' own.
SET client_min_messages = notice;
CREATE TABLE kr (id int4 PRIMARY KEY, fp simhash64, fps simhash64[]);
-- Deterministic fingerprints: a hash of the row number, and near-copies of the first 30 rows.
INSERT INTO kr
SELECT g, ('x' || substr(md5(g::text), 1, 16))::bit(64)::int8::simhash64,
       ARRAY[('x' || substr(md5(g::text || 'a'), 1, 16))::bit(64)::int8::simhash64,
             ('x' || substr(md5(g::text || 'b'), 1, 16))::bit(64)::int8::simhash64]
  FROM generate_series(1, 300) g;
INSERT INTO kr SELECT 1000 + id, (fp::int8 # (id % 16))::simhash64, fps FROM kr WHERE id <= 30;
ANALYZE kr;

-- Every row sampled: the shares are the self-join's, at every k.
CREATE TEMP TABLE got AS SELECT * FROM simhash_k_report('kr', 'fp', 100000);
SELECT count(*) AS ks, min(k), max(k) FROM got;
WITH pairs AS (SELECT a.fp <-> b.fp AS d FROM kr a JOIN kr b ON a.id < b.id),
     -- 330 rows: a lookup meets the share of the other 329.
     want AS (SELECT k, avg((d <= k)::int) AS share, avg((d <= k)::int) * 329 AS per_lookup
                FROM pairs CROSS JOIN generate_series(0, 24) k GROUP BY k)
SELECT count(*) AS mismatches FROM want JOIN got USING (k)
 WHERE abs(want.share - got.random_pairs_within) > 1e-12 OR abs(want.per_lookup - got.matches_per_lookup) > 1e-9
    OR got.copies_within IS NOT NULL;

-- Sets: a pair's distance is its nearest same-position pair's (simhash_set_distance).
CREATE TEMP TABLE got_sets AS SELECT * FROM simhash_k_report('kr', 'fps', 100000);
WITH pairs AS (SELECT simhash_set_distance(a.fps, b.fps) AS d FROM kr a JOIN kr b ON a.id < b.id)
SELECT count(*) AS mismatches
  FROM (SELECT k, avg((d <= k)::int) AS share FROM pairs CROSS JOIN generate_series(0, 24) k GROUP BY k) want
  JOIN got_sets USING (k)
 WHERE abs(want.share - got_sets.random_pairs_within) > 1e-12;

-- Rows of another set size, with a NULL element or an empty set are left out, and rows without
-- a fingerprint count in no lookup (a NOTICE counts them): the same shares, and lookups meet the
-- 330 rows with one. Sets of the sample's most common size are the ones compared.
INSERT INTO kr VALUES (5000, NULL, ARRAY[NULL::simhash64, 0::int8::simhash64]), (5001, NULL, ARRAY[0::int8::simhash64]),
                      (5002, NULL, '{}'), (5003, NULL, NULL);
SELECT k, random_pairs_within = (SELECT random_pairs_within FROM got_sets g WHERE g.k = r.k) AS same
  FROM simhash_k_report('kr', 'fps', 100000) r WHERE k IN (0, 20, 24);
SELECT k, random_pairs_within = (SELECT random_pairs_within FROM got g WHERE g.k = r.k) AS same,
       matches_per_lookup = (SELECT matches_per_lookup FROM got g WHERE g.k = r.k) AS same_per_lookup
  FROM simhash_k_report('kr', 'fp', 100000) r WHERE k IN (0, 20, 24);
DELETE FROM kr WHERE id >= 5000;
-- A table never analysed, whose size PostgreSQL guesses from its pages: read whole, counted exactly.
CREATE TABLE kr_small (fp simhash64);
INSERT INTO kr_small SELECT fp FROM kr WHERE id <= 5;
SELECT k, matches_per_lookup = random_pairs_within * 4 AS four_others FROM simhash_k_report('kr_small', 'fp') WHERE k = 24;
DROP TABLE kr_small;
-- Sets of more than one size: the most common one.
CREATE TABLE kr_mixed AS SELECT id, CASE WHEN id % 3 = 0 THEN fps || fps ELSE fps END AS fps FROM kr;
SELECT count(*) AS mismatches
  FROM simhash_k_report('kr_mixed', 'fps', 100000) m
  JOIN (SELECT k, avg((simhash_set_distance(a.fps, b.fps) <= k)::int) AS share
          FROM kr_mixed a JOIN kr_mixed b ON a.id < b.id AND cardinality(a.fps) = 2 AND cardinality(b.fps) = 2
         CROSS JOIN generate_series(0, 24) k GROUP BY k) want USING (k)
 WHERE abs(want.share - m.random_pairs_within) > 1e-12;
DROP TABLE kr_mixed;

-- Known copies: the share of their pairs within k, from a view of two fingerprint columns
-- (columns by position, of the fingerprint's type; the others are ignored).
CREATE VIEW kr_copies AS
SELECT a.id, 'note' AS why, a.fp AS original, b.fp AS copy
  FROM kr a JOIN kr b ON b.id = a.id + 1000;
SELECT k, copies_within, abs(copies_within - (SELECT avg(((original <-> copy) <= r.k)::int) FROM kr_copies)) < 1e-12 AS brute_force
  FROM simhash_k_report('kr', 'fp', 100000, 'kr_copies') r WHERE k IN (0, 1, 2, 3, 4, 5);

-- A sample: REPEATABLE (seed) gives the same rows each time; a share, not a count, is returned.
-- (Which rows, and so the NOTICE's count, depends on the server's sampler: not shown.)
SET client_min_messages = warning;
SELECT count(*) AS same_rows FROM simhash_k_report('kr', 'fp', 50, seed => 7) a
  JOIN simhash_k_report('kr', 'fp', 50, seed => 7) b USING (k)
 WHERE a.random_pairs_within = b.random_pairs_within;
SET client_min_messages = notice;

-- Partitioned tables and materialized views are read too.
CREATE TABLE kr_parts (id int4, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE kr_parts_1 PARTITION OF kr_parts FOR VALUES FROM (0) TO (150);
CREATE TABLE kr_parts_2 PARTITION OF kr_parts FOR VALUES FROM (150) TO (100000);
INSERT INTO kr_parts SELECT id, fp FROM kr;
CREATE MATERIALIZED VIEW kr_mat AS SELECT id, fp FROM kr;
ANALYZE kr_parts, kr_mat;
SELECT count(*) AS mismatches FROM got
  JOIN simhash_k_report('kr_parts', 'fp', 100000) p USING (k)
  JOIN simhash_k_report('kr_mat', 'fp', 100000) m USING (k)
 WHERE got.random_pairs_within <> p.random_pairs_within OR got.random_pairs_within <> m.random_pairs_within;

-- Errors.
SELECT * FROM simhash_k_report('kr', 'fp', 1);
SELECT * FROM simhash_k_report('kr', 'fp', 100001);
SELECT * FROM simhash_k_report('kr', 'id');
SELECT * FROM simhash_k_report('kr', 'FP');
SELECT * FROM simhash_k_report('kr_copies', 'original');
SELECT * FROM simhash_k_report('kr', 'fp', known_copies => 'kr');
SELECT * FROM simhash_k_report('kr', 'fp', known_copies => 'kr_pkey');
SELECT * FROM simhash_k_report('kr', 'fps', known_copies => 'kr_copies');
SELECT * FROM simhash_k_report(NULL, 'fp');
SELECT _simhash_distance_histogram(ARRAY[NULL::simhash64, 0::int8::simhash64], 1);
SELECT _simhash_distance_histogram(ARRAY[0, 1, 2]::int8[]::simhash64[], 2);
SELECT _simhash_distance_histogram('{}', 65);
SELECT _simhash_distance_histogram(ARRAY[0, 3, 1]::int8[]::simhash64[], 1);

-- A role without SELECT on the table is refused by PostgreSQL itself.
CREATE ROLE kr_nobody;
SET ROLE kr_nobody;
SELECT * FROM simhash_k_report('kr', 'fp');
RESET ROLE;
DROP ROLE kr_nobody;

DROP MATERIALIZED VIEW kr_mat;
DROP TABLE kr_parts;
DROP VIEW kr_copies;
DROP TABLE kr;
