-- Layouts built online (issue 64): simhash_index_statements returns the statements that make the
-- layout simhash_create_index would make, none of which holds a lock writers wait for beyond a
-- catalog change (CREATE INDEX CONCURRENTLY, expression indexes in place of block columns), run
-- here with psql's \gexec as a user would; simhash_drop_index_statements, the same for a drop.
-- Each layout is compared with brute force once built; a build stopped half way leaves the old
-- layout (or none) in use, and a rerun goes on from where it stopped.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

CREATE TABLE ol_live (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO ol_live SELECT g, hashtextextended(g::text, 3)::simhash64 FROM generate_series(1, 20000) g;
INSERT INTO ol_live
SELECT 100000 + id, (fp::int8 # (((1::int8 << (1 + id % 7)::int4) - 1) << (id % 50)::int4))::simhash64
  FROM ol_live WHERE id <= 2000;
ANALYZE ol_live;
-- Exactness against brute force over 300 queries at k: through the layout, and with the planner
-- rewrites off (a scan of the table).
CREATE FUNCTION ol_mismatches(k int4) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    q simhash64;
    n int8 := 0;
    fast int8[];
    slow int8[];
BEGIN
    FOR q IN SELECT fp FROM ol_live WHERE id % 70 = 0 ORDER BY id LOOP
        SELECT array_agg(id ORDER BY id) INTO fast FROM ol_live WHERE simhash_near(fp, q, k);
        SELECT array_agg(id ORDER BY id) INTO slow FROM ol_live WHERE hamming_distance(fp, q) + 0 <= k;
        n := n + (fast IS DISTINCT FROM slow)::int4;
    END LOOP;
    RETURN n;
END
$$;
CREATE FUNCTION ol_plan(k int4) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    out text := '';
BEGIN
    FOR line IN EXECUTE format('EXPLAIN (COSTS OFF) SELECT id FROM ol_live WHERE simhash_near(fp, %L, %s)', '0123456789abcdef', k) LOOP
        out := out || CASE WHEN line ~ 'Index|Seq Scan|Bitmap|Custom|TID' THEN ltrim(regexp_replace(line, '^[ ->]*', '')) || '; ' ELSE '' END;
    END LOOP;
    RETURN out;
END
$$;

-- 1. The statements of the layout simhash_create_index would choose (permuted, 4 blocks here).
SET client_min_messages = notice;
SELECT simhash_index_statements('ol_live', 'fp', max_k => 3);
SET client_min_messages = warning;
SELECT simhash_index_statements('ol_live', 'fp', max_k => 3) \gexec
SELECT index, blocks, permuted FROM simhash_block_columns('ol_live') ORDER BY block;
SELECT ol_plan(3) AS plan, ol_mismatches(3) AS mismatches;
-- Run again: nothing left to do.
SELECT count(*) AS statements FROM simhash_index_statements('ol_live', 'fp', max_k => 3);

-- 2. Replacing it (a layout for k <= 7): the new one's indexes built first, then the old one's
-- dropped concurrently, one statement an index.
SELECT simhash_index_statements('ol_live', 'fp', max_k => 7);
SELECT simhash_index_statements('ol_live', 'fp', max_k => 7) \gexec
SELECT DISTINCT blocks, permuted FROM simhash_block_columns('ol_live');
SELECT ol_mismatches(7) AS mismatches;

-- 3. A build stopped half way: one index of a new layout made by hand, one left invalid by a
-- failed CREATE INDEX CONCURRENTLY (here a unique one over equal keys). The layout is not
-- complete, so lookups keep the one they have; the rerun drops the invalid index, makes the
-- missing ones, and the new layout is read.
CREATE INDEX CONCURRENTLY ol_live_fp_perm0of5 ON ol_live ((_simhash_permute(fp, 0, 5)));
INSERT INTO ol_live VALUES (500000, '0123456789abcdef'), (500001, '0123456789abcdef');
\set VERBOSITY terse
CREATE UNIQUE INDEX CONCURRENTLY ol_live_fp_perm1of5 ON ol_live ((_simhash_permute(fp, 1, 5)));
\set VERBOSITY default
SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'ol_live'::regclass AND c.relname LIKE 'ol_live_fp_perm%of5' ORDER BY 1;
SELECT DISTINCT blocks FROM simhash_block_columns('ol_live') ORDER BY 1;
SELECT ol_mismatches(7) AS mismatches_meanwhile;
SELECT simhash_index_statements('ol_live', 'fp', max_k => 7, blocks => 5, permuted => true);
SELECT simhash_index_statements('ol_live', 'fp', max_k => 7, blocks => 5, permuted => true) \gexec
SELECT blocks, count(*) AS indexes FROM simhash_block_columns('ol_live') GROUP BY blocks ORDER BY 1;
SELECT ol_mismatches(7) AS mismatches;

-- 4. Block columns, online, are expression indexes (no ALTER TABLE: a new column would rewrite
-- the table under ACCESS EXCLUSIVE), covering the fingerprint; lookups read them the same way.
SELECT simhash_index_statements('ol_live', 'fp', max_k => 3, blocks => 4, permuted => false);
SELECT simhash_index_statements('ol_live', 'fp', max_k => 3, blocks => 4, permuted => false) \gexec
SELECT column_name, index, covering, permuted FROM simhash_block_columns('ol_live') WHERE blocks = 4 AND NOT permuted ORDER BY block;
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'ol_live'::regclass AND attnum > 0 AND NOT attisdropped;
SELECT ol_mismatches(3) AS mismatches;

-- 5. Dropping online: each index DROP INDEX CONCURRENTLY; block columns simhash_create_index
-- added go by ALTER TABLE ... DROP COLUMN (a catalog change, no rewrite).
SELECT simhash_create_index('ol_live', 'fp', max_k => 3, blocks => 3, permuted => false);
SELECT simhash_drop_index_statements('ol_live', 'fp');
SELECT simhash_drop_index_statements('ol_live', 'fp') \gexec
SELECT count(*) AS layouts_left FROM simhash_block_columns('ol_live');
SELECT count(*) AS columns FROM pg_attribute WHERE attrelid = 'ol_live'::regclass AND attnum > 0 AND NOT attisdropped;

-- 6. A partitioned table: an index on the table alone (ON ONLY, invalid until every partition's
-- is attached), each partition's built concurrently and attached, level by level; lookups read
-- each partition's layout.
CREATE TABLE ol_parts (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE ol_parts_a PARTITION OF ol_parts FOR VALUES FROM (0) TO (10000);
CREATE TABLE ol_parts_b PARTITION OF ol_parts FOR VALUES FROM (10000) TO (1000000) PARTITION BY RANGE (id);
CREATE TABLE ol_parts_b1 PARTITION OF ol_parts_b FOR VALUES FROM (10000) TO (100000);
CREATE TABLE ol_parts_b2 PARTITION OF ol_parts_b FOR VALUES FROM (100000) TO (1000000);
INSERT INTO ol_parts SELECT id, fp FROM ol_live;
ANALYZE ol_parts;
SELECT simhash_index_statements('ol_parts', 'fp', max_k => 3, blocks => 2, permuted => true);
SELECT simhash_index_statements('ol_parts', 'fp', max_k => 3, blocks => 2, permuted => true) \gexec
SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE c.relname LIKE 'ol_parts%perm%' ORDER BY 1;
SELECT (SELECT array_agg(id ORDER BY id) FROM ol_parts WHERE simhash_near(fp, (SELECT fp FROM ol_live WHERE id = 7), 3))
     = (SELECT array_agg(id ORDER BY id) FROM ol_parts WHERE hamming_distance(fp, (SELECT fp FROM ol_live WHERE id = 7)) + 0 <= 3) AS same_as_brute;
SELECT simhash_drop_index_statements('ol_parts', 'fp');

-- 7. Sets of fingerprints and keys of several blocks, online too.
CREATE TABLE ol_docs (id int8 PRIMARY KEY, body text, fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 2)) STORED);
INSERT INTO ol_docs (id, body) SELECT g, 'document ' || g || ' of the online test' FROM generate_series(1, 200) g;
SELECT simhash_index_statements('ol_docs', 'fps', max_k => 3, blocks => 2);
SELECT simhash_index_statements('ol_live', 'fp', max_k => 3, blocks => 5, key_blocks => 2);

-- 8. What it refuses: a routed layout (made by simhash_create_index alone), another role's
-- table, bad arguments as simhash_create_index refuses them.
CREATE ROLE simhash_online_other;
SET ROLE simhash_online_other;
SELECT try_sql($$SELECT simhash_index_statements('ol_live', 'fp')$$) AS other_role;
SELECT try_sql($$SELECT simhash_drop_index_statements('ol_live', 'fp')$$) AS other_role_drop;
RESET ROLE;
DROP ROLE simhash_online_other;
SELECT try_sql($$SELECT simhash_index_statements('ol_live', 'fp', max_k => 70)$$) AS bad_k;
SELECT try_sql($$SELECT simhash_index_statements('ol_live', 'nope')$$) AS no_column;
DROP TABLE ol_live, ol_parts, ol_docs;
DROP FUNCTION ol_mismatches(int4), ol_plan(int4);
