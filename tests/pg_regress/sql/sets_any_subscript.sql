-- Sets whose arrays start at another subscript. `<->` and simhash_near_any compare two sets'
-- fingerprints by position; 0.3.0's simhash_pairs, simhash_chained_groups and simhash_representative_groups read
-- them by subscript (fps[1], fps[2], …), so a set stored as '[0:3]={…}' (what some clients and
-- array functions write) never paired: 41 of 481 pairs on a table like this one. Now every
-- function pairs by position, on every method, and gives the answers of the same sets stored
-- from subscript 1, which are brute force's.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

-- 2,000 rows: 400 unrelated texts, each with four near-copies (one to four characters changed); every
-- other row's set is stored from subscript 0, every third from subscript 5.
CREATE TABLE any_lb (id int8 PRIMARY KEY, fps simhash64[]);
INSERT INTO any_lb
SELECT t * 5 + c,
       simhash_set(overlay(md5('a' || t) || ' ' || md5('b' || t) || ' ' || md5('c' || t) PLACING repeat('~', c) FROM 12),
                   4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')
  FROM generate_series(0, 399) t, generate_series(0, 4) c;
UPDATE any_lb SET fps = ('[0:3]=' || fps::text)::simhash64[] WHERE id % 2 = 0;
UPDATE any_lb SET fps = ('[5:8]=' || fps::text)::simhash64[] WHERE id % 3 = 0 AND id % 2 <> 0;
SELECT array_lower(fps, 1) AS first_subscript, count(*) FROM any_lb GROUP BY 1 ORDER BY 1;
-- The same sets, all from subscript 1.
CREATE TABLE one_lb AS SELECT id, fps[:] AS fps FROM any_lb;
ANALYZE any_lb, one_lb;

-- Brute force: every pair within k by <->.
CREATE TABLE brute AS
SELECT k, x.id::text AS a, y.id::text AS b, x.fps <-> y.fps AS distance
  FROM any_lb x JOIN any_lb y ON x.id < y.id, unnest('{0,3}'::int4[]) k
 WHERE NOT (simhash_set_distance(x.fps, y.fps) > k);
CREATE FUNCTION brute_pairs(k int4) RETURNS TABLE (a text, b text, distance int4) LANGUAGE sql AS $$
    SELECT a, b, distance FROM brute WHERE brute.k = brute_pairs.k
$$;

-- Pairs on every method, at k = 0 (exact copies: none here but the planted ones) and k = 3.
CREATE TEMP TABLE runs AS
SELECT m AS method, k,
       (SELECT count(*) FROM brute_pairs(k)) AS brute,
       (SELECT count(*) FROM (SELECT a, b, distance FROM simhash_pairs('any_lb', 'fps', k, 'id')
                              EXCEPT SELECT * FROM brute_pairs(k)) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM brute_pairs(k)
                              EXCEPT SELECT a, b, distance FROM simhash_pairs('any_lb', 'fps', k, 'id')) x) AS missed
  FROM unnest('{joins,compare,sort}'::text[]) m, unnest('{0,3}'::int4[]) k,
       LATERAL set_config('simhash_pg.pairs_method', m, false) s;
SELECT method, k, brute, extra, missed FROM runs ORDER BY method, k;
RESET simhash_pg.pairs_method;

-- Clusters and groups: the same as on the sets stored from subscript 1.
SELECT (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('any_lb', 'fps', 3, 'id'))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('one_lb', 'fps', 3, 'id')) AS same_clusters,
      (SELECT count(DISTINCT group_key) FROM simhash_chained_groups('any_lb', 'fps', 3, 'id')) AS clusters;
SELECT (SELECT array_agg((key, representative) ORDER BY key) FROM simhash_representative_groups('any_lb', 'fps', 3, 'id'))
     = (SELECT array_agg((key, representative) ORDER BY key) FROM simhash_representative_groups('one_lb', 'fps', 3, 'id')) AS same_groups;

-- A multidimensional array has no positions to pair by: a clear error.
CREATE TABLE flat_not (id int8 PRIMARY KEY, fps simhash64[]);
INSERT INTO flat_not VALUES (1, '{{0000000000000001,0000000000000002},{0000000000000003,0000000000000004}}'),
                            (2, '{0000000000000001,0000000000000002}');
SELECT try_sql($$SELECT * FROM simhash_pairs('flat_not', 'fps', 3, 'id')$$) AS multidimensional;

DROP FUNCTION brute_pairs;
DROP TABLE any_lb, one_lb, flat_not, brute;
