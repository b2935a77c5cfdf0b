-- The ETL helpers on Citus tables: rows are named by a key column (a ctid names a row only
-- within one shard, so it is refused), and every answer equals the one on the local copy.

-- No key column: refused, with a hint.
SELECT try_sql($$SELECT * FROM simhash_pairs('docs_after', 'fp', 3)$$) AS pairs_by_ctid;
SELECT try_sql($$SELECT * FROM simhash_chained_groups('docs_ref', 'fp', 3)$$) AS clusters_by_ctid;
SELECT try_sql($$SELECT * FROM simhash_nearest('docs_before', 'fp', '0123456789abcdef', 3)$$) AS nearest_by_ctid;

-- All pairs and groups, keys as text and in their own type, against the local table.
SELECT t AS tbl, k,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs(t, 'fp', k, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_docs', 'fp', k, 'id', NULL::int8)) AS same_pairs,
       (SELECT count(*) FROM simhash_pairs(t, 'fp', k, 'id')) AS pairs
  FROM unnest(ARRAY['docs_before', 'docs_after', 'docs_ref', 'docs_by_fp']::regclass[]) t, unnest(ARRAY[0, 3, 6]) k
 ORDER BY 1, 2;
SELECT (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('docs_after', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('local_docs', 'fp', 3, 'id', NULL::int8)) AS same_groups,
       (SELECT array_agg((key, group_key) ORDER BY key::int8) FROM simhash_chained_groups('news', 'fp', 3, 'id'))
     = (SELECT array_agg((key, group_key) ORDER BY key::int8) FROM simhash_chained_groups('local_news', 'fp', 3, 'id')) AS same_news_groups;

-- Groups that do not chain, with and without the exact check of the texts: the same as on
-- the local copy.
SELECT (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_representative_groups('docs_after', 'fp', 3, 'id'))
     = (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_representative_groups('local_docs', 'fp', 3, 'id')) AS same_stars,
       (SELECT array_agg((key, representative) ORDER BY key::int8)
          FROM simhash_representative_groups('news', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.3}'))
     = (SELECT array_agg((key, representative) ORDER BY key::int8)
          FROM simhash_representative_groups('local_news', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.3}')) AS same_verified_news_groups,
       (SELECT count(*) FROM simhash_representative_groups('news', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.3}')) AS verified_rows;

-- Pairs and components checked against the texts: the same as on the local copy.
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}'))
       AS same_checked_pairs,
       (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}'))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('local_news', 'fp', 6, 'id', NULL::int8, verify => '{"column": "body", "min_jaccard": 0.3}'))
       AS same_checked_clusters,
       (SELECT count(*) FROM simhash_pairs('news', 'fp', 6, 'id', verify => '{"column": "body", "min_jaccard": 0.3}')) AS checked_pairs,
       (SELECT count(*) FROM simhash_pairs('news', 'fp', 6, 'id')) AS unchecked_pairs;

-- The same pairs and groups joined on the workers (simhash_pg.citus_pairs = workers; 'auto'
-- does so from 1M rows): rows repartitioned by each key into intermediate distributed tables.
SET simhash_pg.citus_pairs = workers;
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT t AS tbl, k,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs(t, 'fp', k, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_docs', 'fp', k, 'id', NULL::int8)) AS same_pairs
  FROM (VALUES ('docs_after'::regclass, 0), ('docs_after', 3), ('docs_after', 6), ('docs_by_fp', 3),
               ('docs_ref', 3)) v(t, k) -- a reference table: joined on one node, as before
 ORDER BY 1, 2;
SELECT (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('docs_after', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('local_docs', 'fp', 3, 'id', NULL::int8)) AS same_groups,
       (SELECT array_agg((key, group_key) ORDER BY key::int8) FROM simhash_chained_groups('news', 'fp', 3, 'id'))
     = (SELECT array_agg((key, group_key) ORDER BY key::int8) FROM simhash_chained_groups('local_news', 'fp', 3, 'id')) AS same_news_groups;
-- Keys in several batches (the batch size follows the row count, here claimed to be 4M: five
-- keys per batch), each batch made from the one before.
SELECT k, (SELECT array_agg((a, b, distance) ORDER BY a, b)
             FROM _simhash_pairs_on_workers('docs_after', 'fp', k, 'id', NULL::int8, _simhash_pair_masks(k, 1e6), 4e6))
        = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_docs', 'fp', k, 'id', NULL::int8)) AS same_pairs,
       cardinality(_simhash_pair_masks(k, 1e6)) AS keys
  FROM unnest(ARRAY[3, 6]) k ORDER BY k;
-- Keys that are not unique (rows with one key on different shards are still told apart) and
-- text keys (ordered by their collation, as on one node).
CREATE TABLE local_dups AS SELECT id / 10 AS n, 'doc ' || (id / 10) AS name, fp FROM local_docs WHERE fp IS NOT NULL;
CREATE TABLE dups AS SELECT * FROM local_dups;
SELECT create_distributed_table('dups', 'fp', colocate_with => 'none');
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b, distance) FROM simhash_pairs('dups', 'fp', 3, 'n', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b, distance) FROM simhash_pairs('local_dups', 'fp', 3, 'n', NULL::int8)) AS same_int_pairs,
       (SELECT array_agg((a, b, distance) ORDER BY a, b, distance) FROM simhash_pairs('dups', 'fp', 3, 'name'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b, distance) FROM simhash_pairs('local_dups', 'fp', 3, 'name')) AS same_text_pairs,
       (SELECT count(*) FROM simhash_pairs('local_dups', 'fp', 3, 'n') WHERE a = b) AS pairs_within_one_key;
RESET client_min_messages;
-- Nothing is left behind, here or on the workers.
SELECT count(*) AS intermediate_tables FROM pg_class WHERE relname LIKE '\_simhash\_pairs\_%';
SELECT nodeport, result AS intermediate_tables
  FROM run_command_on_workers($$SELECT count(*) FROM pg_class WHERE relname LIKE '\_simhash\_pairs\_%'$$)
 ORDER BY nodeport;
-- Where the workers cannot join, the coordinator does, and says why: a read-only transaction,
-- a role without CREATE on the table's schema. A bad setting is an error.
BEGIN READ ONLY;
SELECT count(*) FROM simhash_pairs('docs_after', 'fp', 3, 'id');
COMMIT;
CREATE ROLE pairs_reader LOGIN;
GRANT SELECT ON docs_after TO pairs_reader;
SET ROLE pairs_reader;
SELECT count(*) FROM simhash_pairs('docs_after', 'fp', 3, 'id');
RESET ROLE;
SELECT try_sql($$SET simhash_pg.citus_pairs = 'everywhere'$$) AS bad_setting;
SET simhash_pg.citus_pairs = coordinator;
SELECT count(*) FROM simhash_pairs('docs_after', 'fp', 3, 'id');
RESET simhash_pg.citus_pairs;

-- Sets of fingerprints (simhash_set): pairs, groups and lookups on a distributed table equal
-- those of the local copy, joined on the workers and on the coordinator.
CREATE FUNCTION title_of(g int) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT string_agg(substr(md5(g || ':' || w), 1, 2 + w % 4), ' ' ORDER BY w) FROM generate_series(1, 8) w $$;
CREATE TABLE local_titles (id int8 PRIMARY KEY, title text NOT NULL,
                           fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 3, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED);
INSERT INTO local_titles (id, title) SELECT g, title_of(g) FROM generate_series(1, 1000) g;
INSERT INTO local_titles (id, title) SELECT 10000 + g, overlay(title_of(g) PLACING 'z' FROM 4 FOR 1) FROM generate_series(1, 100) g;
SET client_min_messages = warning;
CREATE TABLE titles (LIKE local_titles INCLUDING GENERATED);
ALTER TABLE titles ADD PRIMARY KEY (id);
SELECT create_distributed_table('titles', 'id');
INSERT INTO titles (id, title) SELECT id, title FROM local_titles;
SELECT simhash_create_index('titles', 'fps');
SELECT simhash_create_index('local_titles', 'fps');
SELECT place, k,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('titles', 'fps', k, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_titles', 'fps', k, 'id', NULL::int8)) AS same_pairs,
       (SELECT count(*) FROM simhash_pairs('local_titles', 'fps', k, 'id')) AS pairs
  FROM unnest(ARRAY['workers', 'coordinator']) place, unnest(ARRAY[3, 6]) k,
       LATERAL (SELECT set_config('simhash_pg.citus_pairs', place, false)) c
 ORDER BY 1, 2;
SELECT (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('titles', 'fps', 6, 'id', NULL::int8))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('local_titles', 'fps', 6, 'id', NULL::int8)) AS same_set_groups;
RESET simhash_pg.citus_pairs;
RESET client_min_messages;
-- Lookups, each query set a literal (Citus joins no distributed table with a local one).
CREATE FUNCTION set_lookup_mismatches(k int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE q record; got int8[]; want int8[]; bad int := 0; n int := 0;
BEGIN
    FOR q IN SELECT id, fps FROM local_titles WHERE id % 50 = 0 OR (id > 10000 AND id % 10 = 0) LOOP
        EXECUTE format('SELECT array_agg(t.id ORDER BY t.id) FROM titles t WHERE simhash_near_any(t.fps, %L, %s)', q.fps, k) INTO got;
        EXECUTE format('SELECT array_agg(t.id ORDER BY t.id) FROM local_titles t WHERE t.fps <-> %L <= %s', q.fps, k) INTO want;
        bad := bad + (got IS DISTINCT FROM want)::int;
        n := n + 1;
    END LOOP;
    RETURN format('%s mismatches in %s lookups', bad, n);
END $$;
SELECT set_lookup_mismatches(3) AS k3, set_lookup_mismatches(6) AS k6;

-- The nearest rows, by key.
SELECT q.qid,
       (SELECT array_agg((n.key, n.distance)) FROM simhash_nearest('docs_before', 'fp', q.fp, 12, 'id', NULL::int8) n)
     = (SELECT array_agg((n.key, n.distance)) FROM simhash_nearest('local_docs', 'fp', q.fp, 12, 'id', NULL::int8) n) AS same_nearest
  FROM queries q WHERE q.qid <= 5 ORDER BY q.qid;

-- Ingest into a distributed table, from a local and from a distributed staging table: the
-- same rows go in as into a local copy of the target.
CREATE TABLE staging (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO staging SELECT 500000 + g, fp_of('new' || g) FROM generate_series(1, 100) g;        -- new
INSERT INTO staging SELECT 600000 + q.qid, flip(q.fp, 2, 'in' || q.qid) FROM queries q;          -- near-copies
INSERT INTO staging SELECT 700000 + g, flip(fp_of('new' || g), 1, 'twin' || g) FROM generate_series(1, 10) g; -- near-copies within the batch
CREATE TABLE local_target AS SELECT * FROM local_docs;
SELECT * FROM simhash_ingest('local_target', 'fp', 'staging');
SET client_min_messages = warning;
CREATE TABLE target (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('target', 'id');
INSERT INTO target SELECT * FROM local_docs;
SELECT simhash_create_index('target', 'fp');
RESET client_min_messages;
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT * FROM simhash_ingest('target', 'fp', 'staging');
RESET client_min_messages;
SELECT (SELECT array_agg(id ORDER BY id) FROM target) = (SELECT array_agg(id ORDER BY id) FROM local_target) AS same_rows;
-- From a distributed staging table: its rows are copied to the coordinator first.
SET client_min_messages = warning;
CREATE TABLE dist_staging (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('dist_staging', 'id');
RESET client_min_messages;
INSERT INTO dist_staging SELECT 800000 + g, fp_of('more' || g) FROM generate_series(1, 50) g;
INSERT INTO dist_staging SELECT 900000 + q.qid, flip(q.fp, 1, 'again' || q.qid) FROM queries q;
SET client_min_messages = warning; -- progress notices come after 2 s, or not
SELECT * FROM simhash_ingest('target', 'fp', 'dist_staging');
RESET client_min_messages;
SELECT count(*) FILTER (WHERE id BETWEEN 800000 AND 899999) AS new_rows,
       count(*) FILTER (WHERE id >= 900000) AS near_copies_inserted
  FROM target;

-- Pairs across two tables, a Citus one on either side or both, against the local copies.
CREATE TABLE pb_local AS SELECT id, fp FROM local_docs WHERE id > 100000;
SELECT t AS tbl, k,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between(t, 'fp', 'pb_local', 'fp', k, 'id', 'id'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('local_docs', 'fp', 'pb_local', 'fp', k, 'id', 'id'))
       AS same_pairs,
       (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('pb_local', 'fp', t, 'fp', k, 'id', 'id'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('pb_local', 'fp', 'local_docs', 'fp', k, 'id', 'id'))
       AS same_pairs_swapped
  FROM unnest(ARRAY['docs_after', 'docs_ref', 'docs_by_fp']::regclass[]) t, unnest(ARRAY[0, 4]) k
 ORDER BY 1, 2;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('docs_after', 'fp', 'docs_by_fp', 'fp', 3, 'id', 'id'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs_between('local_docs', 'fp', 'local_docs', 'fp', 3, 'id', 'id'))
       AS two_distributed_tables;
DROP TABLE pb_local;

-- Ingest checked against the texts into a distributed table: the same rows go in as into a
-- local copy (near-copies whose text changed too much are kept).
SET client_min_messages = warning;
CREATE TABLE news_copy (LIKE local_news INCLUDING GENERATED);
SELECT create_distributed_table('news_copy', 'id');
INSERT INTO news_copy (id, body) SELECT id, body FROM local_news;
SELECT simhash_create_index('news_copy', 'fp');
CREATE TABLE local_news_copy (LIKE local_news INCLUDING GENERATED);
INSERT INTO local_news_copy (id, body) SELECT id, body FROM local_news;
CREATE TABLE news_staging (LIKE local_news INCLUDING GENERATED);
INSERT INTO news_staging (id, body)
SELECT 50000 + id, body || CASE WHEN id % 80 = 0 THEN ' (again)' ELSE ' rewritten from scratch by another desk today' END
  FROM local_news WHERE id % 40 = 0;
SELECT * FROM simhash_ingest('local_news_copy', 'fp', 'news_staging', 8, verify => '{"column": "body", "min_jaccard": 0.6}');
SELECT * FROM simhash_ingest('news_copy', 'fp', 'news_staging', 8, verify => '{"column": "body", "min_jaccard": 0.6}');
RESET client_min_messages;
SELECT (SELECT array_agg(id ORDER BY id) FROM news_copy) = (SELECT array_agg(id ORDER BY id) FROM local_news_copy) AS same_checked_ingest;

-- simhash_k_report on distributed and reference tables: every row sampled (a random filter on
-- Citus, always true here), the same shares as on the local copy.
SELECT t AS tbl,
       (SELECT array_agg(random_pairs_within ORDER BY k) FROM simhash_k_report(t, 'fp', 100000))
     = (SELECT array_agg(random_pairs_within ORDER BY k) FROM simhash_k_report('local_docs', 'fp', 100000)) AS same_rates
  FROM unnest(ARRAY['docs_before', 'docs_after', 'docs_ref']::regclass[]) t
 ORDER BY 1;

-- Pairs joined on the coordinator that do not fit maintenance_work_mem (issue 67: as SQL joins,
-- 29x to 150x slower than in memory, and at k = 12 max_stack_depth): a hash-distributed table
-- goes to the workers under simhash_pg.citus_pairs = auto; a reference table is refused with
-- the memory it needs; simhash_pg.pairs_method = joins runs the joins anyway, the same pairs.
SET maintenance_work_mem = '1MB';
SET client_min_messages = warning;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('docs_after', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_docs', 'fp', 3, 'id', NULL::int8)) AS distributed_on_workers;
RESET client_min_messages;
SELECT regexp_replace(try_sql($$SELECT * FROM simhash_pairs('docs_ref', 'fp', 12, 'id', NULL::int8)$$), 'about [0-9]+ rows', 'about N rows')
       AS reference_refused;
SET simhash_pg.pairs_method = joins;
SELECT (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('docs_ref', 'fp', 3, 'id', NULL::int8))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('local_docs', 'fp', 3, 'id', NULL::int8)) AS reference_joins;
RESET simhash_pg.pairs_method;
RESET maintenance_work_mem;
