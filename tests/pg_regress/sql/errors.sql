-- The mistakes a newcomer makes with the helpers, shown as psql shows them: one message naming
-- the function called (no internal function in CONTEXT), a HINT where there is something to do.
CREATE SCHEMA newcomer;
SET search_path = newcomer, public;
CREATE TABLE "My Docs" (id int8 PRIMARY KEY, body text, "FP" simhash64);
INSERT INTO "My Docs" VALUES (1, 'a', '0123456789abcdef'), (2, 'b', '0123456789abcdee'), (100, 'c', '0123456789abcdec'),
                             (99, 'd', 'ffffffffffffffff');
CREATE TABLE docs (id int8 PRIMARY KEY, "Key" int8, body text NOT NULL,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, "Key", body) VALUES (1, 10, 'alpha beta gamma'), (2, 20, 'alpha beta gamma'), (10, 100, 'delta epsilon');
CREATE VIEW docs_view AS SELECT * FROM docs;

-- Column names are taken as stored: case counts, no quotes. A near miss gets a hint.
SELECT simhash_create_index('"My Docs"', 'fp');
SELECT simhash_create_index('"My Docs"', '"FP"');
SELECT * FROM simhash_pairs('docs', 'fp', 3, 'key');
SELECT * FROM simhash_nearest('docs', 'FP', '0123456789abcdef', 1, 'id');
-- A column that is not there at all: no hint to give.
SELECT simhash_drop_index('docs', 'nope');
-- Views: each helper says what it needs.
SELECT simhash_create_index('docs_view', 'fp');
SELECT * FROM simhash_nearest('docs_view', 'fp', '0123456789abcdef', 1, 'id');
SELECT * FROM simhash_pairs('docs_view', 'fp');
SELECT * FROM simhash_ingest('docs_view', 'fp', 'docs');
SELECT * FROM simhash_ingest('docs', 'fp', 'docs_view');
-- A staging table without the fingerprint column: the hint says how the target computes it.
CREATE TABLE staging (id int8, body text);
SELECT * FROM simhash_ingest('docs', 'fp', 'staging');
CREATE TABLE staging2 (id int8, body text);
SELECT * FROM simhash_ingest('"My Docs"', 'FP', 'staging2');
-- Keys in their own type: key_type must be the key column's type (tid for ctid), or a string type.
SELECT * FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int4);
SELECT * FROM simhash_chained_groups('docs', 'fp', 3, NULL, NULL::int8);
SELECT * FROM simhash_nearest('docs', 'fp', '0123456789abcdef', 1, 'id', NULL::int4);
-- Keys as text sort as text; in their own type, as numbers.
SELECT a, b FROM simhash_pairs('"My Docs"', 'FP', 3, 'id') ORDER BY a, b;
SELECT a, b, pg_typeof(a) FROM simhash_pairs('"My Docs"', 'FP', 3, 'id', NULL::int8) ORDER BY a, b;
SELECT key, group_key, pg_typeof(key) FROM simhash_chained_groups('"My Docs"', 'FP', 3, 'id', NULL::int8) ORDER BY key;
SELECT key, distance, pg_typeof(key) FROM simhash_nearest('"My Docs"', 'FP', '0123456789abcdef', 3, 'id', NULL::int8);
SELECT key, distance, pg_typeof(key) FROM simhash_nearest('"My Docs"', 'FP', '0123456789abcdef', 2, NULL, NULL::tid);
SELECT a, b, distance FROM simhash_pairs('docs', 'fp', 3, 'Key', NULL::int8);
-- The typed forms give the same pairs, groups and neighbours as the text forms.
SELECT (SELECT array_agg((a::int8, b::int8, distance) ORDER BY a::int8, b::int8) FROM simhash_pairs('"My Docs"', 'FP', 3, 'id'))
     = (SELECT array_agg((a, b, distance) ORDER BY a, b) FROM simhash_pairs('"My Docs"', 'FP', 3, 'id', NULL::int8)) AS same_pairs,
       (SELECT array_agg((key::int8, group_key::int8) ORDER BY key::int8) FROM simhash_chained_groups('"My Docs"', 'FP', 3, 'id'))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('"My Docs"', 'FP', 3, 'id', NULL::int8)) AS same_groups;
-- In a read-only transaction (and on a standby, tests/reliability/standby.sh), the helpers that
-- write say so before their first write, with its SQLSTATE (25006) and a hint.
BEGIN READ ONLY;
SELECT simhash_create_index('docs', 'fp', 7);
ROLLBACK;
BEGIN READ ONLY;
SELECT simhash_drop_index('docs', 'fp');
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM simhash_ingest('docs', 'fp', 'docs');
ROLLBACK;
-- Reading is fine there.
BEGIN READ ONLY;
SELECT count(*) FROM simhash_pairs('docs', 'fp', 3, 'id');
ROLLBACK;
-- A key type passed by position, a string type included, picks one function: 0.3.0's
-- development builds said 42725 "function simhash_pairs(...) is not unique" for NULL::text.
SELECT (SELECT count(*) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8)) AS int8_keys,
       (SELECT count(*) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::text)) AS text_keys,
       (SELECT count(*) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::varchar)) AS varchar_keys,
       (SELECT count(*) FROM simhash_chained_groups('docs', 'fp', 3, 'id', NULL::text)) AS text_clusters;
RESET search_path;
DROP SCHEMA newcomer CASCADE;
