-- Routed layouts (simhash_create_index(..., routed => true); sql/routed.sql, src/routed.rs): the
-- routes of a distributed table in a distributed table of their own, sharded by block value.
-- Every lookup form the planner routes answers what brute force on the local copy answers, the
-- writers keep the routes with the rows, the guard refuses writes that would not, and a shard
-- move changes nothing.

CREATE TABLE docs_routed (id int8 PRIMARY KEY, fp simhash64, body text NOT NULL DEFAULT 'default body');
SELECT create_distributed_table('docs_routed', 'id', shard_count => 16);
INSERT INTO docs_routed (id, fp, body) SELECT id, fp, 'row ' || id FROM local_docs;
CREATE TABLE local_routed AS SELECT id, fp, 'row ' || id AS body FROM local_docs;

-- The top line of a statement's plan (the shards' names below it vary from run to run).
CREATE FUNCTION plan_top(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        RETURN line;
    END LOOP;
END
$$;

-- Whether a statement's plan reads the routes (the routed lookup) or every shard.
CREATE FUNCTION plan_reads(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        IF line LIKE '%_simhash_routed_lookup%' THEN
            RETURN 'the routes';
        ELSIF line LIKE '%Citus Adaptive%' THEN
            RETURN 'every shard';
        END IF;
    END LOOP;
    RETURN 'neither';
END
$$;

-- What routed => true refuses, up front.
SELECT try_sql($$SELECT simhash_create_index('local_routed', 'fp', routed => true)$$);
SELECT try_sql($$SELECT simhash_create_index('docs_ref', 'fp', routed => true)$$);
SELECT try_sql($$SELECT simhash_create_index('docs_by_fp', 'fp', routed => true)$$);
SELECT try_sql($$SELECT simhash_create_index('docs_routed', 'fp', routed => NULL)$$);
SELECT try_sql($$SELECT simhash_create_index('docs_routed', 'body', routed => true)$$);

-- (Its NOTICEs count the nodes, which the suite's order decides: rebalance.sql adds a third.)
SET client_min_messages = warning;
SELECT simhash_create_index('docs_routed', 'fp', routed => true);
RESET client_min_messages;
SELECT col, routes, blocks, key_column, inserts FROM _simhash_routed_layout('docs_routed');
SELECT simhash_create_index('docs_routed', 'fp', routed => true);  -- nothing to do
SELECT count(*) AS routes, count(DISTINCT key) AS keys FROM docs_routed_fp_routes;
-- One shard of routes per node with shards, distributed by route.
SELECT (SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'docs_routed_fp_routes'::regclass)
     = (SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND shouldhaveshards) AS one_shard_per_node,
       (SELECT count(DISTINCT nodeport) FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid)
         WHERE s.logicalrelid = 'docs_routed_fp_routes'::regclass)
     = (SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND shouldhaveshards) AS on_every_node,
       (SELECT column_to_column_name(logicalrelid, partkey) FROM pg_dist_partition
         WHERE logicalrelid = 'docs_routed_fp_routes'::regclass) AS distributed_by;

-- The plan: the table's scan is the routed lookup; the WHERE stays.
EXPLAIN (COSTS OFF) SELECT id FROM docs_routed WHERE simhash_near(fp, 'e4c2b3a0b9b3d6fe', 3);
EXPLAIN (COSTS OFF) SELECT id FROM docs_routed WHERE fp <-> 'e4c2b3a0b9b3d6fe' <= 3 AND id > 5;
-- FROM ONLY keeps every shard's own scan; so does a statement with another Citus table.
SELECT plan_top($$SELECT id FROM ONLY docs_routed WHERE simhash_near(fp, 'e4c2b3a0b9b3d6fe', 3)$$);
SELECT plan_top($$SELECT d.id FROM docs_routed d, docs_ref a WHERE a.id = d.id AND simhash_near(d.fp, 'e4c2b3a0b9b3d6fe', 3)$$);

-- A lookup at k = 3 reads 4 routes (one per block), so at most 4 shards of routes where the table
-- has 16 (on 32 shards of routes as on 2); at k = 7, 68 routes: on 32 shards of routes asking the
-- table's 16 costs less (NULL), on 2 it does not.
SELECT max(shards) <= 4 AS at_most_4_route_shards, max(routes) AS most_routes
  FROM (SELECT q.qid, count(DISTINCT get_shard_id_for_distribution_column('docs_routed_fp_routes', r)) AS shards, count(*) AS routes
          FROM queries q, unnest(_simhash_route_probes(q.fp, 3, 4, 32, 16)) r GROUP BY q.qid) s;
SELECT cardinality(_simhash_route_probes(fp_of('q1'), 7, 4, 32, 16)) AS k7_on_32,
       cardinality(_simhash_route_probes(fp_of('q1'), 7, 4, 2, 16)) AS k7_on_2;

-- Against brute force on the local copy: every query point, k from 0 to 12 (12 asks every shard:
-- too many routes), literals.
CREATE FUNCTION routed_mismatches(k int4) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    q record;
    got int8[];
    want int8[];
    bad int8 := 0;
BEGIN
    FOR q IN SELECT * FROM queries ORDER BY qid LOOP
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM docs_routed WHERE simhash_near(fp, %L, %s)', q.fp, k) INTO got;
        SELECT array_agg(id ORDER BY id) INTO want FROM local_routed WHERE hamming_distance(fp, q.fp) + 0 <= k;
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN bad;
END
$$;
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 1, 3, 5, 7, 8, 12, 16]) k ORDER BY k;
-- At k = 16 the routes would cost more than asking every shard: the lookup asks every shard.
SELECT _simhash_route_probes(fp_of('q1'), 16, 4, 4, 16) IS NULL AS k16_asks_every_shard;

-- Prepared statements, custom and generic plans (the rewritten statement has no Citus table, so
-- a generic plan runs too), k a parameter.
PREPARE routed_near(simhash64, int4) AS SELECT array_agg(id ORDER BY id) FROM docs_routed WHERE simhash_near(fp, $1, $2);
CREATE FUNCTION prepared_routed_mismatches(mode text) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    bad int8 := 0;
    q record;
    kk int4;
    got int8[];
BEGIN
    PERFORM set_config('plan_cache_mode', mode, true);
    FOR q IN SELECT * FROM queries LOOP
        FOREACH kk IN ARRAY ARRAY[0, 3, 7] LOOP
            SELECT array_agg(d.id ORDER BY d.id) INTO got FROM docs_routed d WHERE simhash_near(d.fp, q.fp, kk);
            IF got IS DISTINCT FROM (SELECT array_agg(l.id ORDER BY l.id) FROM local_routed l WHERE hamming_distance(l.fp, q.fp) + 0 <= kk) THEN
                bad := bad + 1;
            END IF;
        END LOOP;
    END LOOP;
    RETURN bad;
END
$$;
SELECT prepared_routed_mismatches('force_custom_plan') AS custom, prepared_routed_mismatches('force_generic_plan') AS generic;
SET plan_cache_mode = force_generic_plan;
EXECUTE routed_near(fp_of('q3'), 3) \gset generic_
RESET plan_cache_mode;
SELECT :'generic_array_agg' = (SELECT array_agg(id ORDER BY id) FROM local_routed WHERE hamming_distance(fp, fp_of('q3')) + 0 <= 3)::text AS generic_plan_exact;

-- One lookup per row of a local table (LATERAL), other conditions beside, aggregates, the
-- distance comparison, and a query from a subquery on the table (every shard: exact).
CREATE TEMP TABLE lateral_got AS SELECT q.qid, d.id FROM queries q, docs_routed d WHERE simhash_near(d.fp, q.fp, 3);
CREATE TEMP TABLE lateral_want AS SELECT q.qid, l.id FROM queries q, local_routed l WHERE hamming_distance(l.fp, q.fp) + 0 <= 3;
SELECT (SELECT count(*) FROM lateral_want) AS pairs,
       (SELECT count(*) FROM (SELECT * FROM lateral_got EXCEPT SELECT * FROM lateral_want) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM lateral_want EXCEPT SELECT * FROM lateral_got) x) AS missing;
EXPLAIN (COSTS OFF) SELECT q.qid, d.id FROM queries q, docs_routed d WHERE simhash_near(d.fp, q.fp, 3);
SELECT count(*), min(id), max(length(body)) FROM docs_routed WHERE fp <-> fp_of('q5') < 4 AND id > 100000;
SELECT count(*), min(id), max(length(body)) FROM local_routed WHERE hamming_distance(fp, fp_of('q5')) + 0 < 4 AND id > 100000;
SELECT array_agg(id ORDER BY id) FROM docs_routed WHERE simhash_near(fp, (SELECT fp FROM docs_routed WHERE id = 100052), 2);
SELECT array_agg(id ORDER BY id) FROM local_routed WHERE hamming_distance(fp, (SELECT fp FROM local_routed WHERE id = 100052)) + 0 <= 2;
SELECT count(*) FROM docs_routed WHERE simhash_near(fp, NULL, 3);
SELECT try_sql($$SELECT count(*) FROM docs_routed WHERE simhash_near(fp, fp_of('q1'), 65)$$);

-- Writes. The guard refuses what would leave a row without its routes: an INSERT or COPY into
-- the table itself, an UPDATE of the fingerprint. Other columns and DELETE need no routes.
SELECT try_sql($$INSERT INTO docs_routed VALUES (500001, fp_of('q1'), 'direct')$$);
SELECT try_sql($$UPDATE docs_routed SET fp = fp_of('q2') WHERE id = 1$$);
SELECT try_sql($$UPDATE docs_routed SET fp = fp WHERE id = 1$$);
UPDATE docs_routed SET body = 'changed' WHERE id = 100011;
UPDATE local_routed SET body = 'changed' WHERE id = 100011;
DELETE FROM docs_routed WHERE id IN (100010, 100012);
DELETE FROM local_routed WHERE id IN (100010, 100012);
-- Through the view: INSERT with the table's defaults and RETURNING, INSERT ... SELECT, COPY.
INSERT INTO docs_routed_inserts (id, fp) VALUES (500001, fp_of('q1')) RETURNING id, fp = fp_of('q1') AS same_fp, body;
INSERT INTO local_routed VALUES (500001, fp_of('q1'), 'default body');
INSERT INTO docs_routed_inserts SELECT 500100 + qid, flip(fp, 2, 'ins' || qid), 'inserted' FROM queries;
INSERT INTO local_routed SELECT 500100 + qid, flip(fp, 2, 'ins' || qid), 'inserted' FROM queries;
COPY docs_routed_inserts (id, fp, body) FROM STDIN;
500201	e4c2b3a0b9b3d6ff	copied
500202	\N	copied without a fingerprint
\.
INSERT INTO local_routed VALUES (500201, 'e4c2b3a0b9b3d6ff', 'copied'), (500202, NULL, 'copied without a fingerprint');
-- A fingerprint changes by DELETE and INSERT through the view, in one transaction.
BEGIN;
DELETE FROM docs_routed WHERE id = 100013;
INSERT INTO docs_routed_inserts VALUES (100013, fp_of('q1'), 'moved');
COMMIT;
UPDATE local_routed SET fp = fp_of('q1'), body = 'moved' WHERE id = 100013;
-- Rolled back: neither the row nor its routes.
BEGIN;
INSERT INTO docs_routed_inserts VALUES (500301, fp_of('q4'), 'rolled back');
ROLLBACK;
SELECT count(*) FILTER (WHERE key = 500301) AS rolled_back_routes, count(*) FILTER (WHERE key = 500001) AS inserted_routes
  FROM docs_routed_fp_routes;
-- simhash_ingest into the routed table: a lookup through the routes per row, each row kept goes
-- in with its routes.
CREATE TABLE staged (id int8, fp simhash64, body text);
INSERT INTO staged VALUES (600001, fp_of('q7'), 'near q7'), (600002, fp_of('fresh 1'), 'fresh'),
                          (600003, flip(fp_of('fresh 1'), 1, 'f'), 'near fresh'), (600004, fp_of('fresh 2'), 'fresh');
SELECT * FROM simhash_ingest('docs_routed', 'fp', 'staged', 3);
INSERT INTO local_routed SELECT * FROM staged WHERE id IN (600002, 600004);
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 3, 7]) k ORDER BY k;
SELECT (SELECT array_agg(id ORDER BY id) FROM docs_routed WHERE simhash_near(fp, fp_of('fresh 2'), 3))
     = (SELECT array_agg(id ORDER BY id) FROM local_routed WHERE hamming_distance(fp, fp_of('fresh 2')) + 0 <= 3) AS ingested_found;
-- Every row's routes are there (deleted rows may leave routes behind: they name no row).
CREATE TEMP TABLE routes_copy AS SELECT key, fp FROM docs_routed_fp_routes;
CREATE TEMP TABLE rows_copy AS SELECT id, fp FROM docs_routed WHERE fp IS NOT NULL;
SELECT count(*) AS rows_without_routes
  FROM rows_copy d WHERE (SELECT count(*) FROM routes_copy r WHERE r.key = d.id AND r.fp = d.fp) <> 4;

-- All pairs through the routes (k < 4 blocks): the routes joined on their own shards, each pair
-- confirmed by the rows (deleted rows left routes behind above); at k = 5 the usual joins.
CREATE FUNCTION routed_pair_mismatches(k int4) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    got int8;
    want int8;
    extra int8;
BEGIN
    CREATE TEMP TABLE got_pairs AS SELECT * FROM simhash_pairs('docs_routed', 'fp', k, 'id', NULL::int8);
    CREATE TEMP TABLE want_pairs AS
        SELECT x.id AS a, y.id AS b, hamming_distance(x.fp, y.fp) AS distance
          FROM local_routed x JOIN local_routed y ON x.id < y.id AND hamming_distance(x.fp, y.fp) + 0 <= k;
    SELECT count(*) INTO got FROM (SELECT * FROM want_pairs EXCEPT SELECT * FROM got_pairs) m;
    SELECT count(*) INTO extra FROM (SELECT * FROM got_pairs EXCEPT SELECT * FROM want_pairs) m;
    SELECT count(*) INTO want FROM want_pairs;
    DROP TABLE got_pairs, want_pairs;
    RAISE NOTICE 'k = %: % pairs, % missing, % extra', k, want, got, extra;
    RETURN got + extra;
END
$$;
SELECT k, routed_pair_mismatches(k) FROM unnest(ARRAY[0, 2, 3, 5]) k ORDER BY k;
-- The grouping functions read the same pairs.
SELECT (SELECT count(*) FROM (SELECT * FROM simhash_chained_groups('docs_routed', 'fp', 3, 'id', NULL::int8)
                              EXCEPT SELECT * FROM simhash_chained_groups('local_routed', 'fp', 3, 'id', NULL::int8)) x) AS chained_differ,
       (SELECT count(*) FROM (SELECT * FROM simhash_chained_groups('local_routed', 'fp', 3, 'id', NULL::int8)
                              EXCEPT SELECT * FROM simhash_chained_groups('docs_routed', 'fp', 3, 'id', NULL::int8)) x) AS chained_missing;

-- Shards of the routes and of the table moved to the other worker: the same answers.
SELECT citus_move_shard_placement(s.shardid, p.nodename, p.nodeport, '127.0.0.1',
                                  (SELECT min(n.nodeport) FROM pg_dist_node n
                                    WHERE n.noderole = 'primary' AND n.shouldhaveshards AND n.nodeport <> p.nodeport),
                                  shard_transfer_mode => 'block_writes') IS NOT NULL AS moved
  FROM (SELECT logicalrelid, min(shardid) AS shardid FROM pg_dist_shard
         WHERE logicalrelid IN ('docs_routed'::regclass, 'docs_routed_fp_routes'::regclass) GROUP BY logicalrelid) s
  JOIN pg_dist_shard_placement p USING (shardid)
 ORDER BY s.logicalrelid::text;
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 3, 7]) k ORDER BY k;
-- The guard moved with the shards (Citus reports a worker's error in INSERT ... SELECT as XX000).
SELECT try_sql($$INSERT INTO docs_routed SELECT 700000 + g, fp_of('moved ' || g), 'direct' FROM generate_series(1, 32) g$$);

-- simhash_drop_index removes the guard, the view and the routes; lookups ask every shard again,
-- exact, and the table takes writes. A plan cached before depends on the table: it is made again.
PREPARE routed_count(simhash64) AS SELECT count(*) FROM docs_routed WHERE simhash_near(fp, $1, 3);
SELECT plan_reads($$EXECUTE routed_count(fp_of('q1'))$$);
SELECT simhash_drop_index('docs_routed', 'fp');
SELECT plan_reads($$EXECUTE routed_count(fp_of('q1'))$$);
SELECT to_regclass('docs_routed_fp_routes') AS routes, to_regclass('docs_routed_inserts') AS inserts,
       (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs_routed'::regclass AND NOT tgisinternal) AS triggers;
SELECT sum(result::int) AS shard_guards
  FROM run_command_on_shards('docs_routed', $$SELECT count(*) FROM pg_trigger WHERE tgrelid = '%s'::regclass AND tgfoid = '_simhash_routed_guard'::regproc$$);
SELECT plan_top($$SELECT id FROM docs_routed WHERE simhash_near(fp, 'e4c2b3a0b9b3d6fe', 3)$$);
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 3]) k ORDER BY k;
INSERT INTO docs_routed VALUES (500401, fp_of('q1'), 'direct again');
INSERT INTO local_routed VALUES (500401, fp_of('q1'), 'direct again');
-- Made again: the routes of every row, the one written meanwhile too; cached plans route again.
SET client_min_messages = warning;
SELECT simhash_create_index('docs_routed', 'fp', routed => true, blocks => 5);
RESET client_min_messages;
SELECT plan_reads($$EXECUTE routed_count(fp_of('q1'))$$);
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 3, 4, 7]) k ORDER BY k;
SELECT simhash_drop_index('docs_routed', 'fp');
SELECT try_sql($$SELECT simhash_drop_index('docs_routed', 'fp')$$);


-- A generated fingerprint, a text key, a dropped column, names that need quoting, and the shards'
-- own block indexes beside the routes.
CREATE SCHEMA "Routed Schema";
CREATE TABLE "Routed Schema"."Pages" ("Key" text PRIMARY KEY, gone int4, body text NOT NULL,
                                      fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
ALTER TABLE "Routed Schema"."Pages" DROP COLUMN gone;
SELECT create_distributed_table('"Routed Schema"."Pages"', 'Key', shard_count => 8);
INSERT INTO "Routed Schema"."Pages" ("Key", body)
SELECT 'page ' || g, 'the quick brown fox jumps over the lazy dog number ' || (g % 50) || ' and then ' || g FROM generate_series(1, 300) g;
SELECT simhash_create_index('"Routed Schema"."Pages"', 'fp');
SET client_min_messages = warning;
SELECT simhash_create_index('"Routed Schema"."Pages"', 'fp', routed => true);
RESET client_min_messages;
CREATE TEMP TABLE pages_copy AS SELECT "Key", body, fp FROM "Routed Schema"."Pages";
SELECT plan_reads($$SELECT "Key" FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('the quick brown fox jumps over the lazy dog number 7 and then 57'), 3)$$);
SELECT (SELECT array_agg("Key" ORDER BY "Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('the quick brown fox jumps over the lazy dog number 7 and then 57'), 6))
     = (SELECT array_agg("Key" ORDER BY "Key") FROM pages_copy WHERE hamming_distance(fp, simhash('the quick brown fox jumps over the lazy dog number 7 and then 57')) + 0 <= 6)
       AS text_key_exact;
-- A new text changes the generated fingerprint: refused on the table itself (AFTER UPDATE sees
-- the computed value), done by DELETE and INSERT through the view.
SELECT try_sql($$UPDATE "Routed Schema"."Pages" SET body = 'something else entirely' WHERE "Key" = 'page 7'$$);
UPDATE "Routed Schema"."Pages" SET body = body WHERE "Key" = 'page 8';
BEGIN;
DELETE FROM "Routed Schema"."Pages" WHERE "Key" = 'page 7';
INSERT INTO "Routed Schema"."Pages_inserts" ("Key", body) VALUES ('page 7', 'something else entirely') RETURNING "Key", body;
COMMIT;
SELECT array_agg("Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('something else entirely'), 0);
-- A lookup whose query comes from a LATERAL subquery that reads the table is left as it is.
SELECT plan_reads($$SELECT count(*) FROM "Routed Schema"."Pages" p, LATERAL (SELECT p.fp) s WHERE simhash_near(p.fp, s.fp, 0)$$);
SELECT count(*) FROM "Routed Schema"."Pages" p, LATERAL (SELECT p.fp) s WHERE simhash_near(p.fp, s.fp, 0);
-- The guard disabled: lookups ask every shard (rows written meanwhile would have no routes).
SET citus.enable_unsafe_triggers = on;
ALTER TABLE "Routed Schema"."Pages" DISABLE TRIGGER _simhash_routed;
SELECT plan_reads($$SELECT "Key" FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('x'), 3)$$);
ALTER TABLE "Routed Schema"."Pages" ENABLE TRIGGER _simhash_routed;
RESET citus.enable_unsafe_triggers;
SELECT plan_reads($$SELECT "Key" FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('x'), 3)$$);
-- A role that may read the table but not its routes: its lookups ask every shard, exact.
CREATE ROLE routed_reader LOGIN;
GRANT USAGE ON SCHEMA "Routed Schema" TO routed_reader;
GRANT SELECT ON "Routed Schema"."Pages" TO routed_reader;
SET ROLE routed_reader;
SELECT array_agg("Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('something else entirely'), 0);
RESET ROLE;
-- The routes dropped by hand: lookups ask every shard, exact, and simhash_drop_index removes the
-- rest; both layouts go.
DROP TABLE "Routed Schema"."Pages_fp_routes";
SELECT array_agg("Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('something else entirely'), 0);
SET client_min_messages = warning;
SELECT simhash_drop_index('"Routed Schema"."Pages"', 'fp');
RESET client_min_messages;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = '"Routed Schema"."Pages"'::regclass AND NOT tgisinternal;
SELECT count(*) AS block_layouts FROM simhash_block_columns('"Routed Schema"."Pages"');
SELECT to_regclass('"Routed Schema"."Pages_inserts"') AS inserts;
REVOKE ALL ON SCHEMA "Routed Schema" FROM routed_reader;
REVOKE ALL ON "Routed Schema"."Pages" FROM routed_reader;
DROP ROLE routed_reader;
DROP SCHEMA "Routed Schema" CASCADE;

DROP FUNCTION routed_mismatches, prepared_routed_mismatches, plan_top, plan_reads, routed_pair_mismatches;
DROP TABLE docs_routed, local_routed, staged, lateral_got, lateral_want, routes_copy, rows_copy, pages_copy;
