-- Sets of seeded fingerprints (simhash_set): "near when any same-position pair is within k".
-- Every indexed answer is compared with brute force over the elements, written here in SQL.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = notice;

-- A set's element i is simhash with seed seed + i - 1; element 1 is simhash itself.
SELECT (simhash_set('the council approves the budget', 3))[1] = simhash('the council approves the budget') AS first_is_simhash,
       (simhash_set('the council approves the budget', 3, '{"seed": 5}'))[3]
         = simhash('the council approves the budget', '{"seed": 7}') AS third_has_seed_plus_two,
       cardinality(simhash_set('x', 16)) AS sixteen;
SELECT simhash_set_distance('{0000000000000000,00000000000000ff}', '{000000000000000f,00000000000000fe}') AS nearest_pair,
       '{0000000000000000}'::simhash64[] <-> '{0000000000000003,0000000000000000}' AS up_to_the_shorter,
       simhash_set_distance('{NULL}', '{0000000000000000}') AS no_common_position,
       simhash_near_any('{0000000000000000,00000000000000ff}', '{ffffffffffffffff,00000000000000fe}', 1) AS near,
       simhash_near('0000000000000000', '0000000000000007', 3) AS untyped_literals_still_mean_one_fingerprint;
SELECT try_sql($$SELECT simhash_set('x', 0)$$) AS zero_fingerprints,
       try_sql($$SELECT simhash_set('x', 17)$$) AS seventeen,
       try_sql($$SELECT simhash_near_any('{0000000000000000}', '{0000000000000000}', 65)$$) AS k_65;

-- Short titles: 2,000 of eight pseudo-words, and for 150 of them copies with one word changed,
-- one character changed, and a word dropped. Fingerprints: 4 per title, character bigrams.
CREATE FUNCTION title_of(g int) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT string_agg(substr(md5(g || ':' || w), 1, 2 + w % 4), ' ' ORDER BY w) FROM generate_series(1, 8) w $$;
CREATE TABLE titles (id int8 PRIMARY KEY, title text NOT NULL,
                     fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED);
INSERT INTO titles (id, title) SELECT g, title_of(g) FROM generate_series(1, 2000) g;
INSERT INTO titles (id, title)
SELECT 10000 * v + g,
       CASE v WHEN 1 THEN regexp_replace(title_of(g), '^\S+', 'changed')
              WHEN 2 THEN overlay(title_of(g) PLACING 'z' FROM 4 FOR 1)
              ELSE regexp_replace(title_of(g), ' \S+$', '') END
  FROM generate_series(1, 150) g, generate_series(1, 3) v;
INSERT INTO titles (id, title) VALUES (90001, ''), (90002, ''); -- no features: equal sets
CREATE TABLE titles8 AS SELECT id, title FROM titles;
ALTER TABLE titles8 ADD PRIMARY KEY (id),
    ADD COLUMN fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED;
SELECT simhash_create_index('titles', 'fps');
SELECT simhash_create_index('titles8', 'fps', max_k => 7);
SELECT element, count(*) AS indexes, bool_and(covering) AS covering, min(blocks) AS blocks
  FROM simhash_block_columns('titles') GROUP BY element ORDER BY element;
SELECT count(*) AS indexes_of_titles8 FROM simhash_block_columns('titles8');

-- The truth: each (query, row) pair's smallest same-position distance, element by element.
CREATE TABLE set_queries AS
SELECT t.id AS qid, t.fps AS q FROM titles t WHERE t.id % 97 = 0 OR t.id IN (10001, 20002, 30003, 90001);
INSERT INTO set_queries VALUES (-1, (simhash_set('changed 4d 7ea', 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}'))[1:2]),
                               (-2, ARRAY[NULL, (SELECT fps[2] FROM titles WHERE id = 5)]::simhash64[]),
                               (-3, (SELECT fps || fps FROM titles WHERE id = 7));
CREATE TABLE set_truth AS
SELECT s.qid, t.id,
       (SELECT min(hamming_distance(a, b)) FROM unnest(t.fps, s.q) u(a, b)) AS d
  FROM set_queries s, titles t;
SELECT count(*) FILTER (WHERE d <= 3) AS within_3, count(*) FILTER (WHERE d <= 7) AS within_7,
       count(*) FILTER (WHERE d <= 12) AS within_12
  FROM set_truth;

-- Through the indexes (a TID scan over every element's probes) against the truth, k = 0..12,
-- both layouts.
CREATE FUNCTION set_plan(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        RETURN NEXT regexp_replace(line, '''\{[^}]*\}''::regclass\[\]', '''{…}''::regclass[]', 'g');
    END LOOP;
END $$;
SELECT set_plan($$SELECT id FROM titles WHERE simhash_near_any(fps, simhash_set('a b c', 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}'), 3)$$);
SELECT set_plan($$SELECT id FROM titles8 WHERE simhash_near_any(fps, simhash_set('a b c', 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}'), 7)$$);
CREATE FUNCTION set_mismatches(tbl regclass, k int) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE bad int8;
BEGIN
    EXECUTE format(
        'SELECT count(*) FROM set_queries s,
                LATERAL (SELECT array_agg(t.id ORDER BY t.id) AS got FROM %s t WHERE simhash_near_any(t.fps, s.q, %s)) g,
                LATERAL (SELECT array_agg(x.id ORDER BY x.id) AS want FROM set_truth x WHERE x.qid = s.qid AND x.d <= %s) w
          WHERE g.got IS DISTINCT FROM w.want', tbl, k, k) INTO bad;
    RETURN bad;
END $$;
SELECT k, set_mismatches('titles', k) AS titles, set_mismatches('titles8', k) AS titles8
  FROM generate_series(0, 12) k ORDER BY k;
-- The form above is planned per query with its value; a generic plan takes the set and k as
-- parameters (PL/pgSQL's own statements, prepared once), checked for every query at k = 2 and 9.
CREATE FUNCTION set_near_result(q simhash64[], k int4) RETURNS int8[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT array_agg(t.id ORDER BY t.id) FROM titles t WHERE simhash_near_any(t.fps, q, k));
END $$;
SET plan_cache_mode = force_generic_plan;
PREPARE near_set(simhash64[], int4) AS SELECT id FROM titles WHERE simhash_near_any(fps, $1, $2);
SELECT set_plan('EXECUTE near_set(''{0000000000000000}'', 3)');
SELECT k, count(*) FILTER (WHERE got IS DISTINCT FROM want) AS mismatches
  FROM set_queries s, unnest(ARRAY[2, 9]) k,
       LATERAL (SELECT array_agg(x.id ORDER BY x.id) AS want FROM set_truth x WHERE x.qid = s.qid AND x.d <= k) w,
       LATERAL (SELECT (SELECT * FROM set_near_result(s.q, k)) AS got) g
 GROUP BY k ORDER BY k;
RESET plan_cache_mode;

-- Near-copies found: the planted copies within 6 of their original, by edit.
SELECT v AS edit, count(*) FILTER (WHERE o.fps <-> c.fps <= 6) AS within_6, count(*) AS copies
  FROM titles o JOIN titles c ON c.id % 10000 = o.id AND c.id > 10000 AND c.id < 90000, LATERAL (SELECT c.id / 10000 AS v) e
 GROUP BY v ORDER BY v;

-- All pairs and groups within k over sets, against brute force over the elements.
CREATE TABLE set_pairs_truth AS
SELECT x.id AS a, y.id AS b, (SELECT min(hamming_distance(p, q)) FROM unnest(x.fps, y.fps) u(p, q)) AS d
  FROM titles x JOIN titles y ON x.id < y.id;
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT k, (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('titles', 'fps', k, 'id', NULL::int8))
        = (SELECT array_agg((a, b, d) ORDER BY a, b) FROM set_pairs_truth WHERE d <= k) AS same_pairs,
       (SELECT count(*) FROM set_pairs_truth WHERE d <= k) AS pairs
  FROM unnest(ARRAY[0, 3, 6]) k ORDER BY k;
SELECT count(*) AS rows_in_groups, count(DISTINCT group_key) AS groups
  FROM simhash_chained_groups('titles', 'fps', 6, 'id', NULL::int8);
SET client_min_messages = notice;

-- A small set table whose fingerprints crowd together (one template): simhash_pairs compares
-- every pair there (fewer checks than the joins' candidates); the same pairs as brute force.
CREATE TABLE crowded_sets (id int8, fps simhash64[]);
INSERT INTO crowded_sets
SELECT g, ARRAY[('0123456789abcdef'::simhash64::int8 # (g % 7) # ((g % 5) << 20))::simhash64,
                ('fedcba9876543210'::simhash64::int8 # ((g % 3) << 40) # ((g % 11) << 50))::simhash64]
  FROM generate_series(1, 300) g;
INSERT INTO crowded_sets VALUES (301, NULL), (NULL, '{0123456789abcdef}'), (302, '{0123456789abcdee}');
SELECT k, (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('crowded_sets', 'fps', k, 'id', NULL::int8))
        = (SELECT array_agg((x.id, y.id, d) ORDER BY x.id, y.id)
             FROM crowded_sets x JOIN crowded_sets y ON x.id < y.id,
                  LATERAL (SELECT min(hamming_distance(p, q)) AS d FROM unnest(x.fps, y.fps) u(p, q)) m
            WHERE d <= k) AS same_as_brute_force
  FROM unnest(ARRAY[0, 3, 8]) k ORDER BY k;
-- The same by joins, by sorting in memory and by comparing every pair, forced.
CREATE TEMP VIEW crowded_sets_check AS
SELECT current_setting('simhash_pg.pairs_method') AS method,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('crowded_sets', 'fps', 3, 'id', NULL::int8))
     = (SELECT array_agg((x.id, y.id, d) ORDER BY x.id, y.id)
          FROM crowded_sets x JOIN crowded_sets y ON x.id < y.id,
               LATERAL (SELECT min(hamming_distance(p, q)) AS d FROM unnest(x.fps, y.fps) u(p, q)) m
         WHERE d <= 3) AS same_as_brute_force;
-- (Quiet: a slow or busy machine would add simhash_pairs' progress NOTICEs.)
SET client_min_messages = warning;
SET simhash_pg.pairs_method = 'joins';
SELECT * FROM crowded_sets_check;
SET simhash_pg.pairs_method = 'sort';
SELECT * FROM crowded_sets_check;
SET simhash_pg.pairs_method = 'compare';
SELECT * FROM crowded_sets_check;
RESET simhash_pg.pairs_method;
RESET client_min_messages;
DROP VIEW crowded_sets_check;
DROP TABLE crowded_sets;

-- Ingest of a batch of titles, half of them near-copies: the same rows go in whether the
-- lookups use the indexes or scan the table.
CREATE TABLE title_batch (id int8 PRIMARY KEY, title text NOT NULL,
                          fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED);
INSERT INTO title_batch (id, title)
SELECT 50000 + g, CASE WHEN g % 2 = 0 THEN overlay(title_of(g) PLACING 'q' FROM 2 FOR 1) ELSE title_of(g + 5000) END
  FROM generate_series(1, 200) g;
CREATE TABLE titles_seq AS SELECT id, title FROM titles;
ALTER TABLE titles_seq ADD COLUMN fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED;
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT * FROM simhash_ingest('titles', 'fps', 'title_batch', 6);
SET enable_tidscan = off;
SELECT * FROM simhash_ingest('titles_seq', 'fps', 'title_batch', 6);
RESET enable_tidscan;
SET client_min_messages = notice;
SELECT (SELECT array_agg(id ORDER BY id) FROM titles) = (SELECT array_agg(id ORDER BY id) FROM titles_seq) AS same_rows;

-- What a set column needs, and what it is refused.
CREATE TABLE loose_sets (id int8, fps simhash64[]);
SELECT try_sql($$SELECT simhash_create_index('loose_sets', 'fps')$$) AS not_generated;
SELECT try_sql($$SELECT simhash_create_index('titles', 'fps', covering => false)$$) AS not_covering;
SELECT try_sql($$SELECT * FROM simhash_nearest('titles', 'fps', '0000000000000000', 3, 'id')$$) AS nearest;
SELECT simhash_create_index('titles', 'fps');
SELECT simhash_drop_index('titles', 'fps');
SELECT count(*) AS block_indexes_left FROM simhash_block_columns('titles');
