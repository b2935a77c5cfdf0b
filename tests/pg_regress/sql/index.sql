-- Block-column indexes: simhash_create_index / simhash_drop_index, the planner rewrite of
-- simhash_near, simhash_nearest. Every index answer is compared with brute force.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = notice;

-- Deterministic pseudo-random fingerprints and masks with exactly d bits set.
CREATE FUNCTION fp_of(seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE
AS $$ SELECT (('x' || md5(seed))::bit(64)::int8)::simhash64 $$;
CREATE FUNCTION flip(fp simhash64, d int, seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE
AS $$
    SELECT ((fp::int8) # coalesce((SELECT bit_or(1::int8 << pos)
                                     FROM (SELECT pos FROM generate_series(0, 63) pos
                                            ORDER BY md5(seed || ':' || pos) LIMIT d) p), 0))::simhash64
$$;

-- 200 query points; for each, planted neighbours at every distance 0..8; 20,000 random rows;
-- some NULL fingerprints and exact duplicates.
CREATE TABLE queries (qid int4 PRIMARY KEY, fp simhash64 NOT NULL);
INSERT INTO queries SELECT q, fp_of('q' || q) FROM generate_series(1, 200) q;
CREATE TABLE pts (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO pts SELECT g, fp_of('bg' || g) FROM generate_series(1, 20000) g;
INSERT INTO pts SELECT 100000 + q.qid * 10 + d, flip(q.fp, d, q.qid || '/' || d)
  FROM queries q, generate_series(0, 8) d;
INSERT INTO pts SELECT 200000 + g, NULL FROM generate_series(1, 50) g;
INSERT INTO pts SELECT 300000 + q.qid, q.fp FROM queries q WHERE q.qid <= 20;
-- Statistics now, so that plans do not depend on whether autovacuum got there first.
ANALYZE queries, pts;
SELECT count(*) AS rows, count(fp) AS fingerprints,
       (SELECT count(*) FROM pts p JOIN queries q ON q.qid = (p.id - 100000) / 10
         WHERE p.id BETWEEN 100000 AND 199999 AND p.fp <-> q.fp = p.id % 10) AS planted_at_their_distance
  FROM pts;

-- Brute force, once: every (query, row) pair within 8 bits.
CREATE TABLE truth AS
SELECT q.qid, p.id, hamming_distance(p.fp, q.fp) AS d
  FROM queries q, pts p WHERE hamming_distance(p.fp, q.fp) + 0 <= 8;
SELECT d, count(*) FROM truth GROUP BY d ORDER BY d;

-- One copy of the table per layout: 4, 5 and 8 blocks; 4 and 8 with covering indexes (the
-- default), 5 with plain ones.
CREATE TABLE pts4 AS SELECT * FROM pts;
CREATE TABLE pts5 AS SELECT * FROM pts;
CREATE TABLE pts8 AS SELECT * FROM pts;
SELECT simhash_create_index('pts4', 'fp', permuted => false);
SELECT simhash_create_index('pts5', 'fp', max_k => 4, covering => false, permuted => false);
SELECT simhash_create_index('pts8', 'fp', blocks => 8, permuted => false);
SELECT * FROM simhash_block_columns('pts5');
SELECT * FROM simhash_block_columns('pts4');

-- For every k and layout, in both forms the planner writes: each query's rows are exactly the
-- brute-force rows, and the plan is the expected one. 'literal' runs the 200 queries one by one
-- with the fingerprint as a literal (a TID scan fed by _simhash_index_probe on covering indexes,
-- scans of the block indexes on plain ones: a BitmapOr, or for k = 0 one block's index); 'join'
-- runs them as one join (a TID scan parameterized by the outer row on covering indexes, which
-- src/join_paths.rs adds, block index scans on plain ones). Sequential scans are disabled
-- only so that the small table cannot tempt the planner away from the index under test.
CREATE FUNCTION check_exact(tbl regclass, k int, form text)
RETURNS TABLE (found int8, missed int8, extra int8, plan text)
LANGUAGE plpgsql AS $$
DECLARE
    join_q text := format('SELECT q.qid, t.id FROM queries q JOIN %s t ON simhash_near(t.fp, q.fp, %s)', tbl, k);
    one_q text := format('SELECT id FROM %s WHERE simhash_near(fp, %%L, %s)', tbl, k);
    shown text := '';
    line text;
    qq record;
BEGIN
    SET LOCAL enable_seqscan = off;
    CREATE TEMP TABLE got (qid int4, id int8);
    IF form = 'join' THEN
        FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || join_q LOOP
            shown := shown || line || E'\n';
        END LOOP;
        EXECUTE format('INSERT INTO got %s', join_q);
    ELSE
        FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || format(one_q, '0123456789abcdef') LOOP
            shown := shown || line || E'\n';
        END LOOP;
        FOR qq IN SELECT * FROM queries LOOP
            EXECUTE format('INSERT INTO got SELECT %s, id FROM (%s) x', qq.qid, format(one_q, qq.fp));
        END LOOP;
    END IF;
    RETURN QUERY
    SELECT (SELECT count(*) FROM got),
           (SELECT count(*) FROM (SELECT qid, id FROM truth WHERE d <= k EXCEPT SELECT qid, id FROM got) x),
           (SELECT count(*) FROM (SELECT qid, id FROM got EXCEPT SELECT qid, id FROM truth WHERE d <= k) x),
           CASE WHEN shown LIKE '%Seq Scan on ' || tbl || '%' THEN 'sequential scan'
                WHEN shown LIKE '%Tid Scan on ' || tbl || '%_simhash_index_probe(''{' || tbl || '_fp_block0of%' THEN 'probe'
                WHEN shown LIKE '%Bitmap Index Scan on ' || tbl || '_fp_block0of%'
                  OR shown LIKE '%Index Scan using ' || tbl || '_fp_block0of%' THEN 'block index'
                ELSE shown END;
    DROP TABLE got;
END
$$;
SELECT m, k, f.form, c.*
  FROM (VALUES (4), (5), (8)) AS ms(m),
       (VALUES (0), (1), (2), (3), (4), (7), (8)) AS ks(k),
       (VALUES ('literal'), ('join')) AS f(form),
       LATERAL check_exact(('pts' || m)::regclass, k, f.form) c
 ORDER BY m, k, f.form;

-- The plans, as users see them.
-- A literal (k < m: one equality per block).
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', 3);
-- k >= m: every block value within floor(k/m) bits.
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', 4);
-- simhash('some text') is folded to a constant first.
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, simhash('the quick brown fox jumps over the lazy dog'), 3);
-- Either argument may be the column.
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near('0123456789abcdef', fp, 2);
-- Plain (not covering) indexes: a BitmapOr with the distance as the filter.
EXPLAIN (COSTS OFF) SELECT id FROM pts5 WHERE simhash_near(fp, '0123456789abcdef', 3);
-- A column of another table in a join: a TID scan per outer row over the covering probe.
EXPLAIN (COSTS OFF) SELECT q.qid, t.id FROM queries q JOIN pts4 t ON simhash_near(t.fp, q.fp, 3) WHERE q.qid = 7;
-- A scalar subquery is a parameter: the probe again. (PostgreSQL 17 prints such a parameter as
-- '(InitPlan 1).col1', older versions as '$0 ... InitPlan 1 (returns $0)': masked.)
CREATE FUNCTION plan_masked(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        line := regexp_replace(line, '\(InitPlan \d+\)\.col\d+|\$\d+', '<param>', 'g');
        RETURN NEXT regexp_replace(line, ' \(returns <param>\)', '');
    END LOOP;
END
$$;
SELECT plan_masked($$SELECT id FROM pts4 WHERE simhash_near(fp, (SELECT fp FROM queries WHERE qid = 7), 3)$$) AS plan;
-- A prepared statement, with a custom and with a generic plan; both give the brute-force rows.
PREPARE near(simhash64, int) AS SELECT id FROM pts4 WHERE simhash_near(fp, $1, 3) ORDER BY id;
SET plan_cache_mode = force_custom_plan;
EXPLAIN (COSTS OFF) EXECUTE near('0123456789abcdef', 0);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE near('0123456789abcdef', 0);
RESET plan_cache_mode;
DEALLOCATE near;
-- PL/pgSQL caches the plans of its static SQL like a prepared statement: all 200 queries, each
-- plan mode, against brute force; then k as a parameter, which is not known when a generic plan
-- is made (that plan passes k to the probe at run time).
CREATE FUNCTION near_ids(q simhash64) RETURNS int8[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT array_agg(id ORDER BY id) FROM pts4 WHERE simhash_near(fp, q, 3));
END $$;
CREATE FUNCTION near_ids_k(q simhash64, k int4) RETURNS int8[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT array_agg(id ORDER BY id) FROM pts4 WHERE simhash_near(fp, q, k));
END $$;
CREATE FUNCTION all_right(mode text) RETURNS TABLE (plan_cache_mode text, k_literal int8, k_parameter int8)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('plan_cache_mode', mode, true);
    RETURN QUERY
    SELECT mode,
           count(*) FILTER (WHERE near_ids(q.fp) IS NOT DISTINCT FROM w.ids),
           count(*) FILTER (WHERE near_ids_k(q.fp, 3) IS NOT DISTINCT FROM w.ids)
      FROM queries q,
           LATERAL (SELECT array_agg(t.id ORDER BY t.id) AS ids FROM truth t WHERE t.qid = q.qid AND t.d <= 3) w;
END $$;
SELECT * FROM all_right('force_custom_plan');
SELECT * FROM all_right('force_generic_plan');
-- k as a parameter of a generic plan, over the whole range: small k by block probes, k = 28 and
-- 64 (more probes than four 16-bit blocks allow) by reading a whole index; against brute force.
SET plan_cache_mode = force_generic_plan;
SELECT k, count(*) FILTER (WHERE near_ids_k(q.fp, k) IS NOT DISTINCT FROM
                             (SELECT array_agg(p.id ORDER BY p.id) FROM pts p WHERE hamming_distance(p.fp, q.fp) + 0 <= k)) AS right,
       count(*) AS queries
  FROM unnest(ARRAY[0, 1, 3, 5, 8, 20, 28, 64]) k, (SELECT * FROM queries WHERE qid <= 20) q
 GROUP BY k ORDER BY k;
SELECT count(*) AS null_k FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', NULL::int4);
SELECT try_sql($$SELECT near_ids_k('0123456789abcdef', -1)$$) AS negative_k;
RESET plan_cache_mode;
PREPARE near_k(simhash64, int4) AS SELECT count(*) FROM pts4 WHERE simhash_near(fp, $1, $2);
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE near_k('0123456789abcdef', 3);
RESET plan_cache_mode;
DEALLOCATE near_k;

-- Volatile query values and a k outside 0..64 are left alone (and the error still comes).
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, (random() * 0)::int8::simhash64, 3);
SELECT try_sql($$SELECT count(*) FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', 65)$$);
-- A layout that cannot serve k (too many probes) is not used: sequential scan, same answer.
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', 40);

-- NULL fingerprints never match; an UPDATE of fp moves the row's blocks with it.
SELECT count(*) FROM pts4 WHERE simhash_near(fp, NULL, 3);
SELECT count(*) FROM pts4 p, queries q WHERE simhash_near(p.fp, q.fp, 64) AND p.fp IS NULL;
UPDATE pts4 SET fp = '0123456789abcdef' WHERE id = 1;
UPDATE pts4 SET fp = NULL WHERE id = 2;
SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdee', 1) ORDER BY id;
SELECT id, fp_block0of4 FROM pts4 WHERE id IN (1, 2) ORDER BY id;
-- Updates of other columns are HOT (the index entry keeps pointing at the first version): the
-- probe follows the chain to the visible row. Rows deleted, or inserted, in this transaction
-- are seen as the snapshot says.
ALTER TABLE pts4 ADD COLUMN note text;
UPDATE pts4 SET note = 'first' WHERE id = 1;
UPDATE pts4 SET note = 'second' WHERE id = 1;
SELECT id, note FROM pts4 WHERE simhash_near(fp, '0123456789abcdee', 1);
BEGIN;
DELETE FROM pts4 WHERE id = 1;
INSERT INTO pts4 (id, fp) VALUES (-1, '0123456789abcdec');
SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdee', 1);
ROLLBACK;
SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdee', 1);

-- Anywhere else than a WHERE conjunct (under NOT, in a select list) the rewritten call gives
-- simhash_near's own answers, NULL for a NULL fingerprint included, and probes once, not per row.
SELECT count(*) AS not_near,
       (SELECT count(*) FROM pts4 WHERE NOT (hamming_distance(fp, '0123456789abcdee') + 0 <= 1)) AS brute_force
  FROM pts4 WHERE NOT simhash_near(fp, '0123456789abcdee', 1);
SELECT id, simhash_near(fp, '0123456789abcdee', 1) FROM pts4 WHERE id IN (1, 2, 3) ORDER BY id;

-- No usable layout: the same answers by a sequential scan.
EXPLAIN (COSTS OFF) SELECT id FROM pts WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT (SELECT array_agg(id ORDER BY id) FROM pts p, queries q WHERE q.qid = 3 AND simhash_near(p.fp, q.fp, 5))
     = (SELECT array_agg(id ORDER BY id) FROM truth WHERE qid = 3 AND d <= 5) AS seqscan_ok;

-- Several layouts: the cheapest for k is chosen (5 blocks for k = 4: equality, not radius 1).
SELECT simhash_create_index('pts4', 'fp', max_k => 4, permuted => false);
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', 4);
SELECT * FROM simhash_block_columns('pts4');

-- Rerunning is a no-op; a missing index is rebuilt.
SELECT simhash_create_index('pts4', 'fp', permuted => false);
DROP INDEX pts4_fp_block2of4_fp_idx;
SELECT * FROM simhash_block_columns('pts4') WHERE blocks = 4;
EXPLAIN (COSTS OFF) SELECT id FROM pts4 WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT simhash_create_index('pts4', 'fp', permuted => false);
SELECT * FROM simhash_block_columns('pts4') WHERE blocks = 4;

-- simhash_drop_index removes exactly what simhash_create_index added.
SELECT simhash_drop_index('pts4', 'fp');
SELECT attname FROM pg_attribute WHERE attrelid = 'pts4'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum;
SELECT indexrelid::regclass FROM pg_index WHERE indrelid = 'pts4'::regclass ORDER BY 1;
SELECT simhash_drop_index('pts4', 'fp');

-- Hand-made block columns and indexes, in plain DDL, are found too; drop_index leaves them.
CREATE TABLE hand (id int8, doc simhash64);
INSERT INTO hand SELECT id, fp FROM pts;
ALTER TABLE hand ADD COLUMN hi int8 GENERATED ALWAYS AS (simhash_block(doc, 0, 2)) STORED,
                 ADD COLUMN lo int8 GENERATED ALWAYS AS (simhash_block(doc, 1, 2)) STORED;
CREATE INDEX hand_hi ON hand (hi);
EXPLAIN (COSTS OFF) SELECT id FROM hand WHERE simhash_near(doc, '0123456789abcdef', 1);
CREATE INDEX hand_lo ON hand (lo, id);
ANALYZE hand;
EXPLAIN (COSTS OFF) SELECT id FROM hand WHERE simhash_near(doc, '0123456789abcdef', 1);
SELECT (SELECT array_agg(id ORDER BY id) FROM hand h, queries q WHERE q.qid = 9 AND simhash_near(h.doc, q.fp, 3))
     = (SELECT array_agg(id ORDER BY id) FROM truth WHERE qid = 9 AND d <= 3) AS hand_made_ok;
SELECT simhash_drop_index('hand', 'doc');
SELECT * FROM simhash_block_columns('hand');

-- A generated fingerprint column (from text) cannot feed generated block columns, so its
-- blocks go in expression indexes on simhash_block(fp, i, m); hand-made ones are found too.
CREATE TABLE texts (id int8 PRIMARY KEY, body text NOT NULL,
                    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO texts SELECT g, 'text ' || g || ' ' || md5(g::text) || ' ' || md5((g % 7)::text) FROM generate_series(1, 2000) g;
SELECT simhash_create_index('texts', 'fp', permuted => false);
SELECT * FROM simhash_block_columns('texts');
EXPLAIN (COSTS OFF) SELECT id FROM texts WHERE simhash_near(fp, simhash('text 5'), 3);
SELECT count(*) FILTER (WHERE got IS NOT DISTINCT FROM want) AS equal, count(*) AS queries
  FROM (SELECT (SELECT array_agg(t.id ORDER BY t.id) FROM texts t WHERE simhash_near(t.fp, q.fp, 12)) AS got,
               (SELECT array_agg(t.id ORDER BY t.id) FROM texts t WHERE hamming_distance(t.fp, q.fp) + 0 <= 12) AS want
          FROM texts q WHERE q.id <= 50) x;
EXPLAIN (COSTS OFF) SELECT q.id, t.id FROM texts q JOIN texts t ON simhash_near(t.fp, q.fp, 3) WHERE q.id = 5;
SELECT simhash_create_index('texts', 'fp', permuted => false);
SELECT simhash_drop_index('texts', 'fp');
SELECT count(*) AS indexes_left FROM pg_index WHERE indrelid = 'texts'::regclass;
CREATE INDEX texts_hi ON texts ((simhash_block(fp, 0, 2))) INCLUDE (fp);
CREATE INDEX texts_lo ON texts ((simhash_block(fp, 1, 2))) INCLUDE (fp);
EXPLAIN (COSTS OFF) SELECT id FROM texts WHERE simhash_near(fp, simhash('text 5'), 1);
SELECT simhash_drop_index('texts', 'fp');
SELECT count(*) AS hand_made_indexes_kept FROM pg_index WHERE indrelid = 'texts'::regclass;
-- Without their comments (as Citus's table conversions leave them), the columns and indexes
-- simhash_create_index made are known by their names; another comment, or another name, keeps
-- an object out.
DROP INDEX texts_hi, texts_lo;
SELECT simhash_create_index('texts', 'fp', blocks => 4, permuted => false);
SELECT simhash_create_index('texts', 'fp', blocks => 3);
SELECT simhash_create_index('pts4', 'fp', blocks => 4, permuted => false);
COMMENT ON INDEX texts_fp_block0of4 IS NULL;
COMMENT ON INDEX texts_fp_block1of4 IS 'mine';
COMMENT ON INDEX texts_fp_perm0of3 IS NULL;
COMMENT ON COLUMN pts4.fp_block0of4 IS NULL;
COMMENT ON COLUMN pts4.fp_block1of4 IS 'mine';
ALTER INDEX texts_fp_block2of4 RENAME TO texts_renamed;
COMMENT ON INDEX texts_renamed IS NULL;
SELECT simhash_drop_index('texts', 'fp');
SELECT simhash_drop_index('pts4', 'fp');
SELECT indexrelid::regclass AS kept FROM pg_index WHERE indrelid = 'texts'::regclass ORDER BY 1;
SELECT column_name AS kept FROM simhash_block_columns('pts4') ORDER BY 1;
DROP INDEX texts_fp_block1of4, texts_renamed;
ALTER TABLE pts4 DROP COLUMN fp_block1of4;

-- simhash_nearest: the n nearest rows, ties by ctid, equal to a full sort.
SELECT count(*) FILTER (WHERE got IS NOT DISTINCT FROM want) AS equal, count(*) AS queries
  FROM (SELECT q.qid,
               (SELECT array_agg(n.ctid ORDER BY n.distance, n.ctid) FROM simhash_nearest('pts5', 'fp', q.fp, q.qid % 12) n) AS got,
               (SELECT array_agg(ctid ORDER BY d, ctid)
                  FROM (SELECT ctid, fp <-> q.fp AS d FROM pts5 WHERE fp IS NOT NULL ORDER BY 2, 1 LIMIT q.qid % 12) s) AS want
          FROM queries q WHERE q.qid <= 60) x;
SELECT p.id, n.distance FROM simhash_nearest('pts5', 'fp', (SELECT fp FROM queries WHERE qid = 4), 6) n
  JOIN pts5 p ON p.ctid = n.ctid ORDER BY n.distance, n.ctid;
SELECT count(*) FROM simhash_nearest('pts5', 'fp', '0123456789abcdef', 0);
SELECT try_sql($$SELECT * FROM simhash_nearest('pts5', 'fp', '0123456789abcdef', -1)$$);

-- The helpers' checks.
CREATE TABLE "x""; drop table pts; --" (fp simhash64, "we""ird col" simhash64, body text);
INSERT INTO "x""; drop table pts; --" SELECT fp, fp FROM pts WHERE id <= 100;
SELECT simhash_create_index('"x""; drop table pts; --"', 'we"ird col', 1, permuted => false);
SELECT column_name, source_column, block, blocks FROM simhash_block_columns('"x""; drop table pts; --"');
EXPLAIN (COSTS OFF) SELECT 1 FROM "x""; drop table pts; --" WHERE simhash_near("we""ird col", '0123456789abcdef', 1);
SELECT simhash_drop_index('"x""; drop table pts; --"', 'we"ird col');
SELECT count(*) AS pts_still_there FROM pts;
SELECT _simhash_block_column_name(repeat('é', 40), 12, 13), octet_length(_simhash_block_column_name(repeat('é', 40), 12, 13));
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', 'body')$$);
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', 'nope')$$);
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', 'fp', -1)$$);
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', 'fp', 64)$$);
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', 'fp', 3, 1)$$);
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', 'fp', 3, 65)$$);
SELECT try_sql($$SELECT simhash_create_index('"x""; drop table pts; --"', NULL)$$);
SELECT try_sql($$SELECT simhash_create_index(NULL, 'fp')$$);
CREATE VIEW pts_view AS SELECT * FROM pts;
SELECT try_sql($$SELECT simhash_create_index('pts_view', 'fp')$$);
SELECT try_sql($$SELECT simhash_drop_index('pts_view', 'fp')$$);
-- Only the owner may add or drop block columns; anyone may look them up.
CREATE ROLE simhash_stranger;
GRANT SELECT ON pts5, queries TO simhash_stranger;
SET ROLE simhash_stranger;
SELECT try_sql($$SELECT simhash_create_index('pts5', 'fp')$$);
SELECT try_sql($$SELECT simhash_drop_index('pts5', 'fp')$$);
SELECT count(*) FROM pts5 WHERE simhash_near(fp, (SELECT fp FROM queries WHERE qid = 1), 3);
SELECT count(*) FROM simhash_nearest('pts5', 'fp', '0123456789abcdef', 3);
RESET ROLE;
SELECT count(*) AS pts5_block_columns FROM simhash_block_columns('pts5');

-- _simhash_index_probe called directly: the caller needs SELECT, and row-level security keeps
-- it out (simhash_near then runs as a BitmapOr, under the policies); bad arguments are errors.
CREATE TABLE secret (id int8, fp simhash64);
INSERT INTO secret SELECT id, fp FROM pts WHERE id > 100000;
SELECT simhash_create_index('secret', 'fp', permuted => false);
SELECT cardinality(_simhash_index_probe(array_agg(index::regclass ORDER BY block), (SELECT fp FROM queries WHERE qid = 5), 3))
  FROM simhash_block_columns('secret');
SET ROLE simhash_stranger;
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx,secret_fp_block1of4_fp_idx,secret_fp_block2of4_fp_idx,secret_fp_block3of4_fp_idx}', '0123456789abcdef', 3)$$);
RESET ROLE;
GRANT SELECT ON secret TO simhash_stranger;
ALTER TABLE secret ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_even ON secret TO simhash_stranger USING (id % 2 = 0);
SET ROLE simhash_stranger;
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx,secret_fp_block1of4_fp_idx,secret_fp_block2of4_fp_idx,secret_fp_block3of4_fp_idx}', '0123456789abcdef', 3)$$);
EXPLAIN (COSTS OFF) SELECT id FROM secret WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT array_agg(id ORDER BY id) FROM secret WHERE simhash_near(fp, (SELECT fp FROM queries WHERE qid = 5), 3);
RESET ROLE;
SELECT array_agg(id ORDER BY id) FROM truth WHERE qid = 5 AND d <= 3 AND id > 100000 AND id % 2 = 0;
-- A view reads its table with its owner's rights: the BitmapOr form, which needs none of the caller's.
CREATE VIEW secret_near AS SELECT id, fp FROM secret;
GRANT SELECT ON secret_near TO simhash_stranger;
EXPLAIN (COSTS OFF) SELECT id FROM secret_near WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT try_sql($$SELECT _simhash_index_probe('{}', '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx,NULL}', '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{secret,secret}', '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx,pts8_fp_block1of8_fp_idx}', '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{pts5_fp_block0of5_idx,pts5_fp_block1of5_idx}', '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx}', '0123456789abcdef', 3)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx,secret_fp_block1of4_fp_idx}', '0123456789abcdef', 65)$$);
SELECT try_sql($$SELECT _simhash_index_probe('{secret_fp_block0of4_fp_idx,secret_fp_block1of4_fp_idx}', '0123456789abcdef', 40)$$);
-- An index made covering later: rerunning with covering adds covering indexes beside the plain ones.
SELECT simhash_create_index('pts5', 'fp', max_k => 4, permuted => false);
SELECT column_name, index, covering FROM simhash_block_columns('pts5') ORDER BY block;
EXPLAIN (COSTS OFF) SELECT id FROM pts5 WHERE simhash_near(fp, '0123456789abcdef', 3);
DROP VIEW secret_near;
DROP TABLE secret;

-- A partitioned table: each partition is looked up through its own indexes (PostgreSQL
-- simplifies the call again for every partition); the partitioned indexes themselves are not
-- block indexes the probe can scan.
CREATE TABLE pts_parted (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE pts_low PARTITION OF pts_parted FOR VALUES FROM (0) TO (150000);
CREATE TABLE pts_high PARTITION OF pts_parted FOR VALUES FROM (150000) TO (400000);
INSERT INTO pts_parted SELECT id, fp FROM pts;
SELECT simhash_create_index('pts_parted', 'fp', permuted => false);
EXPLAIN (COSTS OFF) SELECT id FROM pts_parted WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT count(*) FILTER (WHERE got IS NOT DISTINCT FROM want) AS equal, count(*) AS queries
  FROM (SELECT (SELECT array_agg(p.id ORDER BY p.id) FROM pts_parted p WHERE simhash_near(p.fp, q.fp, 4)) AS got,
               (SELECT array_agg(t.id ORDER BY t.id) FROM truth t WHERE t.qid = q.qid AND t.d <= 4) AS want
          FROM queries q WHERE q.qid <= 40) x;
SELECT try_sql($$SELECT _simhash_index_probe(array_agg(index::regclass ORDER BY block), '0123456789abcdef', 3)
                   FROM simhash_block_columns('pts_parted')$$);
DROP TABLE pts_parted;

-- Inheritance: a parent read with its children is not rewritten as one table (its indexes hold
-- only its own rows); each child, the parent among them, is looked up through its own indexes.
CREATE TABLE pts_parent (id int8, fp simhash64);
CREATE TABLE pts_child () INHERITS (pts_parent);
INSERT INTO pts_parent SELECT id, fp FROM pts WHERE id % 2 = 0;
INSERT INTO pts_child SELECT id, fp FROM pts WHERE id % 2 = 1;
SELECT simhash_create_index('pts_parent', 'fp', permuted => false);
SELECT simhash_create_index('pts_child', 'fp', permuted => false);
EXPLAIN (COSTS OFF) SELECT id FROM pts_parent WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT count(*) FILTER (WHERE got IS NOT DISTINCT FROM want) AS equal, count(*) AS queries
  FROM (SELECT (SELECT array_agg(p.id ORDER BY p.id) FROM pts_parent p WHERE simhash_near(p.fp, q.fp, 4)) AS got,
               (SELECT array_agg(t.id ORDER BY t.id) FROM truth t WHERE t.qid = q.qid AND t.d <= 4) AS want
          FROM queries q WHERE q.qid <= 40) x;
DROP TABLE pts_child, pts_parent;

-- _simhash_block_ball.
SELECT _simhash_block_ball('ffff000000000000', 0, 4, 1);
SELECT cardinality(_simhash_block_ball('0123456789abcdef', 1, 4, 3)) AS radius_3_of_16_bits;
SELECT try_sql($$SELECT _simhash_block_ball('0123456789abcdef', 0, 4, -1)$$);
SELECT try_sql($$SELECT _simhash_block_ball('0123456789abcdef', 0, 2, 5)$$);
SELECT try_sql($$SELECT _simhash_block_ball('0123456789abcdef', 4, 4, 1)$$);

DROP OWNED BY simhash_stranger;
DROP ROLE simhash_stranger;
