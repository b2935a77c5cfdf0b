-- simhash_pairs_between: every (row of one table, row of another) within k bits, each once,
-- as hash joins on block keys; compared with the brute-force cross join at every k tried.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

-- An archive of 3,000 rows and a day's batch of 800: 300 near-copies of archive rows (1-6 bits),
-- exact copies, rows repeated in the batch, NULL fingerprints on both sides, repeated keys.
CREATE TABLE pb_archive (id int8, fp simhash64);
INSERT INTO pb_archive SELECT g, hashtextextended(g::text, 5)::simhash64 FROM generate_series(1, 3000) g;
INSERT INTO pb_archive VALUES (3001, NULL), (7, hashtextextended('7', 5)::simhash64);
CREATE TABLE pb_batch (nid int4, fp simhash64);
INSERT INTO pb_batch SELECT g, (hashtextextended((g * 9)::text, 5) # (((1::int8 << (g % 7)) - 1) << (g % 57)))::simhash64
  FROM generate_series(1, 300) g;
INSERT INTO pb_batch SELECT 1000 + g, hashtextextended('new' || g, 5)::simhash64 FROM generate_series(1, 490) g;
INSERT INTO pb_batch SELECT 2000 + nid, fp FROM pb_batch WHERE nid <= 9;
INSERT INTO pb_batch VALUES (3000, NULL);
ANALYZE pb_archive, pb_batch;

-- Each pair once, the same pairs and distances as brute force.
SELECT k,
       (SELECT count(*) FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', k, 'id', 'nid')) AS pairs,
       (SELECT count(*) FROM (SELECT a, b, distance FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', k, 'id', 'nid')
                              GROUP BY 1, 2, 3 HAVING count(*) > 1) d) AS repeated,
       (SELECT count(*) FROM (
            (SELECT a, b, distance FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', k, 'id', 'nid')
             EXCEPT ALL
             SELECT x.id::text, y.nid::text, (x.fp <-> y.fp) + 0 FROM pb_archive x, pb_batch y WHERE (x.fp <-> y.fp) + 0 <= k)
            UNION ALL
            (SELECT x.id::text, y.nid::text, (x.fp <-> y.fp) + 0 FROM pb_archive x, pb_batch y WHERE (x.fp <-> y.fp) + 0 <= k
             EXCEPT ALL
             SELECT a, b, distance FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', k, 'id', 'nid'))) d) AS differences
  FROM generate_series(0, 8, 2) k ORDER BY k;

-- Without key columns rows are named by ctid; the same count.
SELECT count(*) = (SELECT count(*) FROM pb_archive x, pb_batch y WHERE (x.fp <-> y.fp) + 0 <= 3) AS by_ctid
  FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 3);

-- Keys in their own types (int8 and int4 here, tid for ctid): the same pairs, keys that sort as
-- numbers; a key type that is not the column's is refused with a hint.
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b)
          FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 3, 'id', 'nid', NULL::int8, NULL::int4))
     = (SELECT array_agg((a::int8, b::int4, distance) ORDER BY a::int8, b::int4)
          FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 3, 'id', 'nid')) AS typed_same,
       (SELECT (pg_typeof(a), pg_typeof(b)) FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 3, 'id', 'nid',
                                                                       NULL::int8, NULL::int4) LIMIT 1) AS key_types,
       (SELECT count(*) FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 3, NULL, NULL, NULL::tid, NULL::tid)) AS by_ctid;
SELECT try_sql($$SELECT * FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 3, 'id', 'nid', NULL::int8, NULL::int8)$$) AS wrong_key_type;

-- A partitioned side, named by its key; block indexes or none make no difference to the answer.
CREATE TABLE pb_parts (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE pb_parts_1 PARTITION OF pb_parts FOR VALUES FROM (1) TO (1500);
CREATE TABLE pb_parts_2 PARTITION OF pb_parts FOR VALUES FROM (1500) TO (10000);
INSERT INTO pb_parts SELECT * FROM pb_archive;
SELECT simhash_create_index('pb_parts', 'fp');
ANALYZE pb_parts;
SELECT (SELECT count(*) FROM simhash_pairs_between('pb_batch', 'fp', 'pb_parts', 'fp', 4, 'nid', 'id'))
     = (SELECT count(*) FROM pb_archive x, pb_batch y WHERE (x.fp <-> y.fp) + 0 <= 4) AS partitioned_same;

-- With covering block indexes on the archive: the same pairs, whichever side is named first.
SELECT simhash_create_index('pb_archive', 'fp');
ANALYZE pb_archive;
SELECT k,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('pb_batch', 'fp', 'pb_archive', 'fp', k, 'nid', 'id'))
     = (SELECT array_agg((y.nid::text, x.id::text, (x.fp <-> y.fp) + 0) ORDER BY y.nid::text, x.id::text)
          FROM pb_archive x, pb_batch y WHERE (x.fp <-> y.fp) + 0 <= k) AS same_batch_first,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', k, 'id', 'nid'))
     = (SELECT array_agg((x.id::text, y.nid::text, (x.fp <-> y.fp) + 0) ORDER BY x.id::text, y.nid::text)
          FROM pb_archive x, pb_batch y WHERE (x.fp <-> y.fp) + 0 <= k) AS same_archive_first
  FROM unnest(ARRAY[0, 3, 7]) k ORDER BY k;

-- A handful of rows against the indexed archive: one lookup per row, on either side (the
-- lookups are what the 800-row batch above does not take: it is joined on keys).
CREATE TABLE pb_few AS SELECT nid, fp FROM pb_batch WHERE nid % 40 = 1 OR nid IN (2001, 3000);
ANALYZE pb_few;
SELECT _simhash_batch_prefers_joins(3, (SELECT count(*) FROM pb_few), 3002, _simhash_lookup_cost('pb_archive', 'fp', 3)) AS few_rows_join,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('pb_few', 'fp', 'pb_archive', 'fp', 3, 'nid', 'id'))
     = (SELECT array_agg((y.nid::text, x.id::text, (x.fp <-> y.fp) + 0) ORDER BY y.nid::text, x.id::text)
          FROM pb_archive x, pb_few y WHERE (x.fp <-> y.fp) + 0 <= 3) AS few_first_same,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('pb_archive', 'fp', 'pb_few', 'fp', 3, 'id', 'nid'))
     = (SELECT array_agg((x.id::text, y.nid::text, (x.fp <-> y.fp) + 0) ORDER BY x.id::text, y.nid::text)
          FROM pb_archive x, pb_few y WHERE (x.fp <-> y.fp) + 0 <= 3) AS archive_first_same,
       (SELECT count(*) FROM simhash_pairs_between('pb_few', 'fp', 'pb_archive', 'fp', 3, 'nid', 'id')) AS pairs;

-- Errors: bad k (22023), a set column (0A000), a partitioned side without a key (22004).
CREATE TABLE pb_sets (id int8, body text, fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 2)) STORED);
SELECT try_sql($$SELECT * FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', 64)$$) AS k_64;
SELECT try_sql($$SELECT * FROM simhash_pairs_between('pb_archive', 'fp', 'pb_batch', 'fp', NULL)$$) AS k_null;
SELECT try_sql($$SELECT * FROM simhash_pairs_between('pb_sets', 'fps', 'pb_batch', 'fp', 3, 'id')$$) AS set_column;
SELECT try_sql($$SELECT * FROM simhash_pairs_between('pb_archive', 'fp', 'pb_parts', 'fp', 3, 'id')$$) AS no_key;

DROP TABLE pb_archive, pb_batch, pb_parts, pb_sets, pb_few;
