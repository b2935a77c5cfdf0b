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
-- - the guard, row triggers on the table (so on every shard): _simhash_routed (BEFORE INSERT)
--   and _simhash_routed_update (AFTER UPDATE, when the final row's col or key differs from the
--   old one: generated columns and other triggers' changes included) refuse the write unless
--   simhash_pg.routed_writer is on, which only the writers below set. A row the routes miss
--   would be a row lookups miss: a silent wrong answer, so such writes fail instead. The
--   arguments of _simhash_routed describe the layout (src/routed.rs reads them); while it is
--   disabled, lookups do not route (rows written meanwhile have no routes: make the layout
--   again after);
-- - the writers: the view <table>_inserts, whose INSTEAD OF INSERT trigger writes a row and
--   its routes in one statement (INSERT and COPY), and simhash_ingest. DELETE, and UPDATE of
--   other columns, work on the table itself (Citus refuses UPDATE and DELETE on a view of its
--   tables); a new fingerprint is a DELETE and an INSERT through the view;
-- - the lookup: src/routed.rs rewrites a query on the table whose WHERE has simhash_near(col, q,
--   k) into a call of _simhash_routed_lookup, which reads the routes of q's probes, then the rows
--   of the keys found, by key.
--
-- Routes are a superset: a row deleted or changed directly leaves routes behind that name no
-- row, and every lookup checks the rows themselves, so stale routes cost time, never answers.
-- Only writes that would leave a row without its routes are refused.
--
-- Citus sends a SET LOCAL to the workers of a transaction only under
-- citus.propagate_set_commands = local and inside a function or a transaction block: the
-- writers switch simhash_pg.routed_writer on and off through _simhash_routed_writer.

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

-- The routed layout of tbl as its guard describes it; no row without one. routes and inserts are
-- NULL when that table or view is gone.
CREATE FUNCTION _simhash_routed_layout(tbl regclass)
RETURNS TABLE (col name, routes regclass, blocks int4, key_column name, inserts regclass, route_shards int4,
               table_shards int4)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT a[1]::name, to_regclass(format('%I.%I', a[2], a[3])), a[4]::int4, a[5]::name, to_regclass(format('%I.%I', a[6], a[7])),
           a[8]::int4, a[9]::int4
      FROM (SELECT @extschema@._simhash_routed_args(tbl) AS a) x
     WHERE a IS NOT NULL
$$;
COMMENT ON FUNCTION _simhash_routed_layout(regclass) IS
    'internal: the routed layout of tbl (column, routes table, blocks, key column, inserts view, shard counts of the routes and the table), from its guard trigger';

-- Switches the guard off (active) or on again for the rest of the transaction, on this node and
-- on every worker the transaction reaches. Returns the caller's citus.propagate_set_commands
-- when switching off, for switching on again to restore. Citus sends a SET LOCAL on only from
-- inside a function the executor runs inside another statement, so this one runs the SETs in
-- _simhash_routed_set, called in a FROM clause (not a bare expression, which PL/pgSQL evaluates
-- without the executor): callers call it in a FROM clause too, from a trigger of COPY as from a
-- statement's.
CREATE FUNCTION _simhash_routed_writer(active bool, restore text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- A SET clause restores only its own settings on return: the SET LOCAL below stays.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text := current_setting('citus.propagate_set_commands', true);
BEGIN
    PERFORM FROM @extschema@._simhash_routed_set(active);
    IF NOT active AND restore IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.propagate_set_commands', restore, true);
    END IF;
    RETURN previous;
END
$$;
CREATE FUNCTION _simhash_routed_set(active bool) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SET LOCAL citus.propagate_set_commands = 'local';
    IF active THEN
        SET LOCAL simhash_pg.routed_writer = on;
    ELSE
        SET LOCAL simhash_pg.routed_writer = off;
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_routed_set(bool) IS
    'internal: the SET LOCAL commands of _simhash_routed_writer, sent on to the workers by Citus';
COMMENT ON FUNCTION _simhash_routed_writer(bool, text) IS
    'internal: lets the writers of a routed layout past its guard for the rest of the transaction (active), or stops letting them';

-- The guard of a routed layout (above). TG_ARGV: col, routes schema, routes name, blocks, key
-- column, inserts view schema and name, the shard counts of the routes and of the table.
CREATE FUNCTION _simhash_routed_guard() RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- (After an UPDATE, the trigger's WHEN has found the fingerprint or the key changed.)
    IF current_setting('simhash_pg.routed_writer', true) = 'on' THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'a routed layout of column % keeps its routes with the rows: insert them through %.% or simhash_ingest',
        quote_ident(TG_ARGV[0]), quote_ident(TG_ARGV[5]), quote_ident(TG_ARGV[6])
        USING ERRCODE = '55000',
              HINT = format('INSERT and COPY work on the view %I.%I as on the table; to change a row''s %I or %I, DELETE it and INSERT it there; simhash_drop_index removes the routed layout.',
                            TG_ARGV[5], TG_ARGV[6], TG_ARGV[0], TG_ARGV[4]);
END
$$;
COMMENT ON FUNCTION _simhash_routed_guard() IS
    'internal: the guard trigger of a routed layout: refuses writes of the fingerprint or key that do not keep its routes';

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

-- The INSTEAD OF INSERT trigger of the view <table>_inserts: writes the row to the table and its
-- routes to the routes table, the guard switched off meanwhile. TG_ARGV: table, col, routes,
-- blocks, key column. (Citus refuses UPDATE and DELETE on a view of its tables: a row is
-- deleted from the table itself, which leaves routes that name no row, and its fingerprint
-- changes by DELETE and INSERT through the view.)
CREATE FUNCTION _simhash_routed_insert() RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- Keys travel as text: every digit of a float key.
SET extra_float_digits = 3
AS $$
DECLARE
    tbl regclass := TG_ARGV[0];
    col name := TG_ARGV[1];
    routes regclass := TG_ARGV[2];
    m int4 := TG_ARGV[3];
    key name := TG_ARGV[4];
    writable text;   -- the table's columns an INSERT sets: not generated, not GENERATED ALWAYS
    written jsonb;   -- the row as it went in (defaults, generated columns, triggers applied)
    previous text;
BEGIN
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO writable
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' AND a.attidentity <> 'a'
       AND EXISTS (SELECT FROM pg_attribute v WHERE v.attrelid = TG_RELID AND v.attname = a.attname AND NOT v.attisdropped);
    -- Called in FROM: PL/pgSQL evaluates a bare call without the executor, and Citus sends a
    -- SET LOCAL to the workers only from inside an executed function (_simhash_routed_writer).
    SELECT w.previous INTO previous FROM @extschema@._simhash_routed_writer(true) AS w(previous);
    EXECUTE format('INSERT INTO %s AS t (%s) SELECT %s FROM (SELECT ($1).*) x RETURNING to_jsonb(t)', tbl, writable, writable)
      INTO written USING NEW;
    PERFORM @extschema@._simhash_add_routes(routes, m, (written ->> col)::@extschema@.simhash64, written ->> key);
    PERFORM FROM @extschema@._simhash_routed_writer(false, previous);
    RETURN jsonb_populate_record(NEW, written);
END
$$;
COMMENT ON FUNCTION _simhash_routed_insert() IS
    'internal: the INSTEAD OF INSERT trigger of a routed layout''s inserts view: writes a row and its routes together';

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
-- holds off writers until it commits; they then go through the view).
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
    schema_name name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl);
    routes regclass;
    inserts regclass;
    existing record;
    started timestamptz := clock_timestamp();
    filled int8;
    defaults record;
    previous_triggers text;
    previous_ddl text;
    guard_args text;
    view_columns text;
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
    IF (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col) <> '@extschema@.simhash64'::regtype THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true takes a simhash64 column; % of % is not one', quote_ident(col), tbl
            USING ERRCODE = '0A000';
    END IF;
    key := (SELECT a.attname FROM pg_dist_partition p
              JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = column_to_column_name(p.logicalrelid, p.partkey)
             WHERE p.logicalrelid = tbl);
    -- The routes name a row by its key.
    IF NOT coalesce(@extschema@._simhash_unique_key(tbl, key), false) THEN
        RAISE EXCEPTION 'simhash_create_index: routed => true needs a unique index on the distribution column % of % alone', quote_ident(key), tbl
            USING ERRCODE = '0A000',
                  HINT = format('ALTER TABLE %s ADD PRIMARY KEY (%I);', tbl, key);
    END IF;
    SELECT format_type(a.atttypid, a.atttypmod) INTO key_type FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = key;
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
        IF existing.col = col AND existing.blocks = m AND existing.routes IS NOT NULL AND existing.inserts IS NOT NULL THEN
            RAISE NOTICE 'simhash_create_index: % already has a routed %-block layout of column %; nothing to do', tbl, m, quote_ident(col);
            RETURN;
        END IF;
        PERFORM @extschema@._simhash_drop_routed('simhash_create_index', tbl);
    END IF;
    IF to_regclass(format('%I.%I', schema_name, routes_name)) IS NOT NULL OR to_regclass(format('%I.%I', schema_name, inserts_name)) IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_create_index: %.% or %.% exists already', quote_ident(schema_name), quote_ident(routes_name),
            quote_ident(schema_name), quote_ident(inserts_name)
            USING ERRCODE = '42P07', HINT = 'Rename or drop it; a routed layout takes those names.';
    END IF;
    -- The guard first: it takes the table's lock that holds off writers until this commits, so
    -- every row written before is in the routes below and every row after goes through the view.
    previous_triggers := current_setting('citus.enable_unsafe_triggers');
    previous_ddl := current_setting('citus.enable_ddl_propagation');
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
    guard_args := format('%L, %L, %L, %L, %L, %L, %L, %L, %L',
                         col, schema_name, routes_name, m, key, schema_name, inserts_name, route_shards, shards);
    EXECUTE format('CREATE TRIGGER _simhash_routed BEFORE INSERT ON %s FOR EACH ROW
                    EXECUTE FUNCTION @extschema@._simhash_routed_guard(%s)', tbl, guard_args);
    -- Compared through casts, which the parser finds by type (an operator it would look up
    -- through search_path): the fingerprint as int8, the key as text.
    EXECUTE format('CREATE TRIGGER _simhash_routed_update AFTER UPDATE ON %s FOR EACH ROW
                    WHEN (OLD.%I::int8 IS DISTINCT FROM NEW.%I::int8 OR OLD.%I::text IS DISTINCT FROM NEW.%I::text)
                    EXECUTE FUNCTION @extschema@._simhash_routed_guard(%s)', tbl, col, col, key, key, guard_args);
    PERFORM set_config('citus.enable_unsafe_triggers', previous_triggers, true);
    EXECUTE format('CREATE TABLE %I.%I (route int8 NOT NULL, fp @extschema@.simhash64 NOT NULL, key %s NOT NULL, PRIMARY KEY (route, fp, key))',
                   schema_name, routes_name, key_type);
    routes := format('%I.%I', schema_name, routes_name)::regclass;
    EXECUTE format('COMMENT ON TABLE %s IS %L', routes,
                   format('simhash_pg: routes of column %s of %s in %s blocks, added by simhash_create_index', quote_ident(col), tbl, m));
    PERFORM create_distributed_table(routes::text, 'route', colocate_with => 'none', shard_count => route_shards);
    RAISE NOTICE 'simhash_create_index: routes of % in % blocks (% shards, one per node, distributed by block value); filling them', tbl, m, route_shards;
    EXECUTE format('INSERT INTO %s (route, fp, key) SELECT r, t.%I, t.%I FROM %s t, unnest(@extschema@._simhash_routes(t.%I, %s)) r
                     WHERE t.%I IS NOT NULL',
                   routes, col, key, tbl, col, m, col);
    GET DIAGNOSTICS filled = ROW_COUNT;
    RAISE NOTICE 'simhash_create_index: % routes%', @extschema@._simhash_about(filled), @extschema@._simhash_took(started);
    -- The view and its trigger are the coordinator's own: Citus would refuse the defaults below
    -- on a view it propagates, and the inserts go through this node anyway (a worker cannot run
    -- the distributed writes of a trigger inside a statement on a shard).
    PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
    -- The columns an INSERT may set (not generated ones, which the block columns are: the view
    -- would hold them against simhash_drop_index), as they are now.
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO view_columns
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '';
    EXECUTE format('CREATE VIEW %I.%I AS SELECT %s FROM %s', schema_name, inserts_name, view_columns, tbl);
    inserts := format('%I.%I', schema_name, inserts_name)::regclass;
    -- Rows inserted through the view take the table's defaults (as they are now), identity
    -- columns the next value of their sequence.
    FOR defaults IN SELECT a.attname, pg_get_expr(d.adbin, d.adrelid) AS expr FROM pg_attrdef d
                      JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                     WHERE d.adrelid = tbl AND a.attgenerated = '' AND NOT a.attisdropped
                    UNION ALL
                    SELECT a.attname, format('nextval(%L)', pg_get_serial_sequence(tbl::text, a.attname))
                      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attidentity <> '' AND NOT a.attisdropped LOOP
        EXECUTE format('ALTER VIEW %s ALTER COLUMN %I SET DEFAULT %s', inserts, defaults.attname, defaults.expr);
    END LOOP;
    EXECUTE format('COMMENT ON VIEW %s IS %L', inserts,
                   format('simhash_pg: inserts into %s that keep its routed layout of column %s, added by simhash_create_index', tbl, quote_ident(col)));
    EXECUTE format('CREATE TRIGGER _simhash_routed INSTEAD OF INSERT ON %s FOR EACH ROW
                    EXECUTE FUNCTION @extschema@._simhash_routed_insert(%L, %L, %L, %L, %L)',
                   inserts, tbl, col, routes, m, key);
    PERFORM set_config('citus.enable_ddl_propagation', previous_ddl, true);
    RAISE NOTICE 'simhash_create_index: lookups on % now read the routes; insert rows through the view % or simhash_ingest',
        tbl, inserts;
END
$$;
COMMENT ON FUNCTION _simhash_create_routed(regclass, name, int4, int4) IS
    'internal: builds the routed layout of simhash_create_index(..., routed => true); arguments checked by the caller';

-- Removes the routed layout of tbl (of its column col, when given): the guard, the view, the
-- routes table. Returns whether there was one.
CREATE FUNCTION _simhash_drop_routed(fn text, tbl regclass, col name DEFAULT NULL)
RETURNS bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    layout record;
    previous_triggers text;
    previous_ddl text;
BEGIN
    SELECT * INTO layout FROM @extschema@._simhash_routed_layout(tbl) l WHERE l.col = coalesce(_simhash_drop_routed.col, l.col);
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    RAISE NOTICE '%: dropping the routed layout of column % (routes %, view %)', fn, quote_ident(layout.col),
        coalesce(layout.routes::text, 'gone'), coalesce(layout.inserts::text, 'gone');
    previous_triggers := current_setting('citus.enable_unsafe_triggers', true);
    PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
    EXECUTE format('DROP TRIGGER _simhash_routed ON %s', tbl);
    EXECUTE format('DROP TRIGGER IF EXISTS _simhash_routed_update ON %s', tbl);
    PERFORM set_config('citus.enable_unsafe_triggers', previous_triggers, true);
    IF layout.inserts IS NOT NULL THEN
        previous_ddl := current_setting('citus.enable_ddl_propagation', true);
        PERFORM set_config('citus.enable_ddl_propagation', 'off', true);
        EXECUTE format('DROP VIEW %s', layout.inserts);
        PERFORM set_config('citus.enable_ddl_propagation', previous_ddl, true);
    END IF;
    IF layout.routes IS NOT NULL THEN
        EXECUTE format('DROP TABLE %s', layout.routes);
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION _simhash_drop_routed(text, regclass, name) IS
    'internal: drops the routed layout of tbl (guard trigger, inserts view, routes table); arguments checked by the caller';
