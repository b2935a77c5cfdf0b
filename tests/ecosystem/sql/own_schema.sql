-- simhash_pg in a schema of its own, not on the search_path (as users put pgvector in an
-- "extensions" schema): unqualified calls are not found, as docs/operations.md says; qualified ones,
-- the planner's rewrite, block columns and the helpers work and answer like brute force.
SET client_min_messages = warning;
CREATE SCHEMA ext;
CREATE EXTENSION simhash_pg SCHEMA ext;
CREATE TABLE od (id int8 PRIMARY KEY, fp ext.simhash64);
INSERT INTO od SELECT g, hashtextextended('od' || g, 0)::ext.simhash64 FROM generate_series(1, 3000) g;
INSERT INTO od SELECT 10000 + g, (hashtextextended('od' || g, 0) # 7)::ext.simhash64 FROM generate_series(1, 40) g;
SELECT ext.simhash_create_index('od', 'fp');
SELECT try_sql($$SELECT count(*) FROM od WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS unqualified;
EXPLAIN (COSTS OFF) SELECT id FROM od WHERE ext.simhash_near(fp, '0123456789abcdef'::ext.simhash64, 3);
SELECT count(*) AS queries,
       count(*) FILTER (WHERE (SELECT array_agg(t.id ORDER BY t.id) FROM od t WHERE ext.simhash_near(t.fp, q.fp, 3))
                            = (SELECT array_agg(t.id ORDER BY t.id) FROM od t WHERE t.fp OPERATOR(ext.<->) q.fp <= 3))
           AS same_as_brute_force
  FROM od q WHERE q.id <= 40;
SELECT * FROM ext.simhash_block_columns('od');
SELECT (SELECT count(*) FROM ext.simhash_pairs('od', 'fp', 3, 'id')) AS pairs,
       (SELECT count(*) FROM od x JOIN od y ON x.id < y.id WHERE x.fp OPERATOR(ext.<->) y.fp <= 3) AS brute_force_pairs;
SELECT key, distance FROM ext.simhash_nearest('od', 'fp', (SELECT fp FROM od WHERE id = 5), 2, 'id');
DROP TABLE od;
DROP EXTENSION simhash_pg;
DROP SCHEMA ext;
