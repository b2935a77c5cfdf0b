-- Lookups on the members of append relations: partitions, inheritance children and the
-- tables of a UNION ALL. PostgreSQL copies a parent's conditions to each member and simplifies
-- them there again, so simhash_near's support function rewrites the call once per member, with
-- that member's indexes, but, unlike the conditions it preprocesses, the planner does not
-- flatten what comes back. Issue 63: k = 0 in one arm of an OR made a permuted layout's one
-- key range (an AND) land directly inside the arm's AND, the index matcher read it as a
-- RestrictInfo, and any role with SELECT crashed the server. Every answer below is compared
-- with the same query with the rewrites off (simhash_pg.enable_index_lookups = off).
SET client_min_messages = warning;
CREATE ROLE simhash_append_reader;
CREATE SCHEMA app;
GRANT USAGE ON SCHEMA app TO simhash_append_reader;

-- The issue's reproducer: one range partition, permuted blocks (the default layout).
CREATE TABLE app.p (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE app.p1 PARTITION OF app.p FOR VALUES FROM (0) TO (1000);
INSERT INTO app.p SELECT g, hashtextextended(g::text, 0)::simhash64 FROM generate_series(1, 999) g;
SELECT simhash_create_index('app.p', 'fp');
-- A second partition with an index on id, so that an OR can be a BitmapOr there; inheritance
-- children; two tables for a UNION ALL; one layout of 8 blocks.
CREATE TABLE app.p2 PARTITION OF app.p FOR VALUES FROM (1000) TO (2000);
INSERT INTO app.p SELECT 1000 + g, (hashtextextended(g::text, 0) # (1::int8 << (g % 64)))::simhash64
  FROM generate_series(1, 999) g;
CREATE INDEX ON app.p2 (id);
CREATE TABLE app.inh (id int8, fp simhash64);
CREATE TABLE app.inh_c1 () INHERITS (app.inh);
CREATE TABLE app.inh_c2 () INHERITS (app.inh);
INSERT INTO app.inh_c1 SELECT id, fp FROM app.p WHERE id % 2 = 0;
INSERT INTO app.inh_c2 SELECT id, fp FROM app.p WHERE id % 2 = 1;
SELECT simhash_create_index('app.inh_c1', 'fp'), simhash_create_index('app.inh_c2', 'fp');
CREATE TABLE app.u1 AS SELECT * FROM app.p WHERE id < 1000;
CREATE TABLE app.u2 AS SELECT * FROM app.p WHERE id >= 1000;
SELECT simhash_create_index('app.u1', 'fp'), simhash_create_index('app.u2', 'fp', blocks => 8, permuted => true);
CREATE TABLE app.p8 (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE app.p8a PARTITION OF app.p8 FOR VALUES FROM (0) TO (2000);
INSERT INTO app.p8 SELECT * FROM app.p;
SELECT simhash_create_index('app.p8', 'fp', blocks => 8, permuted => true);
ANALYZE app.p, app.inh, app.u1, app.u2, app.p8;
GRANT SELECT ON ALL TABLES IN SCHEMA app TO simhash_append_reader;
RESET client_min_messages;

-- The queries, each of which crashed the planner, run as a role with SELECT only; each with
-- the rewrites and without them.
CREATE TABLE app.cases (n serial, q text);
INSERT INTO app.cases (q) VALUES
  ($$SELECT count(*) FROM app.p WHERE simhash_near(fp, '0000000000000000', 0) OR id = 1$$),
  ($$SELECT count(*) FROM app.p WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 77), 0) OR id = 1$$),
  ($$SELECT count(*) FROM app.p WHERE fp <-> (SELECT fp FROM app.p WHERE id = 1077) <= 0 OR id = 1$$),
  ($$SELECT count(*) FROM app.p WHERE fp <-> (SELECT fp FROM app.p WHERE id = 1077) < 1 OR id = 1500$$),
  ($$SELECT count(*) FROM app.p WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 5), 0)
                                   OR simhash_near(fp, (SELECT fp FROM app.p WHERE id = 1006), 3)$$),
  ($$SELECT count(*) FROM app.inh WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 8), 0) OR id = 1$$),
  ($$SELECT count(*) FROM (SELECT * FROM app.u1 UNION ALL SELECT * FROM app.u2) u
      WHERE simhash_near(u.fp, (SELECT fp FROM app.p WHERE id = 1009), 0) OR u.id = 3$$),
  ($$SELECT count(*) FROM app.p8 WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 10), 0) OR id = 1$$),
  ($$SELECT count(*) FROM app.p q WHERE EXISTS (SELECT 1 FROM app.p r
      WHERE (simhash_near(r.fp, '0000000000000000', 0) OR r.id = q.id) AND r.id = q.id + 1000)$$),
  ($$SELECT count(*) FROM (SELECT id FROM app.p WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 11), 0) OR id = 2) s$$),
  ($$SELECT count(*) FROM app.p WHERE (simhash_near(fp, (SELECT fp FROM app.p WHERE id = 12), 0) AND id > 0) OR id = 2$$),
  ($$SELECT count(*) FROM app.p WHERE NOT (simhash_near(fp, (SELECT fp FROM app.p WHERE id = 13), 0) OR id = 2)$$);
-- q's answer, planned with the rewrites on or off.
CREATE FUNCTION app.answer(q text, lookups bool) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
    PERFORM set_config('simhash_pg.enable_index_lookups', lookups::text, true);
    EXECUTE q INTO r;
    PERFORM set_config('simhash_pg.enable_index_lookups', 'on', true);
    RETURN r;
END $$;
GRANT SELECT ON app.cases TO simhash_append_reader;
SET ROLE simhash_append_reader;
SELECT n, app.answer(q, true) AS with_rewrites, app.answer(q, true) = app.answer(q, false) AS same_without
  FROM app.cases ORDER BY n;
RESET ROLE;
SELECT current_setting('simhash_pg.enable_index_lookups') AS lookups_back_on;
-- DML and plain EXPLAIN took the same path; rolled back.
GRANT DELETE, UPDATE ON app.p TO simhash_append_reader;
SET ROLE simhash_append_reader;
BEGIN;
DELETE FROM app.p WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 14), 0) OR id = 2 RETURNING id;
UPDATE app.p SET id = id WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 1015), 0) OR id = 3 RETURNING id;
ROLLBACK;
RESET ROLE;
REVOKE DELETE, UPDATE ON app.p FROM simhash_append_reader;

-- The plans: on the partition with an index on id the OR is a BitmapOr of the key range and
-- the id; where an arm has no index, a filter that tests the distance before the key ranges.
EXPLAIN (COSTS OFF) SELECT id FROM app.p WHERE simhash_near(fp, '0123456789abcdef', 0) OR id = 1500;
EXPLAIN (COSTS OFF) SELECT id FROM app.p WHERE fp <-> '0123456789abcdef' <= 2 OR id % 7 = 1;
-- Without the rewrites: the call as written, a scan of every row.
SET simhash_pg.enable_index_lookups = off;
EXPLAIN (COSTS OFF) SELECT id FROM app.p WHERE simhash_near(fp, '0123456789abcdef', 0) OR id = 1500;
RESET simhash_pg.enable_index_lookups;

-- Past MAX_RANGE_ARMS (68) key ranges, k = 8 on four permuted blocks (188), an OR arm stays as
-- written: hundreds of ranges cost more to plan and to compile than they save. k = 7 (68) is
-- the most a layout made for max_k = 7 needs.
SELECT (SELECT count(*) FROM app.p WHERE fp <-> '0123456789abcdef' <= 8 OR id = 1500)
     = (SELECT count(*) FROM app.p WHERE (fp <-> '0123456789abcdef') + 0 <= 8 OR id = 1500) AS k8_exact;
EXPLAIN (COSTS OFF) SELECT id FROM app.p1 WHERE fp <-> '0123456789abcdef' <= 8 OR id = 1500;

-- The rewrite's output is flat (no AND directly in an AND, no OR in an OR) wherever it
-- lands: the same conditions at the top level and under NOT.
SELECT count(*) AS top_level FROM app.p WHERE simhash_near(fp, (SELECT fp FROM app.p WHERE id = 16), 0);
SELECT count(*) AS under_not FROM app.p WHERE NOT simhash_near(fp, (SELECT fp FROM app.p WHERE id = 16), 0);

DROP SCHEMA app CASCADE;
DROP ROLE simhash_append_reader;
