-- Run on the original database and on its restored copy: the outputs must be equal, and the
-- plans must use the block indexes.
ANALYZE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg';
SELECT table_name, column_name, block, blocks, index IS NOT NULL AS indexed, covering
  FROM (SELECT 'docs' AS table_name, * FROM simhash_block_columns('docs')
        UNION ALL SELECT 'fps', * FROM simhash_block_columns('fps')
        UNION ALL SELECT 'fps_plain', * FROM simhash_block_columns('fps_plain')
        UNION ALL SELECT 'hand', * FROM simhash_block_columns('hand')
        UNION ALL SELECT 'parted_low', * FROM simhash_block_columns('parted_low')) c
 ORDER BY 1, 3;
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM fps WHERE simhash_near(fp, '0123456789abcdef', 7);
EXPLAIN (COSTS OFF) SELECT id FROM fps_plain WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM hand WHERE simhash_near(doc, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM parted WHERE simhash_near(fp, '0123456789abcdef', 3);
-- Answers through the indexes equal brute force, and equal the original's (the diff).
SELECT k, bool_and(same) AS same_as_brute_force, sum(found) AS rows_found FROM (
    SELECT k, cardinality(idx) AS found,
           idx = (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM docs WHERE hamming_distance(fp, q.fp) + 0 <= k) AS same
      FROM (SELECT fp FROM docs WHERE id % 250 = 0) q, (VALUES (0), (3), (7)) ks(k),
           LATERAL (SELECT ARRAY(SELECT id FROM fps WHERE simhash_near(fp, q.fp, k) ORDER BY id) AS idx) i) x
 GROUP BY k ORDER BY k;
SELECT (SELECT array_agg(id ORDER BY id) FROM docs WHERE simhash_near(fp, simhash('report 5 from bureau 5 day 5'), 3)) AS docs,
       (SELECT array_agg(id ORDER BY id) FROM fps_plain WHERE simhash_near(fp, simhash('report 5 from bureau 5 day 5'), 3)) AS plain,
       (SELECT array_agg(id ORDER BY id) FROM hand WHERE simhash_near(doc, simhash('report 5 from bureau 5 day 5'), 3)) AS hand,
       (SELECT array_agg(id ORDER BY id) FROM parted WHERE simhash_near(fp, simhash('report 5 from bureau 5 day 5'), 3)) AS parted;
SELECT count(*) AS near_pairs FROM near_pairs;
SELECT count(*) AS pairs FROM simhash_pairs('docs', 'fp', 3, 'id');
SELECT d.id, n.distance FROM simhash_nearest('docs', 'fp', simhash('report 5 from bureau 5 day 5'), 5) n
  JOIN docs d ON d.ctid = n.ctid ORDER BY n.distance, d.id;
SELECT obj_description(indexrelid, 'pg_class') AS index_comment FROM pg_index
 WHERE indrelid = 'docs'::regclass AND indexrelid <> 'docs_pkey'::regclass ORDER BY indexrelid::regclass::text;
-- The guards hold: a near row is refused (rolled back either way), a far one goes in.
SELECT * FROM simhash_guards('guarded') UNION ALL SELECT * FROM simhash_guards('parted');
BEGIN;
DO $$ BEGIN
    INSERT INTO guarded VALUES (3, '0000000000000003');
    RAISE NOTICE 'guard: near row accepted';
EXCEPTION WHEN exclusion_violation THEN
    RAISE NOTICE 'guard: near row refused (%)', SQLSTATE;
END $$;
INSERT INTO guarded VALUES (4, 'ffffffff00000000') RETURNING id;
ROLLBACK;
