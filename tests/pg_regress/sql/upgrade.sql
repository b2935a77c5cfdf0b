-- ALTER EXTENSION simhash_pg UPDATE from every released version to the current one. A database
-- made with the old version (tables, generated fingerprints, block columns and indexes) is
-- updated; its data and lookups keep working, and its extension objects then equal those of a
-- fresh install: same functions with the same definitions and markings, types, operators,
-- operator classes and their members, casts and comments.
-- Released versions: 0.1.0, 0.2.0, 0.3.0, 1.0.0. The install script of each is kept in tests/upgrade/ (the test
-- command copies it next to the current one); add a block like the one below for each release.
\set original :DBNAME
DROP DATABASE IF EXISTS simhash_upgrade;
CREATE DATABASE simhash_upgrade;
\c simhash_upgrade

-- Everything the extension owns, described so that two databases compare as text.
CREATE VIEW ext_objects AS
WITH members AS (
    SELECT d.classid, d.objid, d.objsubid
      FROM pg_depend d JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
     WHERE e.extname = 'simhash_pg' AND d.deptype = 'e'
)
SELECT pg_describe_object(m.classid, m.objid, m.objsubid) AS object,
       CASE m.classid
           WHEN 'pg_proc'::regclass THEN pg_get_functiondef(m.objid)
           WHEN 'pg_type'::regclass THEN (
               SELECT format('in %s out %s recv %s send %s len %s byval %s align %s storage %s category %s',
                             typinput, typoutput, typreceive, typsend, typlen, typbyval, typalign, typstorage, typcategory)
                 FROM pg_type WHERE oid = m.objid)
           WHEN 'pg_operator'::regclass THEN (
               SELECT format('%s com %s neg %s rest %s join %s merges %s hashes %s',
                             oprcode::regprocedure, oprcom::regoperator, oprnegate::regoperator,
                             oprrest, oprjoin, oprcanmerge, oprcanhash)
                 FROM pg_operator WHERE oid = m.objid)
           WHEN 'pg_cast'::regclass THEN (
               SELECT format('%s context %s method %s', castfunc::regprocedure, castcontext, castmethod)
                 FROM pg_cast WHERE oid = m.objid)
           WHEN 'pg_opclass'::regclass THEN (
               SELECT format('default %s family %s key %s', opcdefault, pg_describe_object('pg_opfamily'::regclass, opcfamily, 0), opckeytype)
                 FROM pg_opclass WHERE oid = m.objid)
           WHEN 'pg_opfamily'::regclass THEN (
               SELECT string_agg(member, '; ' ORDER BY member) FROM (
                   SELECT format('op %s %s', amopstrategy, amopopr::regoperator) AS member FROM pg_amop WHERE amopfamily = m.objid
                   UNION ALL
                   SELECT format('proc %s %s', amprocnum, amproc::regprocedure) FROM pg_amproc WHERE amprocfamily = m.objid) x)
       END AS definition,
       obj_description(m.objid, m.classid::regclass::text) AS comment
  FROM members m;

-- From 0.1.0.
CREATE EXTENSION simhash_pg VERSION '0.1.0';
CREATE TABLE docs (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body)
SELECT g, 'story ' || (g % 400) || ' on desk ' || (g % 11) || ' filed ' || (g % 5) FROM generate_series(1, 2000) g;
CREATE TABLE fps (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO fps SELECT id, fp FROM docs;
SELECT simhash_create_index('docs', 'fp');
SELECT simhash_create_index('fps', 'fp', 3, 4, covering => false);
ALTER EXTENSION simhash_pg UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'simhash_pg') AS current
  FROM pg_extension WHERE extname = 'simhash_pg';
-- The data and the lookups through the old indexes.
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM fps WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT bool_and(a.same) AS same_as_brute_force, count(*) AS queries FROM (
    SELECT (SELECT array_agg(id ORDER BY id) FROM docs WHERE simhash_near(fp, q.fp, 3))
         = (SELECT array_agg(id ORDER BY id) FROM docs WHERE hamming_distance(fp, q.fp) + 0 <= 3)
       AND (SELECT array_agg(id ORDER BY id) FROM fps WHERE simhash_near(fp, q.fp, 3))
         = (SELECT array_agg(id ORDER BY id) FROM docs WHERE hamming_distance(fp, q.fp) + 0 <= 3) AS same
      FROM (SELECT fp FROM docs WHERE id % 100 = 0) q) a;
INSERT INTO docs (id, body) VALUES (5000, 'story 7 on desk 7 filed 2');
SELECT count(*) AS near_new_row FROM docs WHERE simhash_near(fp, simhash('story 7 on desk 7 filed 2'), 0);
-- The updated objects equal a fresh install's.
CREATE TABLE updated AS SELECT * FROM ext_objects;
DROP TABLE docs, fps;
DROP EXTENSION simhash_pg;
CREATE EXTENSION simhash_pg;
CREATE TABLE fresh AS SELECT * FROM ext_objects;
-- (PostgreSQL 17 and later also list the array type simhash64[], and the row type of the
-- ingest log and its array, as members.)
SELECT count(*) AS objects FROM fresh
 WHERE object NOT IN ('type simhash64[]', 'type _simhash_ingest_log', 'type _simhash_ingest_log[]');
SELECT 'only after update' AS side, object, definition, comment FROM (TABLE updated EXCEPT TABLE fresh) a
UNION ALL
SELECT 'only in a fresh install', object, definition, comment FROM (TABLE fresh EXCEPT TABLE updated) b
ORDER BY object, side;

-- From 0.2.0, with a block-indexed table and a partitioned one (whose ctids 0.3.0 stops
-- using to name rows).
DROP EXTENSION simhash_pg;
CREATE EXTENSION simhash_pg VERSION '0.2.0';
CREATE TABLE docs (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO docs SELECT g, hashtextextended('doc' || g, 0)::simhash64 FROM generate_series(1, 2000) g;
SELECT simhash_create_index('docs', 'fp');
CREATE TABLE parts (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (1000);
CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (1000) TO (MAXVALUE);
INSERT INTO parts SELECT id, fp FROM docs;
ALTER EXTENSION simhash_pg UPDATE;
SELECT bool_and((SELECT array_agg(id ORDER BY id) FROM docs WHERE simhash_near(fp, q.fp, 3))
              = (SELECT array_agg(id ORDER BY id) FROM docs WHERE hamming_distance(fp, q.fp) + 0 <= 3)) AS same_as_brute_force
  FROM (SELECT fp FROM docs WHERE id % 100 = 0) q;
SELECT * FROM simhash_nearest('parts', 'fp', '0123456789abcdef', 2);  -- by ctid: refused
SELECT count(*) AS nearest_by_key FROM simhash_nearest('parts', 'fp', '0123456789abcdef', 2, 'id');
CREATE TABLE updated_from_020 AS SELECT * FROM ext_objects;
SELECT 'only after update' AS side, object, definition, comment FROM (TABLE updated_from_020 EXCEPT TABLE fresh) a
UNION ALL
SELECT 'only in a fresh install', object, definition, comment FROM (TABLE fresh EXCEPT TABLE updated_from_020) b
ORDER BY object, side;

-- From 0.3.0, with permuted and covering block indexes: 1.0.0 renames the plumbing
-- (simhash_permute, simhash_index_probe, ...) to _simhash_*, which keeps the indexes built on
-- simhash_permute and the lookups through them; the grouping functions get new names, and the
-- old ones still answer, with a warning.
DROP TABLE docs, parts;
DROP EXTENSION simhash_pg;
CREATE EXTENSION simhash_pg VERSION '0.3.0';
CREATE TABLE docs (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO docs SELECT g, hashtextextended('doc' || g, 0)::simhash64 FROM generate_series(1, 2000) g;
INSERT INTO docs SELECT id + 10000, (fp::int8 # 5)::simhash64 FROM docs WHERE id % 50 = 0;
CREATE TABLE covered (LIKE docs);
INSERT INTO covered SELECT * FROM docs;
SELECT simhash_create_index('docs', 'fp', permuted => true);
SELECT simhash_create_index('covered', 'fp', permuted => false);
CREATE TABLE groups_before AS SELECT key::int8, cluster_key::int8 FROM simhash_clusters('docs', 'fp', 3, 'id');
ALTER EXTENSION simhash_pg UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'simhash_pg') AS current
  FROM pg_extension WHERE extname = 'simhash_pg';
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);
EXPLAIN (COSTS OFF) SELECT id FROM covered WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT bool_and(a.same) AS same_as_brute_force, count(*) AS queries FROM (
    SELECT (SELECT array_agg(id ORDER BY id) FROM docs WHERE simhash_near(fp, q.fp, 3))
         = (SELECT array_agg(id ORDER BY id) FROM docs WHERE hamming_distance(fp, q.fp) + 0 <= 3)
       AND (SELECT array_agg(id ORDER BY id) FROM covered WHERE simhash_near(fp, q.fp, 3))
         = (SELECT array_agg(id ORDER BY id) FROM docs WHERE hamming_distance(fp, q.fp) + 0 <= 3) AS same
      FROM (SELECT fp FROM docs WHERE id % 100 = 0) q) a;
SELECT (SELECT count(*) FROM groups_before) AS rows_in_groups,
       (SELECT count(*) FROM (SELECT key::int8, group_key::int8 FROM simhash_chained_groups('docs', 'fp', 3, 'id')
                              EXCEPT TABLE groups_before) x) AS changed;
SELECT count(*) AS deprecated_name_still_answers FROM simhash_clusters('docs', 'fp', 3, 'id');
CREATE TABLE updated_from_030 AS SELECT * FROM ext_objects;
SELECT 'only after update' AS side, object, definition, comment FROM (TABLE updated_from_030 EXCEPT TABLE fresh) a
UNION ALL
SELECT 'only in a fresh install', object, definition, comment FROM (TABLE fresh EXCEPT TABLE updated_from_030) b
ORDER BY object, side;

-- From 1.0.0, with what 1.0.0 leaves on tables besides layouts: a guard, the fill triggers of a
-- new fingerprint column, and the log rows of a concurrent ingest. After the update the guard
-- still refuses a near copy, the triggers still fill the column, and an ingest still reads the
-- log; the objects equal a fresh install's.
DROP TABLE docs, covered;
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
DROP EXTENSION simhash_pg;
CREATE EXTENSION simhash_pg VERSION '1.0.0';
SET client_min_messages = warning;
CREATE TABLE guarded (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO guarded SELECT g, hashtextextended('doc' || g, 0)::simhash64 FROM generate_series(1, 2000) g;
SELECT simhash_create_index('guarded', 'fp');
SELECT simhash_guard('guarded', 'fp', 3);
CREATE TABLE texts (id int8 PRIMARY KEY, body text);
INSERT INTO texts SELECT g, 'story ' || g || ' on desk ' || (g % 11) FROM generate_series(1, 500) g;
SELECT simhash_refingerprint_statements('texts', 'body', 'fp2', '{"weighting": "tf"}') \gexec
CREATE TABLE loaded (id int8, fp simhash64);
INSERT INTO loaded SELECT g, hashtextextended('row' || g, 0)::simhash64 FROM generate_series(1, 2000) g;
SELECT simhash_create_index('loaded', 'fp');
CREATE TABLE batch AS SELECT id + 5000 AS id, (fp::int8 # 3)::simhash64 AS fp FROM loaded WHERE id <= 100
    UNION ALL SELECT g, hashtextextended('new' || g, 0)::simhash64 FROM generate_series(7001, 7100) g;
SELECT * FROM simhash_ingest('loaded', 'fp', 'batch', 3);
SELECT count(*) AS log_rows FROM _simhash_ingest_log;
RESET client_min_messages;
ALTER EXTENSION simhash_pg UPDATE;
SELECT extversion = (SELECT default_version FROM pg_available_extensions WHERE name = 'simhash_pg') AS current
  FROM pg_extension WHERE extname = 'simhash_pg';
SELECT * FROM simhash_guards('guarded');
SELECT try_sql($$INSERT INTO guarded SELECT 9001, (fp::int8 # 1)::simhash64 FROM guarded WHERE id = 1$$) AS near_copy;
SELECT try_sql($$INSERT INTO guarded VALUES (9002, '0123456789abcdef')$$) AS new_row;
INSERT INTO texts (id, body) VALUES (9001, 'a story written after the update');
UPDATE texts SET body = 'story 1 rewritten' WHERE id = 1;
SELECT count(*) FILTER (WHERE fp2 IS DISTINCT FROM simhash(body, '{"weighting": "tf"}')) AS wrong_fp2, count(*) AS rows FROM texts;
CREATE TABLE batch2 AS SELECT id + 10000 AS id, (fp::int8 # 5)::simhash64 AS fp FROM batch;
SELECT * FROM simhash_ingest('loaded', 'fp', 'batch2', 3);
SELECT bool_and((SELECT array_agg(id ORDER BY id) FROM loaded WHERE simhash_near(fp, q.fp, 3))
              = (SELECT array_agg(id ORDER BY id) FROM loaded WHERE hamming_distance(fp, q.fp) + 0 <= 3)) AS same_as_brute_force
  FROM (SELECT fp FROM loaded WHERE id % 50 = 0) q;
CREATE TABLE updated_from_100 AS SELECT * FROM ext_objects;
SELECT 'only after update' AS side, object, definition, comment FROM (TABLE updated_from_100 EXCEPT TABLE fresh) a
UNION ALL
SELECT 'only in a fresh install', object, definition, comment FROM (TABLE fresh EXCEPT TABLE updated_from_100) b
ORDER BY object, side;

\c :original
DROP DATABASE simhash_upgrade;
