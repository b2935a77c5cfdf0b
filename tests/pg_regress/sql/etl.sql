-- ETL: simhash_pairs, simhash_chained_groups and simhash_ingest, against brute force.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all

-- A fingerprint from a seed, and one d bits away (the bits chosen by the seed).
CREATE FUNCTION etl_fp(seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE AS
$$ SELECT ('x' || substr(md5(seed), 1, 16))::bit(64)::simhash64 $$;
CREATE FUNCTION etl_flip(fp simhash64, d int, seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE AS
$$ SELECT ((fp::int8) # coalesce((SELECT bit_or(1::int8 << pos)
                                   FROM (SELECT pos FROM generate_series(0, 63) pos
                                          ORDER BY md5(seed || ':' || pos) LIMIT d) p), 0))::simhash64 $$;

-- 3,000 random rows; 60 groups of 2..6 near-copies (1..6 bits from the group's first row, so
-- members can be up to 12 bits apart); exact duplicates; NULL fingerprints; a text key.
CREATE TABLE docs (id int8 PRIMARY KEY, name text UNIQUE, fp simhash64);
INSERT INTO docs SELECT g, 'doc ' || g, etl_fp('r' || g) FROM generate_series(1, 3000) g;
INSERT INTO docs SELECT 10000 + grp * 10 + j, 'copy ' || grp || '.' || j,
       etl_flip(etl_fp('r' || grp), 1 + (grp + j) % 6, grp || '/' || j)
  FROM generate_series(1, 60) grp, generate_series(1, 1 + grp % 5) j;
INSERT INTO docs SELECT 20000 + g, 'dup ' || g, etl_fp('r' || (100 + g)) FROM generate_series(1, 5) g;
INSERT INTO docs SELECT 30000 + g, 'null ' || g, NULL FROM generate_series(1, 5) g;
ANALYZE docs;

-- Brute force: every unordered pair within 12 bits.
CREATE TABLE etl_truth AS
SELECT x.id AS a, y.id AS b, hamming_distance(x.fp, y.fp) AS d
  FROM docs x JOIN docs y ON x.id < y.id
 WHERE hamming_distance(x.fp, y.fp) + 0 <= 12;
SELECT d, count(*) FROM etl_truth GROUP BY d ORDER BY d;

-- simhash_pairs equals brute force for every k, each pair once, named by an int8 key, a text
-- key and ctid.
SELECT k,
       (SELECT count(*) FROM simhash_pairs('docs', 'fp', k, 'id')) AS pairs,
       (SELECT count(*) FROM etl_truth WHERE d <= k) AS brute_force,
       (SELECT count(*) FROM (SELECT a::int8, b::int8, distance FROM simhash_pairs('docs', 'fp', k, 'id')
                              EXCEPT SELECT a, b, d FROM etl_truth WHERE d <= k) x) AS extra,
       (SELECT count(*) FROM (SELECT a, b, d FROM etl_truth WHERE d <= k
                              EXCEPT SELECT a::int8, b::int8, distance FROM simhash_pairs('docs', 'fp', k, 'id')) x) AS missed,
       (SELECT count(*) - count(DISTINCT (a, b)) FROM simhash_pairs('docs', 'fp', k, 'id')) AS repeated
  FROM unnest(ARRAY[0, 1, 2, 3, 4, 5, 7, 9, 12]) k;
-- A table that fits maintenance_work_mem is read into memory, where its rows are sorted by
-- each key, or every pair compared when that costs less; forced any way
-- (simhash_pg.pairs_method), the same pairs as brute force. Any other method is 22023.
SET simhash_pg.pairs_method = 'joins';
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT k, (SELECT array_agg((a::int8, b::int8, distance) ORDER BY a::int8, b::int8) FROM simhash_pairs('docs', 'fp', k, 'id'))
        = (SELECT array_agg((a, b, d) ORDER BY a, b) FROM etl_truth WHERE d <= k) AS joins_same_as_brute_force
  FROM unnest(ARRAY[0, 3, 7, 12]) k;
RESET client_min_messages;
SET simhash_pg.pairs_method = 'compare';
SELECT k, (SELECT array_agg((a::int8, b::int8, distance) ORDER BY a::int8, b::int8) FROM simhash_pairs('docs', 'fp', k, 'id'))
        = (SELECT array_agg((a, b, d) ORDER BY a, b) FROM etl_truth WHERE d <= k) AS compared_same_as_brute_force
  FROM unnest(ARRAY[0, 3, 7, 12]) k;
SET simhash_pg.pairs_method = 'sort';
SELECT k, (SELECT array_agg((a::int8, b::int8, distance) ORDER BY a::int8, b::int8) FROM simhash_pairs('docs', 'fp', k, 'id'))
        = (SELECT array_agg((a, b, d) ORDER BY a, b) FROM etl_truth WHERE d <= k) AS sorted_same_as_brute_force
  FROM unnest(ARRAY[0, 3, 7, 12]) k;
-- Read row by row into memory (an integer key, or ctid on a table without children: what auto
-- takes for them): the same pairs, by key and by ctid; a key of another type cannot.
SET simhash_pg.pairs_method = 'scan';
SELECT k, (SELECT array_agg((a::int8, b::int8, distance) ORDER BY a::int8, b::int8) FROM simhash_pairs('docs', 'fp', k, 'id'))
        = (SELECT array_agg((a, b, d) ORDER BY a, b) FROM etl_truth WHERE d <= k) AS scanned_same_as_brute_force
  FROM unnest(ARRAY[0, 3, 7, 12]) k;
SELECT k, (SELECT array_agg((a::tid, b::tid, distance) ORDER BY a::tid, b::tid) FROM simhash_pairs('docs', 'fp', k))
        = (SELECT array_agg((least(x.ctid, y.ctid), greatest(x.ctid, y.ctid), e.d) ORDER BY least(x.ctid, y.ctid), greatest(x.ctid, y.ctid))
             FROM etl_truth e JOIN docs x ON x.id = e.a JOIN docs y ON y.id = e.b WHERE e.d <= k) AS by_ctid_same_as_brute_force
  FROM unnest(ARRAY[0, 3, 7]) k;
CREATE TABLE docs_int4 AS SELECT (id - 15000)::int4 AS id, fp FROM docs;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('docs_int4', 'fp', 3, 'id', NULL::int4))
     = (SELECT array_agg(((a - 15000)::int4, (b - 15000)::int4, d) ORDER BY a, b) FROM etl_truth WHERE d <= 3) AS int4_keys_same;
DROP TABLE docs_int4;
SELECT try_sql($$SELECT count(*) FROM simhash_pairs('docs', 'fp', 3, 'name')$$) AS text_key;
CREATE TABLE docs_parent AS SELECT id, fp FROM docs;
CREATE TABLE docs_child () INHERITS (docs_parent);
SELECT try_sql($$SELECT count(*) FROM simhash_pairs('docs_parent', 'fp', 3)$$) AS ctid_with_children;
SELECT count(*) AS by_key_with_children FROM simhash_pairs('docs_parent', 'fp', 3, 'id');
DROP TABLE docs_parent, docs_child;
-- Called directly, the reader refuses what is not a table of its own or a column it can read:
-- a view's int8 column named ctid (read as a tid it would be an address), a parent by ctid, a
-- dropped column.
CREATE TEMP VIEW fake_ctid AS SELECT 1::int8 AS fp, 4096::int8 AS ctid;
SELECT try_sql($$SELECT count(*) FROM _simhash_scan_pairs('fake_ctid', 1::int2, 0::int2, 3, 1)$$) AS view_by_ctid;
CREATE TABLE scan_gone (fp simhash64, gone int8, id int8);
ALTER TABLE scan_gone DROP COLUMN gone;
SELECT try_sql($$SELECT count(*) FROM _simhash_scan_pairs('scan_gone', 1::int2, 2::int2, 3, 1)$$) AS dropped_key;
SELECT count(*) AS huge_estimate FROM _simhash_scan_pairs('scan_gone', 1::int2, 3::int2, 3, 1e300);
DROP VIEW fake_ctid;
DROP TABLE scan_gone;
SET simhash_pg.pairs_method = 'sort';
-- The settings are registered: listed in pg_settings, an unknown value refused at SET, a
-- misspelt name under the reserved prefix refused too.
SELECT name, setting, vartype, enumvals, short_desc FROM pg_settings WHERE name LIKE 'simhash\_pg.%' ORDER BY name;
SELECT try_sql($$SET simhash_pg.pairs_method = 'fast'$$) AS unknown_method;
-- (PostgreSQL 15 and later reserve the prefix; 13 and 14 can only warn.)
SELECT current_setting('server_version_num')::int < 150000
       OR try_sql($$SET simhash_pg.pairs_methd = 'joins'$$) LIKE '42602: invalid configuration parameter name "simhash_pg.pairs_methd"%' AS misspelt_name_refused;
SELECT current_setting('simhash_pg.pairs_method') AS still;
-- The empty string of 0.3.0 still means auto.
SET simhash_pg.pairs_method = '';
SELECT count(*) AS pairs_with_the_old_default FROM simhash_pairs('docs', 'fp', 3, 'id');
RESET simhash_pg.pairs_method;
-- A big table's joins run in slices (2-3 million rows each): the same pairs. The table is
-- made to look big by its statistics, as the function sizes its plan from reltuples.
CREATE TABLE docs_big AS SELECT * FROM docs;
ANALYZE docs_big;
UPDATE pg_class SET reltuples = 4.5e6 WHERE oid = 'docs_big'::regclass;
SELECT cardinality(_simhash_pair_masks(3, 4.5e6)) AS keys, 2 AS slices_per_key; -- a power of two >= 4.5e6 / 3e6
SET client_min_messages = warning; -- progress notices depend on the machine's speed
SELECT k,
       (SELECT count(*) FROM (SELECT a::int8, b::int8, distance FROM simhash_pairs('docs_big', 'fp', k, 'id')
                              EXCEPT SELECT a, b, d FROM etl_truth WHERE d <= k) x) AS extra,
       (SELECT count(*) FROM (SELECT a, b, d FROM etl_truth WHERE d <= k
                              EXCEPT SELECT a::int8, b::int8, distance FROM simhash_pairs('docs_big', 'fp', k, 'id')) x) AS missed,
       (SELECT count(*) - count(DISTINCT (a, b)) FROM simhash_pairs('docs_big', 'fp', k, 'id')) AS repeated
  FROM unnest(ARRAY[0, 2, 3]) k;
RESET client_min_messages;
-- Keys that are arrays run as joins (gathered into one array they would stack into more
-- dimensions), forced or not: the same pairs.
CREATE TABLE array_keys AS SELECT ARRAY[id, -id] AS key, fp FROM docs;
CREATE TEMP VIEW array_keys_check AS
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('array_keys', 'fp', 3, 'key'))
     = (SELECT array_agg((ARRAY[t.a, -t.a]::text, ARRAY[t.b, -t.b]::text, t.d) ORDER BY ARRAY[t.a, -t.a]::text, ARRAY[t.b, -t.b]::text)
          FROM etl_truth t WHERE t.d <= 3) AS same_as_brute_force;
SELECT * FROM array_keys_check;
SET simhash_pg.pairs_method = 'sort';
SELECT * FROM array_keys_check;
RESET simhash_pg.pairs_method;
DROP VIEW array_keys_check;
DROP TABLE array_keys;
-- Too big for maintenance_work_mem to be read into memory: it says so, and what would do.
SET maintenance_work_mem = '64MB';
SELECT count(*) FROM simhash_pairs('docs_big', 'fp', 0, 'id');
RESET maintenance_work_mem;

-- A cancel or statement_timeout stops it (k = 10: 286 sorted passes, seconds even in a release build).
CREATE TABLE slow AS SELECT g AS id, etl_fp('slow' || g) AS fp FROM generate_series(1, 300000) g;
ANALYZE slow;
\set VERBOSITY terse
SET statement_timeout = '100ms';
SELECT count(*) FROM simhash_pairs('slow', 'fp', 10);
RESET statement_timeout;
\set VERBOSITY default

-- a < b in the key's own order (numbers as numbers), for a text key and for ctid too.
SELECT count(*) AS pairs, bool_and(a::int8 < b::int8) AS ordered FROM simhash_pairs('docs', 'fp', 3, 'id');
SELECT count(*) AS pairs, bool_and(a < b) AS ordered FROM simhash_pairs('docs', 'fp', 3, 'name');
SELECT count(*) AS pairs, bool_and(a::tid < b::tid) AS ordered FROM simhash_pairs('docs', 'fp', 3);
SELECT * FROM simhash_pairs('docs', 'fp', 3, 'name') WHERE a LIKE 'copy 7.%' OR b LIKE 'copy 7.%' ORDER BY a, b;

-- The joins it runs: one hash join per key, never a nested loop over all rows (here the first
-- of the keys for k = 3 at this size, written out as simhash_pairs writes it).
SELECT cardinality(_simhash_pair_masks(3, 3300)) AS keys_small, cardinality(_simhash_pair_masks(3, 1e6)) AS keys_1m,
       cardinality(_simhash_pair_masks(7, 1e6)) AS keys_k7;
SELECT m AS first_mask FROM unnest(_simhash_pair_masks(3, 3300)) m LIMIT 1 \gset
EXPLAIN (COSTS OFF)
SELECT x.id, y.id FROM docs x JOIN docs y ON (x.fp::int8 & :first_mask) = (y.fp::int8 & :first_mask)
 WHERE (x.id, x.tableoid, x.ctid) < (y.id, y.tableoid, y.ctid) AND NOT (hamming_distance(x.fp, y.fp) > 3);

-- simhash_chained_groups: connected components of the brute-force pairs (recursive walk), each row
-- with the smallest id of its group.
CREATE TABLE etl_groups AS
WITH RECURSIVE edges AS (SELECT a, b FROM etl_truth WHERE d <= 3 UNION ALL SELECT b, a FROM etl_truth WHERE d <= 3),
reach(start, node) AS (SELECT a, a FROM edges UNION SELECT r.start, e.b FROM reach r JOIN edges e ON e.a = r.node)
SELECT start AS id, min(node) AS cluster FROM reach GROUP BY start;
SELECT count(*) AS rows_in_groups, count(DISTINCT cluster) AS groups FROM etl_groups;
SELECT (SELECT count(*) FROM (SELECT key::int8, group_key::int8 FROM simhash_chained_groups('docs', 'fp', 3, 'id')
                              EXCEPT SELECT id, cluster FROM etl_groups) x) AS extra,
       (SELECT count(*) FROM (SELECT id, cluster FROM etl_groups
                              EXCEPT SELECT key::int8, group_key::int8 FROM simhash_chained_groups('docs', 'fp', 3, 'id')) x) AS missed;
SELECT * FROM simhash_chained_groups('docs', 'fp', 3, 'id') WHERE group_key::int8 IN (8, 9, 10);
-- Numbers are grouped by their numeric order: the cluster of 8 is named 8, not '10008'.
SELECT count(*) FILTER (WHERE group_key::int8 > key::int8) AS named_after_a_larger_key
  FROM simhash_chained_groups('docs', 'fp', 3, 'id');

-- Edge cases: no near-copies, every row a copy, empty, all NULL.
CREATE TABLE lonely AS SELECT g AS id, etl_fp('lonely' || g) AS fp FROM generate_series(1, 200) g;
SELECT count(*) AS pairs FROM simhash_pairs('lonely', 'fp', 3, 'id');
SELECT count(*) AS clustered FROM simhash_chained_groups('lonely', 'fp', 3, 'id');
CREATE TABLE clones AS SELECT g AS id, etl_fp('same') AS fp FROM generate_series(1, 40) g;
SELECT count(*) AS pairs, 40 * 39 / 2 AS expected, max(distance) FROM simhash_pairs('clones', 'fp', 0, 'id');
SELECT count(*) AS rows, count(DISTINCT group_key) AS clusters, min(group_key) FROM simhash_chained_groups('clones', 'fp', 0, 'id');
CREATE TABLE nothing (id int8, fp simhash64);
SELECT count(*) FROM simhash_pairs('nothing', 'fp');
SELECT count(*) FROM simhash_chained_groups('nothing', 'fp');
INSERT INTO nothing SELECT g, NULL FROM generate_series(1, 10) g;
SELECT count(*) FROM simhash_pairs('nothing', 'fp', 63);

-- Errors.
CREATE VIEW docs_view AS SELECT * FROM docs;
CREATE TABLE parted (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200);
INSERT INTO parted VALUES (1, '0123456789abcdef'), (150, '0123456789abcdee'), (2, 'ffffffffffffffff');
SELECT * FROM simhash_pairs('parted', 'fp', 3, 'id');
SELECT try_sql($$SELECT * FROM simhash_pairs('parted', 'fp', 3)$$);
SELECT try_sql($$SELECT * FROM simhash_pairs('docs', 'fp', -1)$$);
SELECT try_sql($$SELECT * FROM simhash_pairs('docs', 'fp', 64)$$);
SELECT try_sql($$SELECT * FROM simhash_pairs('docs', 'fp', NULL)$$);
SELECT try_sql($$SELECT * FROM simhash_pairs('docs', 'name')$$);
SELECT try_sql($$SELECT * FROM simhash_pairs('docs', 'fp', 3, 'nope')$$);
SELECT try_sql($$SELECT * FROM simhash_pairs('docs_view', 'fp')$$);
SELECT try_sql($$SELECT * FROM simhash_chained_groups('docs', NULL)$$);
SELECT try_sql($$SELECT _simhash_pair_masks(64, 10)$$);
SELECT try_sql($$SELECT * FROM _simhash_components('{a,b}', '{c}')$$);
SELECT try_sql($$SELECT * FROM _simhash_components('{a,NULL}', '{c,d}')$$);
SELECT * FROM _simhash_components('{5,9,7,2}', '{9,2,8,5}');

-- Ingest: a batch with near-copies of rows already in the target and of its own earlier rows.
CREATE TABLE corpus (id int8 GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, body text NOT NULL,
                     fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO corpus (body) VALUES
    ('The quick brown fox jumps over the lazy dog near the bank of the river.'),
    ('PostgreSQL is a powerful, open source object-relational database system.');
SELECT simhash_create_index('corpus', 'fp');
-- The staging table: the columns to load, and the fingerprint computed as in the target.
CREATE TABLE batch (body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO batch (body) VALUES
    ('The quick brown fox jumps over the lazy dog near the bank of the river!'),   -- near row 1
    ('Rust is a language empowering everyone to build reliable and efficient software.'),
    ('Rust is a language empowering everyone to build reliable and efficient software'),   -- near the row above
    ('PostgreSQL is a powerful, open source object relational database system.'),  -- near row 2
    ('SimHash fingerprints make near-duplicate detection cheap at web scale.');
SELECT b.body, (SELECT min(c.fp <-> b.fp) FROM corpus c) AS to_corpus FROM batch b;
SELECT * FROM simhash_ingest('corpus', 'fp', 'batch');
SELECT id, body FROM corpus ORDER BY id;
-- Twice in a row: nothing new the second time.
SELECT * FROM simhash_ingest('corpus', 'fp', 'batch');
SELECT count(*) FROM corpus;
SELECT count(*) AS near_pairs FROM simhash_pairs('corpus', 'fp', 3, 'id');
-- Without block indexes it still works, and says it reads the whole table per row.
CREATE TABLE corpus2 (body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT * FROM simhash_ingest('corpus2', 'fp', 'batch', 3, false);
SELECT count(*) FROM corpus2;
-- A batch of 2,000 rows full of near-copies: of target rows, and of each other in groups of
-- four (0-3 bits from a common base, so some members are near and some not), NULLs on both
-- sides. The rows simhash_ingest keeps equal those of its rule applied row by row in the
-- batch's order against the target as it stands (brute force, spelled + 0).
CREATE TABLE big_target (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO big_target SELECT g, hashtextextended(g::text, 3)::simhash64 FROM generate_series(1, 3000) g;
INSERT INTO big_target VALUES (0, NULL);
SELECT simhash_create_index('big_target', 'fp');
CREATE TABLE big_batch (id int8, fp simhash64);
INSERT INTO big_batch
SELECT 100000 + g,
       CASE WHEN g % 97 = 0 THEN NULL
            WHEN g % 3 = 0 THEN (hashtextextended((g % 3000 + 1)::text, 3) # (1::int8 << (g % 64)))::simhash64
            ELSE (hashtextextended((g / 4)::text, 5) # (((1::int8 << (g % 4)) - 1) << (g % 50)))::simhash64 END
  FROM generate_series(1, 2000) g;
CREATE TABLE ref_target AS SELECT * FROM big_target;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM big_batch ORDER BY ctid LOOP
        IF r.fp IS NULL OR NOT EXISTS (SELECT 1 FROM ref_target t WHERE (t.fp <-> r.fp) + 0 <= 3) THEN
            INSERT INTO ref_target VALUES (r.id, r.fp);
        END IF;
    END LOOP;
END
$$;
SET client_min_messages = warning; -- no progress notices, however slow the machine
SELECT * FROM simhash_ingest('big_target', 'fp', 'big_batch');
SET client_min_messages = notice;
SELECT (SELECT array_agg(id ORDER BY id) FROM big_target) = (SELECT array_agg(id ORDER BY id) FROM ref_target) AS same_rows,
       (SELECT count(*) FROM big_target) - 3001 AS inserted_by_both;
-- Errors: REPEATABLE READ with serialize, no common columns, bad k.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT try_sql($$SELECT * FROM simhash_ingest('corpus', 'fp', 'batch')$$);
ROLLBACK;
CREATE TABLE other_batch (fp simhash64 GENERATED ALWAYS AS ('0123456789abcdef'::simhash64) STORED);
SELECT try_sql($$SELECT * FROM simhash_ingest('corpus', 'fp', 'other_batch')$$);
SELECT try_sql($$SELECT * FROM simhash_ingest('corpus', 'fp', 'batch', 65)$$);
SELECT try_sql($$SELECT * FROM simhash_ingest('corpus', 'fp', 'batch', 3, NULL)$$);
SELECT try_sql($$SELECT * FROM simhash_ingest('corpus', 'body', 'batch')$$);

-- Rights: the caller's own. Without SELECT on the table, simhash_pairs fails like any query.
CREATE ROLE simhash_etl_reader;
SET ROLE simhash_etl_reader;
SELECT try_sql($$SELECT * FROM simhash_pairs('docs', 'fp')$$);
SELECT try_sql($$SELECT * FROM simhash_ingest('corpus', 'fp', 'batch')$$);
RESET ROLE;
DROP ROLE simhash_etl_reader;

-- A small table whose fingerprints crowd together (one template: every row within a few bits
-- of one fingerprint) is compared pair by pair, where the joins would check more candidates
-- than there are pairs; the same pairs as brute force, keys, NULLs and all.
CREATE TABLE crowded (id int8, fp simhash64);
INSERT INTO crowded SELECT g, ('0123456789abcdef'::simhash64::int8 # (g % 7) # ((g % 5) << 20) # ((g % 3) << 40))::simhash64
  FROM generate_series(1, 400) g;
INSERT INTO crowded VALUES (401, NULL), (NULL, '0123456789abcdef');
SELECT k, (SELECT array_agg((a, b, distance) ORDER BY a::int8, b::int8) FROM simhash_pairs('crowded', 'fp', k, 'id'))
     = (SELECT array_agg((x.id::text, y.id::text, (x.fp <-> y.fp) + 0) ORDER BY x.id, y.id)
          FROM crowded x JOIN crowded y ON x.id < y.id AND (x.fp <-> y.fp) + 0 <= k) AS same_as_brute_force
  FROM unnest(ARRAY[1, 3, 8]) k ORDER BY k;
-- The pass in memory on its own: rows of width fingerprints, numbered from 1, each pair once;
-- a set column arrives as a two-dimensional array, one row of it per table row. Whether a
-- table goes there: when its fingerprints fit maintenance_work_mem.
SELECT m, array_agg((i, j, distance) ORDER BY i, j) AS pairs
  FROM unnest(ARRAY['auto', 'compare', 'sort']) m,
       _simhash_close_pairs('{0000000000000000, 0000000000000001, ffffffffffffffff, 0000000000000003}', 1, 2, m)
 GROUP BY m ORDER BY m;
SELECT array_agg((i, j, distance) ORDER BY i, j) AS set_pairs
  FROM _simhash_close_pairs('{{0000000000000000, ffffffffffffffff}, {ffffffffffffff00, fffffffffffffff0}, {NULL, fffffffffffffff1}}', 2, 4, 'sort');
SELECT try_sql($$SELECT * FROM _simhash_close_pairs('{0000000000000000}', 1, 3, 'fast')$$) AS unknown_method,
       try_sql($$SELECT * FROM _simhash_close_pairs('{0000000000000000}', 0, 3, 'sort')$$) AS no_width,
       try_sql($$SELECT * FROM _simhash_close_pairs('{0000000000000000}', 1, 65, 'sort')$$) AS bad_k;
-- A width sizes the work (a table per position): it is a set's size, at most 16. These calls
-- asked for 240 GB and restarted the server, or looped for hours (issue 51).
SELECT try_sql($$SELECT _simhash_keep_first_of_near('{}'::simhash64[], 2147483647, 3)$$) AS keep_huge_width,
       try_sql($$SELECT _simhash_keep_first_of_verified('{}'::simhash64[], 2147483647, 3, '{}'::bigint[], '{}'::int[], 0.5)$$) AS verified_huge_width,
       try_sql($$SELECT * FROM _simhash_close_pairs('{}'::simhash64[], 2147483647, 3, 'sort')$$) AS pairs_huge_width,
       try_sql($$SELECT count(*) FROM _simhash_close_pairs('{}'::simhash64[], 16, 3, 'sort')$$) AS pairs_of_nothing;
SELECT pg_size_pretty(_simhash_pairs_memory(1e6, 1, 8)::numeric) AS million,
       pg_size_pretty(_simhash_pairs_memory(1e6, 4, 8)::numeric) AS million_sets_of_four,
       pg_size_pretty(_simhash_pairs_memory(1e6, 1, 40)::numeric) AS million_text_keys,
       _simhash_pairs_memory(1e8, 2, 8) AS too_many, _simhash_pairs_memory(1e7, 1, 104) AS too_wide;
DROP TABLE crowded;

-- The hash joins break ties between rows of one key by (tableoid, ctid), except where the key is
-- unique; a unique index counts only when it holds at once (not deferrable) under the column's
-- own collation: with a deferred one, a transaction can hold two rows of a key, and a
-- nondeterministic collation calls keys equal that another collation's index keeps apart. Both
-- give every method the same pairs (issue 63, found in review).
CREATE TABLE dk (k text UNIQUE DEFERRABLE INITIALLY DEFERRED, fp simhash64);
BEGIN;
INSERT INTO dk VALUES ('a', '0123456789abcdef'), ('a', '0123456789abcdee'), ('b', 'ffffffffffffffff');
SET LOCAL simhash_pg.pairs_method = 'joins';
SELECT a, b, distance FROM simhash_pairs('dk', 'fp', 3, 'k');
SET LOCAL simhash_pg.pairs_method = 'sort';
SELECT a, b, distance FROM simhash_pairs('dk', 'fp', 3, 'k');
ROLLBACK;
DROP TABLE dk;
DO $$
BEGIN
    -- A server built without ICU (PyPI's PostgreSQL 17) may still list ICU collations.
    BEGIN
        CREATE COLLATION simhash_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
    EXCEPTION WHEN feature_not_supported THEN
        RETURN;
    END;
    CREATE TABLE ck (k text COLLATE simhash_ci, fp simhash64);
    CREATE UNIQUE INDEX ON ck (k COLLATE "C");
    INSERT INTO ck VALUES ('A', '0123456789abcdef'), ('a', '0123456789abcdef');
    SET LOCAL simhash_pg.pairs_method = 'joins';
    CREATE TEMP TABLE ck_joins AS SELECT * FROM simhash_pairs('ck', 'fp', 3, 'k');
    SET LOCAL simhash_pg.pairs_method = 'sort';
    CREATE TEMP TABLE ck_sort AS SELECT * FROM simhash_pairs('ck', 'fp', 3, 'k');
    IF (SELECT count(*) FROM ck_joins) <> 1 OR (SELECT count(*) FROM ck_sort) <> 1 THEN
        RAISE WARNING 'pairs under a nondeterministic collation: % by joins, % sorted',
            (SELECT count(*) FROM ck_joins), (SELECT count(*) FROM ck_sort);
    END IF;
    DROP TABLE ck, ck_joins, ck_sort;
    DROP COLLATION simhash_ci;
END
$$;
