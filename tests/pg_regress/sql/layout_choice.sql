-- simhash_create_index chooses the layout: the block count from max_k and the table's rows (or
-- expected_rows), permuted indexes unless they cannot serve, a NOTICE saying which; a rerun
-- that leaves the layout to it replaces the layouts it made before, once the new one is built;
-- simhash_index_report weighs each layout against the one it would build now. Every block
-- count the chooser picks (2 to 16) is checked against brute force here (4 and 8 elsewhere too).
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = notice;

-- What it chooses, by k and table size (the cost model of src/core/layouts.rs).
SELECT k, string_agg(format('%s%s', b.blocks, CASE WHEN b.permuted THEN 'p' ELSE 'c' END), ' ' ORDER BY r) AS "0 / 10k / 1M / 10M rows"
  FROM generate_series(0, 12) k,
       unnest('{0,1e4,1e6,1e7}'::float8[]) r,
       _simhash_layout_to_build(k, r, true) b
 GROUP BY k ORDER BY k;
-- Without permuted indexes (row-level security, Citus), the same counts as block columns.
SELECT blocks, permuted FROM _simhash_layout_to_build(7, 1e7, false);
-- A given count: its cost at that size, for the report (permuted: read in the windows of blocks
-- a lookup would take, here two or three blocks a key); NULL arguments give no row.
SELECT blocks, descents, round(entries) AS entries FROM _simhash_layout_to_build(7, 1e7, true, 8);
SELECT count(*) AS no_row FROM _simhash_layout_to_build(NULL, 1e7, true);

-- 3,000 random fingerprints, 300 near copies (1..7 bits flipped), 20 NULLs.
CREATE TABLE lc (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO lc SELECT g, hashtextextended(g::text, 21)::simhash64 FROM generate_series(1, 3000) g;
INSERT INTO lc SELECT 10000 + id, (fp::int8 # (((1::int8 << (1 + id % 7)::int4) - 1) << (id % 50)::int4))::simhash64
  FROM lc WHERE id <= 300;
INSERT INTO lc SELECT 20000 + g, NULL FROM generate_series(1, 20) g;
ANALYZE lc;

-- The default: permuted indexes, no columns added.
SELECT simhash_create_index('lc', 'fp');
SELECT blocks, count(*) AS indexes, bool_and(permuted) AS permuted, bool_and(column_name IS NULL) AS no_columns
  FROM simhash_block_columns('lc') GROUP BY blocks;
EXPLAIN (COSTS OFF) SELECT id FROM lc WHERE simhash_near(fp, '0123456789abcdef', 3);

-- max_k => 7 at this size: eight blocks; for ten million rows to come, four. Each call that
-- leaves the layout to the function builds its choice, then drops what it made before.
SELECT simhash_create_index('lc', 'fp', max_k => 7);
SELECT blocks, count(*) AS indexes FROM simhash_block_columns('lc') GROUP BY blocks ORDER BY blocks;
SELECT simhash_create_index('lc', 'fp', max_k => 7, expected_rows => 1e7);
SELECT blocks, count(*) AS indexes FROM simhash_block_columns('lc') GROUP BY blocks ORDER BY blocks;
-- Naming blocks or permuted adds a layout beside the others.
SELECT simhash_create_index('lc', 'fp', blocks => 6);
SELECT simhash_create_index('lc', 'fp', max_k => 3, permuted => false);
SELECT blocks, permuted, count(*) AS indexes, count(column_name) AS columns
  FROM simhash_block_columns('lc') GROUP BY blocks, permuted ORDER BY blocks, permuted;
-- A hand-made block column stays when a rerun replaces the layouts the function made.
ALTER TABLE lc ADD COLUMN my_block int8 GENERATED ALWAYS AS (simhash_block(fp, 0, 2)) STORED;
CREATE INDEX lc_my_block ON lc (my_block) INCLUDE (fp);
SELECT simhash_create_index('lc', 'fp');
SELECT blocks, permuted, count(*) AS indexes, count(column_name) AS columns
  FROM simhash_block_columns('lc') GROUP BY blocks, permuted ORDER BY blocks, permuted;
SELECT count(*) AS block_columns_left FROM pg_attribute
 WHERE attrelid = 'lc'::regclass AND attname LIKE 'fp_block%' AND NOT attisdropped;
ALTER TABLE lc DROP COLUMN my_block;

-- A rerun keeps a block column that another object uses (here the user's own index), and says
-- so; simhash_drop_index would drop it with that object.
SELECT simhash_create_index('lc', 'fp', permuted => false);
CREATE INDEX lc_id_block ON lc (id, fp_block0of4);
SELECT simhash_create_index('lc', 'fp');
SELECT attname FROM pg_attribute WHERE attrelid = 'lc'::regclass AND attname LIKE 'fp_block%' AND NOT attisdropped;
DROP INDEX lc_id_block;
SELECT simhash_create_index('lc', 'fp');
SELECT count(*) AS block_columns_left FROM pg_attribute
 WHERE attrelid = 'lc'::regclass AND attname LIKE 'fp_block%' AND NOT attisdropped;

-- Rerun with the same choice: nothing to do.
SELECT simhash_create_index('lc', 'fp');

-- Exact on every block count the chooser picks (2 to 16, MAX_CHOSEN_BLOCKS of
-- src/core/layouts.rs; 4 and 8 also in index.sql and permuted.sql), at k = 0..16, against
-- brute force, through the probe.
CREATE TABLE lq (qid int4 PRIMARY KEY, q simhash64 NOT NULL);
INSERT INTO lq SELECT g, (fp::int8 # ((1::int8 << (g % 17)::int4) - 1))::simhash64
  FROM generate_series(1, 40) g JOIN lc ON lc.id = CASE WHEN g % 2 = 0 THEN 10000 + g * 7 ELSE g * 71 END;
CREATE TABLE lc_want AS
SELECT q.qid, k, l.id FROM lq q, generate_series(0, 16) k
 CROSS JOIN LATERAL (SELECT id FROM lc WHERE hamming_distance(fp, q.q) + 0 <= k) l;
CREATE FUNCTION lc_mismatches(m int4) RETURNS TABLE (blocks int4, probed bool, missed int8, extra int8)
LANGUAGE plpgsql AS $$
DECLARE
    plan text := '';
    line text;
BEGIN
    PERFORM simhash_drop_index('lc', 'fp');
    PERFORM simhash_create_index('lc', 'fp', blocks => m);
    FOR line IN EXPLAIN (COSTS OFF) SELECT id FROM lc WHERE simhash_near(fp, '0123456789abcdef', 5) LOOP
        plan := plan || line;
    END LOOP;
    RETURN QUERY
    WITH got AS (SELECT q.qid, k, l.id FROM lq q, generate_series(0, 16) k
                   CROSS JOIN LATERAL (SELECT id FROM lc WHERE simhash_near(fp, q.q, k)) l)
    SELECT m, plan LIKE '%_simhash_index_probe%',
           (SELECT count(*) FROM (SELECT * FROM lc_want EXCEPT ALL TABLE got) x),
           (SELECT count(*) FROM (TABLE got EXCEPT ALL SELECT * FROM lc_want) x);
END
$$;
SET client_min_messages = warning;
SELECT (SELECT count(*) FROM lc_want) AS pairs_within_16, (SELECT count(DISTINCT k) FROM lc_want) AS ks;
SELECT r.* FROM generate_series(2, 16) m, lc_mismatches(m) r;
SET client_min_messages = notice;

-- Where permuted indexes cannot serve, block columns, and the NOTICE says why.
CREATE TABLE lc_rls (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO lc_rls SELECT id, fp FROM lc;
ALTER TABLE lc_rls ENABLE ROW LEVEL SECURITY;
SELECT simhash_create_index('lc_rls', 'fp');
SELECT blocks, bool_and(permuted) AS permuted, count(column_name) AS columns FROM simhash_block_columns('lc_rls') GROUP BY blocks;
SELECT simhash_create_index('lc_rls', 'fp', covering => false);
DROP TABLE lc_rls;

-- An empty table: the NOTICE asks for expected_rows.
CREATE TABLE lc_empty (id int8, fp simhash64);
SELECT simhash_create_index('lc_empty', 'fp', max_k => 7);
SELECT simhash_create_index('lc_empty', 'fp', max_k => 7, expected_rows => 5e6);
SELECT blocks, count(*) AS indexes FROM simhash_block_columns('lc_empty') GROUP BY blocks;
DROP TABLE lc_empty;

-- The report: each layout against the one the function would build now. Eight blocks built for
-- an empty table still fit at 200,000 rows (within twice the best, six; at 10M rows, read in
-- windows of blocks, they cost about 1.8 times four blocks); sixteen blocks at k = 3 are
-- outgrown at any size.
CREATE TABLE lc_grow (id int8, fp simhash64);
SELECT simhash_create_index('lc_grow', 'fp', max_k => 7);
INSERT INTO lc_grow SELECT g, hashtextextended(g::text, 31)::simhash64 FROM generate_series(1, 200000) g;
ANALYZE lc_grow;
SELECT column_name, blocks, permuted, complete, descents, round(entries) AS entries,
       best_blocks, best_permuted, best_descents, round(best_entries) AS best_entries, advice
  FROM simhash_index_report('lc_grow', 7);
-- Rerunning the default call moves to five blocks.
SELECT simhash_create_index('lc_grow', 'fp', max_k => 7);
SELECT blocks, advice FROM simhash_index_report('lc_grow', 7);
SELECT simhash_create_index('lc_grow', 'fp', blocks => 16);
-- Outgrown: the advice names the call that fixes it.
SELECT blocks, permuted, advice FROM simhash_index_report('lc_grow', 3);
-- Block columns where permuted indexes would serve: named as the smaller choice.
SET client_min_messages = warning; -- (its progress NOTICEs give times)
SELECT simhash_create_index('lc_grow', 'fp', permuted => false);
SET client_min_messages = notice;
SELECT blocks, permuted, advice FROM simhash_index_report('lc_grow', 3) WHERE NOT permuted;
-- A block column without its index: incomplete, so lookups skip it.
DROP INDEX lc_grow_fp_block0of4_fp_idx;
SELECT blocks, permuted, complete, advice FROM simhash_index_report('lc_grow', 3) WHERE NOT permuted;
-- No layouts, no rows; bad k is refused.
SELECT count(*) AS layouts FROM simhash_index_report('lq');
SELECT try_sql($$SELECT * FROM simhash_index_report('lc_grow', 64)$$);
SELECT try_sql($$SELECT * FROM simhash_index_report('lc_grow', NULL)$$);
SELECT count(*) AS null_table FROM simhash_index_report(NULL);
DROP TABLE lc_grow;

DROP FUNCTION lc_mismatches;
DROP TABLE lc, lq, lc_want;
