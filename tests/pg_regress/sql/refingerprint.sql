-- New fingerprints on a live table (issue 64): simhash_refingerprint_statements returns the
-- statements that add a plain column kept equal to simhash(text[, options]) by two row triggers
-- and fill it for the rows already there (CALL simhash_backfill, committing between batches),
-- run here with psql's \gexec as a user would. Every write path keeps the column right from
-- then on (INSERT, COPY, UPDATE of the text, of the fingerprint, of another column); the new
-- column's layout, built online, is exact against brute force; simhash_ingest reads the rule.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

CREATE TABLE rf_docs (id int8 PRIMARY KEY, body text, seen int4 DEFAULT 0,
                      fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO rf_docs (id, body)
SELECT g, format('page %s on topic %s: %s %s', g, g % 37, md5(g::text), repeat('word ' || (g % 11) || ' ', 1 + g % 5))
  FROM generate_series(1, 3000) g;
INSERT INTO rf_docs (id, body) VALUES (3001, NULL), (3002, '');
-- Near copies of the first 200 pages: a word changed at the end.
INSERT INTO rf_docs (id, body) SELECT 10000 + id, body || ' again' FROM rf_docs WHERE id <= 200;
-- How many rows do not hold what the new rule gives (NULL text: a NULL fingerprint).
CREATE FUNCTION rf_wrong(tbl regclass) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE n int8;
BEGIN
    EXECUTE format('SELECT count(*) FROM %s WHERE fp2 IS DISTINCT FROM simhash(body, ''{"weighting": "tf", "ngram": 2}'')', tbl) INTO n;
    RETURN n;
END
$$;

-- 1. The statements: the column, the triggers, the backfill.
SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}', batch_rows => 500);
SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}', batch_rows => 500) \gexec
SELECT rf_wrong('rf_docs') AS wrong, count(*) FILTER (WHERE fp2 IS NULL) AS without FROM rf_docs;
-- Run again: only the backfill is left, and it has nothing to fill.
SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}');
SET client_min_messages = notice;
CALL simhash_backfill('rf_docs', 'fp2');
SET client_min_messages = warning;

-- 2. Every write path from then on.
INSERT INTO rf_docs (id, body) VALUES (5001, 'a page written after the triggers');
COPY rf_docs (id, body) FROM stdin;
5002	a page loaded by COPY
5003	\N
\.
UPDATE rf_docs SET body = 'the text of page 7, rewritten' WHERE id = 7;
UPDATE rf_docs SET fp2 = '0000000000000000' WHERE id = 8;             -- set by hand: recomputed
UPDATE rf_docs SET fp2 = NULL WHERE id = 9;
UPDATE rf_docs SET seen = seen + 1 WHERE id BETWEEN 10 AND 20;        -- another column: untouched
UPDATE rf_docs SET body = NULL WHERE id = 21;
INSERT INTO rf_docs (id, body) VALUES (5004, 'an upsert') ON CONFLICT (id) DO UPDATE SET body = excluded.body;
INSERT INTO rf_docs (id, body) VALUES (5004, 'an upsert, changed') ON CONFLICT (id) DO UPDATE SET body = excluded.body;
SELECT rf_wrong('rf_docs') AS wrong;
-- A row that lost its fingerprint while the triggers were off gets it back from the backfill,
-- and from any later update of it.
ALTER TABLE rf_docs DISABLE TRIGGER simhash_fill_fp2_on_update;
UPDATE rf_docs SET fp2 = NULL WHERE id IN (30, 31);
ALTER TABLE rf_docs ENABLE TRIGGER simhash_fill_fp2_on_update;
SELECT rf_wrong('rf_docs') AS wrong_before;
UPDATE rf_docs SET seen = 1 WHERE id = 30;
-- ENABLE TRIGGER (not ALWAYS) leaves it off under session_replication_role = replica: until it
-- fires always again, the column has no rule (the backfill refuses), and the statements say so.
CALL simhash_backfill('rf_docs', 'fp2', batch_rows => 100);
SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}', batch_rows => 100);
SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}', batch_rows => 100) \gexec
SET session_replication_role = replica;
UPDATE rf_docs SET body = 'rewritten as a logical replica applies it' WHERE id = 32;
RESET session_replication_role;
SELECT rf_wrong('rf_docs') AS wrong_after;
-- A role that may only write: the triggers run for it.
CREATE ROLE simhash_rf_writer;
GRANT INSERT, UPDATE, SELECT ON rf_docs TO simhash_rf_writer;
SET ROLE simhash_rf_writer;
INSERT INTO rf_docs (id, body) VALUES (5005, 'written by a role that may only write');
UPDATE rf_docs SET body = 'changed by that role' WHERE id = 5005;
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp3')$$);
RESET ROLE;
SELECT rf_wrong('rf_docs') AS wrong;

-- 3. The new column's layout, built online, and lookups through it against brute force.
SELECT simhash_index_statements('rf_docs', 'fp2', max_k => 3) \gexec
CREATE FUNCTION rf_mismatches(k int4) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    q simhash64;
    n int8 := 0;
BEGIN
    FOR q IN SELECT fp2 FROM rf_docs WHERE id % 50 = 0 AND fp2 IS NOT NULL ORDER BY id LOOP
        n := n + ((SELECT array_agg(id ORDER BY id) FROM rf_docs WHERE simhash_near(fp2, q, k))
                  IS DISTINCT FROM (SELECT array_agg(id ORDER BY id) FROM rf_docs WHERE hamming_distance(fp2, q) + 0 <= k))::int4;
    END LOOP;
    RETURN n;
END
$$;
SELECT rf_mismatches(3) AS mismatches;
EXPLAIN (COSTS OFF) SELECT id FROM rf_docs WHERE simhash_near(fp2, '0123456789abcdef', 3);

-- 4. simhash_ingest into the table: by the new column, its fingerprints computed from the
-- source's text by the triggers' rule (the source needs no fp2); by the old one, as before. The
-- fill triggers do not make it go row by row.
CREATE TABLE rf_staging (id int8, body text);
INSERT INTO rf_staging SELECT 20000 + id, body FROM rf_docs WHERE id BETWEEN 100 AND 109;
INSERT INTO rf_staging VALUES (20100, 'a page nobody has seen before, about something else entirely');
SET client_min_messages = notice;
SELECT * FROM simhash_ingest('rf_docs', 'fp2', 'rf_staging', 3);
SET client_min_messages = warning;
SELECT id, fp2 = simhash(body, '{"weighting": "tf", "ngram": 2}') AS right FROM rf_docs WHERE id >= 20000 ORDER BY id;
ALTER TABLE rf_staging ADD COLUMN fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED;
DELETE FROM rf_staging WHERE id = 20100;
INSERT INTO rf_staging (id, body) VALUES (20101, 'another page nobody has seen, on its own subject');
SELECT * FROM simhash_ingest('rf_docs', 'fp', 'rf_staging', 3);
CREATE TABLE rf_staging_bare (id int8, text_of_it text);
SELECT try_sql($$SELECT * FROM simhash_ingest('rf_docs', 'fp2', 'rf_staging_bare', 3)$$);

-- 5. The switch: queries move to fp2. A column that already holds fingerprints no fill trigger
-- made is refused (the backfill fills only rows without one, so they would stay), and a rename
-- that leaves the triggers naming a column that is gone makes writes fail, never a row stored
-- without its fingerprint.
ALTER TABLE rf_docs ADD COLUMN fp_by_hand simhash64;
UPDATE rf_docs SET fp_by_hand = fp WHERE id <= 3;
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp_by_hand')$$);
ALTER TABLE rf_docs DROP COLUMN fp_by_hand;
ALTER TABLE rf_docs RENAME COLUMN fp2 TO fp_new;
SELECT try_sql($$INSERT INTO rf_docs (id, body) VALUES (6002, 'after a careless rename')$$);
ALTER TABLE rf_docs RENAME COLUMN fp_new TO fp2;
INSERT INTO rf_docs (id, body) VALUES (6001, 'after the rename back');
SELECT rf_wrong('rf_docs') AS wrong, rf_mismatches(3) AS mismatches;
-- A long column name (over 63 bytes with the trigger's words; not ASCII): a hashed name.
ALTER TABLE rf_docs ADD COLUMN "指纹指纹指纹指纹指纹指纹指纹指纹" simhash64;
SELECT s FROM simhash_refingerprint_statements('rf_docs', 'body', '指纹指纹指纹指纹指纹指纹指纹指纹') s WHERE s LIKE 'CREATE%';
ALTER TABLE rf_docs DROP COLUMN "指纹指纹指纹指纹指纹指纹指纹指纹";

-- 6. Partitioned tables (the triggers on the partitioned table, cloned onto each partition and
-- onto partitions attached later) and inheritance trees (a trigger pair on each table).
CREATE TABLE rf_parts (id int8, body text) PARTITION BY RANGE (id);
CREATE TABLE rf_parts_1 PARTITION OF rf_parts FOR VALUES FROM (0) TO (1000);
CREATE TABLE rf_parts_2 PARTITION OF rf_parts FOR VALUES FROM (1000) TO (2000);
INSERT INTO rf_parts SELECT g, 'part row ' || g || ' ' || md5(g::text) FROM generate_series(1, 1999) g;
SELECT simhash_refingerprint_statements('rf_parts', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}', batch_rows => 300);
SELECT simhash_refingerprint_statements('rf_parts', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}', batch_rows => 300) \gexec
CREATE TABLE rf_parts_3 PARTITION OF rf_parts FOR VALUES FROM (2000) TO (3000);
INSERT INTO rf_parts VALUES (2500, 'into a partition made later');
SELECT rf_wrong('rf_parts') AS wrong, count(*) AS rows FROM rf_parts;
CREATE TABLE rf_base (id int8, body text);
CREATE TABLE rf_child (extra int4) INHERITS (rf_base);
INSERT INTO rf_base SELECT g, 'base row ' || g FROM generate_series(1, 300) g;
INSERT INTO rf_child SELECT g, 'child row ' || g, g FROM generate_series(1, 300) g;
SELECT simhash_refingerprint_statements('rf_base', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}');
SELECT simhash_refingerprint_statements('rf_base', 'body', 'fp2', '{"weighting": "tf", "ngram": 2}') \gexec
INSERT INTO rf_child VALUES (301, 'a child row written later', 1);
SELECT rf_wrong('rf_base') AS wrong, count(*) AS rows FROM rf_base;

-- 7. What is refused, and why.
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "bm25"}')$$);
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp2', '{"weighting": "tf"}')$$);
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp')$$);
CREATE TABLE rf_gen (id int8, raw text, body text GENERATED ALWAYS AS (lower(raw)) STORED);
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_gen', 'body', 'fp2')$$);
DROP TABLE rf_gen;
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'seen', 'fp9')$$);
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'Body', 'fp9')$$);
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_docs', 'body', 'fp9', batch_rows => 0)$$);
SELECT try_sql($$SELECT simhash_refingerprint_statements(NULL, 'body', 'fp9')$$);
SELECT try_sql($$SELECT simhash_refingerprint_statements('pg_class', 'relname', 'fp9')$$);
CREATE VIEW rf_view AS SELECT * FROM rf_docs;
SELECT try_sql($$SELECT simhash_refingerprint_statements('rf_view', 'body', 'fp9')$$);
\set VERBOSITY terse
CALL simhash_backfill('rf_docs', 'fp');
CALL simhash_backfill('rf_docs', 'fp2', batch_rows => -1);
CALL simhash_backfill(NULL, 'fp2');
-- Inside a transaction block with rows to fill: PostgreSQL's own refusal to COMMIT there.
ALTER TABLE rf_docs DISABLE TRIGGER USER;
UPDATE rf_docs SET fp2 = NULL WHERE id IN (1, 2);
ALTER TABLE rf_docs ENABLE ALWAYS TRIGGER simhash_fill_fp2_on_insert;
ALTER TABLE rf_docs ENABLE ALWAYS TRIGGER simhash_fill_fp2_on_update;
BEGIN;
CALL simhash_backfill('rf_docs', 'fp2');
ROLLBACK;
\set VERBOSITY default
CALL simhash_backfill('rf_docs', 'fp2');
SELECT rf_wrong('rf_docs') AS wrong;
-- Row-level security: the backfill runs with row_security off, so a policy that would hide rows
-- from it makes PostgreSQL refuse them (a role under the policy); the superuser here bypasses it.
ALTER TABLE rf_docs DISABLE TRIGGER USER;
UPDATE rf_docs SET fp2 = NULL WHERE id IN (5, 500);
ALTER TABLE rf_docs ENABLE ALWAYS TRIGGER simhash_fill_fp2_on_insert;
ALTER TABLE rf_docs ENABLE ALWAYS TRIGGER simhash_fill_fp2_on_update;
ALTER TABLE rf_docs ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY rf_some ON rf_docs USING (id < 100);
\set VERBOSITY terse
CALL simhash_backfill('rf_docs', 'fp2');
\set VERBOSITY default
ALTER TABLE rf_docs NO FORCE ROW LEVEL SECURITY, DISABLE ROW LEVEL SECURITY;
CALL simhash_backfill('rf_docs', 'fp2');
SELECT rf_wrong('rf_docs') AS wrong;
-- The trigger function alone, outside a fill trigger.
CREATE TABLE rf_misuse (body text, fp simhash64);
CREATE TRIGGER rf_misuse AFTER INSERT ON rf_misuse FOR EACH ROW EXECUTE FUNCTION _simhash_fill('body', 'fp', '');
SELECT try_sql($$INSERT INTO rf_misuse VALUES ('x')$$);

DROP TABLE rf_docs, rf_staging, rf_staging_bare, rf_parts, rf_base CASCADE;
DROP TABLE rf_misuse;
DROP FUNCTION rf_wrong(regclass), rf_mismatches(int4);
DROP ROLE simhash_rf_writer;
