-- Every spelling of "within k bits" reaches the block indexes as simhash_near does
-- (src/distance_bounds.rs), and answers exactly what brute force answers. Brute force here is
-- (a <-> b) + 0 <= k: the "+ 0" hides the distance from the rewrite.
SET client_min_messages = notice;

-- 3,000 random fingerprints and, for 300 of them, copies 1-6 bits away; rows with NULL.
CREATE TABLE bounds (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO bounds SELECT g, hashtextextended(g::text, 11)::simhash64 FROM generate_series(1, 3000) g;
INSERT INTO bounds
SELECT 10000 + g, (hashtextextended(g::text, 11) # (((1::int8 << (1 + g % 6)) - 1) << (g % 58)))::simhash64
  FROM generate_series(1, 300) g;
INSERT INTO bounds VALUES (20001, NULL), (20002, NULL);
SELECT simhash_create_index('bounds', 'fp');
CREATE TABLE bounds_bitmap AS SELECT id, fp FROM bounds;
SELECT simhash_create_index('bounds_bitmap', 'fp', covering => false);
ANALYZE bounds, bounds_bitmap;

-- What a plan runs the distance test through: 'probe' (a TID scan over the covering leaf-page
-- probe), 'index' (block index scans, a BitmapOr of them for k > 0) or 'scan' (every row).
CREATE FUNCTION plan_kind(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    plan text := '';
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        plan := plan || line || E'\n';
    END LOOP;
    RETURN CASE WHEN plan LIKE '%_simhash_index_probe%' THEN 'probe'
                WHEN plan ~ 'Index Scan (on|using) \S*(block|perm)' THEN 'index'
                ELSE 'scan' END;
END
$$;
-- The ids a query returns, and whether they equal those of its brute-force twin.
CREATE FUNCTION same_rows(query text, brute text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    got int8[];
    want int8[];
BEGIN
    EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM (%s) s', query) INTO got;
    EXECUTE format('SELECT coalesce(array_agg(id ORDER BY id), ''{}'') FROM (%s) s', brute) INTO want;
    RETURN CASE WHEN got = want THEN 'same ' || cardinality(got) ELSE format('DIFFERENT: %s vs %s', got, want) END;
END
$$;

-- Each spelling, with a constant query fingerprint (row 2's, whose copy is 3 bits away) and k = 3.
-- The table without covering indexes is small enough that a sequential scan costs less: the
-- plan column shows what the index path looks like when the planner is told to avoid it.
CREATE TEMP TABLE spellings (n int, cond text, brute text);
INSERT INTO spellings VALUES
    (1, 'simhash_near(fp, q, 3)', '(fp <-> q) + 0 <= 3'),
    (2, 'fp <-> q <= 3', '(fp <-> q) + 0 <= 3'),
    (3, 'q <-> fp <= 3', '(fp <-> q) + 0 <= 3'),
    (4, 'fp <-> q < 4', '(fp <-> q) + 0 < 4'),
    (5, '3 >= fp <-> q', '(fp <-> q) + 0 <= 3'),
    (6, '4 > fp <-> q', '(fp <-> q) + 0 <= 3'),
    (7, 'hamming_distance(fp, q) <= 3', '(fp <-> q) + 0 <= 3'),
    (8, 'fp <-> q <= 3::int8', '(fp <-> q) + 0 <= 3'),
    (9, 'fp <-> q <= 3::int2', '(fp <-> q) + 0 <= 3'),
    (10, 'fp <-> q = 3', '(fp <-> q) + 0 = 3'),
    (11, 'fp <-> q BETWEEN 1 AND 3', '(fp <-> q) + 0 BETWEEN 1 AND 3'),
    (12, 'fp <-> q <= 3 AND id > 100', '(fp <-> q) + 0 <= 3 AND id > 100'),
    (13, 'fp <-> q <= 0', '(fp <-> q) + 0 <= 0'),
    (14, 'fp <-> q <= 64', '(fp <-> q) + 0 <= 64'),
    (15, 'fp <-> q <= 100', '(fp <-> q) + 0 <= 100'),
    (16, 'fp <-> q <= -1', '(fp <-> q) + 0 <= -1'),
    (17, 'fp <-> q < 0', '(fp <-> q) + 0 < 0'),
    (18, 'fp <-> q <= NULL::int4', '(fp <-> q) + 0 <= NULL::int4'),
    (19, 'fp <-> q > 3', '(fp <-> q) + 0 > 3'),
    (20, 'NOT (fp <-> q > 3)', '(fp <-> q) + 0 <= 3');
SET enable_seqscan = off;
SELECT n, cond,
       plan_kind(format('SELECT id FROM bounds WHERE %s', replace(cond, 'q', '''' || (SELECT fp FROM bounds WHERE id = 2) || '''::simhash64'))) AS covering,
       plan_kind(format('SELECT id FROM bounds_bitmap WHERE %s', replace(cond, 'q', '''' || (SELECT fp FROM bounds WHERE id = 2) || '''::simhash64'))) AS not_covering,
       same_rows(format('SELECT id FROM bounds WHERE %s', replace(cond, 'q', '''' || (SELECT fp FROM bounds WHERE id = 2) || '''::simhash64')),
                 format('SELECT id FROM bounds WHERE %s', replace(brute, 'q', '''' || (SELECT fp FROM bounds WHERE id = 2) || '''::simhash64'))) AS rows
  FROM spellings ORDER BY n;
RESET enable_seqscan;

-- Parameters, in generic plans (what drivers get after five executions), as int4, int8 and
-- int2, over the whole range of k including the ones simhash_near refuses.
SET plan_cache_mode = force_generic_plan;
PREPARE le4(simhash64, int4) AS SELECT id FROM bounds WHERE fp <-> $1 <= $2;
PREPARE lt8(simhash64, int8) AS SELECT id FROM bounds WHERE $1 <-> fp < $2;
PREPARE ge2(simhash64, int2) AS SELECT id FROM bounds WHERE $2 >= hamming_distance(fp, $1);
PREPARE eq4(simhash64, int4) AS SELECT id FROM bounds WHERE fp <-> $1 = $2;
SELECT plan_kind($$EXECUTE le4('0000000000000000', 3)$$) AS le4, plan_kind($$EXECUTE lt8('0000000000000000', 3)$$) AS lt8,
       plan_kind($$EXECUTE ge2('0000000000000000', 3)$$) AS ge2, plan_kind($$EXECUTE eq4('0000000000000000', 3)$$) AS eq4;
-- The same statements inside PL/pgSQL functions (generic plans too, under this setting).
CREATE FUNCTION le4(q simhash64, k int4) RETURNS SETOF int8 LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT id FROM bounds WHERE fp <-> q <= k; END $$;
CREATE FUNCTION lt8(q simhash64, k int8) RETURNS SETOF int8 LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT id FROM bounds WHERE q <-> fp < k; END $$;
CREATE FUNCTION ge2(q simhash64, k int2) RETURNS SETOF int8 LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT id FROM bounds WHERE k >= hamming_distance(fp, q); END $$;
CREATE FUNCTION eq4(q simhash64, k int4) RETURNS SETOF int8 LANGUAGE plpgsql AS $$ BEGIN RETURN QUERY SELECT id FROM bounds WHERE fp <-> q = k; END $$;
SELECT k,
       same_rows(format('SELECT le4 AS id FROM le4(%L, %s)', q, k), format('SELECT id FROM bounds WHERE (fp <-> %L) + 0 <= %s', q, k)) AS le4,
       same_rows(format('SELECT lt8 AS id FROM lt8(%L, %s)', q, k), format('SELECT id FROM bounds WHERE (fp <-> %L) + 0 < %s', q, k)) AS lt8,
       same_rows(format('SELECT ge2 AS id FROM ge2(%L, %s::int2)', q, k), format('SELECT id FROM bounds WHERE (fp <-> %L) + 0 <= %s', q, k)) AS ge2,
       same_rows(format('SELECT eq4 AS id FROM eq4(%L, %s)', q, k), format('SELECT id FROM bounds WHERE (fp <-> %L) + 0 = %s', q, k)) AS eq4
  FROM (SELECT fp AS q FROM bounds WHERE id = 2) s, unnest(ARRAY[-30000, -1, 0, 1, 2, 3, 5, 7, 64, 65, 30000]) k ORDER BY k;
SELECT count(*) AS null_k FROM bounds WHERE fp <-> '0000000000000000' <= NULL::int4;
EXECUTE le4('0000000000000000', NULL);
RESET plan_cache_mode;

-- Joins, anti-joins and correlated subqueries, with NULL fingerprints on either side: the
-- per-row probe (a TID scan parameterized by the outer row) instead of a nested loop over
-- every row.
CREATE TABLE arrivals (id int8, fp simhash64);
INSERT INTO arrivals SELECT id + 100000, fp FROM bounds WHERE id % 50 = 3 OR id > 10000 AND id % 7 = 0;
INSERT INTO arrivals VALUES (300001, NULL), (300002, '0000000000000000');
ANALYZE arrivals;
SELECT plan_kind('SELECT a.id FROM arrivals a JOIN bounds b ON b.fp <-> a.fp <= 3') AS inner_join,
       plan_kind('SELECT a.id FROM arrivals a WHERE NOT EXISTS (SELECT 1 FROM bounds b WHERE a.fp <-> b.fp < 4)') AS anti_join,
       plan_kind('SELECT a.id, (SELECT count(*) FROM bounds b WHERE hamming_distance(b.fp, a.fp) <= 3) FROM arrivals a') AS correlated;
SELECT same_rows('SELECT a.id * 100000 + b.id AS id FROM arrivals a JOIN bounds b ON b.fp <-> a.fp <= 3',
                 'SELECT a.id * 100000 + b.id AS id FROM arrivals a JOIN bounds b ON (b.fp <-> a.fp) + 0 <= 3') AS inner_join,
       same_rows('SELECT a.id FROM arrivals a WHERE NOT EXISTS (SELECT 1 FROM bounds b WHERE a.fp <-> b.fp < 4)',
                 'SELECT a.id FROM arrivals a WHERE NOT EXISTS (SELECT 1 FROM bounds b WHERE (a.fp <-> b.fp) + 0 < 4)') AS anti_join,
       same_rows('SELECT a.id * 1000 + (SELECT count(*) FROM bounds b WHERE hamming_distance(b.fp, a.fp) <= 3) AS id FROM arrivals a',
                 'SELECT a.id * 1000 + (SELECT count(*) FROM bounds b WHERE hamming_distance(b.fp, a.fp) + 0 <= 3) AS id FROM arrivals a') AS correlated,
       same_rows('SELECT a.id * 100000 + coalesce(b.id, 0) AS id FROM arrivals a LEFT JOIN bounds b ON b.fp <-> a.fp <= 3',
                 'SELECT a.id * 100000 + coalesce(b.id, 0) AS id FROM arrivals a LEFT JOIN bounds b ON (b.fp <-> a.fp) + 0 <= 3') AS left_join;

-- Inside a CTE, a view and a SQL function, the same plan.
CREATE VIEW near_row_5 AS SELECT id FROM bounds WHERE fp <-> (SELECT fp FROM bounds WHERE id = 5) <= 3;
CREATE FUNCTION near_of(q simhash64, k int) RETURNS SETOF int8 LANGUAGE sql STABLE
AS $$ SELECT id FROM bounds WHERE fp <-> q <= k $$;
SELECT plan_kind('WITH c AS MATERIALIZED (SELECT id FROM bounds WHERE fp <-> ''0000000000000000'' <= 3) SELECT * FROM c') AS cte,
       plan_kind('SELECT * FROM near_row_5') AS view,
       same_rows('SELECT * FROM near_row_5', 'SELECT id FROM bounds WHERE (fp <-> (SELECT fp FROM bounds WHERE id = 5)) + 0 <= 3') AS view_rows,
       same_rows('SELECT near_of AS id FROM near_of((SELECT fp FROM bounds WHERE id = 9), 3)',
                 'SELECT id FROM bounds WHERE (fp <-> (SELECT fp FROM bounds WHERE id = 9)) + 0 <= 3') AS function_rows;

-- Sets: fps <-> q <= k is simhash_near_any.
CREATE TABLE bound_sets (id int8 PRIMARY KEY, body text NOT NULL,
                         fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 3, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED);
INSERT INTO bound_sets SELECT g, md5(g::text) || ' ' || md5((g % 500)::text) FROM generate_series(1, 1500) g;
SELECT simhash_create_index('bound_sets', 'fps');
ANALYZE bound_sets;
SELECT plan_kind('SELECT id FROM bound_sets WHERE fps <-> (SELECT fps FROM bound_sets WHERE id = 4) <= 7') AS set_plan,
       same_rows('SELECT id FROM bound_sets WHERE fps <-> (SELECT fps FROM bound_sets WHERE id = 4) <= 7',
                 'SELECT id FROM bound_sets WHERE (fps <-> (SELECT fps FROM bound_sets WHERE id = 4)) + 0 <= 7') AS set_rows;

-- simhash_pairs still joins by hash (its own distance tests are spelled to be left alone).
SELECT count(*) AS pairs_within_3,
       (SELECT count(*) FROM bounds x JOIN bounds y ON x.id < y.id AND (x.fp <-> y.fp) + 0 <= 3) AS brute
  FROM simhash_pairs('bounds', 'fp', 3, 'id');
-- A predicate in a SQL function, inlined into WHERE, reaches the probe on every run of the
-- statement, not only the first: a later statement's planner root may sit at the address an
-- earlier one's had, and until 0.3.0 that statement was taken as rewritten already (a
-- sequential scan from the second run on).
CREATE FUNCTION near3(a simhash64, b simhash64) RETURNS bool LANGUAGE sql IMMUTABLE
AS $$ SELECT simhash_near(a, b, 3) $$;
EXPLAIN (COSTS OFF) SELECT id FROM bounds WHERE near3(fp, '0123456789abcdef');
EXPLAIN (COSTS OFF) SELECT id FROM bounds WHERE near3(fp, '0123456789abcdef');
EXPLAIN (COSTS OFF) SELECT id FROM bounds WHERE near3(fp, '0123456789abcdef');
SELECT same_rows($$SELECT id FROM bounds WHERE near3(fp, (SELECT fp FROM bounds WHERE id = 5))$$,
                 $$SELECT id FROM bounds WHERE (fp <-> (SELECT fp FROM bounds WHERE id = 5)) + 0 <= 3$$) AS inlined_rows;
DROP FUNCTION near3(simhash64, simhash64);
DROP VIEW near_row_5;
DROP FUNCTION near_of(simhash64, int), le4(simhash64, int4), lt8(simhash64, int8), ge2(simhash64, int2), eq4(simhash64, int4);
