-- Routed layouts (simhash_create_index(..., routed => true); sql/routed.sql, src/routed.rs): the
-- routes of a distributed table in a distributed table of their own, sharded by block value.
-- Every lookup form the planner routes answers what brute force on the local copy answers, the
-- writes on the table keep the routes with the rows, and a shard move changes nothing.

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

-- Writes on the table itself keep the routes: each shard's guard records its rows' changes, and
-- the statement's end moves them into the routes (src/routed_writes.rs). INSERT with RETURNING,
-- UPDATE of the fingerprint (its old routes go), DELETE (its routes go), upsert, COPY,
-- a writable CTE, in transactions, rolled back, and an error caught in a savepoint.
INSERT INTO docs_routed VALUES (450001, fp_of('q1'), 'direct') RETURNING id, body;
INSERT INTO local_routed VALUES (450001, fp_of('q1'), 'direct');
INSERT INTO docs_routed SELECT 450100 + qid, flip(fp, 1, 'direct' || qid), 'direct select' FROM queries;
INSERT INTO local_routed SELECT 450100 + qid, flip(fp, 1, 'direct' || qid), 'direct select' FROM queries;
UPDATE docs_routed SET fp = fp_of('q2') WHERE id = 100014;
UPDATE local_routed SET fp = fp_of('q2') WHERE id = 100014;
UPDATE docs_routed SET fp = (fp::int8 # 3)::simhash64 WHERE id BETWEEN 100020 AND 100060;
UPDATE local_routed SET fp = (fp::int8 # 3)::simhash64 WHERE id BETWEEN 100020 AND 100060;
UPDATE docs_routed SET fp = fp WHERE id = 100015;
UPDATE docs_routed SET body = 'changed' WHERE id = 100011;
UPDATE local_routed SET body = 'changed' WHERE id = 100011;
-- A trigger of the user's changes the fingerprint in an UPDATE that assigns only the text: its
-- routes follow all the same.
CREATE FUNCTION refingerprint() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.body = 'refingerprinted' THEN
        NEW.fp := (NEW.fp::int8 # 65536)::simhash64;
    END IF;
    RETURN NEW;
END
$$;
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER refingerprint BEFORE UPDATE ON docs_routed FOR EACH ROW EXECUTE FUNCTION refingerprint();
RESET citus.enable_unsafe_triggers;
UPDATE docs_routed SET body = 'refingerprinted' WHERE id BETWEEN 100061 AND 100070;
UPDATE local_routed SET body = 'refingerprinted', fp = (fp::int8 # 65536)::simhash64 WHERE id BETWEEN 100061 AND 100070;
SET citus.enable_unsafe_triggers = on;
DROP TRIGGER refingerprint ON docs_routed;
RESET citus.enable_unsafe_triggers;
DROP FUNCTION refingerprint();
DELETE FROM docs_routed WHERE id IN (100010, 100012);
DELETE FROM local_routed WHERE id IN (100010, 100012);
INSERT INTO docs_routed VALUES (450001, fp_of('q3'), 'upserted'), (450002, fp_of('q4'), 'upserted')
    ON CONFLICT (id) DO UPDATE SET fp = EXCLUDED.fp, body = EXCLUDED.body;
DELETE FROM local_routed WHERE id = 450001;
INSERT INTO local_routed VALUES (450001, fp_of('q3'), 'upserted'), (450002, fp_of('q4'), 'upserted');
COPY docs_routed (id, fp, body) FROM STDIN;
450201	a4c2b3a0b9b3d6ff	copied direct
450202	\N	copied direct without a fingerprint
\.
INSERT INTO local_routed VALUES (450201, 'a4c2b3a0b9b3d6ff', 'copied direct'), (450202, NULL, 'copied direct without a fingerprint');
WITH gone AS (DELETE FROM docs_routed WHERE id = 450201 RETURNING id, fp, body)
INSERT INTO docs_routed SELECT id + 1000, fp, body FROM gone;
UPDATE local_routed SET id = 451201 WHERE id = 450201;
BEGIN;
UPDATE docs_routed SET fp = fp_of('q7') WHERE id = 100016;
-- Seen by a lookup later in the same transaction.
SELECT count(*) AS own_update_found FROM docs_routed WHERE id = 100016 AND simhash_near(fp, fp_of('q7'), 0);
SAVEPOINT s;
SELECT try_sql($$UPDATE docs_routed SET fp = fp_of('q8') WHERE id = 100017 OR id = 1 / 0$$);
ROLLBACK TO SAVEPOINT s;
UPDATE docs_routed SET fp = fp_of('q8') WHERE id = 100017;
COMMIT;
UPDATE local_routed SET fp = fp_of('q7') WHERE id = 100016;
UPDATE local_routed SET fp = fp_of('q8') WHERE id = 100017;
-- Two cursors over writable CTEs, closed in the order they were opened: a statement's end is
-- its cursor's closing, and the one still open keeps recording until it closes.
DO $$
DECLARE
    c1 refcursor;
    c2 refcursor;
    r record;
BEGIN
    OPEN c1 FOR WITH i AS (INSERT INTO docs_routed VALUES (450501, fp_of('cursor 1'), 'cursor') RETURNING id) SELECT id FROM i;
    OPEN c2 FOR WITH i AS (INSERT INTO docs_routed VALUES (450502, fp_of('cursor 2'), 'cursor') RETURNING id) SELECT id FROM i;
    FETCH c1 INTO r;
    FETCH c2 INTO r;
    CLOSE c1;
    UPDATE docs_routed SET fp = fp_of('cursor 3') WHERE id = 450501;
    CLOSE c2;
END
$$;
INSERT INTO local_routed VALUES (450501, fp_of('cursor 3'), 'cursor'), (450502, fp_of('cursor 2'), 'cursor');
SELECT key, count(*) AS routes FROM docs_routed_fp_routes WHERE key IN (450501, 450502) GROUP BY key ORDER BY key;
-- Statements that name their keys move only those keys' changes, from their shards: parameters
-- of prepared statements (generic and custom plans), constants of another integer width,
-- several VALUES rows.
PREPARE routed_insert(int8, simhash64) AS INSERT INTO docs_routed VALUES ($1, $2, 'prepared');
PREPARE routed_update(int8, simhash64) AS UPDATE docs_routed SET fp = $2 WHERE id = $1;
PREPARE routed_delete(int8) AS DELETE FROM docs_routed WHERE id = $1;
SET plan_cache_mode = force_generic_plan;
EXECUTE routed_insert(450601, fp_of('prepared 1'));
EXECUTE routed_insert(450602, fp_of('prepared 2'));
EXECUTE routed_update(450601, fp_of('prepared 3'));
EXECUTE routed_delete(450602);
RESET plan_cache_mode;
EXECUTE routed_insert(450603, fp_of('prepared 4'));
EXECUTE routed_update(450603, fp_of('prepared 5'));
UPDATE docs_routed SET fp = fp_of('prepared 6') WHERE id = 450601::int4;
INSERT INTO docs_routed VALUES (450604, fp_of('prepared 7'), 'values'), (450605, fp_of('prepared 8'), 'values');
DEALLOCATE routed_insert;
DEALLOCATE routed_update;
DEALLOCATE routed_delete;
INSERT INTO local_routed VALUES (450601, fp_of('prepared 6'), 'prepared'), (450603, fp_of('prepared 5'), 'prepared'),
                                (450604, fp_of('prepared 7'), 'values'), (450605, fp_of('prepared 8'), 'values');
SELECT key, count(*) AS routes, bool_and(fp IN (fp_of('prepared 6'), fp_of('prepared 5'), fp_of('prepared 7'), fp_of('prepared 8'))) AS current
  FROM docs_routed_fp_routes WHERE key BETWEEN 450601 AND 450605 GROUP BY key ORDER BY key;
BEGIN;
UPDATE docs_routed SET fp = fp_of('q9') WHERE id = 100018;
INSERT INTO docs_routed VALUES (450301, fp_of('q9'), 'rolled back');
ROLLBACK;
SELECT count(*) FILTER (WHERE key IN (450301)) AS rolled_back_routes,
       count(*) FILTER (WHERE key = 100014 AND fp = fp_of('q2')) AS updated_routes,
       count(*) FILTER (WHERE key IN (100010, 100012)) AS deleted_routes
  FROM docs_routed_fp_routes;
SELECT count(*) AS changes_left FROM docs_routed_fp_changes;
-- A session that has not loaded simhash_pg (it is not preloaded here) cannot record changes: its
-- INSERT is refused rather than left without routes.
\c
SELECT try_sql($$INSERT INTO docs_routed (id, body) VALUES (450999, 'fresh session')$$);
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 3, 7]) k ORDER BY k;
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
-- DELETE and INSERT through the view, in one transaction.
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
-- Every row's routes are there, and no others.
CREATE TEMP TABLE routes_copy AS SELECT key, fp FROM docs_routed_fp_routes;
CREATE TEMP TABLE rows_copy AS SELECT id, fp FROM docs_routed WHERE fp IS NOT NULL;
SELECT count(*) AS rows_without_routes
  FROM rows_copy d WHERE (SELECT count(*) FROM routes_copy r WHERE r.key = d.id AND r.fp = d.fp) <> 4;
SELECT count(*) AS routes_without_rows
  FROM routes_copy r WHERE NOT EXISTS (SELECT FROM rows_copy d WHERE d.id = r.key AND d.fp = r.fp);

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
-- The guard moved with the shards, and the changes with the table's.
INSERT INTO docs_routed SELECT 700000 + g, fp_of('moved ' || g), 'direct' FROM generate_series(1, 32) g;
INSERT INTO local_routed SELECT 700000 + g, fp_of('moved ' || g), 'direct' FROM generate_series(1, 32) g;
UPDATE docs_routed SET fp = (fp::int8 # 256)::simhash64 WHERE id BETWEEN 700001 AND 700016;
UPDATE local_routed SET fp = (fp::int8 # 256)::simhash64 WHERE id BETWEEN 700001 AND 700016;
SELECT k, routed_mismatches(k) FROM unnest(ARRAY[0, 3]) k ORDER BY k;

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
-- A new text changes the generated fingerprint (AFTER UPDATE sees the computed value): its
-- routes follow; and through the view.
UPDATE "Routed Schema"."Pages" SET body = 'something else entirely' WHERE "Key" = 'page 7';
UPDATE "Routed Schema"."Pages" SET body = body WHERE "Key" = 'page 8';
INSERT INTO "Routed Schema"."Pages_inserts" ("Key", body) VALUES ('page 301', 'another text again') RETURNING "Key", body;
SELECT array_agg("Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('something else entirely'), 0);
SELECT array_agg("Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('another text again'), 0);
SELECT count(*) AS old_routes_left FROM "Routed Schema"."Pages_fp_routes" r
 WHERE r.key = 'page 7' AND r.fp <> simhash('something else entirely');
-- A lookup whose query comes from a LATERAL subquery that reads the table is left as it is.
SELECT plan_reads($$SELECT count(*) FROM "Routed Schema"."Pages" p, LATERAL (SELECT p.fp) s WHERE simhash_near(p.fp, s.fp, 0)$$);
SELECT count(*) FROM "Routed Schema"."Pages" p, LATERAL (SELECT p.fp) s WHERE simhash_near(p.fp, s.fp, 0);
-- The guard cannot be disabled (55000): rows written meanwhile would have no routes, and
-- enabled again the lookups would miss them (issue 67). Nor can writes skip it under
-- session_replication_role = replica.
SET citus.enable_unsafe_triggers = on;
SELECT try_sql($$ALTER TABLE "Routed Schema"."Pages" DISABLE TRIGGER _simhash_routed$$) AS disable_guard,
       try_sql($$ALTER TABLE "Routed Schema"."Pages" DISABLE TRIGGER ALL$$) AS disable_all,
       try_sql($$ALTER TABLE "Routed Schema"."Pages" ENABLE REPLICA TRIGGER _simhash_routed_update$$) AS replica_only;
RESET citus.enable_unsafe_triggers;
SET session_replication_role = replica;
SELECT try_sql($$INSERT INTO "Routed Schema"."Pages" ("Key", body) VALUES ('page 999', 'as a replica')$$) AS replica_insert;
RESET session_replication_role;
SELECT plan_reads($$SELECT "Key" FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('x'), 3)$$);
-- A role that may read the table but not its routes: its lookups ask every shard, exact.
CREATE ROLE routed_reader LOGIN;
GRANT USAGE ON SCHEMA "Routed Schema" TO routed_reader;
GRANT SELECT ON "Routed Schema"."Pages" TO routed_reader;
SET ROLE routed_reader;
SELECT array_agg("Key") FROM "Routed Schema"."Pages" WHERE simhash_near(fp, simhash('something else entirely'), 0);
RESET ROLE;
-- A role that writes the table, with the grants docs/citus.md gives writers on the routes and
-- changes tables: its writes keep the routes.
CREATE ROLE routed_writer_role LOGIN;
GRANT USAGE ON SCHEMA "Routed Schema" TO routed_writer_role;
GRANT SELECT, INSERT, UPDATE, DELETE ON "Routed Schema"."Pages" TO routed_writer_role;
GRANT SELECT, INSERT, DELETE ON "Routed Schema"."Pages_fp_routes", "Routed Schema"."Pages_fp_changes" TO routed_writer_role;
SET ROLE routed_writer_role;
INSERT INTO "Routed Schema"."Pages" ("Key", body) VALUES ('page 302', 'written by a role of its own');
UPDATE "Routed Schema"."Pages" SET body = 'rewritten by a role of its own' WHERE "Key" = 'page 9';
DELETE FROM "Routed Schema"."Pages" WHERE "Key" = 'page 10';
RESET ROLE;
SELECT array_agg("Key" ORDER BY "Key") FROM "Routed Schema"."Pages"
 WHERE simhash_near(fp, simhash('written by a role of its own'), 0) OR simhash_near(fp, simhash('rewritten by a role of its own'), 0);
SELECT count(*) AS deleted_routes FROM "Routed Schema"."Pages_fp_routes" WHERE key = 'page 10';
REVOKE ALL ON SCHEMA "Routed Schema" FROM routed_writer_role;
REVOKE ALL ON "Routed Schema"."Pages", "Routed Schema"."Pages_fp_routes", "Routed Schema"."Pages_fp_changes" FROM routed_writer_role;
DROP ROLE routed_writer_role;
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

-- A table whose name holds a comma and a quote: the settings name each layout exactly.
CREATE TABLE "odd, ""name""" (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('"odd, ""name"""', 'id', shard_count => 4);
SET client_min_messages = warning;
SELECT simhash_create_index('"odd, ""name"""', 'fp', routed => true);
RESET client_min_messages;
INSERT INTO "odd, ""name""" VALUES (1, fp_of('odd 1')), (2, fp_of('odd 2'));
UPDATE "odd, ""name""" SET fp = fp_of('odd 3') WHERE id = 2;
SELECT plan_reads($$SELECT id FROM "odd, ""name""" WHERE simhash_near(fp, fp_of('odd 3'), 0)$$);
SELECT array_agg(id) FROM "odd, ""name""" WHERE simhash_near(fp, fp_of('odd 3'), 0);
SELECT array_agg(id) FROM "odd, ""name""" WHERE simhash_near(fp, fp_of('odd 2'), 0);
SET client_min_messages = warning;
SELECT simhash_drop_index('"odd, ""name"""', 'fp');
RESET client_min_messages;
DROP TABLE "odd, ""name""";

-- A delete that cascades (a foreign key, run on the workers) to another table with a routed
-- layout: the statement names only the table it deletes from, so the child's guard records
-- nothing nobody would move (its rows' routes stay behind, naming no row).
SET client_min_messages = warning;
CREATE TABLE routed_parent (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('routed_parent', 'id', shard_count => 4);
CREATE TABLE routed_child (pid int8 PRIMARY KEY REFERENCES routed_parent (id) ON DELETE CASCADE, fp simhash64);
SELECT create_distributed_table('routed_child', 'pid', colocate_with => 'routed_parent');
INSERT INTO routed_parent SELECT g, fp_of('parent ' || g) FROM generate_series(1, 40) g;
INSERT INTO routed_child SELECT g, fp_of('child ' || g) FROM generate_series(1, 40) g;
SELECT simhash_create_index('routed_parent', 'fp', routed => true);
SELECT simhash_create_index('routed_child', 'fp', routed => true);
RESET client_min_messages;
DELETE FROM routed_parent WHERE id <= 10;
SELECT (SELECT count(*) FROM routed_parent_fp_changes) + (SELECT count(*) FROM routed_child_fp_changes) AS changes_left,
       (SELECT count(*) FROM routed_parent_fp_routes WHERE key <= 10) AS parent_routes,
       (SELECT count(*) FROM routed_child_fp_routes WHERE key <= 10) AS child_routes_behind;
INSERT INTO routed_parent VALUES (5, fp_of('parent 5'));
INSERT INTO routed_child VALUES (5, fp_of('child 5'));
SELECT array_agg(pid) FROM routed_child WHERE simhash_near(fp, fp_of('child 5'), 0);
SET client_min_messages = warning;
SELECT simhash_drop_index('routed_child', 'fp'), simhash_drop_index('routed_parent', 'fp');
RESET client_min_messages;
DROP TABLE routed_child, routed_parent;

DROP FUNCTION routed_mismatches, prepared_routed_mismatches, plan_top, routed_pair_mismatches;
DROP TABLE docs_routed, local_routed, staged, lateral_got, lateral_want, routes_copy, rows_copy, pages_copy;
