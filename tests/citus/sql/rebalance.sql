-- Shards moved to a new worker keep their block indexes, and lookups stay exact. Then
-- simhash_drop_index on a distributed table drops the blocks on every shard.
SET client_min_messages = warning;
SELECT 1 FROM citus_add_node('127.0.0.1', 5487);
SELECT rebalance_table_shards(shard_transfer_mode => 'block_writes');
RESET client_min_messages;
SELECT nodeport, count(*) AS shards
  FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid)
 WHERE s.logicalrelid = 'docs_after'::regclass
 GROUP BY nodeport ORDER BY nodeport;
SELECT nodeport, result AS shards_with_block_indexes
  FROM run_command_on_workers($$
       SELECT count(DISTINCT c.oid) FROM pg_class c, LATERAL simhash_block_columns(c.oid) b
        WHERE c.relname ~ '^docs_after_[0-9]+$' AND b.index IS NOT NULL AND b.covering$$)
 ORDER BY nodeport;
SELECT t AS tbl, k, mismatches(t, k)
  FROM unnest(ARRAY['docs_before', 'docs_after']::regclass[]) t, unnest(ARRAY[3, 7]) k
 ORDER BY 1, 2;
SELECT * FROM task_plans($$SELECT id FROM docs_after WHERE simhash_near(fp, 'e4c2b3a0b9b3d6fe', 3)$$);

-- Dropping the blocks: gone from the coordinator and every shard; lookups still exact.
SET client_min_messages = warning;
SELECT simhash_drop_index('docs_before', 'fp');
RESET client_min_messages;
SELECT count(*) AS block_columns_left FROM simhash_block_columns('docs_before');
SELECT nodeport, result AS block_columns_left
  FROM run_command_on_workers($$
       SELECT count(*) FROM pg_class c, LATERAL simhash_block_columns(c.oid) b
        WHERE c.relname ~ '^docs_before_[0-9]+$'$$)
 ORDER BY nodeport;
SELECT mismatches('docs_before', 3);
