-- Routed layouts fail closed (issue 67): a lookup reads the routes only while nothing can have
-- left them without some rows' routes, and every write path that could is refused (55000) or
-- keeps them. The four reproducers of the issue, then the loud failures it listed. Every lookup
-- is compared with FROM ONLY (every shard's own scan).

SET client_min_messages = warning;
CREATE TABLE fc (id int8 PRIMARY KEY, v int4 NOT NULL DEFAULT 0, fp simhash64);
SELECT create_distributed_table('fc', 'id', shard_count => 4);
INSERT INTO fc (id, fp) SELECT g, fp_of('fc' || g) FROM generate_series(1, 400) g;
SELECT simhash_create_index('fc', 'fp', routed => true);
RESET client_min_messages;
SELECT plan_reads($$SELECT id FROM fc WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan, lookup_mismatches('fc', 'fp', 'id') AS mismatches;

-- 1. Writes from a worker (Citus gives the workers the metadata: they take distributed writes).
--    The guard's arguments name the routes and changes by their OIDs on the coordinator, so on
--    a worker an insert went in without routes, and the coordinator's lookups missed it.
--    Refused now; a DELETE, which leaves routes that name no row (lookups check the rows), goes on.
\set VERBOSITY terse
\c - - 127.0.0.1 5485
SET client_min_messages = warning;
INSERT INTO fc (id, fp) VALUES (5001, '0123456789abcdef');
UPDATE fc SET fp = '0123456789abcdee' WHERE id = 7;
UPDATE fc SET v = v + 1 WHERE id = 8;
DELETE FROM fc WHERE id = 9;
CREATE TEMP TABLE fc_batch AS SELECT 5002::int8 AS id, 0 AS v, '0123456789abcdef'::simhash64 AS fp;
SELECT * FROM simhash_ingest('fc', 'fp', 'fc_batch', 0);
-- A lookup on a worker asks every shard (the routes' OIDs are the coordinator's).
SELECT count(*) AS found_on_a_worker FROM fc WHERE simhash_near(fp, fp_of('fc10'), 0);
\c - - 127.0.0.1 5484
\set VERBOSITY default
SELECT count(*) FILTER (WHERE id IN (5001, 5002)) AS worker_inserts, count(*) FILTER (WHERE id = 9) AS deleted_row,
       lookup_mismatches('fc', 'fp', 'id') AS mismatches
  FROM ONLY fc;
-- A function distributed by its key runs on the worker of the key's shard: refused the same way.
CREATE FUNCTION fc_insert(key int8, f simhash64) RETURNS void LANGUAGE sql AS $$ INSERT INTO fc (id, fp) VALUES (key, f) $$;
SET client_min_messages = warning;
SELECT create_distributed_function('fc_insert(int8, simhash64)', 'key', colocate_with := 'fc');
RESET client_min_messages;
-- (Citus delegates a call only at the top level, outside a transaction block.)
\set VERBOSITY terse
SELECT fc_insert(5003, '0123456789abcdef');
\set VERBOSITY default
SELECT count(*) AS delegated_rows FROM ONLY fc WHERE id = 5003;
DROP FUNCTION fc_insert(int8, simhash64);

-- 2. Made inside a REPEATABLE READ (or SERIALIZABLE) transaction, the routes would hold that
--    snapshot's rows, not those committed between it and the guard: refused.
SET client_min_messages = warning;
CREATE TABLE fc_rr (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('fc_rr', 'id', shard_count => 2);
RESET client_min_messages;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT try_sql($$SELECT simhash_create_index('fc_rr', 'fp', routed => true)$$) AS repeatable_read;
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT try_sql($$SELECT simhash_create_index('fc_rr', 'fp', routed => true)$$) AS serializable;
ROLLBACK;
DROP TABLE fc_rr;

-- 3. The key's unique index replaced by one on more columns: a second row of a key would take
--    the first one's routes away. Writes refused, lookups ask every shard and say why.
ALTER TABLE fc DROP CONSTRAINT fc_pkey;
ALTER TABLE fc ADD PRIMARY KEY (id, v);
SELECT try_sql($$INSERT INTO fc (id, v, fp) VALUES (10, 1, fp_of('fc10'))$$) AS second_version;
SELECT try_sql($$DELETE FROM fc WHERE id = 10$$) AS delete_while_not_unique;
SELECT plan_reads($$SELECT id FROM fc WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan;
SET client_min_messages = warning;
SELECT lookup_mismatches('fc', 'fp', 'id') AS mismatches;
RESET client_min_messages;
ALTER TABLE fc DROP CONSTRAINT fc_pkey;
ALTER TABLE fc ADD PRIMARY KEY (id);
SELECT plan_reads($$SELECT id FROM fc WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan_unique_again,
       try_sql($$INSERT INTO fc (id, fp) VALUES (5004, '0123456789abcdef')$$) AS insert_unique_again,
       lookup_mismatches('fc', 'fp', 'id') AS mismatches;

-- 4. alter_distributed_table makes a new table (and a new changes table with it): the guard,
--    copied to it, named the old changes table, and every later write lost its routes.
SET client_min_messages = warning;
SET citus.enable_unsafe_triggers = on;
SELECT alter_distributed_table('fc', shard_count := 2, cascade_to_colocated := true);
RESET citus.enable_unsafe_triggers;
RESET client_min_messages;
SELECT try_sql($$INSERT INTO fc (id, fp) VALUES (5005, '0123456789abcdef')$$) AS insert_after_conversion;
SELECT plan_reads($$SELECT id FROM fc WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan;
SET client_min_messages = warning;
SELECT lookup_mismatches('fc', 'fp', 'id') AS mismatches;
-- Made again, it is whole.
SELECT simhash_drop_index('fc', 'fp');
SELECT simhash_create_index('fc', 'fp', routed => true);
RESET client_min_messages;
INSERT INTO fc (id, fp) VALUES (5005, '0123456789abcdef');
SELECT plan_reads($$SELECT id FROM fc WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan_made_again,
       lookup_mismatches('fc', 'fp', 'id') AS mismatches;

-- 5. A schema renamed: the shards find the changes table in the table's schema, by its name.
CREATE SCHEMA fc_s;
SET client_min_messages = warning;
CREATE TABLE fc_s.t (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('fc_s.t', 'id', shard_count => 2);
INSERT INTO fc_s.t SELECT g, fp_of('fs' || g) FROM generate_series(1, 100) g;
SELECT simhash_create_index('fc_s.t', 'fp', routed => true);
RESET client_min_messages;
ALTER SCHEMA fc_s RENAME TO fc_s2;
INSERT INTO fc_s2.t VALUES (101, fp_of('fs7'));
UPDATE fc_s2.t SET fp = fp_of('fs8') WHERE id = 9;
SELECT plan_reads($$SELECT id FROM fc_s2.t WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS plan,
       lookup_mismatches('fc_s2.t', 'fp', 'id') AS mismatches,
       (SELECT array_agg(id ORDER BY id) FROM fc_s2.t WHERE simhash_near(fp, fp_of('fs7'), 0)) AS found;
SET client_min_messages = warning;
DROP SCHEMA fc_s2 CASCADE;
RESET client_min_messages;

-- 6. Keys of every type Citus distributes by: varchar and cidr (whose equality is text's and
--    inet's: writes failed with 42601) and text in the "C" collation (the routes and changes
--    took the default one: XX000).
SET client_min_messages = warning;
CREATE TABLE fc_v (id varchar(20) PRIMARY KEY, fp simhash64);
CREATE TABLE fc_c (id cidr PRIMARY KEY, fp simhash64);
CREATE TABLE fc_t (id text COLLATE "C" PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('fc_v', 'id', shard_count => 2), create_distributed_table('fc_c', 'id', shard_count => 2),
       create_distributed_table('fc_t', 'id', shard_count => 2);
INSERT INTO fc_v SELECT 'k' || g, fp_of('fv' || g) FROM generate_series(1, 60) g;
INSERT INTO fc_c SELECT ('10.0.' || g || '.0/24')::cidr, fp_of('fv' || g) FROM generate_series(1, 60) g;
INSERT INTO fc_t SELECT 'k' || g, fp_of('fv' || g) FROM generate_series(1, 60) g;
SELECT simhash_create_index('fc_v', 'fp', routed => true), simhash_create_index('fc_c', 'fp', routed => true),
       simhash_create_index('fc_t', 'fp', routed => true);
RESET client_min_messages;
INSERT INTO fc_v VALUES ('k61', fp_of('fv7')); UPDATE fc_v SET fp = fp_of('fv9') WHERE id = 'k8'; DELETE FROM fc_v WHERE id = 'k10';
INSERT INTO fc_c VALUES ('10.1.0.0/24', fp_of('fv7')); UPDATE fc_c SET fp = fp_of('fv9') WHERE id = '10.0.8.0/24'; DELETE FROM fc_c WHERE id = '10.0.10.0/24';
INSERT INTO fc_t VALUES ('k61', fp_of('fv7')); UPDATE fc_t SET fp = fp_of('fv9') WHERE id = 'k8'; DELETE FROM fc_t WHERE id = 'k10';
SELECT (SELECT array_agg(id::text ORDER BY id::text) FROM fc_v WHERE simhash_near(fp, fp_of('fv7'), 0)) AS varchar_found,
       (SELECT array_agg(id::text ORDER BY id::text) FROM fc_c WHERE simhash_near(fp, fp_of('fv7'), 0)) AS cidr_found,
       (SELECT array_agg(id ORDER BY id) FROM fc_t WHERE simhash_near(fp, fp_of('fv9'), 0)) AS text_c_found,
       plan_reads($$SELECT id FROM fc_t WHERE simhash_near(fp, '0123456789abcdef', 3)$$) AS text_c_plan;
SET client_min_messages = warning;
DROP TABLE fc_v, fc_c, fc_t CASCADE;
RESET client_min_messages;

-- 7. undistribute_table: the table is one node's, and its layout cannot work; a write says so.
SET client_min_messages = warning;
CREATE TABLE fc_u (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('fc_u', 'id', shard_count => 2);
INSERT INTO fc_u SELECT g, fp_of('fu' || g) FROM generate_series(1, 20) g;
SELECT simhash_create_index('fc_u', 'fp', routed => true);
SET citus.enable_unsafe_triggers = on;
SELECT undistribute_table('fc_u');
RESET citus.enable_unsafe_triggers;
RESET client_min_messages;
SELECT try_sql($$INSERT INTO fc_u VALUES (21, fp_of('fu21'))$$) AS insert_after_undistribute;
SET client_min_messages = warning;
SELECT simhash_drop_index('fc_u', 'fp');
RESET client_min_messages;
SELECT try_sql($$INSERT INTO fc_u VALUES (21, fp_of('fu21'))$$) AS insert_after_drop;
DROP TABLE fc_u CASCADE;

-- 8. A table distributed by its fingerprint has no key to route by: refused.
SET client_min_messages = warning;
CREATE TABLE fc_f (fp simhash64 PRIMARY KEY, body text);
SELECT create_distributed_table('fc_f', 'fp', shard_count => 2);
RESET client_min_messages;
SELECT try_sql($$SELECT simhash_create_index('fc_f', 'fp', routed => true)$$) AS distributed_by_fingerprint;
DROP TABLE fc_f;

SET client_min_messages = warning;
DROP TABLE fc CASCADE;
RESET client_min_messages;
