-- Routed layouts through DDL and hard writes (issue 52): a layout knows its columns, routes,
-- changes table and view by identity, so renames carry it along and a new column under an old
-- name has none (its lookups ask every shard); keys of any type; writes of every size, shapes
-- and argument orders. Every answer is checked against FROM ONLY (every shard's own scan).


SET client_min_messages = warning;
CREATE TABLE rn (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('rn', 'id', shard_count => 4);
INSERT INTO rn (id, body) SELECT g, 'document number ' || g || ' about ' || md5(g::text) FROM generate_series(1, 2000) g;
SELECT simhash_create_index('rn', 'fp', routed => true);
RESET client_min_messages;

-- 1. A re-fingerprinting migration: the column renamed, a new one under its name. The layout
--    follows the old column; lookups on the new one ask every shard (they were routed through
--    the old column's routes and found nothing).
ALTER TABLE rn RENAME COLUMN fp TO fp_v1;
ALTER TABLE rn ADD COLUMN fp simhash64 GENERATED ALWAYS AS (simhash(body, '{"ngram": 2}')) STORED;
SELECT col, key_column FROM _simhash_routed_layout('rn');
SELECT plan_reads($$SELECT id FROM rn WHERE simhash_near(fp, '0000000000000000', 3)$$) AS new_column,
       plan_reads($$SELECT id FROM rn WHERE simhash_near(fp_v1, '0000000000000000', 3)$$) AS old_column;
SELECT array_agg(id) AS new_column_finds
  FROM rn WHERE simhash_near(fp, simhash('document number 7 about 8f14e45fceea167a5a36dedd4bea2543', '{"ngram": 2}'), 3);
-- Writes keep the old column's routes under its new name (the table, the view, an UPDATE).
INSERT INTO rn (id, body) VALUES (5000, 'document number 7 about 8f14e45fceea167a5a36dedd4bea2543');
INSERT INTO rn_inserts (id, body) VALUES (5001, 'document number 7 about 8f14e45fceea167a5a36dedd4bea2543') RETURNING id;
UPDATE rn SET body = 'document number 7 about 8f14e45fceea167a5a36dedd4bea2543' WHERE id = 10;
SELECT lookup_mismatches('rn', 'fp_v1', 'id') AS old_column_mismatches, lookup_mismatches('rn', 'fp', 'id') AS new_column_mismatches;
SELECT count(*) AS changes_left FROM rn_fp_changes;
-- Made again for the new column: it takes the layout over (with a NOTICE that says so), and
-- lookups on it are routed.
SET client_min_messages = warning;
SELECT simhash_create_index('rn', 'fp', routed => true);
RESET client_min_messages;
SELECT col FROM _simhash_routed_layout('rn');
SELECT plan_reads($$SELECT id FROM rn WHERE simhash_near(fp, '0000000000000000', 3)$$) AS new_column,
       plan_reads($$SELECT id FROM rn WHERE simhash_near(fp_v1, '0000000000000000', 3)$$) AS old_column;
SELECT lookup_mismatches('rn', 'fp', 'id') AS mismatches;

-- 2. The key column renamed and a new column under its old name: rows are read by the key.
ALTER TABLE rn RENAME COLUMN id TO doc_id;
ALTER TABLE rn ADD COLUMN id int8;
UPDATE rn SET id = doc_id * 10;
SELECT col, key_column FROM _simhash_routed_layout('rn');
SELECT lookup_mismatches('rn', 'fp', 'doc_id') AS mismatches;
INSERT INTO rn (doc_id, body) VALUES (6000, 'a new row after the key''s rename');
SELECT array_agg(doc_id) FROM rn WHERE simhash_near(fp, simhash('a new row after the key''s rename', '{"ngram": 2}'), 0);

-- 3. The table renamed, and a new table under its old name: the view writes into the renamed
--    table (its column id shows doc_id: a view's columns keep their names), with its routes.
ALTER TABLE rn RENAME TO rn_renamed;
CREATE TABLE rn (id int8, body text);
INSERT INTO rn_inserts (id, body) VALUES (6001, 'through the view after the table''s rename') RETURNING id, body;
SELECT doc_id, id FROM rn_renamed WHERE doc_id = 6001;
SELECT count(*) AS rows_in_the_new_table FROM rn;
SELECT array_agg(doc_id) FROM rn_renamed WHERE simhash_near(fp, simhash('through the view after the table''s rename', '{"ngram": 2}'), 0);
DROP TABLE rn;

-- 4. The routes renamed away and back: lookups and writes go on through them meanwhile.
ALTER TABLE rn_fp_routes RENAME TO routes_elsewhere;
INSERT INTO rn_renamed (doc_id, body) VALUES (6002, 'written while the routes had another name');
SELECT plan_reads($$SELECT doc_id FROM rn_renamed WHERE simhash_near(fp, '0000000000000000', 3)$$) AS while_renamed,
       (SELECT array_agg(doc_id) FROM rn_renamed WHERE simhash_near(fp, simhash('written while the routes had another name', '{"ngram": 2}'), 0)) AS found;
ALTER TABLE routes_elsewhere RENAME TO rn_fp_routes;
SELECT array_agg(doc_id) AS found_after FROM rn_renamed WHERE simhash_near(fp, simhash('written while the routes had another name', '{"ngram": 2}'), 0);

-- 5. The changes table renamed: the shards record changes under its name, so writes are refused
--    (55000) until it has it back.
ALTER TABLE rn_fp_changes RENAME TO changes_elsewhere;
SELECT try_sql($$INSERT INTO rn_renamed (doc_id, body) VALUES (6003, 'refused')$$) AS while_renamed;
ALTER TABLE changes_elsewhere RENAME TO rn_fp_changes;
SELECT try_sql($$INSERT INTO rn_renamed (doc_id, body) VALUES (6003, 'accepted')$$) AS after;
SELECT lookup_mismatches('rn_renamed', 'fp', 'doc_id') AS mismatches;

-- 6. Lookups with the query first, and `$1 <-> fp <= $2` in a generic plan: routed, exact.
SELECT plan_reads($$SELECT doc_id FROM rn_renamed WHERE simhash_near('0000000000000000', fp, 3)$$) AS query_first,
       plan_reads($$SELECT doc_id FROM rn_renamed WHERE '0000000000000000' <-> fp <= 3$$) AS distance_query_first;
PREPARE near_first(simhash64, int4) AS SELECT array_agg(doc_id ORDER BY doc_id) FROM rn_renamed WHERE $1 <-> fp <= $2;
SET plan_cache_mode = force_generic_plan;
EXECUTE near_first(simhash('document number 7 about 8f14e45fceea167a5a36dedd4bea2543', '{"ngram": 2}'), 3);
RESET plan_cache_mode;
SELECT array_agg(doc_id ORDER BY doc_id) FROM ONLY rn_renamed
 WHERE simhash_near(fp, simhash('document number 7 about 8f14e45fceea167a5a36dedd4bea2543', '{"ngram": 2}'), 3);

-- 7. A writable CTE under a SELECT (its executor finishes after the portal's snapshot is gone).
WITH u AS (UPDATE rn_renamed SET body = 'changed inside a CTE' WHERE doc_id = 711 RETURNING doc_id) SELECT count(*) FROM u;
SELECT array_agg(doc_id) FROM rn_renamed WHERE simhash_near(fp, simhash('changed inside a CTE', '{"ngram": 2}'), 0);

-- 8. A trigger of the user's that changes the key: the row would sit on another key's shard
--    (a statement that names its keys refuses any other; one that does not, a row on the wrong shard).
CREATE FUNCTION shift_key() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.doc_id := NEW.doc_id + 1000000; RETURN NEW; END $$;
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER shift_key BEFORE INSERT ON rn_renamed FOR EACH ROW EXECUTE FUNCTION shift_key();
SELECT try_sql($$INSERT INTO rn_renamed (doc_id, body) VALUES (7001, 'shifted')$$) AS shifted;
DROP TRIGGER shift_key ON rn_renamed;
RESET citus.enable_unsafe_triggers;
DROP FUNCTION shift_key;

-- 9. A column of the layout dropped (with its guard): lookups ask every shard, writes are refused
--    rather than leaving rows without routes, and simhash_drop_index removes the rest.
SET client_min_messages = warning;
ALTER TABLE rn_renamed DROP COLUMN fp CASCADE;
RESET client_min_messages;
SELECT col, key_column FROM _simhash_routed_layout('rn_renamed');
SELECT try_sql($$INSERT INTO rn_renamed (doc_id, body) VALUES (8001, 'after the drop')$$) AS after_drop;
SET client_min_messages = warning;
SELECT simhash_drop_index('rn_renamed', 'fp');
RESET client_min_messages;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'rn_renamed'::regclass AND NOT tgisinternal;
DROP TABLE rn_renamed;

-- 10. Keys whose text output depends on settings (STABLE: date, timestamptz, enum): writes
--     compare them in their own type.
CREATE TYPE color AS ENUM ('red', 'green', 'blue');
SET client_min_messages = warning;
CREATE TABLE by_day (day date PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('by_day', 'day', shard_count => 4);
INSERT INTO by_day SELECT date '2020-01-01' + g, fp_of('day ' || g) FROM generate_series(1, 300) g;
SELECT simhash_create_index('by_day', 'fp', routed => true);
CREATE TABLE by_color (c color PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('by_color', 'c', shard_count => 4);
INSERT INTO by_color VALUES ('red', fp_of('red')), ('green', fp_of('green'));
SELECT simhash_create_index('by_color', 'fp', routed => true);
RESET client_min_messages;
INSERT INTO by_day VALUES ('2030-01-01', fp_of('q1'));
UPDATE by_day SET fp = flip(fp, 1, 'day') WHERE day < '2020-03-01';
DELETE FROM by_day WHERE day = '2020-01-05';
INSERT INTO by_color VALUES ('blue', fp_of('q1'));
UPDATE by_color SET fp = fp_of('q2') WHERE c = 'red';
SELECT lookup_mismatches('by_day', 'fp', 'day') AS day_mismatches, lookup_mismatches('by_color', 'fp', 'c') AS color_mismatches,
       (SELECT count(*) FROM by_day_fp_changes) + (SELECT count(*) FROM by_color_fp_changes) AS changes_left;

-- 11. The changes table has a replica identity: Citus can move its shards, and the table's,
--     by logical replication (the default mode).
SELECT relreplident FROM pg_class WHERE oid = 'by_day_fp_changes'::regclass;
SELECT citus_move_shard_placement(s.shardid, p.nodename, p.nodeport, '127.0.0.1',
                                  (SELECT n.nodeport FROM pg_dist_node n WHERE n.noderole = 'primary' AND n.shouldhaveshards
                                     AND n.nodeport <> p.nodeport ORDER BY n.nodeport LIMIT 1)) IS NOT NULL AS moved
  FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)
 WHERE s.logicalrelid = 'by_day_fp_changes'::regclass ORDER BY s.shardid LIMIT 1;
INSERT INTO by_day VALUES ('2031-01-01', fp_of('q1'));
SELECT lookup_mismatches('by_day', 'fp', 'day') AS mismatches_after_move;

-- 12. A large UPDATE of the fingerprint and a large COPY: the drain joins the routes on their
--     distribution column (it rescanned every change for every route: minutes at 40,000 rows).
SET client_min_messages = warning;
CREATE TABLE many (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('many', 'id', shard_count => 8);
INSERT INTO many SELECT g, fp_of('many ' || g) FROM generate_series(1, 40000) g;
SELECT simhash_create_index('many', 'fp', routed => true);
RESET client_min_messages;
UPDATE many SET fp = flip(fp, 1, 'many') WHERE id <= 30000;
COPY many FROM PROGRAM 'i=40001; while [ $i -le 60000 ]; do printf "%s\t%016x\n" $i $((i * 2654435761)); i=$((i + 1)); done';
SELECT (SELECT count(*) FROM many_fp_routes) = 4 * (SELECT count(*) FROM many) AS four_routes_a_row,
       (SELECT count(*) FROM many_fp_changes) AS changes_left;
SELECT lookup_mismatches('many', 'fp', 'id') AS mismatches;

SET client_min_messages = warning;
SELECT simhash_drop_index('by_day', 'fp'), simhash_drop_index('by_color', 'fp'), simhash_drop_index('many', 'fp');
RESET client_min_messages;
DROP TABLE by_day, by_color, many;
DROP TYPE color;

-- 13. ALTER COLUMN TYPE and DROP COLUMN of a column the inserts view shows (issue 67: the view
--     blocked both, and went with the column under CASCADE): the view is set aside at the
--     command's start and made again at its end over the table as it is then, under its name,
--     with its privileges, owner, comment and the table's defaults; lookups and writes go on.
SET client_min_messages = warning;
CREATE TABLE av (id int8 PRIMARY KEY, body text NOT NULL, note varchar(20) DEFAULT 'none', extra int4 DEFAULT 7,
                 fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('av', 'id', shard_count => 4);
INSERT INTO av (id, body) SELECT g, 'document number ' || g || ' about ' || md5(g::text) FROM generate_series(1, 500) g;
SELECT simhash_create_index('av', 'fp', routed => true);
RESET client_min_messages;
CREATE ROLE av_writer;
CREATE ROLE av_viewer;
GRANT INSERT ON av_inserts TO av_writer;
ALTER VIEW av_inserts OWNER TO av_viewer;
ALTER TABLE av ALTER COLUMN note TYPE text;
ALTER TABLE av DROP COLUMN extra;
SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
 WHERE attrelid = 'av_inserts'::regclass AND attnum > 0 ORDER BY attnum;
SELECT has_table_privilege('av_writer', 'av_inserts', 'INSERT') AS writer_may_insert,
       pg_get_userbyid(relowner) AS owner,
       obj_description(oid, 'pg_class') LIKE 'simhash_pg: inserts into %av that keep its routed layout of column fp%' AS comment_kept,
       (SELECT inserts FROM _simhash_routed_layout('av')) = 'av_inserts'::regclass AS layout_has_it
  FROM pg_class WHERE oid = 'av_inserts'::regclass;
INSERT INTO av_inserts (id, body, note) VALUES (1001, 'a row whose note is longer than twenty characters', repeat('long ', 10))
RETURNING id, length(note);
INSERT INTO av_inserts (id, body) VALUES (1002, 'document number 7 about 8f14e45fceea167a5a36dedd4bea2543') RETURNING id, note;
SELECT array_agg(id ORDER BY id) AS found
  FROM av WHERE simhash_near(fp, simhash('document number 7 about 8f14e45fceea167a5a36dedd4bea2543'), 0);
SELECT lookup_mismatches('av', 'fp', 'id') AS mismatches;
-- A column the view does not show leaves it alone; a failed ALTER, in a savepoint, leaves the
-- view as it was, and the next one finds it.
SELECT 'av_inserts'::regclass::oid AS view_made \gset
ALTER TABLE av ADD COLUMN later int4;
ALTER TABLE av DROP COLUMN later;
SELECT 'av_inserts'::regclass::oid = :view_made AS view_untouched_by_others;
BEGIN;
SAVEPOINT s;
ALTER TABLE av ALTER COLUMN note TYPE int4;
ROLLBACK TO SAVEPOINT s;
SELECT 'av_inserts'::regclass::oid = :view_made AS view_back;
ALTER TABLE av ALTER COLUMN note TYPE varchar(100);
COMMIT;
SELECT format_type(atttypid, atttypmod) AS note_type FROM pg_attribute WHERE attrelid = 'av_inserts'::regclass AND attname = 'note';
-- A role that does not own the table gets the ALTER's own error.
SET ROLE av_writer;
SELECT try_sql($$ALTER TABLE av DROP COLUMN note$$) AS not_owner;
RESET ROLE;
-- The view dropped by hand: simhash_create_index makes it again, the routes kept.
DROP VIEW av_inserts;
SELECT plan_reads($$SELECT id FROM av WHERE simhash_near(fp, '0000000000000000', 3)$$) AS without_view;
SELECT simhash_create_index('av', 'fp', routed => true);
INSERT INTO av_inserts (id, body) VALUES (1003, 'through the view made again') RETURNING id, note;
SELECT lookup_mismatches('av', 'fp', 'id') AS mismatches, (SELECT count(*) FROM av_fp_changes) AS changes_left;
SET client_min_messages = warning;
SELECT simhash_drop_index('av', 'fp');
RESET client_min_messages;
DROP TABLE av;
DROP ROLE av_writer, av_viewer;
-- 14. After alter_distributed_table, Citus makes the inserts view again, without its trigger,
-- and puts copies of it on the workers, where they refused ALTER COLUMN TYPE and DROP COLUMN
-- of the table (issue 67: 0A000, 2BP01 from a worker). Before the layout is made again, the
-- ALTER drops the conversion's view (simhash_create_index makes the layout's); after, the view
-- made again lives on the coordinator alone.
CREATE TABLE ad (id int8 PRIMARY KEY, v int4, note text, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT create_distributed_table('ad', 'id', shard_count => 4);
INSERT INTO ad (id, v, note, body) SELECT g, g, 'n', 'row ' || g FROM generate_series(1, 40) g;
SET client_min_messages = warning;
SELECT simhash_create_index('ad', 'fp', routed => true) IS NOT NULL AS made;
SET citus.enable_unsafe_triggers = on;
SELECT alter_distributed_table('ad', shard_count := 6, cascade_to_colocated := true);
RESET citus.enable_unsafe_triggers;
RESET client_min_messages;
SELECT bool_and(success AND result = '1') AS a_copy_on_every_worker FROM run_command_on_workers($$SELECT count(*) FROM pg_class WHERE relname = 'ad_inserts'$$);
BEGIN;
SELECT count(*) FROM ad;
ALTER TABLE ad ALTER COLUMN v TYPE int8;
COMMIT;
SELECT to_regclass('ad_inserts') AS conversions_view,
       (SELECT bool_and(success AND result = '0') FROM run_command_on_workers($$SELECT count(*) FROM pg_class WHERE relname = 'ad_inserts'$$)) AS no_copy_on_workers;
SET client_min_messages = warning;
SELECT simhash_create_index('ad', 'fp', routed => true) IS NOT NULL AS made_again;
RESET client_min_messages;
ALTER TABLE ad DROP COLUMN note;
ALTER TABLE ad ALTER COLUMN v TYPE int4;
INSERT INTO ad_inserts (id, v, body) VALUES (1001, 1, 'a row after the conversion') RETURNING id, v;
SELECT array_agg(id) AS found FROM ad WHERE simhash_near(fp, simhash('a row after the conversion'), 0);
SELECT lookup_mismatches('ad', 'fp', 'id') AS mismatches;
SET client_min_messages = warning;
SELECT simhash_drop_index('ad', 'fp');
RESET client_min_messages;
SELECT bool_and(success AND result = '0') AS no_copy_after_drop FROM run_command_on_workers($$SELECT count(*) FROM pg_class WHERE relname = 'ad_inserts'$$);
DROP TABLE ad;
