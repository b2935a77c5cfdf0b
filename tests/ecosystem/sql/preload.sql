-- The server of this suite preloads simhash_pg beside pg_stat_statements and auto_explain (and
-- Citus first, in one of the two runs). Whatever the order, every library is loaded, the
-- others' features work, and ours answer right.
SET client_min_messages = warning;
SELECT count(*) AS preloaded
  FROM unnest(string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ',')) name
 WHERE name IN ('simhash_pg', 'pg_stat_statements', 'auto_explain');
SELECT current_setting('auto_explain.log_min_duration') AS auto_explain_everything,
       current_setting('pg_stat_statements.track') AS statements_tracked;
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION simhash_pg;
SELECT make_docs('docs');
SELECT simhash_create_index('docs', 'fp');
SELECT pg_stat_statements_reset() IS NOT NULL AS reset;
SELECT * FROM lookups_agree('docs', 7);
SELECT * FROM helpers_agree('docs');
SELECT simhash('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。') AS chinese;
SELECT count(*) > 0 AS statements_seen
  FROM pg_stat_statements WHERE query LIKE '%simhash_near%';
DROP TABLE docs;
DROP EXTENSION simhash_pg;
DROP EXTENSION pg_stat_statements;
