-- Layouts built online on Citus (simhash_index_statements, issue 64): the statements are the
-- same as on one node, and Citus runs each CREATE INDEX CONCURRENTLY and DROP INDEX
-- CONCURRENTLY on every shard. Block columns (what simhash_create_index makes on Citus) are
-- expression indexes here; lookups read them on each shard and equal brute force. A routed
-- layout is made and dropped by simhash_create_index and simhash_drop_index alone.
SET client_min_messages = warning;
CREATE TABLE co (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('co', 'id', shard_count => 4);
INSERT INTO co SELECT g, hashtextextended(g::text, 2)::simhash64 FROM generate_series(1, 5000) g;
SET client_min_messages = notice;
SELECT simhash_index_statements('co', 'fp', max_k => 3);
SET client_min_messages = warning;
SELECT simhash_index_statements('co', 'fp', max_k => 3) \gexec
SELECT column_name, index, blocks, permuted FROM simhash_block_columns('co') ORDER BY block;
SELECT bool_and(success AND result::int > 0) AS indexes_on_every_worker FROM run_command_on_workers($$SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'co_fp_block%'$$);
SELECT plan_reads($$SELECT id FROM co WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan;
SELECT (SELECT array_agg(id ORDER BY id) FROM co WHERE simhash_near(fp, (SELECT fp FROM co WHERE id = 7), 3))
     = (SELECT array_agg(id ORDER BY id) FROM co WHERE hamming_distance(fp, (SELECT fp FROM co WHERE id = 7)) + 0 <= 3) AS same_as_brute;
SELECT simhash_drop_index_statements('co', 'fp') \gexec
SELECT count(*) AS layouts_left FROM simhash_block_columns('co');
SELECT simhash_create_index('co', 'fp', routed => true);
SELECT try_sql($$SELECT simhash_drop_index_statements('co', 'fp')$$) AS routed_drop;
SELECT simhash_drop_index('co', 'fp');
DROP TABLE co;
