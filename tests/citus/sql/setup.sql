-- Runs first, on the coordinator of a fresh Citus cluster with two workers (.ci/stages/citus.sh):
-- the extension (Citus creates it on the workers too), deterministic rows, and the tables under
-- test, each holding the same rows as local_docs, whose brute-force answers are the truth.
CREATE EXTENSION simhash_pg;
SELECT nodeport, result AS simhash_pg_version
  FROM run_command_on_workers($$SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'$$)
 ORDER BY nodeport;

-- 'ok' or 'SQLSTATE: message', as in the SQL regression suite.
CREATE FUNCTION try_sql(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
CREATE FUNCTION fp_of(seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE
AS $$ SELECT (('x' || md5(seed))::bit(64)::int8)::simhash64 $$;
CREATE FUNCTION flip(fp simhash64, d int, seed text) RETURNS simhash64 LANGUAGE sql IMMUTABLE
AS $$
    SELECT ((fp::int8) # coalesce((SELECT bit_or(1::int8 << pos)
                                     FROM (SELECT pos FROM generate_series(0, 63) pos
                                            ORDER BY md5(seed || ':' || pos) LIMIT d) p), 0))::simhash64
$$;

-- Shared by the routed tests.
-- Whether a statement's plan reads the routes (the routed lookup) or every shard.
CREATE FUNCTION plan_reads(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        IF line LIKE '%_simhash_routed_lookup%' THEN
            RETURN 'the routes';
        ELSIF line LIKE '%Citus Adaptive%' THEN
            RETURN 'every shard';
        END IF;
    END LOOP;
    RETURN 'neither';
END
$$;
-- Lookups of every row's own fingerprint (and within 3 bits) through the table, against FROM
-- ONLY: how many differ.
CREATE FUNCTION lookup_mismatches(tbl regclass, col name, key name) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    r record;
    got text;
    want text;
    bad int8 := 0;
BEGIN
    FOR r IN EXECUTE format('SELECT %I AS fp FROM ONLY %s WHERE %I IS NOT NULL ORDER BY %I LIMIT 60', col, tbl, col, key) LOOP
        -- The keys in their own type, as text only after (Citus may turn a date into text on a
        -- worker, under the worker's DateStyle).
        EXECUTE format('SELECT array_agg(%I ORDER BY %I)::text FROM %s WHERE simhash_near(%I, %L, 3)', key, key, tbl, col, r.fp) INTO got;
        EXECUTE format('SELECT array_agg(%I ORDER BY %I)::text FROM ONLY %s WHERE simhash_near(%I, %L, 3)', key, key, tbl, col, r.fp) INTO want;
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN bad;
END
$$;

-- 20 query points with planted neighbours at every distance 0..8, 10,000 random rows, NULL
-- fingerprints and exact duplicates: the truth, in a local table.
CREATE TABLE queries (qid int4 PRIMARY KEY, fp simhash64 NOT NULL);
INSERT INTO queries SELECT q, fp_of('q' || q) FROM generate_series(1, 20) q;
CREATE TABLE local_docs (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO local_docs SELECT g, fp_of('bg' || g) FROM generate_series(1, 10000) g;
INSERT INTO local_docs SELECT 100000 + q.qid * 10 + d, flip(q.fp, d, q.qid || '/' || d)
  FROM queries q, generate_series(0, 8) d;
INSERT INTO local_docs SELECT 200000 + g, NULL FROM generate_series(1, 20) g;
INSERT INTO local_docs SELECT 300000 + q.qid, q.fp FROM queries q WHERE q.qid <= 5;

SET client_min_messages = warning; -- Citus's NOTICEs about copying local data
-- Distributed by id, block indexes made before distributing (4 blocks, covering).
CREATE TABLE docs_before (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO docs_before SELECT * FROM local_docs;
SELECT simhash_create_index('docs_before', 'fp');
SELECT create_distributed_table('docs_before', 'id');
SELECT truncate_local_data_after_distributing_table('docs_before');
-- Distributed by id, block indexes made after distributing (8 blocks, for k up to 7).
CREATE TABLE docs_after (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('docs_after', 'id');
INSERT INTO docs_after SELECT * FROM local_docs;
SELECT simhash_create_index('docs_after', 'fp', max_k => 7);
-- A reference table (a copy on every node).
CREATE TABLE docs_ref (id int8 PRIMARY KEY, fp simhash64);
SELECT create_reference_table('docs_ref');
INSERT INTO docs_ref SELECT * FROM local_docs;
SELECT simhash_create_index('docs_ref', 'fp');
-- Distributed by the fingerprint itself (exact duplicates meet on one shard).
CREATE TABLE docs_by_fp (id int8 NOT NULL, fp simhash64);
SELECT create_distributed_table('docs_by_fp', 'fp');
INSERT INTO docs_by_fp SELECT * FROM local_docs WHERE fp IS NOT NULL; -- Citus refuses NULL there
SELECT simhash_create_index('docs_by_fp', 'fp');
-- Fingerprints generated from text: the blocks go in expression indexes.
CREATE TABLE local_news (id int8 PRIMARY KEY, body text NOT NULL,
                         fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO local_news (id, body)
SELECT g, format('news item %s about %s and %s', g, md5(g::text), md5((g % 97)::text)) FROM generate_series(1, 2000) g;
INSERT INTO local_news (id, body)
SELECT 10000 + g, format('news item %s about %s and %s', g, md5(g::text), md5((g % 97)::text)) || ' (updated)'
  FROM generate_series(1, 200) g;
CREATE TABLE news (id int8 PRIMARY KEY, body text NOT NULL,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('news', 'id');
INSERT INTO news (id, body) SELECT id, body FROM local_news;
SELECT simhash_create_index('news', 'fp');
RESET client_min_messages;

-- Every node has the block columns and indexes on every shard it holds.
SELECT c.relname, count(b.*) AS block_indexes
  FROM pg_class c, LATERAL simhash_block_columns(c.oid) b
 WHERE c.relname IN ('docs_before', 'docs_after', 'docs_ref', 'docs_by_fp', 'news') AND b.index IS NOT NULL
 GROUP BY c.relname ORDER BY c.relname;
SELECT nodeport, result AS shards_with_block_indexes
  FROM run_command_on_workers($$
       SELECT count(DISTINCT c.oid) FROM pg_class c, LATERAL simhash_block_columns(c.oid) b
        WHERE c.relname ~ '^(docs_before|docs_after|docs_ref|docs_by_fp|news)_[0-9]+$' AND b.index IS NOT NULL AND b.covering$$)
 ORDER BY nodeport;
