-- ORDER BY fp <-> q LIMIT n (and its other spellings) reads the covering block indexes nearest
-- first (src/nearest_scan.rs, "SimHash Nearest Scan") and returns what brute force returns.
-- Brute force is spelled ORDER BY (fp <-> q) + 0, which no index serves.
SET client_min_messages = warning;

-- 4,000 random fingerprints; for 100 of them copies 1-6 bits away and two exact copies (ties);
-- a category to filter on; rows with NULL fingerprints.
CREATE TABLE nd (id int8 PRIMARY KEY, cat int4, fp simhash64) WITH (fillfactor = 60);
INSERT INTO nd SELECT g, g % 5, hashtextextended(g::text, 21)::simhash64 FROM generate_series(1, 4000) g;
INSERT INTO nd
SELECT 10000 + g * 10 + d, (g + d) % 5, (hashtextextended(g::text, 21) # (((1::int8 << d) - 1) << (g % 50)))::simhash64
  FROM generate_series(1, 100) g, generate_series(0, 6) d;
INSERT INTO nd SELECT 20000 + g, g % 5, NULL FROM generate_series(1, 7) g;
SELECT simhash_create_index('nd', 'fp');
-- The same rows with an 8-block layout, and with no block index at all.
CREATE TABLE nd8 AS SELECT * FROM nd;
ALTER TABLE nd8 ADD PRIMARY KEY (id);
SELECT simhash_create_index('nd8', 'fp', max_k => 7);
CREATE TABLE nd_plain AS SELECT * FROM nd;
ANALYZE nd, nd8, nd_plain;

-- Whether a query's plan reads the table through the nearest-first scan.
CREATE FUNCTION uses_nearest_scan(query text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line LIKE '%SimHash Nearest Scan%' THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;
-- The (id, distance) list a query returns, in its order, against its brute-force twin:
-- 'same N' or both lists.
CREATE FUNCTION same_order(query text, brute text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    got text[] := '{}';
    want text[] := '{}';
    id int8;
    d int4;
BEGIN
    FOR id, d IN EXECUTE query LOOP
        got := got || (id || ':' || coalesce(d::text, '-'));
    END LOOP;
    FOR id, d IN EXECUTE brute LOOP
        want := want || (id || ':' || coalesce(d::text, '-'));
    END LOOP;
    RETURN CASE WHEN got = want THEN 'same ' || cardinality(got) ELSE format('DIFFERENT: %s vs %s', got, want) END;
END
$$;

-- The plan: a Limit over the scan, the distance as its order, the block indexes it reads.
EXPLAIN (COSTS OFF) SELECT id FROM nd ORDER BY fp <-> '0123456789abcdef' LIMIT 5;

-- Every spelling takes the scan; a distance inside another expression, DESC, NULLS FIRST and
-- the table without block indexes do not.
SELECT n, uses_nearest_scan(format('SELECT id FROM %s ORDER BY %s LIMIT 5', tbl, ord)) AS nearest_scan, ord, tbl
  FROM (VALUES (1, 'nd', 'fp <-> ''0123456789abcdef'''),
               (2, 'nd', '''0123456789abcdef'' <-> fp'),
               (3, 'nd', 'hamming_distance(fp, ''0123456789abcdef'')'),
               (4, 'nd', 'hamming_distance(''0123456789abcdef'', fp)'),
               (5, 'nd', 'fp <-> ''0123456789abcdef'', id'),
               (6, 'nd8', 'fp <-> ''0123456789abcdef'''),
               (7, 'nd', 'fp <-> (SELECT fp FROM nd WHERE id = 3)'),
               (8, 'nd', '(fp <-> ''0123456789abcdef'') + 0'),
               (9, 'nd', 'fp <-> ''0123456789abcdef'' DESC'),
               (10, 'nd', 'fp <-> ''0123456789abcdef'' NULLS FIRST'),
               (11, 'nd_plain', 'fp <-> ''0123456789abcdef'''),
               (12, 'nd', 'fp <-> fp')) v(n, tbl, ord)
 ORDER BY n;

-- Exactness: 40 query fingerprints (rows' own, near-copy centres, random values) x LIMIT 1, 5,
-- 60 and more than the table (NULL rows last) x both layouts; ties cut by id.
CREATE TEMP TABLE queries AS
SELECT q FROM (SELECT fp AS q FROM nd WHERE id IN (1, 2, 3, 17, 99, 10010, 10023, 10051, 10100, 3999)) a
UNION ALL SELECT hashtextextended('random' || g, 3)::simhash64 FROM generate_series(1, 30) g;
SELECT tbl, lim, count(*) AS queries,
       count(*) FILTER (WHERE same_order(
           format('SELECT id, fp <-> %L d FROM %s ORDER BY fp <-> %L, id LIMIT %s', q, tbl, q, lim),
           format('SELECT id, (fp <-> %L) + 0 d FROM %s ORDER BY (fp <-> %L) + 0, id LIMIT %s', q, tbl, q, lim))
           LIKE 'same%') AS same
  FROM queries, (VALUES ('nd'), ('nd8')) t(tbl), (VALUES (1), (5), (60), (5000)) l(lim)
 GROUP BY tbl, lim ORDER BY tbl, lim;
-- Without a tie-breaker the distances are brute force's, in order.
SELECT count(*) FILTER (WHERE got = want) AS same, count(*) AS queries
  FROM queries,
       LATERAL (SELECT array_agg(d) AS got FROM (SELECT fp <-> q AS d FROM nd ORDER BY fp <-> q LIMIT 25) s) a,
       LATERAL (SELECT array_agg(d) AS want FROM (SELECT (fp <-> q) + 0 AS d FROM nd ORDER BY 1 LIMIT 25) s) b;

-- Sort keys after the distance that are columns are the scan's own (it sorts each distance's
-- rows by them, no Incremental Sort above it): ascending, descending, NULLs first or last, text
-- in a collation; one that is not a column is sorted above the scan.
CREATE TABLE nd_keys AS SELECT id, fp, CASE WHEN id % 11 = 0 THEN NULL ELSE (id * 37) % 101 END AS grp,
                               md5(id::text) COLLATE "C" AS label FROM nd;
SELECT simhash_create_index('nd_keys', 'fp');
ANALYZE nd_keys;
EXPLAIN (COSTS OFF) SELECT id FROM nd_keys ORDER BY fp <-> '0123456789abcdef', grp DESC, id LIMIT 5;
SELECT n, keys, count(*) FILTER (WHERE same_order(
           format('SELECT id, fp <-> %L FROM nd_keys ORDER BY fp <-> %L, %s LIMIT 30', q, q, keys),
           format('SELECT id, (fp <-> %L) + 0 FROM nd_keys ORDER BY (fp <-> %L) + 0, %s LIMIT 30', q, q, keys))
           LIKE 'same%') AS same, count(*) AS queries,
       uses_nearest_scan(format('SELECT id FROM nd_keys ORDER BY fp <-> %L, %s LIMIT 30', '0123456789abcdef', keys)) AS nearest_scan
  FROM queries, (VALUES (1, 'id'), (2, 'id DESC'), (3, 'grp, id'), (4, 'grp DESC NULLS LAST, id DESC'),
                        (5, 'grp NULLS FIRST, label'), (6, 'label DESC, id'), (7, 'grp + 0, id')) k(n, keys)
 GROUP BY n, keys ORDER BY n;
-- Ties of NULL fingerprints, and of a NULL query (every distance NULL), sorted by the keys too.
SELECT same_order($$SELECT id, fp <-> '0123456789abcdef' FROM nd_keys ORDER BY fp <-> '0123456789abcdef', id DESC LIMIT 5000$$,
                  $$SELECT id, (fp <-> '0123456789abcdef') + 0 FROM nd_keys ORDER BY 2, id DESC LIMIT 5000$$) AS null_rows_sorted,
       same_order($$SELECT id, fp <-> NULL FROM nd_keys ORDER BY fp <-> NULL::simhash64, id LIMIT 20$$,
                  $$SELECT id, NULL::int4 FROM nd_keys ORDER BY id LIMIT 20$$) AS null_query_sorted;
DROP TABLE nd_keys;

-- Other conditions are checked on every row the scan returns: a LIMIT over a filter reads rings
-- until enough rows pass.
SELECT count(*) FILTER (WHERE same_order(
           format('SELECT id, fp <-> %L d FROM nd WHERE cat = 2 AND id %% 7 <> 0 ORDER BY fp <-> %L, id LIMIT 10', q, q),
           format('SELECT id, (fp <-> %L) + 0 d FROM nd WHERE cat = 2 AND id %% 7 <> 0 ORDER BY 2, id LIMIT 10', q))
           LIKE 'same%') AS same, count(*) AS queries
  FROM queries;
SELECT uses_nearest_scan($$SELECT id FROM nd WHERE cat = 2 ORDER BY fp <-> '0123456789abcdef' LIMIT 10$$) AS filtered;

-- The query side NULL: every distance is NULL, every row qualifies.
SELECT count(*) FROM (SELECT id FROM nd ORDER BY fp <-> NULL::simhash64 LIMIT 100000) s;
-- NULL fingerprints come last, after every other row.
SELECT array_agg(id ORDER BY id) AS last_rows
  FROM (SELECT id, fp FROM nd ORDER BY fp <-> '0123456789abcdef' LIMIT 5000 OFFSET 4700) s WHERE fp IS NULL;

-- Parameters: custom and generic plans, LIMIT a parameter too.
PREPARE nearest(simhash64, int8) AS SELECT id, fp <-> $1 AS d FROM nd ORDER BY fp <-> $1, id LIMIT $2;
SET plan_cache_mode = force_generic_plan;
SELECT uses_nearest_scan('EXECUTE nearest(''0123456789abcdef'', 5)') AS generic_plan;
SELECT count(*) FILTER (WHERE same_order(format('EXECUTE nearest(%L, 7)', q),
           format('SELECT id, (fp <-> %L) + 0 d FROM nd ORDER BY 2, id LIMIT 7', q)) LIKE 'same%') AS same,
       count(*) AS queries
  FROM queries;
RESET plan_cache_mode;
DEALLOCATE nearest;

-- Per outer row (LATERAL): each new row's three nearest archive rows, the scan rescanned with
-- each outer fingerprint; a NULL outer fingerprint gets three rows with NULL distances.
CREATE TABLE nd_new (nid int4, fp simhash64);
INSERT INTO nd_new SELECT g, (SELECT fp FROM nd WHERE id = 10000 + g * 10 + 3) FROM generate_series(1, 20) g;
INSERT INTO nd_new SELECT 100 + g, hashtextextended('new' || g, 5)::simhash64 FROM generate_series(1, 20) g;
INSERT INTO nd_new VALUES (999, NULL);
ANALYZE nd_new;
SELECT uses_nearest_scan($$SELECT n.nid, d.id FROM nd_new n CROSS JOIN LATERAL
                           (SELECT id FROM nd ORDER BY nd.fp <-> n.fp LIMIT 3) d$$) AS lateral_scan;
SELECT same_order(
    $$SELECT n.nid * 100000 + d.id, d.dist FROM nd_new n CROSS JOIN LATERAL
        (SELECT id, nd.fp <-> n.fp AS dist FROM nd ORDER BY nd.fp <-> n.fp, id LIMIT 3) d ORDER BY n.nid, d.dist, d.id$$,
    $$SELECT n.nid * 100000 + d.id, d.dist FROM nd_new n CROSS JOIN LATERAL
        (SELECT id, (nd.fp <-> n.fp) + 0 AS dist FROM nd ORDER BY 2, id LIMIT 3) d ORDER BY n.nid, d.dist, d.id$$)
    AS lateral_rows;
SELECT count(*) AS null_outer_rows FROM nd_new n CROSS JOIN LATERAL
       (SELECT id FROM nd ORDER BY nd.fp <-> n.fp LIMIT 3) d WHERE n.fp IS NULL;

-- Partitions: each partition's scan, merged in distance order.
CREATE TABLE ndp (id int8, cat int4, fp simhash64) PARTITION BY LIST (cat);
CREATE TABLE ndp_a PARTITION OF ndp FOR VALUES IN (0, 1);
CREATE TABLE ndp_b PARTITION OF ndp FOR VALUES IN (2, 3);
CREATE TABLE ndp_c (cat int4, fp simhash64, id int8); -- columns in another order
ALTER TABLE ndp ATTACH PARTITION ndp_c FOR VALUES IN (4);
INSERT INTO ndp SELECT id, cat, fp FROM nd;
SELECT simhash_create_index('ndp', 'fp');
ANALYZE ndp;
SELECT uses_nearest_scan($$SELECT id FROM ndp ORDER BY fp <-> '0123456789abcdef' LIMIT 5$$) AS partitioned;
SELECT count(*) FILTER (WHERE same_order(
           format('SELECT id, fp <-> %L d FROM ndp ORDER BY fp <-> %L, id LIMIT 12', q, q),
           format('SELECT id, (fp <-> %L) + 0 d FROM nd ORDER BY 2, id LIMIT 12', q)) LIKE 'same%') AS same,
       count(*) AS queries
  FROM queries;

-- Rows updated in place (HOT: the indexes keep pointing at the chain's root), deleted and
-- inserted after the indexes were built: the scan returns each row's visible version once.
UPDATE nd SET cat = cat + 10 WHERE id % 9 = 0;
DELETE FROM nd WHERE id % 13 = 0;
INSERT INTO nd SELECT 30000 + g, 1, (hashtextextended(g::text, 21) # 1)::simhash64 FROM generate_series(1, 50) g;
SELECT count(*) FILTER (WHERE same_order(
           format('SELECT id, fp <-> %L d FROM nd ORDER BY fp <-> %L, id LIMIT 40', q, q),
           format('SELECT id, (fp <-> %L) + 0 d FROM nd ORDER BY 2, id LIMIT 40', q)) LIKE 'same%') AS same,
       count(*) AS queries
  FROM queries;

-- What the scan hands on: ctid and tableoid; row locks; a scrollable cursor (materialised).
SELECT (SELECT ctid FROM nd ORDER BY fp <-> '0123456789abcdef' LIMIT 1)
     = (SELECT ctid FROM nd ORDER BY (fp <-> '0123456789abcdef') + 0, id LIMIT 1) AS same_ctid,
       (SELECT tableoid::regclass FROM nd ORDER BY fp <-> '0123456789abcdef' LIMIT 1) AS tableoid;
BEGIN;
SELECT id, fp <-> (SELECT fp FROM nd WHERE id = 10013) AS d FROM nd
 ORDER BY fp <-> (SELECT fp FROM nd WHERE id = 10013), id LIMIT 3 FOR UPDATE;
DECLARE c SCROLL CURSOR FOR SELECT id FROM nd ORDER BY fp <-> (SELECT fp FROM nd WHERE id = 10013), id LIMIT 4;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
COMMIT;
-- WHERE CURRENT OF. Without tie keys the scan hands on each row's TID, and a cursor over it
-- updates the row it is on, in every phase (rings, HOT chains, NULL fingerprints). With tie
-- keys a distance's rows come out of a sort, without their TIDs: the cursor is not a simply
-- updatable scan (24000), as over PostgreSQL's own Sort. A FOR UPDATE cursor's scan keeps no
-- tie keys (an Incremental Sort above it orders them), and CURRENT OF uses the row lock's TID.
CREATE FUNCTION current_of_rows(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    c refcursor;
    fetched int8;
    updated int8;
    n int := 0;
    wrong int := 0;
BEGIN
    OPEN c FOR EXECUTE query;
    LOOP
        FETCH c INTO fetched;
        EXIT WHEN NOT FOUND;
        UPDATE nd SET cat = cat WHERE CURRENT OF c RETURNING id INTO updated;
        n := n + 1;
        IF updated IS DISTINCT FROM fetched THEN
            wrong := wrong + 1;
        END IF;
    END LOOP;
    CLOSE c;
    RETURN format('%s rows, %s wrong', n, wrong);
END
$$;
EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT id FROM nd WHERE cat <> 2 ORDER BY fp <-> '0123456789abcdef';
BEGIN;
SELECT current_of_rows($$SELECT id FROM nd WHERE cat <> 2 ORDER BY fp <-> '0123456789abcdef'$$) AS without_ties,
       (SELECT count(*) FROM nd WHERE cat <> 2) AS rows;
ROLLBACK;
EXPLAIN (COSTS OFF) DECLARE c CURSOR FOR SELECT id FROM nd ORDER BY fp <-> '0123456789abcdef', id LIMIT 4;
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM nd ORDER BY fp <-> (SELECT fp FROM nd WHERE id = 10013), id LIMIT 4;
FETCH 2 FROM c;
UPDATE nd SET cat = cat WHERE CURRENT OF c;
ROLLBACK;
BEGIN;
DECLARE c CURSOR FOR SELECT id FROM nd ORDER BY fp <-> (SELECT fp FROM nd WHERE id = 10013), id LIMIT 4 FOR UPDATE;
FETCH 2 FROM c;
UPDATE nd SET cat = cat WHERE CURRENT OF c RETURNING id;
ROLLBACK;
-- xmin is not in the scan's rows: the planner sorts instead, with the same answer.
SELECT uses_nearest_scan($$SELECT xmin, id FROM nd ORDER BY fp <-> '0123456789abcdef' LIMIT 5$$) AS with_xmin;

-- A set column (simhash_set) is ordered by a scan and a sort, as before.
CREATE TABLE nd_sets (id int8, body text, fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 2)) STORED);
INSERT INTO nd_sets (id, body) SELECT g, 'short title number ' || g FROM generate_series(1, 50) g;
SELECT uses_nearest_scan($$SELECT id FROM nd_sets ORDER BY fps <-> simhash_set('short title number 7', 2) LIMIT 1$$) AS sets;

DROP TABLE nd, nd8, nd_plain, nd_new, ndp, nd_sets;
DROP FUNCTION uses_nearest_scan(text), same_order(text, text), current_of_rows(text);
