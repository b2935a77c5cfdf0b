-- Routed layouts on Citus (docs/citus.md, "Routed lookups"): the block index of a distributed
-- table as a distributed table of its own, sharded by block value, so that a lookup asks the few
-- shards that hold its probes instead of every shard of the table (Manku et al.'s permuted
-- tables, each sharded by its leading bits).
--
-- The pieces, made by simhash_create_index(..., routed => true) and removed by
-- simhash_drop_index:
-- - the routes table <table>_<col>_routes (route int8, fp simhash64, key), distributed by route:
--   one row per block of each row's fingerprint (_simhash_routes), key being the table's
--   distribution column, unique;
-- - the changes table <table>_<col>_changes (key, fp, added, origin), co-located with the table: the
--   changes a statement makes, on their way to the routes;
-- - the guard, row triggers on the table (so on every shard): _simhash_routed (AFTER INSERT),
--   _simhash_routed_update (AFTER UPDATE, when the final row's col or key differs from the old
--   one: generated columns and other triggers' changes included) and _simhash_routed_delete
--   (AFTER DELETE). Under simhash_pg.routed_changes, which src/routed_writes.rs sets around each
--   statement that writes the table, each records the row's change in the changes shard on its
--   own node, and the statement's end moves the changes into the routes (_simhash_routed_drain).
--   Without it an INSERT or UPDATE fails (a DELETE passes): a row the routes miss would be a row
--   lookups miss, a silent wrong answer. The arguments of _simhash_routed describe the layout
--   (src/routed.rs reads them); while it is disabled, lookups do not route (rows written
--   meanwhile have no routes: make the layout again after);
-- - the writers that keep the routes themselves, under simhash_pg.routed_writer, without
--   simhash_pg loaded beforehand: the view <table>_inserts, whose INSTEAD OF INSERT trigger
--   writes a row and its routes in one statement (INSERT and COPY), and simhash_ingest;
-- - the lookup: src/routed.rs rewrites a query on the table whose WHERE has simhash_near(col, q,
--   k) into a call of _simhash_routed_lookup, which reads the routes of q's probes, then the rows
--   of the keys found, by key.
--
-- A layout knows its pieces by identity, not by name (issue 52): its columns are the ones its
-- UPDATE guard's WHEN clause reads (_simhash_routed_columns: PostgreSQL keeps those references
-- by column number on every node, through renames), and on the coordinator its routes, changes
-- table and view are OIDs in the guard's arguments. So a column, table or view renamed keeps the
-- layout, and a new column under an old name has none: a lookup on it asks every shard. The
-- guard's arguments also keep the names as they were made: the layout's label in the settings
-- below (its routes table's schema and name then), and the changes table's name, by which the
-- shards find it (renamed, writes fail until it has its name again or the layout is made anew).
--
-- Routes are a superset: a DELETE without simhash_pg loaded, or a TRUNCATE, leaves routes behind
-- that name no row, and every lookup checks the rows themselves, so stale routes cost time,
-- never answers. Only writes that would leave a row without its routes are refused.
--
-- Citus sends a SET LOCAL to the workers of a transaction only under
-- citus.propagate_set_commands = local and inside a function or a transaction block: the
-- writers set simhash_pg.routed_writer and simhash_pg.routed_changes through
-- _simhash_routed_enter and _simhash_routed_leave.

COMMENT ON FUNCTION _simhash_routes(simhash64, int4) IS
    'internal: the routes of fp in a routed layout of m blocks: block index in the top byte, block value below';
COMMENT ON FUNCTION _simhash_route_probes(simhash64, int4, int4, int4, int4) IS
    'internal: the routes a lookup within k of query reads in a routed layout of m blocks over route_shards shards; NULL when asking each of the table''s table_shards shards costs less';
COMMENT ON FUNCTION _simhash_routed_blocks(int4, float8, int4) IS
    'internal: the block count of a routed layout for lookups up to max_k on rows rows in shards shards';
COMMENT ON FUNCTION _simhash_block_masks(int4) IS
    'internal: the bits of each of m blocks, block 0 first';
COMMENT ON FUNCTION _simhash_routed_args(regclass) IS
    'internal: the arguments of the routed-layout guard trigger of tbl, or NULL';
COMMENT ON FUNCTION _simhash_routed_view_columns(regclass) IS
    'internal: for each column of a routed layout''s inserts view, the current name of the table column it shows';
COMMENT ON FUNCTION _simhash_routed_views_aside(oid[]) IS
    'internal: the inserts views set aside at the start of the ALTER TABLE of tables tbls, taken for _simhash_routed_ddl to make again';
COMMENT ON FUNCTION _simhash_routed_columns(regclass) IS
    'internal: the current names of the fingerprint and key columns of tbl''s routed layout (a shard of it included), by identity, or NULL';

-- The inserts view of tbl's routed layout: the view whose INSTEAD OF trigger is ours and writes
-- into tbl (its first argument, tbl's OID), by identity; NULL when there is none. Not by the OID
-- the guard's arguments record: the view is made again when an ALTER TABLE changes a column it
-- shows (_simhash_routed_view_aside), and the guard keeps its arguments.
CREATE FUNCTION _simhash_routed_view(tbl regclass) RETURNS regclass
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT g.tgrelid::regclass
      FROM pg_trigger g JOIN pg_class v ON v.oid = g.tgrelid AND v.relkind = 'v'
      JOIN pg_proc p ON p.oid = g.tgfoid AND p.proname = '_simhash_routed_insert' AND p.pronargs = 0
                    AND p.pronamespace = '@extschema@'::regnamespace
     WHERE g.tgname = '_simhash_routed' AND g.tgnargs = 3 AND split_part(encode(g.tgargs, 'escape'), '\000', 1) = tbl::oid::text
     ORDER BY g.tgrelid
     LIMIT 1
$$;
COMMENT ON FUNCTION _simhash_routed_view(regclass) IS
    'internal: the inserts view of tbl''s routed layout, by its trigger, or NULL';

-- The routed layout of tbl as its guard describes it, each piece by identity (above); no row
-- without one. col and key_column are the columns' names now (NULL when one was dropped); routes,
-- inserts and changes are NULL when that table or view is gone; changes_renamed says when the
-- changes table no longer has the name the shards find it by. label names the layout in the
-- settings.
CREATE FUNCTION _simhash_routed_layout(tbl regclass)
RETURNS TABLE (col name, routes regclass, blocks int4, key_column name, inserts regclass, route_shards int4,
               table_shards int4, changes regclass, label jsonb, changes_renamed bool)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c[1]::name, (SELECT r.oid::regclass FROM pg_class r WHERE r.oid = a[12]::oid AND r.relkind = 'r'),
           a[4]::int4, c[2]::name, @extschema@._simhash_routed_view(tbl),
           a[8]::int4, a[9]::int4,
           (SELECT x.oid::regclass FROM pg_class x WHERE x.oid = a[13]::oid AND x.relkind = 'r'),
           jsonb_build_array(a[2], a[3]),
           -- Where the guard looks for it: its name as made, in the schema it was made in or the
           -- table's own.
           EXISTS (SELECT FROM pg_class x JOIN pg_namespace n ON n.oid = x.relnamespace
                    WHERE x.oid = a[13]::oid
                      AND (x.relname <> a[11]
                           OR (n.nspname <> a[10] AND x.relnamespace <> (SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl))))
      FROM (SELECT @extschema@._simhash_routed_args(tbl) AS a, @extschema@._simhash_routed_columns(tbl) AS c) x
     WHERE a IS NOT NULL
$$;
COMMENT ON FUNCTION _simhash_routed_layout(regclass) IS
    'internal: the routed layout of tbl (column, routes table, blocks, key column, inserts view, shard counts of the routes and the table, changes table, label in the settings, whether the changes table was renamed), its pieces by identity';

-- The guard's two settings, simhash_pg.routed_writer and simhash_pg.routed_changes, each a JSON
-- array of the routed layouts it covers, each named by its routes table's [schema, name] (the
-- same text on every node, whatever quoting a session prefers; JSON, since a name may hold any
-- character): 'writer'
-- lists the layouts whose writer keeps the routes itself (the view, simhash_ingest), 'changes'
-- those whose shards record each row's change for the statement's end to move into the routes
-- (src/routed_writes.rs). A guard acts only for its own layout: a write the setting does not
-- name is treated as if it were off.
--
-- _simhash_routed_enter adds layouts (a JSON array) to a setting for the rest of the
-- transaction, on this node and on every worker the transaction reaches, and returns what
-- _simhash_routed_leave needs to put it back: the setting's previous value,
-- citus.propagate_set_commands as it was, and whether anything changed. Citus sends a SET LOCAL
-- on only under citus.propagate_set_commands = local and from inside a function the executor
-- runs inside another statement, so the SETs run in _simhash_routed_set, called in a FROM clause
-- (not a bare expression, which PL/pgSQL evaluates without the executor); callers call these in
-- a FROM clause too, from a trigger of COPY as from a statement's.
CREATE FUNCTION _simhash_routed_enter(setting text, layouts text) RETURNS text[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- A SET clause restores only its own settings on return: the SET LOCAL below stays.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text := coalesce(current_setting('simhash_pg.routed_' || setting, true), '');
    propagation text := current_setting('citus.propagate_set_commands', true);
    had jsonb := coalesce(nullif(previous, ''), '[]')::jsonb;
BEGIN
    IF had @> layouts::jsonb THEN
        RETURN ARRAY[previous, propagation, 'false'];
    END IF;
    PERFORM FROM @extschema@._simhash_routed_set(setting,
        (SELECT jsonb_agg(DISTINCT x ORDER BY x) FROM jsonb_array_elements(had || layouts::jsonb) x)::text);
    RETURN ARRAY[previous, propagation, 'true'];
END
$$;
CREATE FUNCTION _simhash_routed_leave(setting text, entered text[]) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF entered[3] = 'true' THEN
        PERFORM FROM @extschema@._simhash_routed_set(setting, entered[1]);
        IF entered[2] IS NOT NULL THEN
            PERFORM pg_catalog.set_config('citus.propagate_set_commands', entered[2], true);
        END IF;
    END IF;
END
$$;
-- Sets simhash_pg.routed_<setting> to value for the rest of the transaction, here and on the
-- workers: the SETs run one function further down, where Citus counts them as inside a function
-- (it propagates a SET LOCAL only there or in a transaction block), whoever calls this (the
-- executor hooks call it from the top level).
CREATE FUNCTION _simhash_routed_set(setting text, value text) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM FROM @extschema@._simhash_routed_set_local(setting, value);
END
$$;
-- (SET statements, not set_config: Citus propagates the statements only.)
CREATE FUNCTION _simhash_routed_set_local(setting text, value text) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SET LOCAL citus.propagate_set_commands = 'local';
    IF setting = 'writer' THEN
        EXECUTE format('SET LOCAL simhash_pg.routed_writer = %L', value);
    ELSIF setting = 'changes' THEN
        EXECUTE format('SET LOCAL simhash_pg.routed_changes = %L', value);
    ELSE
        RAISE EXCEPTION '_simhash_routed_set: no setting %', setting USING ERRCODE = '22023';
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_routed_set_local(text, text) IS
    'internal: the SET LOCAL commands of _simhash_routed_set';
COMMENT ON FUNCTION _simhash_routed_set(text, text) IS
    'internal: sets simhash_pg.routed_writer or simhash_pg.routed_changes for the rest of the transaction, here and on the workers Citus reaches';
COMMENT ON FUNCTION _simhash_routed_enter(text, text) IS
    'internal: adds routed layouts (a JSON array of routes tables) to simhash_pg.routed_writer or simhash_pg.routed_changes for the rest of the transaction, on every node; returns what _simhash_routed_leave takes';
COMMENT ON FUNCTION _simhash_routed_leave(text, text[]) IS
    'internal: puts back simhash_pg.routed_writer or simhash_pg.routed_changes as _simhash_routed_enter found it';

-- Whether setting (writer or changes) covers the routed layout whose routes table is
-- schema_name.name.
CREATE FUNCTION _simhash_routed_covers(setting text, schema_name text, name text) RETURNS bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(nullif(current_setting('simhash_pg.routed_' || setting, true), ''), '[]')::jsonb
           @> jsonb_build_array(jsonb_build_array(schema_name, name))
$$;
COMMENT ON FUNCTION _simhash_routed_covers(text, text, text) IS
    'internal: whether simhash_pg.routed_writer or simhash_pg.routed_changes names the routed layout with routes table schema.name';

-- Whether simhash_pg.routed_changes lets a statement record a change of key in the routed layout
-- whose routes table is schema_name.name: it names the layout without keys (any key), or with
-- the keys its statements announced (src/routed_writes.rs), key among them.
CREATE FUNCTION _simhash_routed_key_allowed(schema_name text, name text, key text) RETURNS bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(bool_or(jsonb_array_length(e) = 2 OR (e -> 2) ? key), false)
      FROM jsonb_array_elements(coalesce(nullif(current_setting('simhash_pg.routed_changes', true), ''), '[]')::jsonb) e
     WHERE e ->> 0 = schema_name AND e ->> 1 = name
$$;
COMMENT ON FUNCTION _simhash_routed_key_allowed(text, text, text) IS
    'internal: whether simhash_pg.routed_changes lets a statement record a change of key in the routed layout with routes table schema_name.name';

-- The distributed transaction this one belongs to, the same text on the coordinator and on every
-- worker it reaches (Citus's distributed transaction id): what a change recorded by the guard
-- names, so that a drain tells its own changes from any left by others.
CREATE FUNCTION _simhash_transaction() RETURNS text
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('%s:%s', t.initiator_node_identifier, t.transaction_number) FROM get_current_transaction_id() t
$$;
COMMENT ON FUNCTION _simhash_transaction() IS
    'internal: the Citus distributed transaction id of this transaction, as text';

-- The guard of a routed layout (above), after each INSERT, DELETE, and UPDATE of the fingerprint
-- or key, on the shard that holds the row. TG_ARGV: col and key column as made, the label (routes
-- schema and name as made), blocks, inserts view schema and name as made, the shard counts of
-- the routes and of the table, changes schema and name, and on the coordinator the OIDs of the
-- routes, changes and view. The columns it reads are the layout's by identity
-- (_simhash_routed_columns on this shard), whatever they are called now.
-- - Where simhash_pg.routed_changes names the layout (a statement on the table from a node with
--   simhash_pg loaded, src/routed_writes.rs), the row's change goes into the changes table's
--   shard co-located with this one, on this node (a local write: a shard's trigger cannot run a
--   distributed one); the statement's end moves it into the routes (_simhash_routed_drain).
-- - Where simhash_pg.routed_writer names it (the view, simhash_ingest), an INSERT passes: its
--   writer adds the routes.
-- - Otherwise a DELETE passes (its routes stay, naming no row: lookups check the rows) and
--   anything else fails: a row without its routes would be a row lookups miss.
CREATE FUNCTION _simhash_routed_guard() RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- Keys travel as text: every digit of a float key.
SET extra_float_digits = 3
AS $$
DECLARE
    changes regclass;
    old_row jsonb;
    new_row jsonb;
    key text;
    shard text;
    columns text[];
    my_shard int8;
    changes_shard int8;
    distributed regclass;
BEGIN
    IF @extschema@._simhash_routed_covers('changes', TG_ARGV[1], TG_ARGV[2]) THEN
        -- By its name as made, in the schema it was made in or, that schema renamed, in the
        -- table's own (a schema renamed renames both; issue 67: writes failed naming the old one).
        changes := coalesce(to_regclass(format('%I.%I', TG_ARGV[9], TG_ARGV[10])),
                            to_regclass(format('%I.%I', TG_TABLE_SCHEMA, TG_ARGV[10])));
        IF changes IS NULL THEN
            RAISE EXCEPTION 'the changes table %.% of a routed layout is gone', quote_ident(TG_ARGV[9]), quote_ident(TG_ARGV[10])
                USING ERRCODE = '55000', HINT = 'Make the layout again: simhash_drop_index, then simhash_create_index(..., routed => true).';
        END IF;
        IF TG_OP <> 'INSERT' THEN
            old_row := to_jsonb(OLD);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            new_row := to_jsonb(NEW);
        END IF;
        -- The layout's columns as they are called now on this shard; without them (a column
        -- dropped with its guard) a write would leave a row without routes.
        columns := @extschema@._simhash_routed_columns(TG_RELID);
        IF columns IS NULL THEN
            RAISE EXCEPTION 'the routed layout of column % has lost its fingerprint or key column', quote_ident(TG_ARGV[0])
                USING ERRCODE = '55000', HINT = 'A column was dropped: simhash_drop_index, then simhash_create_index(..., routed => true).';
        END IF;
        -- The key cannot change (Citus refuses to change a distribution column): one shard.
        key := coalesce(new_row, old_row) ->> columns[2];
        -- A statement that announced its keys drains only theirs: any other would stay behind.
        IF NOT @extschema@._simhash_routed_key_allowed(TG_ARGV[1], TG_ARGV[2], key) THEN
            RAISE EXCEPTION 'a write of the routed layout of column % changed the row of key %, which its statement did not name',
                quote_ident(TG_ARGV[0]), key
                USING ERRCODE = '55000';
        END IF;
        -- The changes shard co-located with this one (the same hash range): on this node, for any
        -- key type. (Hashing the key here is not the coordinator's hash for every type: an
        -- enum's values have other OIDs on each node.)
        my_shard := substring(TG_TABLE_NAME FROM '_([0-9]+)$')::int8;
        SELECT c.shardid, t.logicalrelid INTO changes_shard, distributed
          FROM pg_dist_shard t JOIN pg_dist_shard c ON c.logicalrelid = changes AND c.shardminvalue = t.shardminvalue
         WHERE t.shardid = my_shard;
        -- (shard_name leaves out the schema public: the name alone, in the changes' schema.)
        SELECT format('%I.%I', s.nspname, n[cardinality(n)]) INTO shard
          FROM parse_ident(shard_name(changes, changes_shard)) n,
               pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
         WHERE c.oid = changes;
        -- This shard is the one of the row's key, unless a trigger of the user's changed the key
        -- after Citus chose the shard: the row would sit where lookups by its key never look
        -- (checked where hashing here is the coordinator's hash: not for enums).
        IF (SELECT y.typtype FROM pg_attribute a JOIN pg_type y ON y.oid = a.atttypid
             WHERE a.attrelid = TG_RELID AND a.attname = columns[2]) <> 'e'
           AND get_shard_id_for_distribution_column(distributed, key) IS DISTINCT FROM my_shard THEN
            RAISE EXCEPTION 'a write of the routed layout of column % put the row of key % on the shard of another key',
                quote_ident(columns[1]), key
                USING ERRCODE = '55000', HINT = 'A trigger changed the distribution column: Citus keeps a row on the shard of the key it came with.';
        END IF;
        -- Each change names its distributed transaction (the same on every node): a drain
        -- removes routes for its own changes only (_simhash_routed_drain).
        EXECUTE format('INSERT INTO %s (key, fp, added, origin) SELECT $1::%s, x.fp, x.added, @extschema@._simhash_transaction()
                          FROM (VALUES (($2 ->> $4)::@extschema@.simhash64, false), (($3 ->> $4)::@extschema@.simhash64, true)) x (fp, added)
                         WHERE x.fp IS NOT NULL',
                       shard, (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = changes AND a.attname = 'key'))
          USING key, old_row, new_row, columns[1];
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' AND @extschema@._simhash_routed_covers('writer', TG_ARGV[1], TG_ARGV[2]) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN NULL;
    END IF;
    -- Neither a distributed table nor one of its shards: undistribute_table made it a table of
    -- one node, which a routed layout cannot serve (issue 67: the hint below did not apply).
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = TG_RELID)
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_shard s
                            WHERE s.shardid = substring(TG_TABLE_NAME FROM '_([0-9]+)$')::int8) THEN
            RAISE EXCEPTION '% is no longer a distributed table: its routed layout of column % cannot keep its routes', TG_RELID::regclass, quote_ident(TG_ARGV[0])
                USING ERRCODE = '55000',
                      HINT = format('Remove the layout: SELECT simhash_drop_index(%L, %L);', TG_RELID::regclass::text, TG_ARGV[0]);
        END IF;
    END IF;
    RAISE EXCEPTION 'a routed layout of column % keeps its routes with the rows, and this write does not', quote_ident(TG_ARGV[0])
        USING ERRCODE = '55000',
              HINT = format('Write on the coordinator (a write from a worker node or a distributed function cannot keep the routes), from a session that loaded simhash_pg before its first statement (shared_preload_libraries = ''citus, simhash_pg'', or session_preload_libraries = ''simhash_pg''); or INSERT and COPY through the view %I.%I, or use simhash_ingest; simhash_drop_index removes the routed layout.',
                            TG_ARGV[5], TG_ARGV[6]);
END
$$;
COMMENT ON FUNCTION _simhash_routed_guard() IS
    'internal: the guard trigger of a routed layout: records each change of a row for its routes, or refuses writes that would not keep them';

-- The view alter_distributed_table made again in place of tbl's inserts view (issue 67): the
-- new one has the old one's name but not its trigger, so _simhash_routed_view does not find it.
-- By the name the guard records, in the table's schema or the one the layout was made in, a view
-- of the table alone; NULL when there is none.
CREATE FUNCTION _simhash_routed_view_made_again(tbl regclass) RETURNS regclass
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.oid::regclass
      FROM (SELECT @extschema@._simhash_routed_args(tbl) AS args) a, pg_class c
     WHERE c.relkind = 'v' AND c.relname = a.args[7]
       AND c.relnamespace IN (SELECT n.oid FROM pg_namespace n WHERE n.nspname = a.args[6]
                              UNION SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
       AND (SELECT array_agg(DISTINCT d.refobjid) FROM pg_rewrite w JOIN pg_depend d
                ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_class'::regclass
             WHERE w.ev_class = c.oid AND d.refobjid <> c.oid) = ARRAY[tbl::oid]
     ORDER BY c.oid
     LIMIT 1
$$;
COMMENT ON FUNCTION _simhash_routed_view_made_again(regclass) IS
    'internal: the view alter_distributed_table made again under the name of tbl''s inserts view, or NULL';

-- Drops the inserts view of a routed layout. The view lives on the coordinator alone, unless
-- Citus made it a distributed object: alter_distributed_table makes the views over the table
-- again and puts copies of them on every node, where they would refuse an ALTER TABLE of the
-- table's shell and shards (issue 67: 0A000, 2BP01 from a worker). Such a view's copies go too.
-- Not by Citus's own DROP VIEW, which refuses after any multi-shard statement of the
-- transaction, but on the workers' own connections: a copy serves nothing, so one dropped by a
-- transaction that then rolls back is not missed.
CREATE FUNCTION _simhash_routed_drop_view(inserts regclass) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous_ddl text := current_setting('citus.enable_ddl_propagation', true);
    distributed bool := false;
    qualified text := (SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                        WHERE c.oid = inserts);
    failed record;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_object') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_object
                                 WHERE classid = ''pg_catalog.pg_class''::regclass AND objid = $1)'
           INTO distributed USING inserts;
    END IF;
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    EXECUTE format('DROP VIEW %s', inserts);
    PERFORM set_config('citus.enable_ddl_propagation', previous_ddl, true);
    IF distributed THEN
        FOR failed IN EXECUTE format('SELECT nodename, nodeport, result FROM run_command_on_workers(%L) WHERE NOT success',
                                     format('SET citus.enable_ddl_propagation = off; DROP VIEW IF EXISTS %s', qualified)) LOOP
            RAISE WARNING 'the copy of the inserts view % on %:% was not dropped: %', qualified, failed.nodename, failed.nodeport, failed.result
                USING HINT = 'An ALTER TABLE of a column it shows fails on that node until it is dropped there.';
        END LOOP;
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_routed_drop_view(regclass) IS
    'internal: drops the inserts view of a routed layout, and the copies Citus made of it on the workers';

-- ALTER TABLE ... ALTER COLUMN TYPE or DROP COLUMN of a column the inserts view shows: the view
-- would hold the column against it (PostgreSQL refuses to change or drop a column a view
-- reads), or go with it under CASCADE (issue 67). So at the command's start
-- (_simhash_routed_ddl_start, src/routed_ddl.rs, which finds the table and the columns in the
-- statement and takes the table's lock as the ALTER would) the view is set aside: dropped, and
-- what makes it again kept in the session until the command's end (_simhash_routed_ddl), when
-- it is made again over the table as it is then: the same name, columns (a dropped one left
-- out, each other by number, showing its new type), owner, privileges and comment, the table's
-- defaults. Should the command fail, its transaction (or savepoint) takes the drop back.
-- Returns what _simhash_routed_view_restore needs, as JSON text; NULL when tbl's routed layout
-- has no view showing one of columns.
CREATE FUNCTION _simhash_routed_view_aside(tbl regclass, columns text[]) RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    inserts regclass := @extschema@._simhash_routed_view(tbl);
    spec jsonb;
BEGIN
    IF inserts IS NULL THEN
        -- After alter_distributed_table the layout needs simhash_create_index (its writes fail
        -- until then), which makes the view again: the one the conversion made only stands in
        -- the command's way.
        inserts := @extschema@._simhash_routed_view_made_again(tbl);
        IF inserts IS NOT NULL AND @extschema@._simhash_routed_view_columns(inserts) && columns THEN
            RAISE NOTICE 'the view % alter_distributed_table made over % is dropped: simhash_create_index makes the inserts view of its routed layout again', inserts, tbl;
            PERFORM @extschema@._simhash_routed_drop_view(inserts);
        END IF;
        RETURN NULL;
    END IF;
    IF NOT (@extschema@._simhash_routed_view_columns(inserts) && columns) THEN
        RETURN NULL;
    END IF;
    SELECT jsonb_build_object(
               'schema', n.nspname, 'name', c.relname, 'owner', c.relowner::regrole::text,
               'comment', obj_description(c.oid, 'pg_class'),
               'routes', split_part(encode(g.tgargs, 'escape'), '\000', 2)::oid,
               'blocks', split_part(encode(g.tgargs, 'escape'), '\000', 3)::int4,
               -- Each privilege granted on the view but its owner's own (given back by owning it).
               'grants', (SELECT coalesce(jsonb_agg(jsonb_build_array(CASE e.grantee WHEN 0 THEN 'PUBLIC' ELSE e.grantee::regrole::text END,
                                                                      e.privilege_type, e.is_grantable)), '[]')
                            FROM aclexplode(c.relacl) e WHERE e.grantee <> c.relowner),
               -- The table column each view column shows, by number: a column the command
               -- drops, and one it adds under that name, are not the same.
               'columns', (SELECT coalesce(jsonb_agg(jsonb_build_array(v.attname, a.attnum) ORDER BY s.n), '[]')
                             FROM unnest(@extschema@._simhash_routed_view_columns(inserts)) WITH ORDINALITY s(shows, n)
                             JOIN pg_attribute v ON v.attrelid = inserts AND v.attnum = s.n
                             JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = s.shows AND a.attnum > 0 AND NOT a.attisdropped))
      INTO spec
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_trigger g ON g.tgrelid = c.oid AND g.tgname = '_simhash_routed'
     WHERE c.oid = inserts;
    PERFORM @extschema@._simhash_routed_drop_view(inserts);
    RETURN spec::text;
END
$$;
COMMENT ON FUNCTION _simhash_routed_view_aside(regclass, text[]) IS
    'internal: drops the inserts view of tbl''s routed layout before an ALTER TABLE changes or drops one of columns, and returns how to make it again';

-- Makes the inserts view set aside by _simhash_routed_view_aside again (spec), at the end of the
-- ALTER TABLE: nothing when tbl has no routed layout any more, or has its view again (the
-- command failed in a savepoint, which took the drop back).
CREATE FUNCTION _simhash_routed_view_restore(tbl regclass, spec jsonb) RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    layout record;
    inserts regclass;
    g jsonb;
    previous_ddl text := current_setting('citus.enable_ddl_propagation', true);
BEGIN
    SELECT * INTO layout FROM @extschema@._simhash_routed_layout(tbl);
    IF NOT FOUND OR layout.inserts IS NOT NULL OR to_regclass(format('%I.%I', spec ->> 'schema', spec ->> 'name')) IS NOT NULL THEN
        RETURN NULL;
    END IF;
    inserts := @extschema@._simhash_routed_make_view(tbl, layout.col, (spec ->> 'routes')::oid::regclass, (spec ->> 'blocks')::int4,
                                                     spec ->> 'schema', spec ->> 'name', spec -> 'columns');
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    EXECUTE format('COMMENT ON VIEW %s IS %L', inserts, spec ->> 'comment');
    -- Granted by its maker, who owns it for now; then owned by its owner, who takes the grants over.
    FOR g IN SELECT jsonb_array_elements(spec -> 'grants') LOOP
        EXECUTE format('GRANT %s ON %s TO %s%s', g ->> 1, inserts, CASE WHEN g ->> 0 = 'PUBLIC' THEN 'PUBLIC' ELSE g ->> 0 END,
                       CASE WHEN (g ->> 2)::bool THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    IF (spec ->> 'owner')::regrole <> current_user::regrole THEN
        BEGIN
            EXECUTE format('ALTER VIEW %s OWNER TO %s', inserts, spec ->> 'owner');
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE WARNING 'the inserts view % of % is made again owned by %, not %: only a member of % may give it to that role',
                inserts, tbl, current_user, spec ->> 'owner', spec ->> 'owner'
                USING HINT = format('ALTER VIEW %s OWNER TO %s;', inserts, spec ->> 'owner');
        END;
    END IF;
    PERFORM set_config('citus.enable_ddl_propagation', previous_ddl, true);
    RETURN inserts;
END
$$;
COMMENT ON FUNCTION _simhash_routed_view_restore(regclass, jsonb) IS
    'internal: makes the inserts view of tbl''s routed layout again, as _simhash_routed_view_aside set it aside';

CREATE FUNCTION _simhash_routed_ddl_start() RETURNS event_trigger
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'simhash_routed_ddl_start';
COMMENT ON FUNCTION _simhash_routed_ddl_start() IS
    'internal: the event trigger that sets a routed layout''s inserts view aside before an ALTER TABLE changes or drops a column it shows';
CREATE EVENT TRIGGER _simhash_routed_ddl_start ON ddl_command_start WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION _simhash_routed_ddl_start();

-- At the end of an ALTER TABLE (in its own transaction, before Citus sends it to the shards):
-- - the inserts views set aside at its start (above) are made again;
-- - a guard trigger disabled lets writes skip the routes, and enabled again it would make
--   lookups read routes that miss those rows (issue 67: a silent miss found by
--   tests/citus/invariant.py). So no ALTER TABLE may leave one of them disabled (DISABLE
--   TRIGGER, DISABLE TRIGGER ALL or USER, ENABLE REPLICA TRIGGER).
-- (The layout's own columns keep their types: PostgreSQL refuses to change a column a trigger's
-- WHEN clause reads.)
CREATE FUNCTION _simhash_routed_ddl() RETURNS event_trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    altered oid[] := ARRAY(SELECT c.objid FROM pg_event_trigger_ddl_commands() c WHERE c.classid = 'pg_class'::regclass);
BEGIN
    FOR t IN SELECT a.tbl, a.spec FROM @extschema@._simhash_routed_views_aside(altered) a LOOP
        PERFORM @extschema@._simhash_routed_view_restore(t.tbl::regclass, t.spec::jsonb);
    END LOOP;
    FOR t IN SELECT g.tgrelid::regclass AS tbl, g.tgname
               FROM pg_trigger g
              WHERE g.tgrelid = ANY (altered)
                AND g.tgname IN ('_simhash_routed', '_simhash_routed_update', '_simhash_routed_delete')
                AND g.tgfoid = '@extschema@._simhash_routed_guard()'::regprocedure
                AND g.tgenabled NOT IN ('O', 'A')
              LIMIT 1 LOOP
        RAISE EXCEPTION 'the trigger % of % guards its routed layout: it cannot be disabled', quote_ident(t.tgname), t.tbl
            USING ERRCODE = '55000',
                  HINT = 'Writes while it is disabled would have no routes, and lookups would miss those rows. To write past it, drop the layout (simhash_drop_index) and make it again after (simhash_create_index(..., routed => true)).';
    END LOOP;
END
$$;
COMMENT ON FUNCTION _simhash_routed_ddl() IS
    'internal: the event trigger at the end of an ALTER TABLE: makes the inserts views set aside at its start again, and refuses leaving a routed layout''s guard trigger disabled';
CREATE EVENT TRIGGER _simhash_routed_ddl ON ddl_command_end WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION _simhash_routed_ddl();

-- The name a routed layout goes by in simhash_pg.routed_writer and simhash_pg.routed_changes: its
-- routes table's schema and name, as a JSON pair.
CREATE FUNCTION _simhash_routes_name(routes regclass) RETURNS jsonb
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_build_array(n.nspname, c.relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = routes
$$;
COMMENT ON FUNCTION _simhash_routes_name(regclass) IS
    'internal: the name of the routed layout with routes table routes in simhash_pg.routed_writer and simhash_pg.routed_changes';

-- Adds the routes of one row (fingerprint fp, key as text, cast to the routes' key type): what
-- the inserts view's trigger and simhash_ingest write beside each row. A NULL fingerprint has
-- none (no lookup finds it).
CREATE FUNCTION _simhash_add_routes(routes regclass, m int4, fp simhash64, key text) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    EXECUTE format('INSERT INTO %s (route, fp, key) SELECT r, $1, $2::%s FROM unnest(@extschema@._simhash_routes($1, $3)) r
                    ON CONFLICT DO NOTHING',
                   routes, (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = routes AND a.attname = 'key'))
      USING fp, key, m;
END
$$;
COMMENT ON FUNCTION _simhash_add_routes(regclass, int4, simhash64, text) IS
    'internal: adds the routes of one row of a routed layout (its fingerprint and key) to its routes table';

-- The equality operator of a key type, qualified (its default B-tree class's; a routed key has a
-- unique index): keys are compared in their own type, never through text, whose output is STABLE
-- for dates, timestamps and enums, which Citus refuses in a distributed UPDATE or DELETE.
-- A type may have no operator class of its own but be binary-coercible to one that has, as
-- PostgreSQL's own choice of a default class allows (varchar to text, cidr to inet: without this
-- the operator was NULL and writes of such keys failed with 42601; issue 67); its own class wins.
CREATE FUNCTION _simhash_key_equality(typ regtype) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('OPERATOR(%I.%s)', n.nspname, o.oprname)
      FROM (SELECT CASE t.typtype WHEN 'd' THEN t.typbasetype ELSE t.oid END AS base FROM pg_type t WHERE t.oid = typ) b
      JOIN pg_type bt ON bt.oid = b.base
      JOIN pg_opclass c ON c.opcdefault
                       AND c.opcmethod = (SELECT a.oid FROM pg_am a WHERE a.amname = 'btree')
                       AND (c.opcintype = b.base
                            OR c.opcintype = CASE WHEN bt.typtype = 'e' THEN 'anyenum'::regtype
                                                  WHEN bt.typtype = 'r' THEN 'anyrange'::regtype
                                                  WHEN bt.typcategory = 'A' THEN 'anyarray'::regtype END
                            OR EXISTS (SELECT FROM pg_cast k WHERE k.castsource = b.base AND k.casttarget = c.opcintype
                                                               AND k.castmethod = 'b'))
      JOIN pg_amop p ON p.amopfamily = c.opcfamily AND p.amopstrategy = 3 AND p.amoplefttype = c.opcintype
                    AND p.amoprighttype = c.opcintype
      JOIN pg_operator o ON o.oid = p.amopopr
      JOIN pg_namespace n ON n.oid = o.oprnamespace
     ORDER BY c.opcintype = b.base DESC
     LIMIT 1
$$;
COMMENT ON FUNCTION _simhash_key_equality(regtype) IS
    'internal: the qualified equality operator of a routed layout''s key type';

-- Moves the changes a statement recorded (the guard, under simhash_pg.routed_changes) into the
-- routes of tbl's routed layout, in the statement's transaction: each removed fingerprint's
-- routes go, unless the same row has it again (a row deleted and inserted again in one
-- statement), then each added fingerprint's routes come. src/routed_writes.rs calls it at the
-- end of every statement that writes the table. Returns the changes moved. Without its routes
-- (dropped), the changes are dropped too (lookups ask every shard until the layout is made
-- again); with its changes table renamed, the shards cannot record changes: 55000.
CREATE FUNCTION _simhash_routed_drain(tbl regclass, keys text[] DEFAULT NULL) RETURNS int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    layout record;
    previous text := current_setting('citus.enable_deadlock_prevention', true);
    previous_pool text := current_setting('citus.max_adaptive_executor_pool_size', true);
    moved int8;
BEGIN
    SELECT * INTO layout FROM @extschema@._simhash_routed_layout(tbl);
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    IF layout.changes_renamed THEN
        RAISE EXCEPTION 'the changes table of the routed layout of % was renamed: its shards record changes under its name', tbl
            USING ERRCODE = '55000',
                  HINT = 'Give it its name back, or make the layout again: simhash_drop_index, then simhash_create_index(..., routed => true).';
    END IF;
    IF layout.changes IS NULL THEN
        RETURN 0;
    END IF;
    IF layout.routes IS NULL THEN
        EXECUTE format('DELETE FROM %s', layout.changes);
        RETURN 0;
    END IF;
    IF keys IS NOT NULL THEN
        RETURN @extschema@._simhash_routed_drain_keys(layout.changes, layout.routes, layout.blocks, keys);
    END IF;
    -- Citus lets one multi-shard write at a time into a shard (deadlock prevention), which
    -- would make writers of the table wait for each other's commits here. A drain takes only
    -- its own transaction's changes and those left committed (none, unless the setting was set
    -- by hand), never another's uncommitted ones, and the routes it writes are its rows' own,
    -- whose rows it holds locked: two drains never wait on the same row.
    PERFORM set_config('citus.enable_deadlock_prevention', 'off', true);
    -- One connection per node: the changes of a statement are few shards' worth, and every
    -- connection beyond the one a node keeps open would be a new one to set up, for each drain.
    PERFORM set_config('citus.max_adaptive_executor_pool_size', '1', true);
    -- Routes go only for this transaction's own removals: a removal left by another (its
    -- writer never drained it) may name a row written since by a writer that records no
    -- changes (the view, simhash_ingest). Additions are safe from anyone: a route too many
    -- costs time, never an answer. The routes to remove are rows of their own, joined with the
    -- routes on the distribution column (route): each shard of routes finds its share by hash,
    -- where a condition on an array of routes (and an anti-join on the changes) made the
    -- shards rescan every change for every route, 9 minutes for 200,000 changes (issue 52).
    EXECUTE format('WITH d AS (DELETE FROM %1$s RETURNING key, fp, added, origin),
                         removed AS (SELECT key, fp FROM d WHERE NOT added AND origin = %4$L
                                     EXCEPT SELECT key, fp FROM d WHERE added),
                         gone AS (DELETE FROM %2$s r
                                   USING (SELECT x.key, x.fp, g.route FROM removed x, unnest(@extschema@._simhash_routes(x.fp, %3$s)) g(route)) g
                                   WHERE r.route = g.route AND r.fp OPERATOR(@extschema@.=) g.fp AND r.key %5$s g.key)
                    INSERT INTO %2$s (route, fp, key)
                    SELECT DISTINCT r, d.fp, d.key FROM d, unnest(@extschema@._simhash_routes(d.fp, %3$s)) r WHERE d.added
                    ON CONFLICT DO NOTHING',
                   layout.changes, layout.routes, layout.blocks, @extschema@._simhash_transaction(),
                   @extschema@._simhash_key_equality((SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = layout.routes AND a.attname = 'key')));
    GET DIAGNOSTICS moved = ROW_COUNT;
    PERFORM set_config('citus.enable_deadlock_prevention', coalesce(previous, 'on'), true);
    PERFORM set_config('citus.max_adaptive_executor_pool_size', coalesce(previous_pool, '16'), true);
    RETURN moved;
END
$$;
COMMENT ON FUNCTION _simhash_routed_drain(regclass, text[]) IS
    'internal: moves the changes recorded by the guard of tbl''s routed layout (those of keys, when given) into its routes, at the end of the statement that wrote them';

-- The drain of a statement that named its keys (src/routed_writes.rs; the guard refused any
-- other): their changes only, from the shards of those keys, and their routes one change at a
-- time, each on the shards of its own routes. The same rules as _simhash_routed_drain: routes
-- go for this transaction's removals unless the row has the fingerprint again, come for every
-- addition.
CREATE FUNCTION _simhash_routed_drain_keys(changes regclass, routes regclass, m int4, keys text[]) RETURNS int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key_type text := (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = changes AND a.attname = 'key');
    mine text := @extschema@._simhash_transaction();
    ks text[];
    fps @extschema@.simhash64[];
    adds bool[];
    origins text[];
    c record;
BEGIN
    EXECUTE format('WITH d AS (DELETE FROM %s WHERE key = ANY ($1::%s[]) RETURNING key, fp, added, origin)
                    SELECT array_agg(key::text), array_agg(fp), array_agg(added), array_agg(origin) FROM d', changes, key_type)
      INTO ks, fps, adds, origins USING keys;
    IF ks IS NULL THEN
        RETURN 0;
    END IF;
    -- Removals first, then additions: a row that has its fingerprint again keeps its routes.
    FOR c IN SELECT * FROM unnest(ks, fps, adds, origins) AS x (key, fp, added, origin) WHERE NOT x.added AND x.origin = mine LOOP
        EXECUTE format('DELETE FROM %s WHERE route = ANY ($3) AND fp OPERATOR(@extschema@.=) $1 AND key = $2::%s', routes, key_type)
          USING c.fp, c.key, @extschema@._simhash_routes(c.fp, m);
    END LOOP;
    FOR c IN SELECT * FROM unnest(ks, fps, adds, origins) AS x (key, fp, added, origin) WHERE x.added LOOP
        PERFORM @extschema@._simhash_add_routes(routes, m, c.fp, c.key);
    END LOOP;
    RETURN cardinality(ks);
END
$$;
COMMENT ON FUNCTION _simhash_routed_drain_keys(regclass, regclass, int4, text[]) IS
    'internal: the drain of a statement that named the keys it writes: their changes only, route by route';

-- The INSTEAD OF INSERT trigger of the view <table>_inserts: writes the row to the table and its
-- routes to the routes table, the guard switched off meanwhile. TG_ARGV: the table's and the
-- routes' OIDs and the blocks (this node's: the view and its trigger are the coordinator's);
-- the columns by identity (_simhash_routed_columns). (Citus refuses UPDATE and DELETE on a view
-- of its tables: those go to the table itself.)
CREATE FUNCTION _simhash_routed_insert() RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- Keys travel as text: every digit of a float key.
SET extra_float_digits = 3
AS $$
DECLARE
    tbl regclass := (SELECT c.oid::regclass FROM pg_class c WHERE c.oid = TG_ARGV[0]::oid);
    routes regclass := (SELECT c.oid::regclass FROM pg_class c WHERE c.oid = TG_ARGV[1]::oid);
    m int4 := TG_ARGV[2];
    columns text[];
    label jsonb;
    writable text;   -- the table's columns an INSERT sets: not generated, not GENERATED ALWAYS
    reads text;      -- the view's columns that hold them, in the same order
    written jsonb;   -- the row as it went in (defaults, generated columns, triggers applied)
    entered text[];
BEGIN
    SELECT l.label INTO label FROM @extschema@._simhash_routed_layout(tbl) l;
    columns := @extschema@._simhash_routed_columns(tbl);
    IF tbl IS NULL OR routes IS NULL OR columns IS NULL OR label IS NULL THEN
        RAISE EXCEPTION 'the routed layout of the view % is gone or not whole', TG_RELID::regclass
            USING ERRCODE = '55000', HINT = 'Make it again: simhash_drop_index, then simhash_create_index(..., routed => true).';
    END IF;
    -- Each view column into the table column it shows (by identity: either may have been
    -- renamed), those an INSERT may set.
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY v.n), string_agg('x.' || quote_ident(c.attname), ', ' ORDER BY v.n)
      INTO writable, reads
      FROM unnest(@extschema@._simhash_routed_view_columns(TG_RELID)) WITH ORDINALITY v(shows, n)
      JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = v.shows AND a.attnum > 0 AND NOT a.attisdropped
      JOIN pg_attribute c ON c.attrelid = TG_RELID AND c.attnum = v.n
     WHERE a.attgenerated = '' AND a.attidentity <> 'a';
    -- Called in FROM: PL/pgSQL evaluates a bare call without the executor, and Citus sends a
    -- SET LOCAL to the workers only from inside an executed function (_simhash_routed_enter).
    SELECT e.entered INTO entered
      FROM @extschema@._simhash_routed_enter('writer', jsonb_build_array(label)::text) AS e(entered);
    EXECUTE format('INSERT INTO %s AS t (%s) SELECT %s FROM (SELECT ($1).*) x RETURNING to_jsonb(t)', tbl, writable, reads)
      INTO written USING NEW;
    PERFORM @extschema@._simhash_add_routes(routes, m, (written ->> columns[1])::@extschema@.simhash64, written ->> columns[2]);
    PERFORM FROM @extschema@._simhash_routed_leave('writer', entered);
    -- The row as the view shows it (RETURNING): each view column from the table column it is.
    RETURN jsonb_populate_record(NEW, (SELECT jsonb_object_agg(c.attname, written -> v.shows)
                                         FROM unnest(@extschema@._simhash_routed_view_columns(TG_RELID)) WITH ORDINALITY v(shows, n)
                                         JOIN pg_attribute c ON c.attrelid = TG_RELID AND c.attnum = v.n
                                        WHERE v.shows IS NOT NULL));
END
$$;
COMMENT ON FUNCTION _simhash_routed_insert() IS
    'internal: the INSTEAD OF INSERT trigger of a routed layout''s inserts view: writes a row and its routes together';

-- Makes the inserts view of tbl's routed layout (routes, m blocks) as schema_name.view_name:
-- columns is a JSON array of [view column name, table column number], the table columns it
-- shows, in order (those still there and not generated). Rows inserted through it take the
-- table's defaults as they are now, identity columns the next value of their sequence. The
-- view and its trigger are the coordinator's own: Citus would refuse the defaults on a view it
-- propagates, and the inserts go through this node anyway (a worker cannot run the distributed
-- writes of a trigger inside a statement on a shard). Called by _simhash_create_routed, and by
-- _simhash_routed_view_restore when an ALTER TABLE changed a column the view shows.
CREATE FUNCTION _simhash_routed_make_view(tbl regclass, col name, routes regclass, m int4, schema_name name, view_name name,
                                          columns jsonb)
RETURNS regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous_ddl text := current_setting('citus.enable_ddl_propagation', true);
    view_columns text;
    inserts regclass;
    defaults record;
BEGIN
    SELECT string_agg(format('%I AS %I', a.attname, c.value ->> 0), ', ' ORDER BY c.n) INTO view_columns
      FROM jsonb_array_elements(columns) WITH ORDINALITY c(value, n)
      JOIN pg_attribute a ON a.attrelid = tbl AND a.attnum = (c.value ->> 1)::int2 AND NOT a.attisdropped AND a.attgenerated = '';
    IF view_columns IS NULL THEN
        RAISE EXCEPTION 'the routed layout of % has no columns left for its inserts view', tbl USING ERRCODE = '55000';
    END IF;
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    EXECUTE format('CREATE VIEW %I.%I AS SELECT %s FROM %s', schema_name, view_name, view_columns, tbl);
    inserts := format('%I.%I', schema_name, view_name)::regclass;
    FOR defaults IN SELECT v.attname, pg_get_expr(d.adbin, d.adrelid) AS expr
                      FROM unnest(@extschema@._simhash_routed_view_columns(inserts)) WITH ORDINALITY s(shows, n)
                      JOIN pg_attribute v ON v.attrelid = inserts AND v.attnum = s.n
                      JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = s.shows
                      JOIN pg_attrdef d ON d.adrelid = tbl AND d.adnum = a.attnum
                    UNION ALL
                    SELECT v.attname, format('nextval(%L)', pg_get_serial_sequence(tbl::text, a.attname))
                      FROM unnest(@extschema@._simhash_routed_view_columns(inserts)) WITH ORDINALITY s(shows, n)
                      JOIN pg_attribute v ON v.attrelid = inserts AND v.attnum = s.n
                      JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = s.shows AND a.attidentity <> '' LOOP
        EXECUTE format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', inserts, defaults.attname, defaults.expr);
    END LOOP;
    EXECUTE format('COMMENT ON VIEW %s IS %L', inserts,
                   format('simhash_pg: inserts into %s that keep its routed layout of column %s, added by simhash_create_index',
                          tbl, quote_ident(col)));
    -- By identity: the view goes on writing into the same table and routes whatever they are
    -- called later.
    EXECUTE format('CREATE TRIGGER _simhash_routed INSTEAD OF INSERT ON %s FOR EACH ROW
                    EXECUTE FUNCTION @extschema@._simhash_routed_insert(%L, %L, %L)',
                   inserts, tbl::oid, routes::oid, m);
    PERFORM set_config('citus.enable_ddl_propagation', previous_ddl, true);
    RETURN inserts;
END
$$;
COMMENT ON FUNCTION _simhash_routed_make_view(regclass, name, regclass, int4, name, name, jsonb) IS
    'internal: makes the inserts view of a routed layout, showing the given table columns';

-- The columns of tbl an INSERT may set, as _simhash_routed_make_view takes them: each under its
-- own name.
CREATE FUNCTION _simhash_insert_columns(tbl regclass) RETURNS jsonb
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_agg(jsonb_build_array(a.attname, a.attnum) ORDER BY a.attnum)
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
$$;
COMMENT ON FUNCTION _simhash_insert_columns(regclass) IS
    'internal: the columns of tbl an INSERT may set, as [name, number] pairs';

-- A lookup on a table with a routed layout of col (what src/routed.rs rewrites the table's scan
-- into, with the layout as the guard describes it when the statement was planned: routes,
-- blocks, key column and type, shard counts): the routes of query's probes, each on the shard of its
-- route, then the rows of the keys they name, each on the shard of its key, checked against the
-- rows themselves. Every shard of the table (as without the routed layout) where the routes
-- are gone, where that costs less than the probes (k well above the layout's max_k), or where
-- the caller may not read the routes. row_type: NULL of the table's row type, the type of the rows returned.
CREATE FUNCTION _simhash_routed_lookup(tbl regclass, col text, query simhash64, k int4, row_type anyelement,
                                       routes oid, blocks int4, key_column text, key_type text, route_shards int4,
                                       table_shards int4)
RETURNS SETOF anyelement
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- Keys travel as text: every digit of a float key.
SET extra_float_digits = 3
AS $$
DECLARE
    probes int8[];
    keys text;
BEGIN
    -- The checks of simhash_near itself: the same errors, and no row for a NULL.
    IF NOT @extschema@.simhash_near(query, query, k) IS TRUE THEN
        RETURN;
    END IF;
    -- (A plan made before the routed layout was dropped names routes that are gone.)
    -- (has_table_privilege is NULL for an OID that names no table.)
    IF has_table_privilege(routes, 'SELECT') AND has_table_privilege(tbl, 'SELECT') THEN
        probes := @extschema@._simhash_route_probes(query, k, blocks, route_shards, table_shards);
    END IF;
    IF probes IS NULL THEN
        RAISE DEBUG '_simhash_routed_lookup: every shard of % (no routes, no SELECT on them, or k too large for them to pay)', tbl;
        -- ONLY: the planner leaves a scan of ONLY the table to every shard's block indexes.
        RETURN QUERY EXECUTE format('SELECT * FROM ONLY %s t WHERE @extschema@.simhash_near(t.%I, $1, $2)', tbl, col) USING query, k;
        RETURN;
    END IF;
    -- NOT (d > k): a plain filter, which the shards' planners leave as it is (no block index).
    EXECUTE format('SELECT array_agg(DISTINCT r.key)::text FROM %s r
                     WHERE r.route = ANY ($1) AND NOT (@extschema@.hamming_distance(r.fp, $2) > $3)', routes::regclass)
      INTO keys USING probes, query, k;
    IF keys IS NULL THEN
        RETURN;
    END IF;
    -- The keys as a constant: Citus sends the statement to the shards of those keys only.
    RETURN QUERY EXECUTE format('SELECT * FROM %s t WHERE t.%I = ANY (%L::%s[]) AND NOT (@extschema@.hamming_distance(t.%I, $1) > $2)',
                                tbl, key_column, keys, key_type, col) USING query, k;
END
$$;
COMMENT ON FUNCTION _simhash_routed_lookup(regclass, text, simhash64, int4, anyelement, oid, int4, text, text, int4, int4) IS
    'internal: a lookup through the routed layout of tbl.col: the rows within k bits of query, read by key (what the planner rewrites such a lookup into)';

-- Builds a routed layout of col on tbl (simhash_create_index's routed => true): checks, then the
-- routes table, the guard, the routes of every row, and the view, in one transaction (the guard
-- holds off writers until it commits).
CREATE FUNCTION _simhash_create_routed(tbl regclass, col name, max_k int4, blocks int4)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key name;
    key_type text;
    shards int4;
    route_shards int4;
    m int4;
    routes_name text := @extschema@._simhash_index_name(tbl, col || '_routes');
    inserts_name text := @extschema@._simhash_index_name(tbl, 'inserts');
    changes_name text := @extschema@._simhash_index_name(tbl, col || '_changes');
    schema_name name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl);
    routes regclass;
    inserts regclass;
    changes regclass;
    existing record;
    started timestamptz := clock_timestamp();
    filled int8;
    previous_triggers text;
    guard_args text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') OR to_regclass('pg_catalog.pg_dist_partition') IS NULL
       OR NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = tbl AND p.partmethod = 'h') THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true needs a hash-distributed Citus table; % is not one', tbl
            USING ERRCODE = '0A000',
                  HINT = 'Distribute it first: SELECT create_distributed_table(table, key_column). On one server, leave routed => false.';
    END IF;
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = tbl) = 'p' THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true takes a table that is not partitioned; % is', tbl
            USING ERRCODE = '0A000';
    END IF;
    -- The routes are filled from this statement's snapshot, and the guard records every write
    -- that commits after it: under REPEATABLE READ or SERIALIZABLE the snapshot is the
    -- transaction's, older than the guard, and rows committed in between would have no routes
    -- (issue 67).
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true needs READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = '25001',
                  HINT = 'A snapshot older than the routed layout''s guard cannot see the rows committed before the guard existed: run it in its own READ COMMITTED transaction.';
    END IF;
    -- (A virtual generated column, PostgreSQL 18, is not computed when triggers fire: the guard
    -- would see no fingerprint.)
    IF (SELECT a.attgenerated FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col) = 'v' THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true takes a stored column; % of % is a virtual generated column', quote_ident(col), tbl
            USING ERRCODE = '0A000', HINT = 'Make it GENERATED ALWAYS AS (...) STORED.';
    END IF;
    IF (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col) <> '@extschema@.simhash64'::regtype THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true takes a simhash64 column; % of % is not one', quote_ident(col), tbl
            USING ERRCODE = '0A000';
    END IF;
    key := (SELECT a.attname FROM pg_dist_partition p
              JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = column_to_column_name(p.logicalrelid, p.partkey)
             WHERE p.logicalrelid = tbl);
    -- A table distributed by its fingerprint: the routes would name rows by their fingerprint,
    -- which two rows may share (issue 67: such a layout was made, and could not work).
    IF key = col THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true needs a key other than the fingerprint; % is distributed by % itself', tbl, quote_ident(col)
            USING ERRCODE = '0A000',
                  HINT = 'Distribute the table by its key (create_distributed_table(table, key_column)); lookups by the shards'' own block indexes work on this one (routed => false).';
    END IF;
    -- The routes name a row by its key.
    IF NOT coalesce(@extschema@._simhash_unique_key(tbl, key), false) THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true needs a unique index on the distribution column % of % alone', quote_ident(key), tbl
            USING ERRCODE = '0A000',
                  HINT = format('ALTER TABLE %s ADD PRIMARY KEY (%I);', tbl, key);
    END IF;
    -- The key's type with its collation, when it is not its type's own: the routes and changes
    -- compare keys as the table does (a text COLLATE "C" key made the changes table's key, in
    -- the default collation, unequal to the table's: XX000; issue 67).
    SELECT format_type(a.atttypid, a.atttypmod)
           || CASE WHEN a.attcollation <> 0 AND a.attcollation <> y.typcollation
                   THEN format(' COLLATE %I.%I', cn.nspname, co.collname) ELSE '' END
      INTO key_type
      FROM pg_attribute a JOIN pg_type y ON y.oid = a.atttypid
      LEFT JOIN pg_collation co ON co.oid = a.attcollation LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
     WHERE a.attrelid = tbl AND a.attname = key;
    shards := (SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = tbl);
    -- One shard of routes per node that holds shards: a lookup's routes then take at most one
    -- task per node, where Citus runs a node's tasks one after another on one connection
    -- (BENCHMARKS.md, "Routed lookups on Citus"). A node added later takes shards after
    -- citus_split_shard_by_split_points, or simhash_drop_index and simhash_create_index again.
    route_shards := greatest(1, (SELECT count(DISTINCT n.groupid) FROM pg_dist_node n
                                  WHERE n.noderole = 'primary' AND n.isactive AND n.shouldhaveshards));
    m := coalesce(blocks, @extschema@._simhash_routed_blocks(max_k, greatest(@extschema@._simhash_layout_rows(tbl), 1), route_shards));
    IF m IS NULL OR m NOT BETWEEN 2 AND 16 THEN
        RAISE EXCEPTION 'simhash_create_index: a routed layout takes 2 to 16 blocks, got %', coalesce(m::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT * INTO existing FROM @extschema@._simhash_routed_layout(tbl);
    IF FOUND THEN
        -- existing.col is the layout's column by identity: a new column under the old one's
        -- name (a re-fingerprinting migration) is another column, and takes the layout over.
        IF existing.col = col AND existing.blocks = m AND existing.routes IS NOT NULL AND existing.changes IS NOT NULL THEN
            IF existing.inserts IS NOT NULL THEN
                RAISE NOTICE 'simhash_create_index: % already has a routed %-block layout of column %; nothing to do', tbl, m, quote_ident(col);
                RETURN;
            END IF;
            -- Only the view is gone (dropped, or by an ALTER TABLE ... CASCADE): made again,
            -- the routes kept.
            IF to_regclass(format('%I.%I', schema_name, inserts_name)) IS NOT NULL THEN
                RAISE EXCEPTION 'simhash_create_index: %.% exists already', quote_ident(schema_name), quote_ident(inserts_name)
                    USING ERRCODE = '42P07', HINT = 'Rename or drop it; a routed layout''s inserts view takes that name.';
            END IF;
            inserts := @extschema@._simhash_routed_make_view(tbl, col, existing.routes, m, schema_name, inserts_name,
                                                             @extschema@._simhash_insert_columns(tbl));
            RAISE NOTICE 'simhash_create_index: % had a routed %-block layout of column % without its inserts view: % made again, the routes kept',
                tbl, m, quote_ident(col), inserts;
            RETURN;
        END IF;
        IF existing.col IS DISTINCT FROM col THEN
            RAISE NOTICE 'simhash_create_index: % has a routed layout of column % (a table has one): it is replaced by one of column %',
                tbl, coalesce(quote_ident(existing.col), '(dropped)'), quote_ident(col);
        END IF;
        PERFORM @extschema@._simhash_drop_routed('simhash_create_index', tbl);
    END IF;
    previous_triggers := current_setting('citus.enable_unsafe_triggers');
    IF to_regclass(format('%I.%I', schema_name, routes_name)) IS NOT NULL OR to_regclass(format('%I.%I', schema_name, inserts_name)) IS NOT NULL
       OR to_regclass(format('%I.%I', schema_name, changes_name)) IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_create_index: %.%, %.% or %.% exists already', quote_ident(schema_name), quote_ident(routes_name),
            quote_ident(schema_name), quote_ident(inserts_name), quote_ident(schema_name), quote_ident(changes_name)
            USING ERRCODE = '42P07', HINT = 'Rename or drop it; a routed layout takes those names.';
    END IF;
    -- The routes and changes tables and the view first (none of them locks the table against
    -- writers), so that the guard's arguments can name them by identity.
    EXECUTE format('CREATE TABLE %I.%I (route int8 NOT NULL, fp @extschema@.simhash64 NOT NULL, key %s NOT NULL, PRIMARY KEY (route, fp, key))',
                   schema_name, routes_name, key_type);
    routes := format('%I.%I', schema_name, routes_name)::regclass;
    EXECUTE format('COMMENT ON TABLE %s IS %L', routes,
                   format('simhash_pg: routes of column %s of %s in %s blocks, added by simhash_create_index', quote_ident(col), tbl, m));
    PERFORM create_distributed_table(routes::text, 'route', colocate_with => 'none', shard_count => route_shards);
    -- The changes a statement on the table records, shard by shard, for its end to move into the
    -- routes (_simhash_routed_guard, _simhash_routed_drain): co-located with the table, so that
    -- a shard's trigger writes the changes shard on its own node.
    -- Every write statement inserts rows here and deletes them: vacuumed often, so that a drain
    -- does not read through a long tail of dead rows. A replica identity (all columns: a change
    -- has no key of its own) lets Citus move its shards, and the table's co-located with them,
    -- by logical replication (citus_move_shard_placement, rebalance_table_shards).
    EXECUTE format('CREATE TABLE %I.%I (key %s NOT NULL, fp @extschema@.simhash64 NOT NULL, added bool NOT NULL, origin text NOT NULL)
                    WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000)',
                   schema_name, changes_name, key_type);
    changes := format('%I.%I', schema_name, changes_name)::regclass;
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', changes);
    EXECUTE format('COMMENT ON TABLE %s IS %L', changes,
                   format('simhash_pg: changes of %s on their way to its routes %s (empty between statements), added by simhash_create_index', tbl, routes));
    PERFORM create_distributed_table(changes::text, 'key', colocate_with => tbl::text);
    -- The view shows the columns an INSERT may set (not generated ones, which the block columns
    -- are: the view would hold them against simhash_drop_index), as they are now.
    inserts := @extschema@._simhash_routed_make_view(tbl, col, routes, m, schema_name, inserts_name,
                                                     @extschema@._simhash_insert_columns(tbl));
    -- The guard: it takes the table's lock that holds off writers until this commits, so every
    -- row written before is in the routes below and every row after records its change.
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
    guard_args := format('%L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L, %L',
                         col, schema_name, routes_name, m, key, schema_name, inserts_name, route_shards, shards,
                         schema_name, changes_name, routes::oid, changes::oid, inserts::oid);
    -- AFTER: the row as it went in, generated columns and other triggers' changes included.
    EXECUTE format('CREATE TRIGGER _simhash_routed AFTER INSERT ON %s FOR EACH ROW
                    EXECUTE FUNCTION @extschema@._simhash_routed_guard(%s)', tbl, guard_args);
    -- Compared through casts, which the parser finds by type (an operator it would look up
    -- through search_path): the fingerprint as int8, the key as text. Its WHEN clause is also how
    -- the layout knows its columns, whatever they are called later (_simhash_routed_columns): the
    -- fingerprint first, the key second.
    EXECUTE format('CREATE TRIGGER _simhash_routed_update AFTER UPDATE ON %s FOR EACH ROW
                    WHEN (OLD.%I::int8 IS DISTINCT FROM NEW.%I::int8 OR OLD.%I::text IS DISTINCT FROM NEW.%I::text)
                    EXECUTE FUNCTION @extschema@._simhash_routed_guard(%s)', tbl, col, col, key, key, guard_args);
    EXECUTE format('CREATE TRIGGER _simhash_routed_delete AFTER DELETE ON %s FOR EACH ROW
                    EXECUTE FUNCTION @extschema@._simhash_routed_guard(%s)', tbl, guard_args);
    PERFORM set_config('citus.enable_unsafe_triggers', previous_triggers, true);
    RAISE NOTICE 'simhash_create_index: routes of % in % blocks (% shards, one per node, distributed by block value); filling them', tbl, m, route_shards;
    EXECUTE format('INSERT INTO %s (route, fp, key) SELECT r, t.%I, t.%I FROM %s t, unnest(@extschema@._simhash_routes(t.%I, %s)) r
                     WHERE t.%I IS NOT NULL',
                   routes, col, key, tbl, col, m, col);
    GET DIAGNOSTICS filled = ROW_COUNT;
    RAISE NOTICE 'simhash_create_index: % routes%', @extschema@._simhash_about(filled), @extschema@._simhash_took(started);
    RAISE NOTICE 'simhash_create_index: lookups on % now read the routes; writes keep them', tbl;
END
$$;
COMMENT ON FUNCTION _simhash_create_routed(regclass, name, int4, int4) IS
    'internal: builds the routed layout of simhash_create_index(..., routed => true); arguments checked by the caller';

-- Removes the routed layout of tbl (of its column col, when given): the guard, the view, the
-- routes and changes tables. Returns whether there was one.
CREATE FUNCTION _simhash_drop_routed(fn text, tbl regclass, col name DEFAULT NULL)
RETURNS bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    layout record;
    args text[] := @extschema@._simhash_routed_args(tbl);
    routes regclass;
    inserts regclass;
    changes regclass;
    previous_triggers text;
BEGIN
    SELECT * INTO layout FROM @extschema@._simhash_routed_layout(tbl) l
     WHERE l.col IS NOT DISTINCT FROM coalesce(_simhash_drop_routed.col, l.col);
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    routes := layout.routes;
    inserts := layout.inserts;
    changes := layout.changes;
    -- A piece gone by identity may have been made again under its name: alter_distributed_table
    -- makes new tables of the table's co-located ones (the routes' and changes') and views on it
    -- (issue 67). It goes too when it is what the layout made: in the table's schema or the one
    -- the layout was made in, under the name the guard records, with the layout's columns (the
    -- view: one on the table alone).
    IF routes IS NULL THEN
        SELECT c.oid::regclass INTO routes FROM pg_class c
         WHERE c.relkind = 'r' AND c.relname = args[3]
           AND c.relnamespace IN (SELECT n.oid FROM pg_namespace n WHERE n.nspname = args[2]
                                  UNION SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
           AND (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) = '{route,fp,key}'
         LIMIT 1;
    END IF;
    IF changes IS NULL THEN
        SELECT c.oid::regclass INTO changes FROM pg_class c
         WHERE c.relkind = 'r' AND c.relname = args[11]
           AND c.relnamespace IN (SELECT n.oid FROM pg_namespace n WHERE n.nspname = args[10]
                                  UNION SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
           AND (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) = '{key,fp,added,origin}'
         LIMIT 1;
    END IF;
    IF inserts IS NULL THEN
        inserts := @extschema@._simhash_routed_view_made_again(tbl);
    END IF;
    RAISE NOTICE '%: dropping the routed layout of column % (routes %, view %, changes %)', fn, quote_ident(layout.col),
        coalesce(routes::text, 'gone'), coalesce(inserts::text, 'gone'), coalesce(changes::text, 'gone');
    previous_triggers := current_setting('citus.enable_unsafe_triggers', true);
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
    EXECUTE format('DROP TRIGGER _simhash_routed ON %s', tbl);
    EXECUTE format('DROP TRIGGER IF EXISTS _simhash_routed_update ON %s', tbl);
    EXECUTE format('DROP TRIGGER IF EXISTS _simhash_routed_delete ON %s', tbl);
    PERFORM set_config('citus.enable_unsafe_triggers', previous_triggers, true);
    IF inserts IS NOT NULL THEN
        PERFORM @extschema@._simhash_routed_drop_view(inserts);
    END IF;
    IF routes IS NOT NULL THEN
        EXECUTE format('DROP TABLE %s', routes);
    END IF;
    IF changes IS NOT NULL THEN
        EXECUTE format('DROP TABLE %s', changes);
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION _simhash_drop_routed(text, regclass, name) IS
    'internal: drops the routed layout of tbl (guard triggers, inserts view, routes and changes tables); arguments checked by the caller';
