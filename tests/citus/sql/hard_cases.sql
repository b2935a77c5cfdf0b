-- What an adversarial run on Citus found: each case ends with the local copy's answer, or a
-- clear error up front, and leaves nothing behind.

-- A small copy of the rows (the 1,000 first background rows and every planted neighbour), so
-- that large k stay quick.
CREATE TABLE local_small AS SELECT * FROM local_docs WHERE id <= 1000 OR id >= 100000;
ALTER TABLE local_small ADD PRIMARY KEY (id);
CREATE TABLE small_docs (id int8 PRIMARY KEY, fp simhash64);
SET client_min_messages = warning;
SELECT create_distributed_table('small_docs', 'id');
RESET client_min_messages;
INSERT INTO small_docs SELECT * FROM local_small;

-- 1. Pairs and groups joined on the workers at large k. The key that returns a pair is decided
-- once per candidate (_simhash_first_shared_key), so the statement grows with the keys; in
-- 0.3.0 it grew with their square, and at k >= 9 Citus took gigabytes to plan it.
SET simhash_pg.citus_pairs = workers;
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT k, cardinality(_simhash_pair_masks(k, 1100)) AS keys,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('small_docs', 'fp', k, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_small', 'fp', k, 'id', NULL::int8)) AS same_pairs,
       (SELECT count(*) FROM simhash_pairs('local_small', 'fp', k, 'id')) AS pairs
  FROM unnest(ARRAY[9, 10, 12]) k ORDER BY k;
SELECT (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('small_docs', 'fp', 10, 'id', NULL::int8))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('local_small', 'fp', 10, 'id', NULL::int8)) AS same_chained_groups,
       (SELECT array_agg((key, representative) ORDER BY key) FROM simhash_representative_groups('small_docs', 'fp', 12, 'id', NULL::int8))
     = (SELECT array_agg((key, representative) ORDER BY key) FROM simhash_representative_groups('local_small', 'fp', 12, 'id', NULL::int8)) AS same_representative_groups;
-- Sets of fingerprints, keys over every element.
CREATE TABLE local_news_sets (id int8 PRIMARY KEY, body text NOT NULL,
                              fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 3, '{"tokenizer": "chars", "ngram": 2}')) STORED);
INSERT INTO local_news_sets (id, body) SELECT id, body FROM local_news WHERE id <= 400 OR id > 10000;
CREATE TABLE news_sets (LIKE local_news_sets INCLUDING GENERATED);
ALTER TABLE news_sets ADD PRIMARY KEY (id);
SELECT create_distributed_table('news_sets', 'id');
INSERT INTO news_sets (id, body) SELECT id, body FROM local_news_sets;
SELECT k, (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('news_sets', 'fps', k, 'id', NULL::int8))
        = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_news_sets', 'fps', k, 'id', NULL::int8)) AS same_set_pairs,
          (SELECT count(*) FROM simhash_pairs('local_news_sets', 'fps', k, 'id')) AS pairs
  FROM unnest(ARRAY[6, 10]) k ORDER BY k;
-- The same on the coordinator, which joins every key in one statement.
SET simhash_pg.citus_pairs = coordinator;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('small_docs', 'fp', 10, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_small', 'fp', 10, 'id', NULL::int8)) AS same_pairs,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('news_sets', 'fps', 10, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_news_sets', 'fps', 10, 'id', NULL::int8)) AS same_set_pairs;
RESET simhash_pg.citus_pairs;
RESET client_min_messages;

-- 2. simhash_drop_index drops expression-index layouts (a generated fingerprint column, a set
-- column) one index at a time, everywhere: Citus refuses several in one DROP INDEX.
SELECT simhash_create_index('news_sets', 'fps');
SELECT count(*) AS set_indexes FROM simhash_block_columns('news_sets') WHERE index IS NOT NULL;
SELECT simhash_drop_index('news_sets', 'fps');
SELECT simhash_drop_index('news', 'fp');
SELECT c.relname, count(b.index) AS block_indexes
  FROM pg_class c LEFT JOIN LATERAL simhash_block_columns(c.oid) b ON true
 WHERE c.relname IN ('news', 'news_sets') GROUP BY c.relname ORDER BY c.relname;
SELECT nodeport, result AS shard_block_indexes
  FROM run_command_on_workers($$
       SELECT count(*) FROM pg_class c, LATERAL simhash_block_columns(c.oid) b
        WHERE c.relname ~ '^(news|news_sets)_[0-9]+$' AND b.index IS NOT NULL$$)
 ORDER BY nodeport;
SET client_min_messages = warning;
SELECT simhash_create_index('news', 'fp'); -- as setup left it, for the suites after this one
RESET client_min_messages;

-- 3. Tables that Citus makes anew lose their comments (the marks of simhash_create_index's
-- columns and indexes): simhash_drop_index then knows its objects by their names, and leaves
-- hand-made blocks of other names.
SET client_min_messages = warning;
CREATE TABLE conv (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED,
                   fp2 simhash64, hand int8 GENERATED ALWAYS AS (simhash_block(fp2, 0, 2)) STORED);
CREATE INDEX conv_hand ON conv (hand) INCLUDE (fp2);
SELECT create_distributed_table('conv', 'id');
INSERT INTO conv (id, body, fp2) SELECT id, body, fp FROM local_news WHERE id <= 300;
SELECT simhash_create_index('conv', 'fp');
SELECT simhash_create_index('conv', 'fp2');
SELECT simhash_create_index('conv', 'fp2', blocks => 5); -- a second layout beside
SELECT alter_distributed_table('conv', shard_count := 6, cascade_to_colocated := false);
RESET client_min_messages;
SELECT count(*) AS blocks, count(*) FILTER (WHERE coalesce(col_description('conv'::regclass, a.attnum),
                                                        obj_description(i.oid, 'pg_class')) IS NOT NULL) AS still_marked
  FROM simhash_block_columns('conv') b
  LEFT JOIN pg_attribute a ON a.attrelid = 'conv'::regclass AND a.attname = b.column_name
  LEFT JOIN pg_class i ON i.relname = b.index;
SELECT simhash_drop_index('conv', 'fp');
SELECT simhash_drop_index('conv', 'fp2');
SELECT column_name, index FROM simhash_block_columns('conv');
SELECT nodeport, result AS shard_blocks
  FROM run_command_on_workers($$SELECT count(*) FROM pg_class c, LATERAL simhash_block_columns(c.oid) b
                                 WHERE c.relname ~ '^conv_[0-9]+$' AND b.column_name IS DISTINCT FROM 'hand'$$)
 ORDER BY nodeport;
-- Back to a local table, and into Citus's metadata as a local table: the same.
SET client_min_messages = warning;
SELECT simhash_create_index('conv', 'fp');
SELECT undistribute_table('conv');
RESET client_min_messages;
SELECT simhash_drop_index('conv', 'fp');
SET client_min_messages = warning;
SELECT simhash_create_index('conv', 'fp2');
SELECT citus_add_local_table_to_metadata('conv');
RESET client_min_messages;
SELECT simhash_drop_index('conv', 'fp2');
SELECT column_name, index FROM simhash_block_columns('conv');
DROP TABLE conv;

-- 4. Single-shard tables (create_distributed_table(t, NULL), schema-based sharding): a
-- statement that reads the table is sent whole to its shard, where the pairs' own distributed
-- queries may not run; the pairs come first, in a statement of their own.
CREATE TABLE single_news (LIKE local_news INCLUDING GENERATED);
ALTER TABLE single_news ADD PRIMARY KEY (id);
SELECT create_distributed_table('single_news', NULL);
INSERT INTO single_news (id, body) SELECT id, body FROM local_news;
SELECT (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_representative_groups('single_news', 'fp', 6, 'id'))
     = (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_representative_groups('local_news', 'fp', 6, 'id')) AS same_groups,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('single_news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}')) AS same_checked_pairs,
       (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('single_news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}'))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('local_news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}')) AS same_checked_groups,
       (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_representative_groups('single_news', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.3}'))
     = (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_representative_groups('local_news', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.3}')) AS same_checked_representatives;

-- 5. Connected to a worker node, the workers cannot be asked to join (only the coordinator
-- creates distributed tables): the worker joins the rows itself, as for a read-only
-- transaction, with a notice, and gets the coordinator's answer.
CREATE FUNCTION pairs_here(place text) RETURNS int8 LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('simhash_pg.citus_pairs', place, true);
    RETURN (SELECT count(*) FROM simhash_pairs('small_docs', 'fp', 6, 'id'));
END $$;
SELECT nodeport, success, result = (SELECT count(*) FROM simhash_pairs('local_small', 'fp', 6, 'id'))::text AS same_count
  FROM run_command_on_workers($$SELECT pairs_here('workers')$$) ORDER BY nodeport;

-- 6. Columnar tables read no row by ctid, and have neither TID nor bitmap scans: lookups scan
-- the table (simhash_create_index says so), ingest uses its joins and copies a columnar source
-- first, pairs need a key column, name rows by it where they do not fit in memory, and on the
-- workers need a unique one.
CREATE EXTENSION IF NOT EXISTS citus_columnar;
CREATE TABLE col_docs (id int8, fp simhash64) USING columnar;
INSERT INTO col_docs SELECT * FROM local_small;
SELECT simhash_create_index('col_docs', 'fp', blocks => 4);
SET client_min_messages = warning;
SELECT simhash_create_index('local_small', 'fp'); -- a heap table beside it, for the plans
RESET client_min_messages;
SELECT k, count(*) FILTER (WHERE got IS DISTINCT FROM want) AS mismatches, count(*) AS lookups
  FROM queries q, unnest(ARRAY[0, 3, 7]) k,
       LATERAL (SELECT array_agg(id ORDER BY id) AS got FROM col_docs WHERE simhash_near(fp, q.fp, k)) g,
       LATERAL (SELECT array_agg(id ORDER BY id) AS want FROM local_small WHERE fp <-> q.fp <= k) w
 GROUP BY k ORDER BY k;
CREATE FUNCTION tid_scans(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE line text; n int := 0;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        n := n + (line ~ 'Tid')::int;
    END LOOP;
    RETURN n;
END $$;
SELECT tid_scans($$SELECT id FROM col_docs WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS columnar,
       tid_scans($$SELECT id FROM local_small WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS heap;
CREATE TABLE col_staging (id int8, fp simhash64) USING columnar;
INSERT INTO col_staging SELECT 700000 + q.qid, flip(q.fp, 1, 'col' || q.qid) FROM queries q;
INSERT INTO col_staging SELECT 800000 + g, fp_of('col new' || g) FROM generate_series(1, 5) g;
SELECT * FROM simhash_ingest('col_docs', 'fp', 'col_staging', 3);
SELECT count(*) FILTER (WHERE id >= 800000) AS new_rows, count(*) FILTER (WHERE id BETWEEN 700000 AND 799999) AS near_copies
  FROM col_docs;
SELECT try_sql($$SELECT * FROM simhash_pairs('col_docs', 'fp', 3)$$) AS pairs_by_ctid;
SELECT m AS pairs_method,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('col_docs', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_small', 'fp', 3, 'id', NULL::int8)) AS same_pairs
  FROM unnest(ARRAY['auto', 'joins']) m, LATERAL (SELECT set_config('simhash_pg.pairs_method', m, false)) c
 ORDER BY 1;
RESET simhash_pg.pairs_method;
-- A partitioned table with a columnar partition: the same.
CREATE TABLE parted (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (MINVALUE) TO (100000);
CREATE TABLE parted_high PARTITION OF parted FOR VALUES FROM (100000) TO (MAXVALUE) USING columnar;
INSERT INTO parted SELECT * FROM local_small;
SET simhash_pg.pairs_method = joins;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('parted', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_small', 'fp', 3, 'id', NULL::int8)) AS same_pairs;
RESET simhash_pg.pairs_method;
-- Pairs across a heap and a columnar table: hash joins, not a lookup per row.
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('queries', 'fp', 'col_docs', 'fp', 3, 'qid', 'id'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('queries', 'fp', 'local_small', 'fp', 3, 'qid', 'id')) AS same_pairs_between;
-- Distributed, without a unique key: joined on the coordinator, with a notice saying why.
CREATE TABLE dist_col_docs (id int8, fp simhash64) USING columnar;
SET client_min_messages = warning;
SELECT create_distributed_table('dist_col_docs', 'id');
RESET client_min_messages;
INSERT INTO dist_col_docs SELECT * FROM local_small;
SET simhash_pg.citus_pairs = workers;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('dist_col_docs', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_small', 'fp', 3, 'id', NULL::int8)) AS same_pairs;
RESET simhash_pg.citus_pairs;

-- Nothing is left behind, here or on the workers.
SELECT count(*) AS intermediate_tables FROM pg_class WHERE relname LIKE '\_simhash\_pairs\_%';
SELECT nodeport, result AS intermediate_tables
  FROM run_command_on_workers($$SELECT count(*) FROM pg_class WHERE relname LIKE '\_simhash\_pairs\_%'$$)
 ORDER BY nodeport;
DROP TABLE local_small, small_docs, local_news_sets, news_sets, single_news, col_docs, col_staging, dist_col_docs, parted;
DROP FUNCTION pairs_here(text), tid_scans(text);
