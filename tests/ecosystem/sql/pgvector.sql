-- simhash_pg beside pgvector 0.8.6, which defines hamming_distance(bit, bit) in the schema it is
-- created in: public, as ours usually is. Three orders: ours first with block indexes made
-- before pgvector arrives; pgvector first; pgvector in a schema of its own ahead of ours.
SET client_min_messages = warning;

-- 1. Ours first; block indexes (covering, and plain for the BitmapOr form) made before pgvector.
CREATE EXTENSION simhash_pg;
SELECT make_docs('docs');
SELECT simhash_create_index('docs', 'fp');
SELECT make_docs('docs_plain');
SELECT simhash_create_index('docs_plain', 'fp', 7, covering => false);
CREATE EXTENSION vector;
SELECT p.oid::regprocedure AS same_name_in_public
  FROM pg_proc p WHERE p.proname = 'hamming_distance' AND p.pronamespace = 'public'::regnamespace
 ORDER BY 1::text;
SELECT * FROM lookups_agree('docs');
SELECT * FROM lookups_agree('docs_plain');
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM docs_plain WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT * FROM simhash_block_columns('docs');
-- The helpers, including the one that failed first ("function name ... is not unique").
SELECT make_docs('docs_after');
SELECT simhash_create_index('docs_after', 'fp');
SELECT * FROM lookups_agree('docs_after', 3);
SELECT * FROM helpers_agree('docs');
SELECT * FROM ingest_counts('docs_after');
SELECT simhash_drop_index('docs_after', 'fp');

-- pgvector's own Hamming distance on the same rows, fed through our cast to bit(64): the same
-- numbers as ours, and its HNSW index (bit_hamming_ops) on that expression works.
SELECT count(*) AS rows_compared,
       count(*) FILTER (WHERE hamming_distance(fp::bit(64), q::bit(64)) <> fp <-> q) AS function_differs,
       count(*) FILTER (WHERE (fp::bit(64) <~> q::bit(64)) <> fp <-> q) AS operator_differs
  FROM docs, (SELECT fp AS q FROM docs WHERE id = 7) x
 WHERE fp IS NOT NULL;
CREATE INDEX docs_hnsw ON docs USING hnsw ((fp::bit(64)) bit_hamming_ops);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT id FROM docs ORDER BY fp::bit(64) <~> (SELECT fp FROM docs WHERE id = 7)::bit(64) LIMIT 5;
SELECT id, fp <-> (SELECT fp FROM docs WHERE id = 7) AS ours
  FROM docs ORDER BY fp::bit(64) <~> (SELECT fp FROM docs WHERE id = 7)::bit(64), id LIMIT 3;
RESET enable_seqscan;
-- Ours keep answering with pgvector's index on the table.
SELECT * FROM lookups_agree('docs', 3);

-- Dropping pgvector leaves ours as they were.
DROP INDEX docs_hnsw;
DROP EXTENSION vector;
SELECT * FROM lookups_agree('docs', 3);
DROP TABLE docs, docs_plain, docs_after;
DROP EXTENSION simhash_pg;

-- 2. pgvector first, in the same schema.
CREATE EXTENSION vector;
CREATE EXTENSION simhash_pg;
SELECT make_docs('docs');
SELECT simhash_create_index('docs', 'fp');
SELECT * FROM lookups_agree('docs');
SELECT * FROM helpers_agree('docs');
SELECT * FROM ingest_counts('docs');
DROP TABLE docs;
DROP EXTENSION simhash_pg;
DROP EXTENSION vector;

-- 3. pgvector in a schema of its own, ahead of ours on the search_path.
CREATE SCHEMA vec;
CREATE EXTENSION vector SCHEMA vec;
CREATE EXTENSION simhash_pg;
SET search_path = vec, public;
SELECT make_docs('docs');
SELECT simhash_create_index('docs', 'fp');
SELECT * FROM lookups_agree('docs', 3);
SELECT * FROM helpers_agree('docs');
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);
-- A call with two untyped literals cannot tell bit from simhash64 (PostgreSQL's rules): type
-- one of them. With one side typed, as a column always is, ours is chosen.
SELECT try_sql($$SELECT hamming_distance('0123456789abcdef', '0123456789abcdee')$$) AS two_untyped_literals;
SELECT hamming_distance('0123456789abcdef'::simhash64, '0123456789abcdee') AS one_typed;
RESET search_path;
DROP TABLE docs;
DROP EXTENSION simhash_pg;
DROP SCHEMA vec CASCADE;
