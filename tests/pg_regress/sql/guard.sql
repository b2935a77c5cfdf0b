-- The guard (simhash_guard, issue 64): what one session can show. Races between sessions are in
-- tests/isolation/specs/guard.spec. k = 2 throughout: '0000000000000000' and
-- '0000000000000003' are 2 bits apart, '00000000ffffffff' is far from both.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

CREATE TABLE gd_docs (id int, fp simhash64);
INSERT INTO gd_docs VALUES (1, '0000000000000000'), (2, '00000000ffffffff');
SELECT simhash_create_index('gd_docs', 'fp', max_k => 2);
-- Bad calls: each refused with its SQLSTATE.
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'nope', 2)$$);
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'id', 2)$$);
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'fp', 99)$$);
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'fp', 2, on_conflict => 'ignore')$$);
SELECT try_sql($$SELECT simhash_guard('pg_class', 'relname', 2)$$);
CREATE VIEW gd_view AS SELECT * FROM gd_docs;
SELECT try_sql($$SELECT simhash_guard('gd_view', 'fp', 2)$$);
CREATE TABLE gd_child () INHERITS (gd_docs);
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'fp', 2)$$);
DROP TABLE gd_child;
-- Rows already within k: named, and the guard is not made.
INSERT INTO gd_docs VALUES (3, '0000000000000001');
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'fp', 2)$$);
SELECT * FROM simhash_guards('gd_docs');
DELETE FROM gd_docs WHERE id = 3;
SELECT simhash_guard('gd_docs', 'fp', 2);
SELECT * FROM simhash_guards('gd_docs');
SELECT tgname, tgdeferrable, tginitdeferred FROM pg_trigger WHERE tgrelid = 'gd_docs'::regclass AND NOT tgisinternal ORDER BY tgname;

-- INSERT: a near row is refused, with both keys; far rows and NULLs go in.
SELECT try_sql($$INSERT INTO gd_docs VALUES (4, '0000000000000003')$$);
INSERT INTO gd_docs VALUES (5, 'ffffffff00000000'), (6, NULL);
-- Near rows of one statement: the second sees the first.
SELECT try_sql($$INSERT INTO gd_docs VALUES (7, 'ff00ff00ff00ff00'), (8, 'ff00ff00ff00ff03')$$);
-- COPY goes through the same triggers.
SELECT try_sql($$COPY gd_docs FROM PROGRAM 'echo 9,0000000000000001' WITH (FORMAT csv)$$);
-- UPDATE: a small change of a row's own fingerprint is no conflict with itself; a move next
-- to another row is refused; a change of another column is not checked.
UPDATE gd_docs SET fp = '0000000000000001' WHERE id = 1;
SELECT try_sql($$UPDATE gd_docs SET fp = '00000000fffffffc' WHERE id = 1$$);
UPDATE gd_docs SET id = 11 WHERE id = 1;
SELECT id, fp FROM gd_docs ORDER BY id;
-- Within one transaction: a row deleted, or updated away, frees its neighbourhood; the
-- commit checks find nothing.
BEGIN;
DELETE FROM gd_docs WHERE id = 11;
INSERT INTO gd_docs VALUES (12, '0000000000000003');
UPDATE gd_docs SET id = 13 WHERE id = 12;
COMMIT;
BEGIN;
SET CONSTRAINTS ALL IMMEDIATE;
INSERT INTO gd_docs VALUES (14, '0f0f0f0f0f0f0f0f');
COMMIT;
-- A savepoint rolled back takes its rows with it.
BEGIN;
SAVEPOINT s;
INSERT INTO gd_docs VALUES (15, '3333333333333333');
ROLLBACK TO SAVEPOINT s;
INSERT INTO gd_docs VALUES (16, '3333333333333330');
COMMIT;
SELECT count(*) AS pairs_within_k FROM simhash_pairs('gd_docs', 'fp', 2);

-- skip: near rows are left out, also in COPY; the rest go in.
CREATE TABLE gd_skip (id int, fp simhash64);
SELECT simhash_guard('gd_skip', 'fp', 2, on_conflict => 'skip');
INSERT INTO gd_skip VALUES (1, '0000000000000000'), (2, '0000000000000003'), (3, '00000000ffffffff');
COPY gd_skip FROM PROGRAM 'printf "4,0000000000000001\n5,ffffffff00000000\n"' WITH (FORMAT csv);
UPDATE gd_skip SET fp = '00000000fffffffc' WHERE id = 1;
SELECT id, fp FROM gd_skip ORDER BY id;

-- A generated fingerprint: the guard computes it as PostgreSQL will store it.
CREATE TABLE gd_text (id int, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT simhash_guard('gd_text', 'fp', 3);
INSERT INTO gd_text (id, body) VALUES (1, 'the quick brown fox jumps over the lazy dog near the river bank today');
SELECT try_sql($$INSERT INTO gd_text (id, body) VALUES (2, 'the quick brown fox jumps over the lazy dog near the river bank today')$$);
SELECT try_sql($$UPDATE gd_text SET body = 'the quick brown fox jumps over the lazy dog near the river bank today' WHERE id = 1$$);
INSERT INTO gd_text (id, body) VALUES (3, 'an entirely different sentence about databases and fingerprints');
SELECT try_sql($$UPDATE gd_text SET body = 'the quick brown fox jumps over the lazy dog near the river bank today' WHERE id = 3$$);
SELECT id FROM gd_text ORDER BY id;

-- Sets of fingerprints: near when any two elements are.
CREATE TABLE gd_sets (id int, fps simhash64[]);
SELECT simhash_guard('gd_sets', 'fps', 2);
INSERT INTO gd_sets VALUES (1, ARRAY['0000000000000000', 'ffffffffffffffff']::simhash64[]);
SELECT try_sql($$INSERT INTO gd_sets VALUES (2, ARRAY['00000000ffffffff', 'fffffffffffffffc']::simhash64[])$$);
INSERT INTO gd_sets VALUES (3, ARRAY['00000000ffffffff']::simhash64[]);

-- A partitioned table: the guard reaches every partition, also one attached later.
CREATE TABLE gd_parted (id int, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE gd_parted_1 PARTITION OF gd_parted FOR VALUES FROM (0) TO (100);
INSERT INTO gd_parted VALUES (50, 'abcdabcdabcdabcd'), (51, 'abcdabcdabcdabce');
SELECT try_sql($$SELECT simhash_guard('gd_parted', 'fp', 2)$$);
DELETE FROM gd_parted WHERE id = 51;
SELECT simhash_guard('gd_parted', 'fp', 2);
CREATE TABLE gd_parted_2 PARTITION OF gd_parted FOR VALUES FROM (100) TO (200);
INSERT INTO gd_parted VALUES (1, '0000000000000000');
SELECT try_sql($$INSERT INTO gd_parted VALUES (101, '0000000000000003')$$);
SELECT try_sql($$INSERT INTO gd_parted_2 VALUES (102, '0000000000000001')$$);
-- skip: an UPDATE that moves a row to another partition next to a row is refused, never
-- left half done (the row deleted from its partition, its insert into the other skipped).
CREATE TABLE gd_moving (id int, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE gd_moving_1 PARTITION OF gd_moving FOR VALUES FROM (0) TO (100);
CREATE TABLE gd_moving_2 PARTITION OF gd_moving FOR VALUES FROM (100) TO (200);
SELECT simhash_guard('gd_moving', 'fp', 2, on_conflict => 'skip');
INSERT INTO gd_moving VALUES (1, '0000000000000000'), (2, '00000000ffffffff');
UPDATE gd_moving SET fp = '0000000000000003' WHERE id = 2;
-- (A trigger of the second partition that makes a moved row near row 1.)
CREATE FUNCTION gd_near_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.fp := '0000000000000001'; RETURN NEW; END $$;
CREATE TRIGGER a_near_one BEFORE INSERT ON gd_moving_2 FOR EACH ROW EXECUTE FUNCTION gd_near_one();
SELECT try_sql($$UPDATE gd_moving SET id = 150 WHERE id = 2$$);
SELECT tableoid::regclass, id, fp FROM gd_moving ORDER BY id;
DROP TABLE gd_moving;
DROP FUNCTION gd_near_one();

-- A writer who may INSERT but not SELECT: checked all the same (as the owner), and told
-- there is a near row without its key.
CREATE ROLE gd_writer;
GRANT INSERT ON gd_docs TO gd_writer;
GRANT CREATE ON SCHEMA public TO gd_writer;
SET ROLE gd_writer;
SELECT try_sql($$INSERT INTO gd_docs VALUES (20, '00000000fffffffe')$$);
INSERT INTO gd_docs VALUES (21, 'aaaaaaaaaaaaaaaa');
-- Not the owner: no guard made or dropped.
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'fp', 2)$$);
SELECT try_sql($$SELECT simhash_drop_guard('gd_docs', 'fp')$$);
RESET ROLE;
-- A trigger of these functions that a role makes on a table of its own guards that table,
-- whatever it names: the guarded table is the one the trigger (or its parent's) was made on.
SET ROLE gd_writer;
CREATE TABLE public.gd_spy (fp simhash64);
CREATE TRIGGER spy BEFORE INSERT ON gd_spy FOR EACH ROW EXECUTE FUNCTION _simhash_guard_row('fp', '40', 'error');
INSERT INTO gd_spy VALUES ('0000000000000000');
SELECT try_sql($$INSERT INTO gd_spy VALUES ('00000000000000ff')$$);
SELECT try_sql($$INSERT INTO gd_spy VALUES ('ffffffffffffffff')$$);
DROP TABLE gd_spy;
RESET ROLE;
-- Made in a REPEATABLE READ transaction, whose snapshot could miss rows: refused.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT try_sql($$SELECT simhash_guard('gd_docs', 'fp', 2)$$);
ROLLBACK;
-- The trigger functions called otherwise: refused.
CREATE TABLE gd_misuse (id int, fp simhash64);
CREATE TRIGGER t BEFORE INSERT ON gd_misuse FOR EACH ROW EXECUTE FUNCTION _simhash_guard_row('fp', 'x', 'error');
SELECT try_sql($$INSERT INTO gd_misuse VALUES (1, '0000000000000000')$$);
-- A renamed column stops writes rather than let rows in unchecked.
ALTER TABLE gd_skip RENAME COLUMN fp TO fp2;
SELECT try_sql($$INSERT INTO gd_skip VALUES (9, 'abababababababab')$$);
ALTER TABLE gd_skip RENAME COLUMN fp2 TO fp;

-- Guarding again replaces the guard; dropping removes it.
SELECT simhash_guard('gd_docs', 'fp', 1);
SELECT * FROM simhash_guards('gd_docs');
SELECT simhash_drop_guard('gd_docs', 'fp'), simhash_drop_guard('gd_docs', 'fp');
SELECT * FROM simhash_guards('gd_docs');
INSERT INTO gd_docs VALUES (30, '0000000000000000');

DROP TABLE gd_docs CASCADE;
DROP TABLE gd_skip, gd_text, gd_sets, gd_parted, gd_misuse;
REVOKE CREATE ON SCHEMA public FROM gd_writer;
DROP ROLE gd_writer;
