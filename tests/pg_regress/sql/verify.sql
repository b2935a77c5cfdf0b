-- The exact check of simhash_pairs, simhash_chained_groups and simhash_ingest (verify => '{"column":
-- ..., "min_jaccard": ..., "options": ...}'), against brute force: every pair within k bits whose texts have
-- simhash_jaccard >= min_jaccard, computed on all rows. The fingerprints here are made up (not
-- simhash of the text), so that which pairs SimHash proposes and which the texts confirm vary
-- independently.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all

-- 400 rows: fingerprints in families of 12 near-copies (0-6 bits apart), every third row
-- unrelated; texts of 10 words of the family, each replaced by a word of the row's own with
-- probability 1/4 (so that a family's texts have Jaccard from about 0.2 to 1), every 50th NULL.
CREATE FUNCTION vf_text(i int8) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN i % 50 = 0 THEN NULL ELSE
           array_to_string(ARRAY(SELECT CASE WHEN hashint8extended(i * 100 + j, 0) & 3 = 0 THEN 'v' || i || '_' || j
                                             ELSE 'w' || (i / 12 * 100 + j) END
                                   FROM generate_series(1, 10) j), ' ') END
$$;
CREATE FUNCTION vf_fp(i int8) RETURNS simhash64 LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN i % 3 = 0 THEN hashint8extended(i, 0)::simhash64
                ELSE (hashint8extended(i / 12, 0) # ((1::int8 << (i % 7)::int4) - 1))::simhash64 END
$$;
CREATE TABLE vf (id int8 PRIMARY KEY, body text, fp simhash64);
INSERT INTO vf SELECT g, vf_text(g), vf_fp(g) FROM generate_series(1, 400) g;
ANALYZE vf;

-- Brute force: every pair of rows, its distance and the Jaccard similarity of its texts for
-- the two verify_options used here (each text's feature set computed once), then the pairs
-- of ids within k whose texts pass.
CREATE TABLE vf_all AS
WITH f AS (SELECT id, fp, simhash_feature_set(body, '{"ngram": 1}') AS f1, simhash_feature_set(body, '{"ngram": 2}') AS f2 FROM vf)
SELECT x.id AS a, y.id AS b, (x.fp <-> y.fp) + 0 AS distance,
       simhash_jaccard(x.f1, y.f1) AS j1, simhash_jaccard(x.f2, y.f2) AS j2
  FROM f x JOIN f y ON x.id < y.id;
CREATE FUNCTION vf_brute(k int4, t float8, opts jsonb) RETURNS TABLE (a int8, b int8) LANGUAGE sql AS $$
    SELECT a, b FROM vf_all WHERE distance <= k AND CASE WHEN opts = '{"ngram": 1}' THEN j1 ELSE j2 END >= t
$$;
CREATE FUNCTION vf_same(k int4, t float8, opts jsonb) RETURNS TABLE (pairs int8, as_text bool, as_key_type bool, by_ctid bool)
LANGUAGE sql AS $$
    SELECT (SELECT count(*) FROM vf_brute(k, t, opts)),
           (SELECT array_agg(ROW(p.a::int8, p.b::int8) ORDER BY p.a::int8, p.b::int8)
              FROM simhash_pairs('vf', 'fp', k, 'id', verify => jsonb_build_object('column', 'body', 'min_jaccard', t, 'options', opts)) p)
           IS NOT DISTINCT FROM (SELECT array_agg(ROW(v.a, v.b) ORDER BY v.a, v.b) FROM vf_brute(k, t, opts) v),
           (SELECT array_agg(ROW(p.a, p.b) ORDER BY p.a, p.b)
              FROM simhash_pairs('vf', 'fp', k, 'id', NULL::int8, jsonb_build_object('column', 'body', 'min_jaccard', t, 'options', opts)) p)
           IS NOT DISTINCT FROM (SELECT array_agg(ROW(v.a, v.b) ORDER BY v.a, v.b) FROM vf_brute(k, t, opts) v),
           (SELECT array_agg(ROW(least(x.id, y.id), greatest(x.id, y.id)) ORDER BY least(x.id, y.id), greatest(x.id, y.id))
              FROM simhash_pairs('vf', 'fp', k, NULL, NULL::tid, jsonb_build_object('column', 'body', 'min_jaccard', t, 'options', opts)) p
              JOIN vf x ON x.ctid = p.a JOIN vf y ON y.ctid = p.b)
           IS NOT DISTINCT FROM (SELECT array_agg(ROW(v.a, v.b) ORDER BY v.a, v.b) FROM vf_brute(k, t, opts) v)
$$;
SELECT k, t, s.*
  FROM unnest(ARRAY[0, 3, 6, 12]) k, unnest(ARRAY[0, 0.3, 0.5, 0.8, 1]::float8[]) t, vf_same(k, t, '{"ngram": 1}') s
 ORDER BY k, t;
-- Every pair proposed (k = 63): the check alone decides.
SELECT * FROM vf_same(63, 0.3, '{"ngram": 1}');
-- Word 2-shingles, and the distances come back unchanged.
SELECT * FROM vf_same(6, 0.4, '{"ngram": 2}');
SELECT bool_and(p.distance = (x.fp <-> y.fp)) AS distances_right
  FROM simhash_pairs('vf', 'fp', 12, 'id', verify => '{"column": "body", "min_jaccard": 0.3}') p
  JOIN vf x ON x.id = p.a::int8 JOIN vf y ON y.id = p.b::int8;
-- A pair with a NULL text never passes, even at min_jaccard 0.
SELECT count(*) AS pairs_with_a_null_text
  FROM simhash_pairs('vf', 'fp', 63, 'id', verify => '{"column": "body", "min_jaccard": 0}') p
  JOIN vf x ON x.id = p.a::int8 JOIN vf y ON y.id = p.b::int8
 WHERE x.body IS NULL OR y.body IS NULL;

-- simhash_chained_groups through verified pairs: the connected components of the brute-force pairs
-- (each row with the smallest id of its component, by a recursive walk).
CREATE FUNCTION vf_components(k int4, t float8) RETURNS TABLE (key int8, group_key int8) LANGUAGE sql AS $$
    WITH RECURSIVE e AS (SELECT a, b FROM vf_brute(k, t, '{"ngram": 1}') UNION ALL SELECT b, a FROM vf_brute(k, t, '{"ngram": 1}')),
         reach(node, other) AS (SELECT a, a FROM e UNION SELECT r.node, e.b FROM reach r JOIN e ON e.a = r.other)
    SELECT node, min(other) FROM reach GROUP BY node
$$;
SELECT k, t,
       (SELECT array_agg(ROW(c.key, c.group_key) ORDER BY c.key)
          FROM simhash_chained_groups('vf', 'fp', k, 'id', NULL::int8, jsonb_build_object('column', 'body', 'min_jaccard', t, 'options', '{"ngram": 1}'::jsonb)) c)
       IS NOT DISTINCT FROM (SELECT array_agg(ROW(c.key, c.group_key) ORDER BY c.key) FROM vf_components(k, t) c) AS clusters_exact,
       (SELECT count(*) FROM simhash_chained_groups('vf', 'fp', k, 'id', verify => jsonb_build_object('column', 'body', 'min_jaccard', t, 'options', '{"ngram": 1}'::jsonb))) AS rows_in_groups
  FROM unnest(ARRAY[3, 12]) k, unnest(ARRAY[0.3, 0.8]::float8[]) t ORDER BY k, t;

-- A key column that is not unique: a pair passes when some rows with its two keys pass.
CREATE TABLE vf_dup AS SELECT id % 200 AS id, body, fp FROM vf;
SELECT (SELECT count(*) FROM simhash_pairs('vf_dup', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.5, "options": {"ngram": 1}}'))
       = (SELECT count(*) FROM vf_dup x JOIN vf_dup y ON x.ctid < y.ctid
           WHERE (x.fp <-> y.fp) + 0 <= 6
             AND EXISTS (SELECT 1 FROM vf_dup u, vf_dup w
                          WHERE u.id = least(x.id, y.id) AND w.id = greatest(x.id, y.id)
                            AND simhash_jaccard(u.body, w.body, '{"ngram": 1}') >= 0.5))
       AS duplicate_keys_as_documented;

-- simhash_ingest with the check, against the rule applied row by row: a source row is skipped
-- when a row of the target (earlier source rows that went in included) is within k bits and
-- its text passes. Each way the ingest finds candidates: the pass over a covering index (8
-- blocks, many rows), lookups (block indexes that do not cover the fingerprint), joins (no
-- block index), one row at a time (a BEFORE INSERT trigger), and a set of fingerprints.
CREATE TABLE vf_src (id int8, body text, fp simhash64);
INSERT INTO vf_src SELECT 10000 + g, vf_text(g * 7 % 400 + 1), vf_fp(g * 7 % 400 + 1 + g % 2) FROM generate_series(1, 300) g;
CREATE FUNCTION vf_ingest_rule(target regclass, k int4, t float8) RETURNS int8[] LANGUAGE plpgsql AS $$
DECLARE
    r record;
    near bool;
BEGIN
    CREATE TEMP TABLE vf_rule AS SELECT id, fp, simhash_feature_set(body, '{"ngram": 1}') AS f FROM vf_seed;
    FOR r IN SELECT id, fp, simhash_feature_set(body, '{"ngram": 1}') AS f FROM vf_src ORDER BY ctid LOOP
        SELECT EXISTS (SELECT 1 FROM vf_rule c WHERE (c.fp <-> r.fp) + 0 <= k AND simhash_jaccard(c.f, r.f) >= t) INTO near;
        IF r.fp IS NULL OR NOT near THEN
            INSERT INTO vf_rule VALUES (r.id, r.fp, r.f);
        END IF;
    END LOOP;
    RETURN (SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM vf_rule EXCEPT ALL SELECT id FROM vf_seed) s);
END
$$;
-- The seed rows: 3,000 unrelated ones and the families of vf.
CREATE TABLE vf_seed AS
SELECT g::int8 AS id, vf_text(g) AS body, vf_fp(g) AS fp FROM generate_series(1, 400) g WHERE g % 2 = 0
UNION ALL
SELECT 1000 + g, 'filler ' || g, hashint8extended(-g, 0)::simhash64 FROM generate_series(1, 3000) g;
CREATE TABLE vf_pass (LIKE vf_seed);
SELECT simhash_create_index('vf_pass', 'fp', max_k => 7);
CREATE TABLE vf_lookups (LIKE vf_seed);
SELECT simhash_create_index('vf_lookups', 'fp', covering => false);
CREATE TABLE vf_joins (LIKE vf_seed);
CREATE TABLE vf_trigger (LIKE vf_seed);
SELECT simhash_create_index('vf_trigger', 'fp');
CREATE FUNCTION vf_nothing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER vf_nothing BEFORE INSERT ON vf_trigger FOR EACH ROW EXECUTE FUNCTION vf_nothing();
INSERT INTO vf_pass SELECT * FROM vf_seed;
INSERT INTO vf_lookups SELECT * FROM vf_seed;
-- Big enough that lookups cost less than joins; these rows are near nothing of vf_src.
INSERT INTO vf_lookups SELECT -g, 'filler', hashint8extended(g, 5)::simhash64 FROM generate_series(1, 40000) g;
INSERT INTO vf_joins SELECT * FROM vf_seed;
INSERT INTO vf_trigger SELECT * FROM vf_seed;
ANALYZE vf_pass, vf_lookups, vf_joins, vf_trigger, vf_src;
SELECT tbl, _simhash_ingest_method(tbl, 'fp', 3, 300) AS method_at_k3, _simhash_ingest_method(tbl, 'fp', 7, 300) AS method_at_k7
  FROM unnest(ARRAY['vf_pass', 'vf_lookups', 'vf_joins']::regclass[]) tbl;
CREATE FUNCTION vf_ingest_same(target regclass, k int4, t float8) RETURNS TABLE (inserted int8, skipped int8, same bool)
LANGUAGE plpgsql AS $$
DECLARE
    got int8[];
BEGIN
    SELECT * INTO inserted, skipped FROM simhash_ingest(target, 'fp', 'vf_src', k, verify => jsonb_build_object('column', 'body', 'min_jaccard', t, 'options', '{"ngram": 1}'::jsonb));
    EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s WHERE id >= 10000', target) INTO got;
    same := got IS NOT DISTINCT FROM vf_ingest_rule(target, k, t);
    -- Back as it was, for the next call.
    EXECUTE format('DELETE FROM %s WHERE id >= 10000', target);
    DROP TABLE vf_rule;
    RETURN NEXT;
END
$$;
SET client_min_messages = warning;
SELECT tbl, k, t, s.*
  FROM unnest(ARRAY['vf_pass', 'vf_lookups', 'vf_joins', 'vf_trigger']::regclass[]) tbl,
       unnest(ARRAY[3, 7]) k, unnest(ARRAY[0.3, 0.8]::float8[]) t, vf_ingest_same(tbl, k, t) s
 ORDER BY tbl::text, k, t;
RESET client_min_messages;
-- Without the check, more rows are skipped: the check only ever keeps rows.
SELECT (SELECT skipped FROM simhash_ingest('vf_lookups', 'fp', 'vf_src', 7)) AS skipped_unchecked;
DELETE FROM vf_lookups WHERE id >= 10000;

-- Sets of fingerprints: near when any same-position pair is, then the texts decide.
CREATE TABLE vf_set (id int8, body text, fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 2, '{"ngram": 1}')) STORED);
SELECT simhash_create_index('vf_set', 'fps', 4);
INSERT INTO vf_set SELECT id, body FROM vf_seed;
CREATE TABLE vf_set_seed AS SELECT * FROM vf_set;
CREATE TABLE vf_set_src (LIKE vf_set INCLUDING GENERATED);
INSERT INTO vf_set_src SELECT id, body FROM vf_src;
SELECT inserted, skipped FROM simhash_ingest('vf_set', 'fps', 'vf_set_src', 3, verify => '{"column": "body", "min_jaccard": 0.5, "options": {"ngram": 1}}');
CREATE TABLE vf_set_rule AS SELECT * FROM vf_set_seed;
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM vf_set_src ORDER BY ctid LOOP
        IF NOT EXISTS (SELECT 1 FROM vf_set_rule c WHERE (c.fps <-> r.fps) + 0 <= 3
                          AND simhash_jaccard(c.body, r.body, '{"ngram": 1}') >= 0.5) THEN
            INSERT INTO vf_set_rule VALUES (r.id, r.body, r.fps);
        END IF;
    END LOOP;
END
$$;
SELECT (SELECT array_agg(id ORDER BY id) FROM vf_set) = (SELECT array_agg(id ORDER BY id) FROM vf_set_rule) AS sets_same;

-- The in-batch rule alone (SQLSTATE 22023 for arrays that do not fit).
SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64, 3::int8::simhash64, 3::int8::simhash64], 1, 2, '{1, 2, 1, 2, 9}', '{2, 2, 1}', 0.5);
SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64, 3::int8::simhash64], 1, 2, '{1, 2}', '{2, NULL}', 0);
SELECT try_sql(call) FROM unnest(ARRAY[
    $c$SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64], 1, 2, '{1}', '{1, 1}', 0.5)$c$,
    $c$SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64], 1, 2, '{1, 2}', '{1}', 0.5)$c$,
    $c$SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64], 1, 2, '{1}', '{-1}', 0.5)$c$,
    $c$SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64], 1, 2, '{NULL}', '{1}', 0.5)$c$,
    $c$SELECT _simhash_keep_first_of_verified(ARRAY[0::int8::simhash64], 1, 2, '{1}', '{1}', 1.5)$c$]) WITH ORDINALITY AS u(call, n) ORDER BY n;

-- Bad arguments, for each function: SQLSTATE and message.
SELECT try_sql(call) FROM unnest(ARRAY[
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"column": "nope"}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"column": "fp"}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"column": "body", "min_jaccard": 1.5}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => jsonb_build_object('column', 'body', 'min_jaccard', NULL))$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', NULL::int8, '{"column": "body", "options": null}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"col": "body"}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '"body"')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"column": 7}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"column": "body", "min_jaccard": "high"}')$c$,
    $c$SELECT * FROM simhash_chained_groups('vf', 'fp', 3, 'id', verify => '{"column": "body", "options": "x"}')$c$,
    $c$SELECT * FROM simhash_pairs('vf', 'fp', 3, 'id', verify => '{"column": "body", "options": {"ngram": 0}}')$c$,
    $c$SELECT * FROM simhash_representative_groups('vf', 'fp', 3, 'id', verify => '{"column": "body", "min_jaccard": -1}')$c$,
    $c$SELECT * FROM simhash_ingest('vf_joins', 'fp', 'vf', 3, verify => '{"column": "nope"}')$c$,
    $c$SELECT * FROM simhash_ingest('vf_joins', 'fp', 'vf_src', 3, verify => '{"column": "body", "min_jaccard": 2}')$c$]) WITH ORDINALITY AS u(call, n) ORDER BY n;
