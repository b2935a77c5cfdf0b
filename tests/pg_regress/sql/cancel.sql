-- statement_timeout (and so pg_cancel_backend, the same interrupt) stops the long-running
-- helpers, and what they did is rolled back: no block column or index is left half-made.
-- simhash() on a 64 MB text is in text.sql, simhash_pairs in etl.sql; how promptly each stops
-- is measured by tests/reliability/cancel.sh (RELIABILITY.md).
CREATE TABLE cancel_fps WITH (autovacuum_enabled = false) AS
SELECT g AS id, hashint8extended(g, 7)::simhash64 AS fp FROM generate_series(1, 400000) g;
CREATE TABLE cancel_docs (id int8, body text,
                          fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED) WITH (autovacuum_enabled = false);
INSERT INTO cancel_docs (id, body) SELECT g, 'line ' || g || ' of the log' FROM generate_series(1, 200000) g;
CREATE TABLE cancel_target (LIKE cancel_docs INCLUDING GENERATED) WITH (autovacuum_enabled = false);
\set VERBOSITY terse
SET client_min_messages = warning; -- progress notices would depend on where the cancel lands
SET statement_timeout = '100ms';
-- Block columns: stopped while the table is rewritten.
SELECT simhash_create_index('cancel_fps', 'fp', permuted => false);
-- Permuted expression indexes (the default): stopped while an index is built.
SELECT simhash_create_index('cancel_docs', 'fp');
-- Row-by-row ingest: stopped between rows, none of them kept.
SELECT * FROM simhash_ingest('cancel_target', 'fp', 'cancel_docs', 3, false);
-- Nearest neighbours without indexes: a full scan (~150 ms in a release build), stopped.
SET statement_timeout = '10ms';
SELECT count(*) FROM simhash_nearest('cancel_fps', 'fp', '0123456789abcdef', 3);
RESET statement_timeout;
RESET client_min_messages;
\set VERBOSITY default
SELECT c.relname, count(a.attname) AS columns, (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid) AS indexes,
       (SELECT count(*) FROM cancel_target) AS target_rows
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relname IN ('cancel_fps', 'cancel_docs', 'cancel_target')
 GROUP BY c.oid, c.relname ORDER BY c.relname;
-- And the helper runs to the end when given time (on the table's size as ANALYZE counts it).
ANALYZE cancel_docs;
SELECT simhash_create_index('cancel_docs', 'fp');
SELECT count(*) AS found FROM cancel_docs WHERE simhash_near(fp, simhash('line 77 of the log'), 3);
DROP TABLE cancel_fps, cancel_docs, cancel_target;
