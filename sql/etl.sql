-- Dedup in ETL jobs: every near pair of a table, the groups they form, and inserting a batch
-- without its near-copies. Same rules as sql/index.sql: callers' rights, pinned search_path,
-- @extschema@-qualified calls, names only through regclass output and format('%I').
-- The joins' distance tests are spelled NOT (hamming_distance(x, y) > k): the planner hook
-- (src/distance_bounds.rs) turns "<= k" into simhash_near, whose block probes per row would
-- replace these hash joins.

COMMENT ON FUNCTION _simhash_pair_masks(int4, float8) IS
    'internal: the fp & mask keys simhash_pairs joins on to find every pair within k bits among about rows fingerprints';
COMMENT ON FUNCTION _simhash_keep_first_of_near(simhash64[], int4, int4) IS
    'internal (simhash_ingest): which rows of an ordered batch stay when a row within k bits of an earlier row that stays is dropped; width fingerprints per row';
COMMENT ON FUNCTION _simhash_near_any_of(simhash64[], int4, simhash64[], int4) IS
    'internal (concurrent simhash_ingest): for each row of fps (width fingerprints a row), whether one of its fingerprints lies within k bits of one of others';
COMMENT ON FUNCTION _simhash_ingest_slots() IS
    'internal (concurrent simhash_ingest): how many ingests of this database may run beside each other (simhash_pg.ingest_slots; 0: no limit)';
COMMENT ON FUNCTION _simhash_keep_first_of_rest(simhash64[], int4, bool[], int4) IS
    'internal (concurrent simhash_ingest): which rows of an ordered batch stay when the gone rows are out and a row within k bits of an earlier row that stays is dropped';
COMMENT ON FUNCTION _simhash_keep_first_of_verified(simhash64[], int4, int4, int8[], int4[], float8) IS
    'internal (simhash_ingest with verify_column): the same, a near earlier row dropping a row only when their feature sets (features, counts per row) have Jaccard >= min_jaccard';
COMMENT ON FUNCTION _simhash_first_shared_key(simhash64, simhash64, int4, int8[]) IS
    'internal (simhash_pairs on Citus): which of the keys masks, 1-based, returns the pair x, y within k bits: the first whose mask they share; NULL when none does';
COMMENT ON FUNCTION _simhash_first_shared_key(simhash64[], simhash64[], int4, int8[], int4[]) IS
    'internal (simhash_pairs on Citus): the same for two sets, key j joining element elements[j] on masks[j]: the first shared key of the first element within k bits';
COMMENT ON FUNCTION _simhash_k_problem(text, int4, text) IS
    'internal: what is wrong with k for the function caller (purpose pairs: 0..63, near: 0..64), as SQLSTATE, message and hint rows; the bounds are the core''s';
COMMENT ON FUNCTION _simhash_cross_masks(int4, float8, float8) IS
    'internal: the block-key masks that find every pair within k bits across two tables of about a and b rows (simhash_pairs_between, simhash_ingest)';
COMMENT ON FUNCTION _simhash_batch_prefers_joins(int4, float8, float8, float8) IS
    'internal: whether simhash_ingest finds the batch rows near its target by hash joins rather than one lookup (costing lookup index entries, NULL without block indexes) per batch row';
COMMENT ON FUNCTION _simhash_pairs_memory(float8, int4, float8) IS
    'internal: bytes of memory simhash_pairs takes to read a table of about rows rows of width fingerprints and keys of key_bytes bytes into memory (it does when they fit maintenance_work_mem), NULL where PostgreSQL could not build the arrays';
COMMENT ON FUNCTION _simhash_close_pairs(simhash64[], int4, int4, text) IS
    'internal: every pair (i, j, distance), i < j, of rows within k bits, row r the width elements of fps from (r - 1) * width + 1, found in memory by method auto, compare (every pair) or sort (by each key); simhash_pairs on tables that fit maintenance_work_mem';
-- Its pairs are usually few against the table's rows: said so, the planner hashes the pairs
-- rather than the million positions they are joined with (_simhash_pairs).
ALTER FUNCTION _simhash_close_pairs(simhash64[], int4, int4, text) ROWS 10;
COMMENT ON FUNCTION _simhash_scan_pairs(regclass, int2, int2, int4, float8) IS
    'internal: every pair (a, b, distance), a <= b, of rows of tbl within k bits, read row by row into memory: fingerprint column fp_attnum, rows named by the int2, int4 or int8 key column key_attnum or, for 0, by ctid as block << 16 | offset; simhash_pairs on tables whose rows_estimate rows fit maintenance_work_mem this way';
ALTER FUNCTION _simhash_scan_pairs(regclass, int2, int2, int4, float8) ROWS 10;
COMMENT ON FUNCTION _simhash_scan_pairs_memory(float8) IS
    'internal: bytes of memory _simhash_scan_pairs takes for a table of about rows rows (NULL for a negative or infinite count)';
COMMENT ON FUNCTION _simhash_ingest_method(regclass, text, int4, float8) IS
    'internal: how simhash_ingest finds the rows of a batch of batch_rows rows within k bits of a row of plain table tbl: lookups, pass (one read of a covering block index) or joins, whichever costs least';
COMMENT ON FUNCTION _simhash_batch_near(regclass, text, simhash64[], int4) IS
    'internal (simhash_ingest): the positions of the fingerprints of fps within k bits of a visible row of plain table tbl, by one read of a covering block index of col; NULL without one';
COMMENT ON FUNCTION _simhash_stars(text[], text[], text[]) IS
    'internal (simhash_representative_groups): groups that do not chain: nodes taken in keep_order, each one in no group yet becoming the representative of its neighbours (edges a[i]-b[i]) in no group yet; every node on an edge with its representative';
COMMENT ON FUNCTION _simhash_components(text[], text[]) IS
    'internal (simhash_chained_groups): connected components of the graph with edges a[i]-b[i]: every node with the smallest node (text order) of its component';

-- simhash_pairs and simhash_chained_groups (and simhash_representative_groups) come in two forms each: keys as text (0.1.0's form), and
-- keys in the key column's own type, named by key_type (NULL::int8, say), so that ORDER BY and
-- joins treat them as what they are. Both forms check their arguments (errors name the function
-- the user called), then run the same internal function, which casts keys to as_type's type.
-- simhash_pairs on a hash-distributed Citus table, joined on the workers. Citus joins such tables
-- on their distribution columns only, so the rows are repartitioned by each key instead: copied
-- into a distributed intermediate table whose distribution column is fp & mask, where rows that
-- share a key land on one shard and every shard joins its own rows, all shards at once. Several
-- keys go into one intermediate table (column i says which), up to about 20 million rows per
-- batch; the next batch is made from the previous one, not from tbl, so that every key sees the
-- same copy of the rows (a row inserted meanwhile would otherwise be missed: absent when the
-- first key it shares with its pair was joined, and then skipped as found by that key). Rows are
-- told apart by (key, shard, ctid), or by key alone when a unique index says keys are unique
-- (a third less to copy: 10 s instead of 15 s at 1M rows and 10 keys). VOLATILE: it creates, fills and drops two UNLOGGED tables
-- in tbl's schema (dropped at the end, or with the transaction on an error).
-- Where simhash_pairs joins a Citus table, set by simhash_pg.citus_pairs: 'workers' (a
-- hash-distributed table's rows repartitioned by key, joined on every shard at once), 'coordinator'
-- (every row read into this node, joined here) or 'auto' (the default: the workers from 1M
-- rows, where one core of the coordinator needs tens of seconds and the workers' cores share
-- the work; on one machine both take about as long, BENCHMARKS.md). NULL when the workers are to join, otherwise
-- why not (as a notice when that choice is forced on a table big enough to matter). The workers
-- need a hash-distributed table, a writable transaction, CREATE on tbl's schema (for two
-- intermediate tables) and the coordinator (only it creates distributed tables; Citus 11+ lets
-- a worker read); reference and Citus-local tables are whole on one node, joined there.
CREATE FUNCTION _simhash_pairs_on_workers_or_why(tbl regclass, rows_estimate float8, obstacle text DEFAULT NULL) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := coalesce(nullif(current_setting('simhash_pg.citus_pairs', true), ''), 'auto');
    method text;
    why text;
BEGIN
    IF setting NOT IN ('auto', 'workers', 'coordinator') THEN
        RAISE EXCEPTION 'simhash_pairs: simhash_pg.citus_pairs must be auto, workers or coordinator, got %', quote_literal(setting)
            USING ERRCODE = '22023';
    END IF;
    IF setting = 'coordinator' OR (setting = 'auto' AND rows_estimate < 1e6) THEN
        RETURN 'simhash_pg.citus_pairs';
    END IF;
    EXECUTE 'SELECT partmethod::text FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1' INTO method USING tbl;
    IF method IS DISTINCT FROM 'h' THEN
        RETURN 'not hash-distributed';
    END IF;
    IF obstacle IS NOT NULL THEN
        why := obstacle;
    ELSIF to_regprocedure('pg_catalog.citus_is_coordinator()') IS NOT NULL
          AND NOT (SELECT pg_catalog.citus_is_coordinator()) THEN
        -- Only the coordinator creates distributed tables (Citus 11+ lets workers query).
        why := 'connected to a worker node';
    ELSIF current_setting('transaction_read_only')::bool THEN
        why := 'the transaction is read-only';
    ELSIF NOT has_schema_privilege((SELECT c.relnamespace FROM pg_class c WHERE c.oid = tbl), 'CREATE') THEN
        why := format('role %s may not create tables in schema %s',
                      quote_ident(current_user), (SELECT quote_ident(n.nspname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl));
    END IF;
    IF why IS NOT NULL THEN
        RAISE NOTICE 'simhash_pairs: joining the rows of % on the coordinator, not on the workers: %', tbl, why
            USING HINT = 'The workers join through two intermediate tables that the call creates in the table''s schema and drops. '
                         'SET simhash_pg.citus_pairs = coordinator chooses the coordinator without this notice.';
    END IF;
    RETURN why;
END
$$;
COMMENT ON FUNCTION _simhash_pairs_on_workers_or_why(regclass, float8, text) IS
    'internal: NULL when simhash_pairs joins the Citus table tbl on the workers, otherwise why not (simhash_pg.citus_pairs, table kind, the caller''s obstacle, a worker node, read-only, privilege)';

CREATE FUNCTION _simhash_pairs_on_workers(tbl regclass, col name, k int4, key_column name, as_type anyelement,
                                          masks int8[], rows_estimate float8, elements int4 DEFAULT 1,
                                          is_set bool DEFAULT false)
RETURNS TABLE (a anyelement, b anyelement, distance int4)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    out_type text := format_type(pg_typeof(as_type), NULL);
    key_type text;
    tag text := format('_simhash_pairs_%s_%s', pg_backend_pid(),
                       floor(extract(epoch FROM clock_timestamp()) * 1e6)::int8);
    schema text;
    tables text[];
    row_id text := 't.tableoid::regclass::text, t.ctid';
    per_batch int4 := greatest(1, floor(2e7 / greatest(rows_estimate, 1)))::int4;
    first int4;
    last int4;
    batch int4 := 0;
    unnest_batch text;
    n int8;
    copied int8;
    total int8 := 0;
    started timestamptz := clock_timestamp();
    last_notice timestamptz := clock_timestamp();
    step timestamptz;
    steps text;
    -- Key j joins element key_elements[j] (1 for a simhash64 column) on mask key_masks[j].
    key_masks int8[] := '{}';
    key_elements int4[] := '{}';
BEGIN
    -- A set has at most 16 elements: a bigger count would only build ever longer arrays.
    IF elements IS NULL OR elements NOT BETWEEN 1 AND 16 THEN
        RAISE EXCEPTION '_simhash_pairs_on_workers: elements must be between 1 and 16, got %', elements
            USING ERRCODE = '22023';
    END IF;
    FOR e IN 1 .. elements LOOP
        key_masks := key_masks || masks;
        key_elements := key_elements || array_fill(e, ARRAY[cardinality(masks)]);
    END LOOP;
    SELECT format_type(a.atttypid, a.atttypmod)
           || CASE WHEN a.attcollation NOT IN (0, 100) THEN ' COLLATE ' || quote_ident(cn.nspname) || '.' || quote_ident(co.collname) ELSE '' END,
           quote_ident(n.nspname)
      INTO key_type, schema
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = key_column
      LEFT JOIN pg_collation co ON co.oid = a.attcollation
      LEFT JOIN pg_namespace cn ON cn.oid = co.collnamespace
     WHERE c.oid = tbl;
    IF @extschema@._simhash_unique_key(tbl, key_column) THEN
        row_id := 'NULL, NULL';
    END IF;
    tables := ARRAY[schema || '.' || quote_ident(tag || '_a'), schema || '.' || quote_ident(tag || '_b')];
    FOR t IN 1 .. 2 LOOP
        EXECUTE format('CREATE UNLOGGED TABLE %s (b int8, i int4, key %s, s text, c tid, fp @extschema@.simhash64%s)',
                       tables[t], key_type, CASE WHEN is_set THEN '[]' ELSE '' END);
        PERFORM pg_catalog.create_distributed_table(tables[t], 'b', colocate_with => CASE WHEN t = 1 THEN 'none' ELSE tables[1] END);
    END LOOP;
    RAISE DEBUG 'simhash_pairs: intermediate tables %, % created in % ms', tables[1], tables[2],
        round(extract(epoch FROM clock_timestamp() - started) * 1000);
    first := 1;
    WHILE first <= cardinality(key_masks) LOOP
        last := least(first + per_batch - 1, cardinality(key_masks));
        batch := batch + 1;
        step := clock_timestamp();
        unnest_batch := format('unnest(%L::int8[], %L::int4[], %L::int4[]) u(m, i, e)',
                               key_masks[first:last], (SELECT array_agg(g) FROM generate_series(first, last) g),
                               key_elements[first:last]);
        -- Every row once per key of the batch, on the shard of its fp & mask: the first batch
        -- from tbl (each shard names its rows by its own name and ctid; the shard names are
        -- unique in the cluster), the next from the last one.
        IF batch = 1 THEN
            EXECUTE format(
                'INSERT INTO %s (b, i, key, s, c, fp)
                 SELECT t.%I%s::int8 & u.m, u.i, t.%I, %s, t.%I
                   FROM %s t, %s
                  WHERE t.%I IS NOT NULL AND t.%I IS NOT NULL',
                tables[1], col, CASE WHEN is_set THEN '[u.e]' ELSE '' END, key_column, row_id, col, tbl, unnest_batch,
                key_column, col);
        ELSE
            EXECUTE format('TRUNCATE %s', tables[1]);
            EXECUTE format(
                'INSERT INTO %s (b, i, key, s, c, fp)
                 SELECT p.fp%s::int8 & u.m, u.i, p.key, p.s, p.c, p.fp FROM %s p, %s WHERE p.i = %s',
                tables[1], CASE WHEN is_set THEN '[u.e]' ELSE '' END, tables[2], unnest_batch, first - per_batch);
        END IF;
        GET DIAGNOSTICS copied = ROW_COUNT;
        steps := format('%s rows repartitioned in %s ms', copied, round(extract(epoch FROM clock_timestamp() - step) * 1000));
        step := clock_timestamp();
        -- Fresh shards have no statistics: without them each shard's planner merge-joins (1.8 times
        -- slower at 200,000 rows); the join columns alone take a fifth of a whole ANALYZE.
        EXECUTE format('ANALYZE %s (b, i)', tables[1]);
        steps := steps || format(', analyzed in %s ms', round(extract(epoch FROM clock_timestamp() - step) * 1000));
        step := clock_timestamp();
        -- A pair is returned by the first key it shares only (of the first element that is
        -- near, for a set: those are the pairs the joins on one node return), decided once per
        -- candidate by _simhash_first_shared_key over all the keys: the statement grows with
        -- the keys, not with their square (0.3.0 spelt each key's test out in a CASE, megabytes
        -- of SQL at k >= 9 that Citus took gigabytes to plan).
        RETURN QUERY EXECUTE format(
            'SELECT x.key::%1$s, y.key::%1$s, %4$s(x.fp, y.fp)
               FROM %2$s x JOIN %2$s y ON x.b = y.b AND x.i = y.i
              WHERE (x.key, x.s, x.c) < (y.key, y.s, y.c)
                AND NOT (%4$s(x.fp, y.fp) > %3$s)
                AND x.i = @extschema@._simhash_first_shared_key(x.fp, y.fp, %3$s, %5$L::int8[]%6$s)',
            out_type, tables[1], k,
            CASE WHEN is_set THEN '@extschema@.simhash_set_distance' ELSE '@extschema@.hamming_distance' END,
            key_masks, CASE WHEN is_set THEN format(', %L::int4[]', key_elements) ELSE '' END);
        GET DIAGNOSTICS n = ROW_COUNT;
        total := total + n;
        RAISE DEBUG 'simhash_pairs: keys % to %: %, % pairs joined in % ms', first, last, steps, n,
            round(extract(epoch FROM clock_timestamp() - step) * 1000);
        IF clock_timestamp() - last_notice >= interval '2 s' THEN
            RAISE NOTICE 'simhash_pairs: keys % to % of % (on the workers), % pairs so far%',
                first, last, cardinality(key_masks), total, @extschema@._simhash_took(started);
            last_notice := clock_timestamp();
        END IF;
        tables := ARRAY[tables[2], tables[1]];
        first := last + 1;
    END LOOP;
    EXECUTE format('DROP TABLE %s, %s', tables[1], tables[2]);
END
$$;
COMMENT ON FUNCTION _simhash_pairs_on_workers(regclass, name, int4, name, anyelement, int8[], float8, int4, bool) IS
    'internal: simhash_pairs of a hash-distributed Citus table, joined on the workers through two intermediate distributed tables; arguments unchecked';

CREATE FUNCTION _simhash_pairs(tbl regclass, col name, k int4, key_column name, as_type anyelement)
RETURNS TABLE (a anyelement, b anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
-- The planner cannot know how few rows share a key, so it overestimates the joins by orders of
-- magnitude and would JIT-compile each one: a quarter second per join spent for nothing. For
-- the same reason it chose merge joins, sorting both sides by each key (1M rows: 15.0-15.5 s
-- against 14.2-14.3 s by hash joins, which also slice to fit work_mem).
SET jit = off
SET enable_mergejoin = off
AS $$
DECLARE
    row_name text := coalesce(quote_ident(key_column), 'ctid');
    out_type text := format_type(pg_typeof(as_type), NULL);
    masks int8[];
    rows_estimate float8;
    slices int4;
    shift int4;
    earlier text;
    other_elements text := '';
    elements int4 := 1;
    set_size int4; -- of a set column generated by simhash_set, else NULL
    is_set bool;
    multidimensional bool;
    by_position text := ''; -- '[:]' where a set's first subscript may not be 1
    x_fp text;
    y_fp text;
    distance_fn text := '@extschema@.hamming_distance';
    n int8;
    unique_key bool;
    total int8 := 0;
    started timestamptz := clock_timestamp();
    last_notice timestamptz := clock_timestamp();
    joins text[] := '{}';
    citus bool := @extschema@._simhash_citus_table(tbl);
    heap_only bool := @extschema@._simhash_heap_only(tbl);
    in_memory bool;
    memory_needed float8;
    workers_obstacle text;
    key_bytes float8;
    fixed_length_key bool;
    array_key bool;
    scan_key int2; -- the key's attnum (0: ctid) where the table can be read row by row
    scan_fp int2;
    -- A registered setting (src/settings.rs), checked again for a value set before the library
    -- loaded; 'auto' (or the empty string of 0.3.0) leaves the choice to the function.
    pairs_method text := nullif(nullif(current_setting('simhash_pg.pairs_method', true), ''), 'auto');
    routed record;
BEGIN
    IF pairs_method NOT IN ('joins', 'compare', 'sort', 'scan') THEN
        RAISE EXCEPTION 'simhash_pg.pairs_method must be auto, joins, compare, sort or scan, got %', quote_literal(pairs_method)
            USING ERRCODE = '22023';
    END IF;
    IF citus THEN
        -- Citus keeps no statistics on the shell table: count the rows.
        EXECUTE format('SELECT count(*) FROM %s', tbl) INTO rows_estimate;
    ELSE
        -- reltuples, or before the first VACUUM or ANALYZE the planner's estimate from the
        -- table's size (src/table_info.rs, rows_estimate).
        rows_estimate := @extschema@._simhash_rows_estimate(tbl);
    END IF;
    -- A set column (simhash64[], simhash_set): two rows are near when some same-position pair
    -- of their fingerprints is (hamming_distance on sets, the smallest). Its elements are
    -- joined one after the other, each as a fingerprint column; a pair is returned by the first
    -- element that makes it near only, with the sets' distance.
    SELECT a.atttypid = '@extschema@.simhash64[]'::regtype INTO is_set
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col;
    IF is_set THEN
        distance_fn := '@extschema@.simhash_set_distance';
        set_size := @extschema@._simhash_set_size(tbl, col);
        elements := set_size;
        IF elements IS NULL THEN
            -- A set not generated by simhash_set may start at another subscript ('[0:1]={...}',
            -- what some clients and array functions write): its elements are read by position,
            -- as <-> compares them, through the slice col[:], which starts at 1. A
            -- multidimensional array has no positions to pair by.
            EXECUTE format('SELECT coalesce(max(cardinality(%1$I)), 0), coalesce(max(array_ndims(%1$I)), 1) > 1 FROM %2$s', col, tbl)
               INTO elements, multidimensional;
            IF multidimensional THEN
                RAISE EXCEPTION 'set column % of % holds multidimensional arrays', quote_ident(col), tbl
                    USING ERRCODE = '22023', HINT = 'A set of fingerprints is a one-dimensional simhash64[], as simhash_set returns.';
            END IF;
            by_position := '[:]';
        END IF;
    END IF;
    -- A routed layout (sql/routed.sql) whose blocks serve k exactly (k < m: two rows within k
    -- share a block value, so a route): the routes joined with themselves on route, each shard
    -- on its own (the table of routes is distributed by route: no repartitioning), a pair kept
    -- at the first block it shares; then the rows' own fingerprints, read by key, confirm each
    -- pair (a deleted or changed row leaves routes behind).
    IF citus AND NOT is_set THEN
        SELECT l.* INTO routed FROM @extschema@._simhash_routed_layout(tbl) l WHERE l.col = _simhash_pairs.col;
        IF routed.routes IS NOT NULL AND k < routed.blocks AND key_column = routed.key_column
           AND has_table_privilege(routed.routes, 'SELECT')
           AND EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = tbl AND g.tgname = '_simhash_routed' AND g.tgenabled IN ('O', 'A')) THEN
            RAISE DEBUG 'simhash_pairs: % through its routes %', tbl, routed.routes;
            RETURN QUERY EXECUTE format(
                'WITH p AS MATERIALIZED (
                     SELECT x.key AS a, x.fp AS fa, y.key AS b, y.fp AS fb
                       FROM %1$s x JOIN %1$s y ON y.route = x.route AND x.key < y.key
                      WHERE @extschema@._simhash_first_shared_key(x.fp, y.fp, $1, $2) = (x.route >> 56)::int4 + 1),
                 live AS MATERIALIZED (
                     SELECT t.%2$I AS key, t.%3$I::int8 AS fp FROM %4$s t
                      WHERE t.%2$I = ANY (ARRAY(SELECT p.a FROM p UNION SELECT p.b FROM p)))
                 SELECT p.a::%5$s, p.b::%5$s, @extschema@.hamming_distance(p.fa, p.fb)
                   FROM p JOIN live la ON la.key = p.a AND la.fp = p.fa::int8
                          JOIN live lb ON lb.key = p.b AND lb.fp = p.fb::int8',
                routed.routes, key_column, col, tbl, out_type)
              USING k, @extschema@._simhash_block_masks(routed.blocks);
            RETURN;
        END IF;
    END IF;
    -- One equi-join per key (see _simhash_pair_masks): rows sharing fp & mask are the candidates.
    -- A pair is returned by the first key it shares only, and once, the smaller row first.
    masks := @extschema@._simhash_pair_masks(k, rows_estimate);
    workers_obstacle := CASE WHEN is_set AND set_size IS NULL
                             THEN format('set column %s is not generated by simhash_set (rows may lack fingerprints)', quote_ident(col))
                             -- Without a unique key the workers tell rows apart by ctid, which
                             -- columnar tables cannot read.
                             WHEN citus AND NOT heap_only
                                  AND NOT coalesce(@extschema@._simhash_unique_key(tbl, key_column), false)
                             THEN format('%s has no unique index on %s and its access method reads no row by ctid', tbl, quote_ident(key_column)) END;
    IF citus AND @extschema@._simhash_pairs_on_workers_or_why(tbl, rows_estimate, workers_obstacle) IS NULL THEN
        RETURN QUERY SELECT * FROM @extschema@._simhash_pairs_on_workers(tbl, col, k, key_column, as_type,
                                                                         masks, rows_estimate, elements, is_set);
        RETURN;
    END IF;
    -- A table that fits maintenance_work_mem is read once, into an array of its fingerprints
    -- (a set column's as a two-dimensional array, one row of it per table row, padded with
    -- NULLs where a set is shorter), and its pairs found in memory (_simhash_close_pairs: each
    -- key's rows sorted, or every pair compared where a shared template crowds a small table
    -- into few keys; 1M fingerprints at k = 3 in well under a second). The keys are gathered by
    -- the same aggregate, so that position n names the same row in both arrays, and found
    -- again by position (unnest in the select list streams, where in FROM it would first
    -- write every key to a tuplestore). Two rows with equal keys print the same either way
    -- round, so the smaller key comes first without reading tableoid or ctid.
    -- SET simhash_pg.pairs_method = 'joins', 'compare' or 'sort' overrides the choice (tests,
    -- measurements).
    IF pairs_method = 'compare' AND rows_estimate > 100000 AND NOT citus THEN
        RAISE EXCEPTION 'simhash_pg.pairs_method = compare: % has about % rows, more than are compared pair by pair',
            tbl, rows_estimate USING ERRCODE = '22023';
    END IF;
    -- The key column's type: the bytes a key takes (its length, or its average width in the
    -- statistics, else 32), and whether it is an array (array_agg would stack the keys into one
    -- array of more dimensions, so array keys always run as joins). A key of fixed length
    -- (int8, uuid, ctid...) is read out of its array by position at once; a key of variable
    -- length (text) only by walking the array, so its positions are joined with the pairs'.
    SELECT CASE WHEN ty.typlen > 0 THEN ty.typlen
                ELSE coalesce((SELECT max(s.avg_width) FROM pg_stats s
                                WHERE s.schemaname = n.nspname AND s.tablename = c.relname AND s.attname = a.attname), 32) + 4 END,
           ty.typlen > 0, ty.typcategory = 'A'
      INTO key_bytes, fixed_length_key, array_key
      FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
      JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE a.attrelid = tbl AND a.attname = coalesce(key_column, 'ctid') AND NOT a.attisdropped;
    -- A table read row by row (_simhash_scan_pairs, src/scan_pairs.rs): one fingerprint a row
    -- and a key of 8 bytes (an integer key column, or the ctid of a table without children,
    -- where ctids are unique), 32 bytes a row and any number of rows, where the arrays take
    -- about 120 bytes a row and stop at 60M rows. 100M rows: 3.2 GB, under two minutes.
    IF NOT citus AND NOT is_set THEN
        SELECT a.attnum INTO scan_fp FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND NOT a.attisdropped;
        IF key_column IS NULL THEN
            SELECT 0 INTO scan_key FROM pg_class c
             WHERE c.oid = tbl AND c.relkind IN ('r', 'm') AND NOT c.relhassubclass AND heap_only;
        ELSE
            SELECT a.attnum INTO scan_key FROM pg_attribute a
             WHERE a.attrelid = tbl AND a.attname = key_column AND NOT a.attisdropped
               AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype);
        END IF;
    END IF;
    IF pairs_method = 'scan' AND scan_key IS NULL THEN
        RAISE EXCEPTION 'simhash_pg.pairs_method = scan: % is read row by row only by an int2, int4 or int8 key column, or by ctid without child tables, on one server, for a fingerprint column', tbl
            USING ERRCODE = '22023';
    END IF;
    IF scan_key IS NOT NULL AND (pairs_method = 'scan' OR (pairs_method IS NULL
           AND @extschema@._simhash_scan_pairs_memory(rows_estimate) <= pg_size_bytes(current_setting('maintenance_work_mem')))) THEN
        RETURN QUERY EXECUTE format(
            'SELECT %1$s, %2$s, p.distance FROM @extschema@._simhash_scan_pairs($1, $2, $3, $4, $5) p',
            CASE WHEN scan_key = 0 THEN format('format(''(%%s,%%s)'', p.a >> 16, p.a & 65535)::tid::%s', out_type) ELSE format('p.a::%s', out_type) END,
            CASE WHEN scan_key = 0 THEN format('format(''(%%s,%%s)'', p.b >> 16, p.b & 65535)::tid::%s', out_type) ELSE format('p.b::%s', out_type) END)
          USING tbl, scan_fp, scan_key, k, rows_estimate;
        RETURN;
    END IF;
    memory_needed := CASE WHEN scan_key IS NOT NULL THEN @extschema@._simhash_scan_pairs_memory(rows_estimate)
                          ELSE @extschema@._simhash_pairs_memory(rows_estimate, greatest(elements, 1), key_bytes) END;
    -- A Citus table joined here (a reference, single-shard or Citus-local table, a small one,
    -- or simhash_pg.citus_pairs = coordinator) is read into memory the same way, its rows
    -- gathered from the shards: as SQL joins on the coordinator, k = 12 took 286 s and 2.1 GB
    -- at 20,000 rows (issue 67).
    in_memory := CASE WHEN array_key OR pairs_method = 'joins' THEN false
                      WHEN pairs_method IN ('compare', 'sort') THEN true
                      ELSE coalesce(memory_needed <= pg_size_bytes(current_setting('maintenance_work_mem')), false) END;
    IF NOT in_memory AND NOT citus AND pairs_method IS NULL AND NOT array_key AND memory_needed IS NOT NULL THEN
        RAISE NOTICE 'simhash_pairs: % (about % rows) runs as SQL hash joins, several times slower than in memory, which would take % (maintenance_work_mem is %)',
            tbl, round(rows_estimate), pg_size_pretty(memory_needed::numeric), current_setting('maintenance_work_mem')
            USING HINT = format('SET maintenance_work_mem = %L for this call to read the table into memory.',
                                ceil(memory_needed / 1048576) || 'MB');
    END IF;
    IF in_memory THEN
        RETURN QUERY EXECUTE format(
            'WITH a AS MATERIALIZED (
                  SELECT array_agg(%5$s) AS fps, array_agg(t.%1$s) AS keys
                    FROM %3$s t WHERE t.%1$s IS NOT NULL AND t.%2$I IS NOT NULL),
                  p AS MATERIALIZED (
                  SELECT p.i, p.j, p.distance FROM a, @extschema@._simhash_close_pairs(a.fps, $2, $1, $3) p) '
            || CASE WHEN fixed_length_key THEN
            'SELECT CASE WHEN x.key <= y.key THEN x.key ELSE y.key END::%4$s,
                    CASE WHEN x.key <= y.key THEN y.key ELSE x.key END::%4$s, p.distance
               FROM a, p, LATERAL (SELECT a.keys[p.i] AS key) x, LATERAL (SELECT a.keys[p.j] AS key) y'
            ELSE
            ', r AS MATERIALIZED (
                  SELECT u.key, u.n
                    FROM (SELECT unnest(a.keys) AS key, generate_series(1, cardinality(a.keys)) AS n FROM a) u
                   WHERE u.n IN (SELECT p.i FROM p UNION ALL SELECT p.j FROM p))
             SELECT CASE WHEN x.key <= y.key THEN x.key ELSE y.key END::%4$s,
                    CASE WHEN x.key <= y.key THEN y.key ELSE x.key END::%4$s, p.distance
               FROM p JOIN r x ON x.n = p.i JOIN r y ON y.n = p.j' END,
            row_name, col, tbl, out_type,
            CASE WHEN NOT is_set THEN format('t.%I', col)
                 WHEN set_size IS NOT NULL THEN format('t.%I', col)
                 ELSE format('(t.%1$I[:])[1:$2] || array_fill(NULL::@extschema@.simhash64, ARRAY[$2 - coalesce(cardinality((t.%1$I[:])[1:$2]), 0)])', col) END)
          USING k, greatest(elements, 1), coalesce(pairs_method, 'auto');
        RETURN;
    END IF;
    -- The joins below tell rows that share a key apart by (tableoid, ctid). A key that no two
    -- rows share needs no tie-break (a unique index of a plain or partitioned table; an
    -- inheritance parent's covers none of its children). Without one, a role that may read
    -- the key and fingerprint columns but not the whole table may not read ctid either: its
    -- rows are numbered as a Citus table's are, so column grants give the same pairs on every
    -- path (issue 63).
    unique_key := key_column IS NOT NULL AND @extschema@._simhash_unique_key(tbl, key_column)
                  AND (SELECT c.relkind = 'p' OR NOT c.relhassubclass FROM pg_class c WHERE c.oid = tbl);
    IF citus OR NOT heap_only
       OR (key_column IS NOT NULL AND NOT unique_key AND NOT has_table_privilege(tbl, 'SELECT')) THEN
        -- A Citus table (a key column is required, see _simhash_table_problem): Citus joins
        -- distributed tables only on their distribution columns, so every (key, fp) is read
        -- from the shards once, into an intermediate result on this node, and the joins run
        -- here. Rows are numbered there, so that rows sharing a key are still told apart. The
        -- same for a table that reads no row by ctid (columnar), which the joins below name
        -- rows by, when it does not fit in memory.
        -- Each key is one more join over every row, far slower than pairing the rows in
        -- memory: on a Citus table, 29x at k = 3 and 150x at k = 4 against the same rows on one
        -- server (300,000 rows), and at k = 12 (455 keys) 286 s at 20,000 rows against 2 s,
        -- then max_stack_depth (issue 67). So a Citus table joined on this node is paired in
        -- memory or not at all: with simhash_pg.citus_pairs = auto a hash-distributed table
        -- that does not fit goes to the workers, and otherwise the call is refused with the
        -- memory it needs; simhash_pg.pairs_method = joins runs the joins anyway. (On one
        -- server, a columnar table or a role granted columns only, the joins stay: 455 of
        -- them at 5,000 rows take 1.2 s there.)
        IF citus AND pairs_method IS NULL
           AND coalesce(nullif(current_setting('simhash_pg.citus_pairs', true), ''), 'auto') = 'auto'
           AND @extschema@._simhash_pairs_on_workers_or_why(tbl, greatest(rows_estimate, 1e6), workers_obstacle) IS NULL THEN
            RETURN QUERY SELECT * FROM @extschema@._simhash_pairs_on_workers(tbl, col, k, key_column, as_type,
                                                                             masks, rows_estimate, elements, is_set);
            RETURN;
        END IF;
        IF citus AND pairs_method IS DISTINCT FROM 'joins' THEN
            RAISE EXCEPTION 'simhash_pairs: % (about % rows) does not fit maintenance_work_mem (%) to be paired in memory on this node, and at k = % the SQL joins instead would take % joins over every row',
                tbl, round(rows_estimate), current_setting('maintenance_work_mem'), k, elements * cardinality(masks)
                USING ERRCODE = '54000',
                      DETAIL = CASE WHEN array_key THEN format('Its key column %s is an array, which is never paired in memory.', quote_ident(key_column))
                                    WHEN memory_needed IS NULL THEN 'Its rows are too many to be paired in memory.'
                                    ELSE format('In memory it needs about %s.', pg_size_pretty(memory_needed::numeric)) END,
                      HINT = CASE WHEN NOT (array_key OR memory_needed IS NULL)
                                  THEN format('SET maintenance_work_mem = %L for this call.', ceil(memory_needed / 1048576) || 'MB')
                                  ELSE 'Pair a hash-distributed copy on the workers (simhash_pg.citus_pairs = workers), or SET simhash_pg.pairs_method = joins to run the joins anyway.' END;
        END IF;
        -- A pair is returned by the join of the first key it shares only (of the first
        -- element that is near, for a set), decided once per candidate by
        -- _simhash_first_shared_key over every key ($1 the masks, $2 their elements): the
        -- statement grows with the keys, not with their square.
        FOR e IN 1 .. elements LOOP
            x_fp := CASE WHEN is_set THEN format('x.fp[%s]', e) ELSE 'x.fp' END;
            y_fp := CASE WHEN is_set THEN format('y.fp[%s]', e) ELSE 'y.fp' END;
            FOR i IN 1 .. cardinality(masks) LOOP
                joins := joins || format(
                    'SELECT x.key::%1$s, y.key::%1$s, %6$s(x.fp, y.fp)
                       FROM r x JOIN r y ON (%4$s::int8 & %2$s) = (%5$s::int8 & %2$s)
                      WHERE (x.key, x.n) < (y.key, y.n) AND NOT (%6$s(x.fp, y.fp) > %3$s)
                        AND @extschema@._simhash_first_shared_key(x.fp, y.fp, %3$s, $1%7$s) = %8$s',
                    out_type, masks[i], k, x_fp, y_fp, distance_fn, CASE WHEN is_set THEN ', $2' ELSE '' END,
                    (e - 1) * cardinality(masks) + i);
            END LOOP;
        END LOOP;
        IF cardinality(joins) = 0 THEN
            RETURN;
        END IF;
        RETURN QUERY EXECUTE format(
            'WITH shards AS MATERIALIZED (SELECT t.%1$s AS key, t.%2$I%4$s AS fp FROM %3$s t
                                          WHERE t.%1$s IS NOT NULL AND t.%2$I IS NOT NULL),
                  r AS MATERIALIZED (SELECT s.key, s.fp, row_number() OVER () AS n FROM shards s) ',
            row_name, col, tbl, by_position) || array_to_string(joins, E'\nUNION ALL\n')
          USING (SELECT array_agg(u.m ORDER BY g, u.i) FROM generate_series(1, elements) g, unnest(masks) WITH ORDINALITY u(m, i)),
                (SELECT array_agg(g ORDER BY g, u.i) FROM generate_series(1, elements) g, unnest(masks) WITH ORDINALITY u(m, i));
        RETURN;
    END IF;
    -- Big tables: each join in slices of two to three million rows a side, by the lowest bits
    -- of the key (rows that share a key share its slice; the key's lowest set bits are as
    -- random as the fingerprint), so that a slice's hash table fits in memory and progress
    -- comes every few seconds. Each slice reads the table again, so not smaller (measured in
    -- BENCHMARKS.md, *All near pairs and groups*). A power of two, so that a slice is two bit
    -- operations per row.
    slices := 1;
    WHILE slices < rows_estimate / 3e6 LOOP
        slices := slices * 2;
    END LOOP;
    FOR e IN 1 .. elements LOOP
        x_fp := CASE WHEN is_set THEN format('(x.%I%s)[%s]', col, by_position, e) ELSE format('x.%I', col) END;
        y_fp := CASE WHEN is_set THEN format('(y.%I%s)[%s]', col, by_position, e) ELSE format('y.%I', col) END;
        earlier := '';
        FOR i IN 1 .. cardinality(masks) LOOP
            shift := 0;
            WHILE (masks[i] >> shift) & 1 = 0 LOOP
                shift := shift + 1;
            END LOOP;
            FOR s IN 0 .. slices - 1 LOOP
                RETURN QUERY EXECUTE format(
                    'SELECT x.%1$s::%6$s, y.%1$s::%6$s, %10$s(x.%2$I, y.%2$I)
                       FROM %3$s x JOIN %3$s y ON (%7$s::int8 & $1) = (%8$s::int8 & $1)
                      WHERE %11$s
                        AND NOT (@extschema@.hamming_distance(%7$s, %8$s) > $2)%4$s%5$s%9$s',
                    row_name, col, tbl, earlier,
                    CASE WHEN slices > 1 THEN format(
                        E'\n                    AND ((%1$s::int8 & $1) >> $5) & $3 = $4 '
                        'AND ((%2$s::int8 & $1) >> $5) & $3 = $4', x_fp, y_fp)
                    ELSE '' END,
                    out_type, x_fp, y_fp, other_elements, distance_fn,
                    CASE WHEN unique_key THEN format('x.%1$s < y.%1$s', row_name)
                         ELSE format('(x.%1$s, x.tableoid, x.ctid) < (y.%1$s, y.tableoid, y.ctid)', row_name) END)
                  USING masks[i], k, (slices - 1)::int8, s::int8, shift;
                GET DIAGNOSTICS n = ROW_COUNT;
                total := total + n;
                IF clock_timestamp() - last_notice >= interval '2 s' THEN
                    RAISE NOTICE 'simhash_pairs: %key % of %, slice % of %, % pairs so far%',
                        CASE WHEN is_set THEN format('fingerprint %s of %s, ', e, elements) ELSE '' END,
                        i, cardinality(masks), s + 1, slices, total, @extschema@._simhash_took(started);
                    last_notice := clock_timestamp();
                END IF;
            END LOOP;
            earlier := earlier || format(E'\n                    AND ((%s::int8 # %s::int8) & %s) <> 0', x_fp, y_fp, masks[i]);
        END LOOP;
        -- Later elements skip the pairs this one made near.
        other_elements := other_elements || format(
            E'\n                    AND coalesce(@extschema@.hamming_distance(%s, %s) > $2, true)', x_fp, y_fp);
    END LOOP;
END
$$;
COMMENT ON FUNCTION _simhash_pairs(regclass, name, int4, name, anyelement) IS
    'internal: the pairs of simhash_pairs, keys cast to the type of as_type; arguments unchecked';

-- The exact check in one argument (1.0): verify => '{"column": "body", "min_jaccard": 0.5,
-- "options": {"ngram": 3}}', only "column" required. Returns the three values the internal
-- functions take, from it or from the trio of 0.3.0 (verify_column, min_jaccard,
-- verify_options), still accepted for one release with a warning; not both. Problems of the
-- form are raised here; those of the values (the column, the range) by _simhash_verify_problem.
CREATE FUNCTION _simhash_verify_parts(fn text, verify jsonb, old_column name DEFAULT NULL, old_min_jaccard float8 DEFAULT NULL,
                                      old_options jsonb DEFAULT NULL)
RETURNS TABLE (verify_column name, min_jaccard float8, verify_options jsonb)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    extra text;
    example constant text := 'verify => ''{"column": "body"}'', or ''{"column": "body", "min_jaccard": 0.6, "options": {"ngram": 2}}''.';
BEGIN
    IF old_column IS NOT NULL OR old_min_jaccard IS NOT NULL OR old_options IS NOT NULL THEN
        IF verify IS NOT NULL THEN
            RAISE EXCEPTION '%: give verify or the deprecated verify_column, min_jaccard and verify_options, not both', fn
                USING ERRCODE = '22023', HINT = example;
        END IF;
        RAISE WARNING USING ERRCODE = '01P01',
            MESSAGE = format('%s: verify_column, min_jaccard and verify_options are deprecated and will be removed in 1.1', fn),
            HINT = format('Use verify => %L.', jsonb_strip_nulls(jsonb_build_object('column', old_column, 'min_jaccard', old_min_jaccard,
                                                                                  'options', old_options)));
        RETURN QUERY SELECT old_column, coalesce(old_min_jaccard, 0.5), coalesce(old_options, '{"ngram": 3}');
        RETURN;
    END IF;
    IF verify IS NULL THEN
        RETURN QUERY SELECT NULL::name, 0.5::float8, '{"ngram": 3}'::jsonb;
        RETURN;
    END IF;
    IF jsonb_typeof(verify) <> 'object' THEN
        RAISE EXCEPTION '%: verify must be a JSON object, got %', fn, verify USING ERRCODE = '22023', HINT = example;
    END IF;
    SELECT string_agg(quote_literal(key), ', ') INTO extra
      FROM jsonb_object_keys(verify) key WHERE key NOT IN ('column', 'min_jaccard', 'options');
    IF extra IS NOT NULL THEN
        RAISE EXCEPTION '%: verify has no key %', fn, extra
            USING ERRCODE = '22023', HINT = 'Its keys are "column" (the text to compare), "min_jaccard" (0.5 by default) and "options" (simhash''s options for the comparison, {"ngram": 3} by default).';
    END IF;
    IF jsonb_typeof(verify -> 'column') IS DISTINCT FROM 'string' THEN
        RAISE EXCEPTION '%: verify needs "column", the name of the text column to compare, as a string; got %', fn, verify
            USING ERRCODE = '22023', HINT = example;
    END IF;
    IF verify ? 'min_jaccard' AND jsonb_typeof(verify -> 'min_jaccard') <> 'number' THEN
        RAISE EXCEPTION '%: verify''s "min_jaccard" must be a number from 0 to 1, got %', fn, verify -> 'min_jaccard'
            USING ERRCODE = '22023', HINT = example;
    END IF;
    IF verify ? 'options' AND jsonb_typeof(verify -> 'options') <> 'object' THEN
        RAISE EXCEPTION '%: verify''s "options" must be a JSON object like simhash''s options, got %', fn, verify -> 'options'
            USING ERRCODE = '22023', HINT = 'options => {"ngram": 3}, with "markup" when the fingerprint has it.';
    END IF;
    RETURN QUERY SELECT (verify ->> 'column')::name, coalesce((verify ->> 'min_jaccard')::float8, 0.5),
                        coalesce(verify -> 'options', '{"ngram": 3}');
END
$$;
COMMENT ON FUNCTION _simhash_verify_parts(text, jsonb, name, float8, jsonb) IS
    'internal: the exact check asked of an ETL function (fn) as verify_column, min_jaccard and verify_options, from its verify argument or the deprecated trio (with a warning); raises problems of the form';

-- The exact check a caller may ask of simhash_pairs, the grouping functions and
-- simhash_ingest (verify_column, min_jaccard, verify_options): what is wrong with it, as
-- _simhash_table_problem says it; tables lists the relations that must have the column.
CREATE FUNCTION _simhash_verify_problem(fn text, tables regclass[], verify_column name, min_jaccard float8,
                                        verify_options jsonb)
RETURNS TABLE (sqlstate text, message text, hint text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl regclass;
    given_type oid;
BEGIN
    IF verify_column IS NULL THEN
        RETURN;
    END IF;
    IF min_jaccard IS NULL OR NOT (min_jaccard BETWEEN 0 AND 1) OR verify_options IS NULL THEN
        RETURN QUERY SELECT '22023', format('%s: the exact check''s min_jaccard must be between 0 and 1 (got %s) and its options not NULL',
                                            fn, coalesce(min_jaccard::text, 'NULL')),
            'verify => ''{"column": "body", "min_jaccard": 0.5, "options": {"ngram": 3}}'': min_jaccard is a similarity from 0 to 1.'::text;
        RETURN;
    END IF;
    IF jsonb_typeof(verify_options) <> 'object' THEN
        RETURN QUERY SELECT '22023', format('%s: the exact check''s options must be a JSON object like simhash''s options, got %s', fn, verify_options),
            'options => {"ngram": 3}, with "markup" when the fingerprint has it.';
        RETURN;
    END IF;
    FOREACH tbl IN ARRAY tables LOOP
        SELECT a.atttypid INTO given_type FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attname = verify_column AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RETURN QUERY SELECT '42703', format('%s: column %s of relation %s does not exist (the column to verify)', fn, quote_ident(verify_column), tbl),
                format('The columns of %s are: %s.', tbl, @extschema@._simhash_column_list(tbl));
            RETURN;
        END IF;
        IF given_type NOT IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype) THEN
            RETURN QUERY SELECT '42804', format('%s: the column to verify, %s of relation %s, is of type %s, not text', fn, quote_ident(verify_column), tbl,
                format_type(given_type, NULL)),
                'verify => ''{"column": ...}'' names the text the fingerprints were computed from (text, varchar or char).'::text;
            RETURN;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION _simhash_verify_problem(text, regclass[], name, float8, jsonb) IS
    'internal: what is wrong with the exact check asked of an ETL function (verify_column of each of tables, min_jaccard, verify_options), as SQLSTATE, message and hint rows';

-- The pairs of _simhash_pairs, and with verify_column only those whose texts pass the exact
-- check: SimHash proposes, the texts decide (_simhash_verified_pairs).
CREATE FUNCTION _simhash_checked_pairs(tbl regclass, col name, k int4, key_column name, as_type anyelement,
                                       verify_column name, min_jaccard float8, verify_options jsonb)
RETURNS TABLE (a anyelement, b anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF verify_column IS NULL THEN
        RETURN QUERY SELECT * FROM @extschema@._simhash_pairs(tbl, col, k, key_column, as_type);
    ELSE
        RETURN QUERY SELECT * FROM @extschema@._simhash_verified_pairs(tbl, col, k, key_column, as_type,
                                                                       verify_column, min_jaccard, verify_options);
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_checked_pairs(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'internal: the pairs of simhash_pairs, only those whose verify_column texts have simhash_jaccard >= min_jaccard when verify_column is given; arguments unchecked';

-- The check: the pairs (keys in the key column's own type, which hash and compare faster than
-- their text), each row on a pair read once, found again by its key (index or TID lookups when
-- they are few, a hash join otherwise), its text reduced to its feature set
-- (simhash_feature_set with verify_options); a pair stays when the Jaccard similarity of its
-- two sets is at least min_jaccard, so a pair with a NULL text does not. The pairs are joined
-- with the sets of both ends by hash joins (the planner, misled by the estimates of a function
-- and a CTE, chose merge joins that sorted millions of pairs on disk; a correlated EXISTS
-- scanned the sets once per pair). Where a key may name several rows (no unique index on the
-- key column alone), the pairs are numbered so that each comes out once: a pair passes when
-- some rows with its two keys do.
CREATE FUNCTION _simhash_verified_pairs(tbl regclass, col name, k int4, key_column name, as_type anyelement,
                                        verify_column name, min_jaccard float8, verify_options jsonb)
RETURNS TABLE (a anyelement, b anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET enable_mergejoin = off
AS $$
DECLARE
    key_type text;
    key_attnum int2;
    unique_key bool;
    pairs text := 'SELECT s.a, s.b, s.distance FROM @extschema@._simhash_pairs($1, $2, $3, $4, NULL::%1$s) s';
    pairs_a text[];
    pairs_b text[];
    pairs_distance int4[];
    citus_method text;
BEGIN
    SELECT CASE WHEN key_column IS NULL THEN 'tid' ELSE format_type(a.atttypid, a.atttypmod) END, a.attnum
      INTO key_type, key_attnum
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND (a.attname = key_column OR (key_column IS NULL AND a.attnum = -1));
    -- ctid names one row of a plain table (the only kind it is accepted for).
    unique_key := key_column IS NULL OR @extschema@._simhash_unique_key(tbl, key_column);
    -- On a Citus table that is whole in one shard (single-shard, reference, Citus-local) the
    -- pairs come first, in a statement of their own: one that also reads the table is sent
    -- whole to that shard, where the pairs' own distributed queries may not run. They come back
    -- by their keys' text. (Elsewhere they stream through the CTE, which may spill to disk.)
    IF @extschema@._simhash_citus_table(tbl) THEN
        EXECUTE 'SELECT partmethod::text FROM pg_catalog.pg_dist_partition WHERE logicalrelid = $1' INTO citus_method USING tbl;
    END IF;
    IF citus_method = 'n' THEN
        EXECUTE format('SELECT coalesce(array_agg(p.a::text), ''{}''), coalesce(array_agg(p.b::text), ''{}''),
                               coalesce(array_agg(p.distance), ''{}'') FROM (' || pairs || ') p', key_type)
           INTO pairs_a, pairs_b, pairs_distance USING tbl, col, k, key_column;
        pairs := 'SELECT u.a::%1$s AS a, u.b::%1$s AS b, u.distance FROM unnest($7, $8, $9) u(a, b, distance)';
    END IF;
    -- ok: the pairs that pass. With unique keys they are the answer; otherwise each pair
    -- numbered i comes out once when some rows with its keys passed.
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (SELECT %6$s AS i, s.a, s.b, s.distance FROM (' || format(pairs, '%4$s') || ') s),
              f AS MATERIALIZED (SELECT n.node, @extschema@.simhash_feature_set(t.%2$I::text, $5) AS features
                                   FROM (SELECT p.a FROM p UNION SELECT p.b FROM p) n(node)
                                   JOIN %3$s t ON t.%1$s = n.node),
              ok AS (SELECT q.i, q.a, q.b, q.distance FROM p q JOIN f x ON x.node = q.a JOIN f y ON y.node = q.b
                      WHERE @extschema@.simhash_jaccard(x.features, y.features) >= $6)
         SELECT r.a::%5$s, r.b::%5$s, r.distance FROM %7$s',
        coalesce(quote_ident(key_column), 'ctid'), verify_column, tbl, key_type, format_type(pg_typeof(as_type), NULL),
        CASE WHEN unique_key THEN 'NULL::int8' ELSE 'row_number() OVER ()' END,
        CASE WHEN unique_key THEN 'ok r' ELSE 'p r WHERE r.i IN (SELECT ok.i FROM ok)' END)
      USING tbl, col, k, key_column, verify_options, min_jaccard, pairs_a, pairs_b, pairs_distance;
END
$$;
COMMENT ON FUNCTION _simhash_verified_pairs(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'internal: the pairs of simhash_pairs whose verify_column texts have simhash_jaccard(verify_options) >= min_jaccard; arguments unchecked';

-- The argument checks simhash_pairs and the grouping functions share: the table,
-- column and key (_simhash_table_problem), the exact check (_simhash_verify_problem) and k
-- (_simhash_k_problem); the first problem found is raised, its message naming fn, the function
-- the user called.
CREATE FUNCTION _simhash_check_pairs_call(fn text, tbl regclass, col name, k int4, key_column name, key_type regtype,
                                          verify_column name, min_jaccard float8, verify_options jsonb)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem(fn, tbl, col, 'read', key_column, key_type => key_type)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_verify_problem(fn, ARRAY[tbl], verify_column, min_jaccard, verify_options)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_k_problem(fn, k, 'pairs') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
END
$$;
COMMENT ON FUNCTION _simhash_check_pairs_call(text, regclass, name, int4, name, regtype, name, float8, jsonb) IS
    'internal: raises the first problem with the arguments of simhash_pairs or a grouping function (fn): table, column, key, exact check, k';

-- Both forms take the exact check as verify (jsonb); the trailing verify_column, min_jaccard
-- and verify_options are 0.3.0's form of it, accepted with a warning until 1.1 (named calls of
-- 0.3.0 keep working). In the text form verify_column is text, not name: a key type passed by
-- position as NULL::text matches the typed form only.
CREATE FUNCTION simhash_pairs(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                              verify jsonb DEFAULT NULL,
                              verify_column text DEFAULT NULL, min_jaccard float8 DEFAULT NULL, verify_options jsonb DEFAULT NULL)
RETURNS TABLE (a text, b text, distance int4)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    -- Keys as text are the typed form's with key_type text.
    SELECT * FROM @extschema@.simhash_pairs(tbl, col, k, key_column, NULL::text, verify,
                                            verify_column, min_jaccard, verify_options)
$$;
COMMENT ON FUNCTION simhash_pairs(regclass, name, int4, name, jsonb, text, float8, jsonb) IS
    'every pair of rows of tbl whose col is within k bits, once each (a < b), named by key_column (as text) or ctid, with the distance; with verify => {"column": c} only pairs whose texts c have simhash_jaccard >= min_jaccard (0.5; options {"ngram": 3}); verify_column, min_jaccard, verify_options: deprecated (0.3.0), removed in 1.1';

CREATE FUNCTION simhash_pairs(tbl regclass, col name, k int4, key_column name, key_type anyelement,
                              verify jsonb DEFAULT NULL,
                              verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT NULL, verify_options jsonb DEFAULT NULL)
RETURNS TABLE (a anyelement, b anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM @extschema@._simhash_verify_parts('simhash_pairs', verify, verify_column, min_jaccard, verify_options);
    PERFORM @extschema@._simhash_check_pairs_call('simhash_pairs', tbl, col, k, key_column, pg_typeof(key_type),
                                                  v.verify_column, v.min_jaccard, v.verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_checked_pairs(tbl, col, k, key_column, key_type,
                                                                  v.verify_column, v.min_jaccard, v.verify_options);
END
$$;
COMMENT ON FUNCTION simhash_pairs(regclass, name, int4, name, anyelement, jsonb, name, float8, jsonb) IS
    'every pair of rows of tbl whose col is within k bits, once each (a < b), named by key_column in its own type (key_type => NULL::that type; tid for ctid), with the distance; verify as in the text form';

-- The pairs across two tables: every (row of tbl, row of other) within k bits, each once,
-- either as one block-index lookup per row of one side, or as the same masked-key hash joins
-- as simhash_pairs (a join per key, a pair returned by the first key it shares), whichever
-- costs less for the two sizes and layouts. Keys as text, ctid without a key column.
CREATE FUNCTION simhash_pairs_between(tbl regclass, col name, other regclass, other_col name, k int4 DEFAULT 3,
                                      key_column name DEFAULT NULL, other_key_column name DEFAULT NULL)
RETURNS TABLE (a text, b text, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_mergejoin = off -- hash joins, as _simhash_pairs
AS $$
DECLARE
    problem record;
    masks int8[];
    rows_a float8;
    rows_b float8;
    slices int4;
    shift int4;
    earlier text := '';
    lookup_a float8;
    lookup_b float8;
    citus_a bool := @extschema@._simhash_citus_table(tbl);
    citus_b bool := @extschema@._simhash_citus_table(other);
    x_key text := coalesce(quote_ident(key_column), 'ctid');
    y_key text := coalesce(quote_ident(other_key_column), 'ctid');
    x_from text;
    y_from text;
    n int8;
    total int8 := 0;
    started timestamptz := clock_timestamp();
    last_notice timestamptz := clock_timestamp();
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_pairs_between', tbl, col, 'read', key_column)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_table_problem('simhash_pairs_between', other, other_col, 'read', other_key_column)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_k_problem('simhash_pairs_between', k, 'pairs') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_attribute t
                WHERE (t.attrelid, t.attname) IN ((tbl, col), (other, other_col))
                  AND t.atttypid <> '@extschema@.simhash64'::regtype) THEN
        RAISE EXCEPTION 'simhash_pairs_between: takes simhash64 columns; for sets of fingerprints join each table with simhash_near_any'
            USING ERRCODE = '0A000';
    END IF;
    -- A Citus table is read from its shards into an intermediate result for each join (Citus
    -- joins distributed tables only on their distribution columns); a local one is joined where
    -- it is (the CTE is inlined).
    x_from := format('x AS %s (SELECT t.%s AS k, t.%I AS fp FROM %s t)',
                     CASE WHEN citus_a THEN 'MATERIALIZED' ELSE 'NOT MATERIALIZED' END,
                     x_key, col, tbl);
    y_from := format('y AS %s (SELECT t.%s AS k, t.%I AS fp FROM %s t)',
                     CASE WHEN citus_b THEN 'MATERIALIZED' ELSE 'NOT MATERIALIZED' END,
                     y_key, other_col, other);
    rows_a := @extschema@._simhash_rows_estimate(tbl);
    rows_b := @extschema@._simhash_rows_estimate(other);
    -- Where one side is a plain local table whose block indexes answer a lookup cheaply (16-bit
    -- covering blocks, say), one lookup per row of the other side costs less than reading both
    -- once per key (as simhash_ingest weighs it): that join, probing the cheaper side.
    lookup_a := CASE WHEN (SELECT c.relkind = 'r' AND NOT c.relhassubclass FROM pg_class c WHERE c.oid = tbl)
                      AND NOT citus_a AND NOT citus_b
                     THEN @extschema@._simhash_lookup_cost(tbl, col, k) END;
    lookup_b := CASE WHEN (SELECT c.relkind = 'r' AND NOT c.relhassubclass FROM pg_class c WHERE c.oid = other)
                      AND NOT citus_a AND NOT citus_b
                     THEN @extschema@._simhash_lookup_cost(other, other_col, k) END;
    IF lookup_b IS NOT NULL AND (lookup_a IS NULL OR rows_a * lookup_b <= rows_b * lookup_a)
       AND NOT @extschema@._simhash_batch_prefers_joins(k, rows_a, rows_b, lookup_b) THEN
        RETURN QUERY EXECUTE format(
            'WITH %1$s SELECT x.k::text, (y.%2$s)::text, @extschema@.hamming_distance(x.fp, y.%3$I)
               FROM x JOIN %4$s y ON y.%3$I OPERATOR(@extschema@.<->) x.fp <= %5$s',
            x_from, y_key, other_col, other, k);
        RETURN;
    END IF;
    IF lookup_a IS NOT NULL AND NOT @extschema@._simhash_batch_prefers_joins(k, rows_b, rows_a, lookup_a) THEN
        RETURN QUERY EXECUTE format(
            'WITH %1$s SELECT (x.%2$s)::text, y.k::text, @extschema@.hamming_distance(x.%3$I, y.fp)
               FROM y JOIN %4$s x ON x.%3$I OPERATOR(@extschema@.<->) y.fp <= %5$s',
            y_from, x_key, col, tbl, k);
        RETURN;
    END IF;
    masks := @extschema@._simhash_cross_masks(k, rows_a, rows_b);
    -- Slices as simhash_pairs makes them, by the larger side.
    slices := 1;
    WHILE slices < greatest(rows_a, rows_b) / 3e6 LOOP
        slices := slices * 2;
    END LOOP;
    FOR i IN 1 .. cardinality(masks) LOOP
        shift := 0;
        WHILE (masks[i] >> shift) & 1 = 0 LOOP
            shift := shift + 1;
        END LOOP;
        FOR s IN 0 .. slices - 1 LOOP
            RETURN QUERY EXECUTE format(
                'WITH %1$s, %2$s
                 SELECT x.k::text, y.k::text, @extschema@.hamming_distance(x.fp, y.fp)
                   FROM x JOIN y ON (x.fp::int8 & $1) = (y.fp::int8 & $1)
                  WHERE NOT (@extschema@.hamming_distance(x.fp, y.fp) > $2)%3$s%4$s',
                x_from, y_from, earlier,
                CASE WHEN slices > 1 THEN
                    E'\n                    AND ((x.fp::int8 & $1) >> $5) & $3 = $4 AND ((y.fp::int8 & $1) >> $5) & $3 = $4'
                ELSE '' END)
              USING masks[i], k, (slices - 1)::int8, s::int8, shift;
            GET DIAGNOSTICS n = ROW_COUNT;
            total := total + n;
            IF clock_timestamp() - last_notice >= interval '2 s' THEN
                RAISE NOTICE 'simhash_pairs_between: key % of %, slice % of %, % pairs so far%',
                    i, cardinality(masks), s + 1, slices, total, @extschema@._simhash_took(started);
                last_notice := clock_timestamp();
            END IF;
        END LOOP;
        earlier := earlier || format(E'\n                    AND ((x.fp::int8 # y.fp::int8) & %s) <> 0', masks[i]);
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_pairs_between(regclass, name, regclass, name, int4, name, name) IS
    'every pair (row of tbl, row of other) whose fingerprints are within k bits, once each, named by key_column and other_key_column (as text) or ctid, with the distance; one lookup per row through the block indexes of one side, or hash joins on block keys, by cost';

-- The same pairs with keys in their own types: key_type => NULL::that type for tbl's key,
-- other_key_type for other's (a string type is always accepted). The keys come back through their
-- text, which every type reads back exactly.
CREATE FUNCTION simhash_pairs_between(tbl regclass, col name, other regclass, other_col name, k int4,
                                      key_column name, other_key_column name,
                                      key_type anyelement, other_key_type anycompatible)
RETURNS TABLE (a anyelement, b anycompatible, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_pairs_between', tbl, col, 'read', key_column,
                                                                    key_type => pg_typeof(key_type)::regtype)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_table_problem('simhash_pairs_between', other, other_col, 'read', other_key_column,
                                                                    key_type => pg_typeof(other_key_type)::regtype) LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    RETURN QUERY EXECUTE format(
        'SELECT p.a::%s, p.b::%s, p.distance FROM @extschema@.simhash_pairs_between($1, $2, $3, $4, $5, $6, $7) p',
        format_type(pg_typeof(key_type), NULL), format_type(pg_typeof(other_key_type), NULL))
      USING tbl, col, other, other_col, k, key_column, other_key_column;
END
$$;
COMMENT ON FUNCTION simhash_pairs_between(regclass, name, regclass, name, int4, name, name, anyelement, anycompatible) IS
    'the pairs of simhash_pairs_between with keys in their own types: key_type => NULL::the type of key_column (tid for ctid), other_key_type => NULL::the type of other_key_column';

-- The groups: connected components of the pairs (union-find), each named by its smallest key in
-- the key's own order.
CREATE FUNCTION _simhash_clusters(tbl regclass, col name, k int4, key_column name, as_type anyelement,
                                  verify_column name, min_jaccard float8, verify_options jsonb)
RETURNS TABLE (key anyelement, cluster_key anyelement)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    key_type text;
BEGIN
    SELECT CASE WHEN key_column IS NULL THEN 'tid' ELSE format_type(a.atttypid, a.atttypmod) END INTO key_type
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND (a.attname = key_column OR (key_column IS NULL AND a.attnum = -1));
    RETURN QUERY EXECUTE format(
        'WITH p AS (SELECT array_agg(s.a) AS a, array_agg(s.b) AS b
                      FROM @extschema@._simhash_checked_pairs($1, $2, $3, $4, NULL::text, $5, $6, $7) s),
              c AS (SELECT g.node, g.component FROM p, @extschema@._simhash_components(p.a, p.b) g)
         SELECT g.node::%1$s::%2$s, g.first::%1$s::%2$s
           FROM (SELECT c.node, first_value(c.node) OVER (PARTITION BY c.component ORDER BY c.node::%1$s) AS first
                   FROM c) g
          ORDER BY g.first::%1$s, g.node::%1$s',
        key_type, format_type(pg_typeof(as_type), NULL))
      USING tbl, col, k, key_column, verify_column, min_jaccard, verify_options;
END
$$;
COMMENT ON FUNCTION _simhash_clusters(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'internal: the groups of simhash_chained_groups, keys cast to the type of as_type; arguments unchecked';

-- Groups that chain (1.0's name for 0.3.0's simhash_clusters): keys as text, or in the key
-- column's own type (key_type => NULL::that type).
CREATE FUNCTION simhash_chained_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                                       verify jsonb DEFAULT NULL)
RETURNS TABLE (key text, group_key text)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    -- Keys as text are the typed form's with key_type text.
    SELECT * FROM @extschema@.simhash_chained_groups(tbl, col, k, key_column, NULL::text, verify)
$$;
COMMENT ON FUNCTION simhash_chained_groups(regclass, name, int4, name, jsonb) IS
    'groups that chain: rows linked by near pairs, a near b near c (connected components); every row with a near-copy and the smallest key of its group, as text; with verify => {"column": c} only through pairs whose texts pass (as in simhash_pairs)';

CREATE FUNCTION simhash_chained_groups(tbl regclass, col name, k int4, key_column name, key_type anyelement,
                                       verify jsonb DEFAULT NULL)
RETURNS TABLE (key anyelement, group_key anyelement)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM @extschema@._simhash_verify_parts('simhash_chained_groups', verify);
    PERFORM @extschema@._simhash_check_pairs_call('simhash_chained_groups', tbl, col, k, key_column, pg_typeof(key_type),
                                                  v.verify_column, v.min_jaccard, v.verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_clusters(tbl, col, k, key_column, key_type,
                                                             v.verify_column, v.min_jaccard, v.verify_options);
END
$$;
COMMENT ON FUNCTION simhash_chained_groups(regclass, name, int4, name, anyelement, jsonb) IS
    'groups that chain (connected components of the near pairs): every row with a near-copy and the smallest key of its group, in the key''s own type (key_type => NULL::that type); verify as in the text form';

-- Groups that do not chain: each row near its group's representative, the representative the
-- first row by the user's keep rule (keep_column ascending, or descending with keep_largest;
-- NULLs last; then the key), optionally only through pairs whose texts pass the exact check.
-- fn names the function the user called in errors. Arguments but keep_column and keep_largest
-- unchecked.
CREATE FUNCTION _simhash_representative_groups(fn text, tbl regclass, col name, k int4, key_column name, as_type anyelement,
                                               keep_column name, keep_largest bool,
                                               verify_column name, min_jaccard float8, verify_options jsonb)
RETURNS TABLE (key anyelement, representative anyelement)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    row_name text := coalesce(quote_ident(key_column), 'ctid');
    key_type text;
    pairs_a text[];
    pairs_b text[];
BEGIN
    IF keep_largest IS NULL THEN
        RAISE EXCEPTION '%: keep_largest must not be NULL', fn USING ERRCODE = '22023';
    END IF;
    IF keep_column IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                                                WHERE a.attrelid = tbl AND a.attname = keep_column AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION '%: column % of relation % does not exist (keep_column)', fn, quote_ident(keep_column), tbl
            USING ERRCODE = '42703', HINT = format('The columns of %s are: %s.', tbl, @extschema@._simhash_column_list(tbl));
    END IF;
    SELECT CASE WHEN key_column IS NULL THEN 'tid' ELSE format_type(a.atttypid, a.atttypmod) END INTO key_type
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND (a.attname = key_column OR (key_column IS NULL AND a.attnum = -1));
    -- The pairs (each once, keys as text, checked when asked); the rows on a pair in keep
    -- order; then the groups, in memory (_simhash_stars), keys back in their own type. Rows are
    -- found again by their key's text: a key column should be unique (rows that share a key
    -- are one node). On Citus the columns needed are first read from the shards into this node
    -- (Citus joins a distributed table with other rows only on its distribution column).
    -- The pairs first, in a statement of their own: one that also reads the table is sent
    -- whole to the shard of a single-shard Citus table, where their own distributed queries may
    -- not run.
    SELECT coalesce(array_agg(s.a), '{}'), coalesce(array_agg(s.b), '{}') INTO pairs_a, pairs_b
      FROM @extschema@._simhash_checked_pairs(tbl, col, k, key_column, NULL::text, verify_column, min_jaccard, verify_options) s;
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (SELECT u.a, u.b FROM unnest($1::text[], $2::text[]) u(a, b)),
              r AS %1$s (SELECT t.%2$s::text AS node, t.%2$s AS key, %3$s AS keep FROM %4$s t),
              n AS (SELECT p.a AS node FROM p UNION SELECT p.b FROM p),
              o AS (SELECT array_agg(n.node ORDER BY %5$s r.key) AS nodes FROM n JOIN r ON r.node = n.node)
         SELECT g.node::%6$s::%7$s, g.representative::%6$s::%7$s
           FROM o, (SELECT array_agg(p.a) AS a, array_agg(p.b) AS b FROM p) e,
                @extschema@._simhash_stars(coalesce(o.nodes, ''{}''), coalesce(e.a, ''{}''), coalesce(e.b, ''{}'')) g',
        CASE WHEN @extschema@._simhash_citus_table(tbl) THEN 'MATERIALIZED' ELSE 'NOT MATERIALIZED' END,
        row_name,
        CASE WHEN keep_column IS NULL THEN 'NULL::int4' ELSE format('t.%I', keep_column) END,
        tbl,
        CASE WHEN keep_column IS NULL THEN ''
             ELSE format('r.keep %s NULLS LAST, ', CASE WHEN keep_largest THEN 'DESC' ELSE 'ASC' END) END,
        key_type, format_type(pg_typeof(as_type), NULL))
      USING pairs_a, pairs_b;
END
$$;
COMMENT ON FUNCTION _simhash_representative_groups(text, regclass, name, int4, name, anyelement, name, bool, name, float8, jsonb) IS
    'internal: the groups of simhash_representative_groups, keys cast to the type of as_type; arguments but keep_column and keep_largest unchecked';

-- keep_column is text, not name, in the text form: a key type passed by position as NULL::text
-- then matches the typed form only.
CREATE FUNCTION simhash_representative_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                                              keep_column text DEFAULT NULL, keep_largest bool DEFAULT false,
                                              verify jsonb DEFAULT NULL)
RETURNS TABLE (key text, representative text)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    -- Keys as text are the typed form's with key_type text.
    SELECT * FROM @extschema@.simhash_representative_groups(tbl, col, k, key_column, NULL::text, keep_column,
                                                            keep_largest, verify)
$$;
COMMENT ON FUNCTION simhash_representative_groups(regclass, name, int4, name, text, bool, jsonb) IS
    'groups that do not chain: each row within k bits of its group''s representative (the first by keep_column, descending with keep_largest; then the key), keys as text; with verify => {"column": c} only through pairs whose texts pass (as in simhash_pairs)';

CREATE FUNCTION simhash_representative_groups(tbl regclass, col name, k int4, key_column name, key_type anyelement,
                                              keep_column name DEFAULT NULL, keep_largest bool DEFAULT false,
                                              verify jsonb DEFAULT NULL)
RETURNS TABLE (key anyelement, representative anyelement)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v record;
BEGIN
    SELECT * INTO v FROM @extschema@._simhash_verify_parts('simhash_representative_groups', verify);
    PERFORM @extschema@._simhash_check_pairs_call('simhash_representative_groups', tbl, col, k, key_column, pg_typeof(key_type),
                                                  v.verify_column, v.min_jaccard, v.verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_representative_groups('simhash_representative_groups', tbl, col, k, key_column,
                                                                          key_type, keep_column, keep_largest,
                                                                          v.verify_column, v.min_jaccard, v.verify_options);
END
$$;
COMMENT ON FUNCTION simhash_representative_groups(regclass, name, int4, name, anyelement, name, bool, jsonb) IS
    'groups that do not chain, keys in the key column''s own type (key_type => NULL::that type); as the text form';

-- 0.3.0's names of the grouping functions, kept for one release: they warn (01P01) and run the
-- functions above with their own arguments.
CREATE FUNCTION simhash_clusters(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                                 verify_column text DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                                 verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (key text, cluster_key text)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE WARNING 'simhash_clusters is deprecated and will be removed in 1.1' USING ERRCODE = '01P01',
        HINT = 'Use simhash_chained_groups(tbl, col, k, key_column, verify => ''{"column": ...}''), which returns (key, group_key).';
    PERFORM @extschema@._simhash_check_pairs_call('simhash_clusters', tbl, col, k, key_column, NULL,
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_clusters(tbl, col, k, key_column, NULL::text,
                                                             verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_clusters(regclass, name, int4, name, text, float8, jsonb) IS
    'deprecated (removed in 1.1): simhash_chained_groups';

CREATE FUNCTION simhash_clusters(tbl regclass, col name, k int4, key_column name, key_type anyelement,
                                 verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                                 verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (key anyelement, cluster_key anyelement)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE WARNING 'simhash_clusters is deprecated and will be removed in 1.1' USING ERRCODE = '01P01',
        HINT = 'Use simhash_chained_groups(tbl, col, k, key_column, key_type, verify => ''{"column": ...}''), which returns (key, group_key).';
    PERFORM @extschema@._simhash_check_pairs_call('simhash_clusters', tbl, col, k, key_column, pg_typeof(key_type),
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_clusters(tbl, col, k, key_column, key_type,
                                                             verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_clusters(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'deprecated (removed in 1.1): simhash_chained_groups';

CREATE FUNCTION simhash_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                               keep_by name DEFAULT NULL, keep_largest bool DEFAULT false,
                               verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                               verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (key text, representative text)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE WARNING 'simhash_groups is deprecated and will be removed in 1.1' USING ERRCODE = '01P01',
        HINT = 'Use simhash_representative_groups(tbl, col, k, key_column, keep_column => ..., verify => ''{"column": ...}'').';
    PERFORM @extschema@._simhash_check_pairs_call('simhash_groups', tbl, col, k, key_column, NULL,
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_representative_groups('simhash_groups', tbl, col, k, key_column, NULL::text,
                                                                          keep_by, keep_largest,
                                                                          verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_groups(regclass, name, int4, name, name, bool, name, float8, jsonb) IS
    'deprecated (removed in 1.1): simhash_representative_groups';

-- Concurrent ingests (issue 64). An ingest looks up and inserts its batch without a lock, then,
-- holding the target's lock only until it commits, checks its rows against the rows other
-- ingests committed after its lookups began, which it finds here: each ingest leaves, per leaf
-- table, the fingerprints it inserted (one row, tagged with its transaction). A row is needed
-- while some running ingest began its lookups before that transaction committed; each ingest
-- says since when it looks by holding a shared advisory lock whose key carries the oldest
-- transaction its snapshot waited for (_simhash_ingest_horizon reads them back).
-- Who may do what is in the policies, not in the callers' rights on the table: anyone may
-- read the rows of a table it may read (path: the leaf and the tables above it), add rows of
-- its own transaction only, and delete only rows no running ingest can need.
CREATE TABLE _simhash_ingest_log (
    xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    leaf oid NOT NULL,
    path oid[] NOT NULL,
    fps @extschema@.simhash64[] NOT NULL
);
CREATE INDEX _simhash_ingest_log_leaf ON _simhash_ingest_log (leaf);
COMMENT ON TABLE _simhash_ingest_log IS
    'internal (simhash_ingest): the fingerprints each ingest inserted, per leaf table, until no running ingest can need them';
ALTER TABLE _simhash_ingest_log ENABLE ROW LEVEL SECURITY;
GRANT SELECT, INSERT, DELETE ON _simhash_ingest_log TO PUBLIC;

-- The advisory lock key by which an ingest says that the rows of transactions before xmin are
-- visible to it: a tag in bits 48-62 and the 48 low bits of xmin (its epoch up to 65,535). A
-- key that is not one of ours but looks like it can only hold the horizon back.
CREATE FUNCTION _simhash_ingest_key(xmin xid8) RETURNS int8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (21320::int8 << 48) | (xmin::text::int8 & 281474976710655) $$;
COMMENT ON FUNCTION _simhash_ingest_key(xid8) IS
    'internal (simhash_ingest): the advisory lock key a running ingest holds to say that the log rows of transactions before xmin are visible to it';

-- The oldest transaction whose log rows a running ingest may still need: the least xmin any
-- running ingest holds a key for, and at most the oldest transaction still running.
CREATE FUNCTION _simhash_ingest_horizon() RETURNS xid8
LANGUAGE sql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT least(pg_snapshot_xmin(pg_current_snapshot()),
                 -- (min over int8: min(xid8) is new in PostgreSQL 15.)
                 min(((l.classid::int8 & 65535) << 32) | l.objid::int8)::text::xid8)
      FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND (l.classid::int8 >> 16) = 21320
       AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
$$;
COMMENT ON FUNCTION _simhash_ingest_horizon() IS
    'internal (simhash_ingest): log rows of transactions before this one no running ingest can need';

-- Whether the caller may read a log row of path (its leaf first): it may read one of those
-- tables, or the leaf is gone.
CREATE FUNCTION _simhash_ingest_log_readable(path oid[]) RETURNS bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(path) r(rel) WHERE has_any_column_privilege(r.rel, 'SELECT'))
           OR NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = path[1])
$$;
COMMENT ON FUNCTION _simhash_ingest_log_readable(oid[]) IS
    'internal (simhash_ingest): whether the caller may read a log row of these tables (a leaf and the tables above it)';

CREATE POLICY readers ON _simhash_ingest_log FOR SELECT USING (@extschema@._simhash_ingest_log_readable(path));
CREATE POLICY own_rows ON _simhash_ingest_log FOR INSERT
    WITH CHECK (xid = pg_current_xact_id() AND EXISTS (SELECT 1 FROM unnest(path) r(rel) WHERE has_table_privilege(r.rel, 'INSERT')));
CREATE POLICY unneeded_rows ON _simhash_ingest_log FOR DELETE USING (xid < (SELECT @extschema@._simhash_ingest_horizon()));

-- The leaf, then every table above it, of each of leaves.
CREATE FUNCTION _simhash_ingest_paths(leaves oid[]) RETURNS TABLE (leaf oid, path oid[])
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE up(leaf, rel, depth) AS (
        SELECT l, l, 0 FROM unnest(leaves) l
        UNION ALL
        SELECT up.leaf, i.inhparent, up.depth + 1 FROM up JOIN pg_inherits i ON i.inhrelid = up.rel WHERE up.depth < 100)
    SELECT up.leaf, array_agg(up.rel ORDER BY up.depth) FROM up GROUP BY up.leaf
$$;
COMMENT ON FUNCTION _simhash_ingest_paths(oid[]) IS
    'internal (simhash_ingest): each leaf with the tables above it, the leaf first';

-- Leaves in the log what this ingest inserted (pg_temp._simhash_ingest_done), per leaf table,
-- after removing the rows of tree no running ingest can need. The caller holds the lock of the
-- tree's root: other cleaners of these rows wait for it, those of other trees touch others.
CREATE FUNCTION _simhash_ingest_log_done(tree oid[], is_set bool) RETURNS void
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    waited text := current_setting('lock_timeout');
BEGIN
    -- Cleaning is optional: a row another session holds locked (anyone may DELETE) is left
    -- for a later ingest rather than waited for under the lock.
    PERFORM set_config('lock_timeout', '50ms', true);
    BEGIN
        DELETE FROM @extschema@._simhash_ingest_log l
         WHERE l.leaf = ANY (tree) AND l.xid < (SELECT @extschema@._simhash_ingest_horizon());
        -- The rows of tables dropped since, by one ingest at a time (until it commits), so that
        -- cleaners of different trees never wait for each other's rows.
        IF pg_try_advisory_xact_lock(hashtext('simhash_pg.ingest_log'), 0) THEN
            DELETE FROM @extschema@._simhash_ingest_log l
             WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = l.leaf)
               AND l.xid < (SELECT @extschema@._simhash_ingest_horizon());
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        NULL;
    END;
    PERFORM set_config('lock_timeout', waited, true);
    EXECUTE format('INSERT INTO @extschema@._simhash_ingest_log (leaf, path, fps)
                    SELECT p.leaf, p.path, f.fps
                      FROM (SELECT d.rel, array_agg(e.fp) AS fps
                              FROM pg_temp._simhash_ingest_done d, %s AS e(fp)
                             WHERE e.fp IS NOT NULL GROUP BY d.rel) f
                      JOIN @extschema@._simhash_ingest_paths((SELECT array_agg(DISTINCT d.rel) FROM pg_temp._simhash_ingest_done d)) p
                        ON p.leaf = f.rel',
                   CASE WHEN is_set THEN 'unnest(d.fp)' ELSE 'LATERAL (SELECT d.fp)' END);
END
$$;
COMMENT ON FUNCTION _simhash_ingest_log_done(oid[], bool) IS
    'internal (simhash_ingest): leaves the fingerprints this ingest inserted in the log for concurrent ingests, after removing the rows of tree no running ingest can need';

-- verify: the exact check, as in simhash_pairs; the trailing verify_column, min_jaccard and
-- verify_options are 0.3.0's form of it, accepted with a warning until 1.1.
CREATE FUNCTION simhash_ingest(target regclass, col name, source regclass, k int4 DEFAULT 3,
                               serialize bool DEFAULT true, verify jsonb DEFAULT NULL,
                               verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT NULL, verify_options jsonb DEFAULT NULL)
RETURNS TABLE (inserted int8, skipped int8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
-- A routed target's keys travel as text: every digit of a float key.
SET extra_float_digits = 3
AS $$
DECLARE
    cols text;
    problem record;
    r record;
    near bool;
    lookup text;
    total int8;
    done int8 := 0;
    xcols text;
    is_set bool;
    near_fn text;
    width int4;
    leaf regclass;
    unindexed bool;
    near_count int8;
    method text;
    near_ns int8[];
    mask int8;
    tree oid[];
    why_row_by_row text;
    routed record;            -- the target's routed layout (sql/routed.sql), if any
    routed_entered text[];
    routed_fp @extschema@.simhash64;
    routed_key text;
    -- A target column that fill triggers keep (simhash_refingerprint_statements): what they
    -- will store, computed from the source's text as they compute it; else the source's col.
    fill record;
    fp_of text;
    -- With verify_column: the feature set of source row x, and the check that confirms a
    -- candidate row t of the target against the set of a source row given as a parameter, as
    -- x.features or as b.features (a NULL text never passes). Without it: no set, no check.
    features_of text := 'NULL::int8[]';
    confirm_param text := '';
    confirm_x text := '';
    confirm_b text := '';
    started timestamptz := clock_timestamp();
    step timestamptz;
    last_notice timestamptz := clock_timestamp();
    -- serialize: the root of the target's tree, whose lock orders the ingests into it; logged:
    -- this ingest leaves its rows in _simhash_ingest_log for concurrent ones (not on Citus,
    -- whose ingests all go row by row under the lock); concurrent: it takes that lock only
    -- to check its rows against those committed since its snapshot seen, just before commit.
    root oid;
    logged bool := false;
    concurrent bool := false;
    seen pg_snapshot;
    others @extschema@.simhash64[];
    late int8;
    dedupe text; rest_fps text;  -- (the batch's own near-copies; its fingerprints in play)
    -- The batch decided again (concurrent): its rows still in play in order (ns, fps, kept:
    -- whether each went in), those that now go (gone_now), what goes out (dels) and in (adds).
    ns int8[];
    fps @extschema@.simhash64[];
    kept bool[];
    gone_now bool[];
    dels int8[];
    adds int8[];
    missing int8;
    slots int4;
    slot int4;
    insert_rows text;
    insert_more text;
    rids tid[];
BEGIN
    inserted := 0;
    skipped := 0;
    SELECT * INTO verify_column, min_jaccard, verify_options
      FROM @extschema@._simhash_verify_parts('simhash_ingest', verify, verify_column, min_jaccard, verify_options);
    SELECT * INTO fill FROM @extschema@._simhash_fill_recipe(target, col); -- no row: all NULL
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_ingest', target, col, 'ingest_target')
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_table_problem('simhash_ingest', source, col, 'ingest_source',
                                                                    target => target)
                    WHERE fill.text_column IS NULL
                   UNION ALL
                   SELECT '42703', format('simhash_ingest: column %s of relation %s does not exist', quote_ident(fill.text_column), source),
                          format('Column %s of %s is filled from %s by its triggers: the source needs that text column.',
                                 quote_ident(col), target, quote_ident(fill.text_column))
                    WHERE fill.text_column IS NOT NULL
                      AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = source AND a.attname = fill.text_column
                                                                   AND a.attnum > 0 AND NOT a.attisdropped)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_verify_problem('simhash_ingest', ARRAY[target, source], verify_column,
                                                                     min_jaccard, verify_options)
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_k_problem('simhash_ingest', k, 'near') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF serialize IS NULL THEN
        RAISE EXCEPTION 'simhash_ingest: serialize must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF serialize THEN
        -- Exact against other ingests into the target (below, where the way is chosen). Each
        -- lookup is a new statement, so under READ COMMITTED it sees what the ingests before
        -- ours committed; a REPEATABLE READ snapshot would not, so that combination is refused.
        IF current_setting('transaction_isolation') = 'repeatable read' THEN
            RAISE EXCEPTION 'simhash_ingest: serialize => true needs READ COMMITTED or SERIALIZABLE, not REPEATABLE READ'
                USING ERRCODE = '25001',
                      HINT = 'A REPEATABLE READ snapshot cannot see rows another ingest committed meanwhile.';
        END IF;
        -- The lock is keyed by the root of the target's partition (or inheritance) tree: an
        -- ingest into a partition and one into its parent look at the same rows.
        WITH RECURSIVE up(rel) AS (
            SELECT target::oid
            UNION SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.rel)
        SELECT min(u.rel) INTO root FROM up u WHERE NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = u.rel);
    END IF;
    fp_of := CASE WHEN fill.text_column IS NULL THEN format('x.%I', col)
                  WHEN fill.options IS NULL THEN format('@extschema@.simhash(x.%I::text)', fill.text_column)
                  ELSE format('@extschema@.simhash(x.%I::text, %L::jsonb)', fill.text_column, fill.options) END;
    IF verify_column IS NOT NULL THEN
        features_of := format('@extschema@.simhash_feature_set(x.%I::text, %L::jsonb)', verify_column, verify_options);
        confirm_param := format(' AND @extschema@.simhash_jaccard(@extschema@.simhash_feature_set(t.%I::text, %L::jsonb), $2) >= %s',
                                verify_column, verify_options, min_jaccard);
        confirm_x := format(' AND @extschema@.simhash_jaccard(@extschema@.simhash_feature_set(t.%I::text, %L::jsonb), x.features) >= %s',
                            verify_column, verify_options, min_jaccard);
        confirm_b := format(' AND @extschema@.simhash_jaccard(@extschema@.simhash_feature_set(t.%I::text, %L::jsonb), b.features) >= %s',
                            verify_column, verify_options, min_jaccard);
    END IF;
    IF @extschema@._simhash_citus_table(source) OR NOT @extschema@._simhash_heap_only(source) THEN
        -- A Citus source has no row addresses this node can name (each shard numbers its own
        -- rows), a columnar one none it can read: its rows are copied here first, in the order
        -- they are read.
        IF to_regclass('pg_temp.simhash_ingest_source') IS NOT NULL THEN
            DROP TABLE pg_temp.simhash_ingest_source;
        END IF;
        EXECUTE format('CREATE TEMP TABLE simhash_ingest_source ON COMMIT DROP AS SELECT * FROM %s', source);
        source := 'pg_temp.simhash_ingest_source'::regclass;
    END IF;
    -- The target's insertable columns that the source has too (generated ones, including the
    -- block columns, compute themselves).
    SELECT string_agg(quote_ident(t.attname), ', ' ORDER BY t.attnum),
           string_agg('x.' || quote_ident(t.attname), ', ' ORDER BY t.attnum) INTO cols, xcols
      FROM pg_attribute t
      JOIN pg_attribute s ON s.attrelid = source AND s.attname = t.attname AND s.attnum > 0 AND NOT s.attisdropped
     WHERE t.attrelid = target AND t.attnum > 0 AND NOT t.attisdropped
       AND t.attgenerated = '' AND t.attidentity <> 'a';
    IF cols IS NULL THEN
        RAISE EXCEPTION 'simhash_ingest: % and % have no insertable columns in common', target, source
            USING ERRCODE = '42703';
    END IF;
    SELECT * INTO routed FROM @extschema@._simhash_routed_layout(target);
    unindexed := routed.col IS DISTINCT FROM col
                 AND NOT EXISTS (SELECT 1 FROM @extschema@.simhash_block_columns(target) b
                                  WHERE b.source_column = col AND b.index IS NOT NULL);
    is_set := (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = target AND a.attname = col)
              = '@extschema@.simhash64[]'::regtype;
    near_fn := CASE WHEN is_set THEN '@extschema@.simhash_near_any' ELSE '@extschema@.simhash_near' END;
    -- The whole batch at once (below) assumes that every row it keeps goes into the target as
    -- it is. A row-level BEFORE INSERT trigger (which may change the fingerprint or drop the
    -- row) or an INSERT rule anywhere in the target's tree could break that, so there each row
    -- is looked up against the target as it stands, after the earlier rows went in.
    -- The target and its partitions or inheritance children, at every level.
    WITH RECURSIVE down(rel) AS (
        SELECT target::oid
        UNION SELECT i.inhrelid FROM pg_inherits i JOIN down ON i.inhparent = down.rel)
    SELECT array_agg(rel ORDER BY rel) INTO tree FROM down;
    IF @extschema@._simhash_citus_table(target) THEN
        why_row_by_row := 'citus';
    ELSIF EXISTS (SELECT 1 FROM pg_trigger g
                   WHERE g.tgrelid = ANY(tree) AND NOT g.tgisinternal AND g.tgenabled <> 'D'
                     AND (g.tgtype & 7) = 7 -- ROW, BEFORE, INSERT
                     -- A fill trigger of another column leaves col as it is; those of col
                     -- set it as fp_of computes it, when both are there with one rule.
                     AND NOT (g.tgfoid = '@extschema@._simhash_fill()'::regprocedure
                              AND (fill.text_column IS NOT NULL
                                   OR (@extschema@._simhash_trigger_args(g.tgargs, g.tgnargs))[2] IS DISTINCT FROM col)))
       OR EXISTS (SELECT 1 FROM pg_rewrite w WHERE w.ev_class = ANY(tree) AND w.ev_type = '3') THEN
        why_row_by_row := 'triggers';
        RAISE NOTICE 'simhash_ingest: % has a BEFORE INSERT row trigger or an INSERT rule: each row is looked up and inserted on its own (slower)',
            target;
    END IF;
    -- Row by row, or under SERIALIZABLE (one snapshot for the whole transaction), an ingest
    -- holds the lock from here to commit: ingests into the target go one after the other.
    -- Otherwise it says since when it looks (a key under the lock keys of running ingests, then
    -- its snapshot), looks up and inserts its batch beside other ingests, and takes the lock
    -- only to check its rows against theirs before it commits.
    -- Not with row-level security anywhere in the tree: an ingest's rows are read back
    -- (RETURNING), which those policies may refuse, and their fingerprints would reach readers
    -- the policies hide them from; every ingest into such a tree holds the lock from its start.
    -- Concurrent only where the rows that go can be deleted as they went in: the caller may
    -- DELETE, no DELETE trigger or rule would act (or refuse), and without verify, whose rows
    -- that stay may share a fingerprint (the rows that go are found by it).
    logged := serialize AND why_row_by_row IS DISTINCT FROM 'citus'
              AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = ANY (tree) AND c.relrowsecurity);
    concurrent := logged AND why_row_by_row IS NULL AND current_setting('transaction_isolation') = 'read committed'
                  AND verify_column IS NULL AND has_table_privilege(target, 'DELETE')
                  AND NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = ANY (tree) AND NOT g.tgisinternal
                                                             AND g.tgenabled <> 'D' AND (g.tgtype & 8) = 8)
                  AND NOT EXISTS (SELECT 1 FROM pg_rewrite w WHERE w.ev_class = ANY (tree) AND w.ev_type = '4');
    IF concurrent THEN
        -- A slot first (simhash_pg.ingest_slots, one per CPU by default), held to commit: past
        -- the cores, ingests at once only share them. The first free one (the session's own
        -- slot is free to it), else a wait in the shortest queue: a lock wait, which the
        -- deadlock detector sees. Each waiter holds a shared lock on its queue's key until it
        -- commits; a queue's length is its waiters not yet given a slot. Queues are chosen one
        -- session at a time, under a lock taken in a block that then rolls back, which releases
        -- it whatever happens (an error, a cancel): writers started together spread over the
        -- slots, and no slot idles while another has a queue.
        slots := @extschema@._simhash_ingest_slots();
        IF slots > 0 AND NOT EXISTS (SELECT FROM generate_series(0, slots - 1) s(i)
                                      WHERE pg_try_advisory_xact_lock(hashtext('simhash_pg.ingest_slot'), s.i)) THEN
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtext('simhash_pg.ingest_queue'), 0);
                SELECT s.i INTO slot
                  FROM generate_series(0, slots - 1) s(i)
                  LEFT JOIN pg_locks l
                    ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                   AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
                   AND l.classid = hashtext('simhash_pg.ingest_queue')::oid AND l.objid = (s.i + 1)::oid
                   AND NOT EXISTS (SELECT FROM pg_locks g
                                    WHERE g.pid = l.pid AND g.granted AND g.locktype = 'advisory' AND g.objsubid = 2
                                      AND g.database = l.database AND g.classid = hashtext('simhash_pg.ingest_slot')::oid)
                 GROUP BY s.i ORDER BY count(l.pid), s.i LIMIT 1;
                -- (Leaves the block, rolling back: the choice's lock goes, slot stays.)
                RAISE EXCEPTION USING ERRCODE = 'SHQ00', MESSAGE = 'simhash_ingest: queue chosen';
            EXCEPTION WHEN SQLSTATE 'SHQ00' THEN
                NULL;
            END;
            -- The queue's shared lock, outside the block (which would release it).
            PERFORM pg_advisory_xact_lock_shared(hashtext('simhash_pg.ingest_queue'), slot + 1);
            PERFORM pg_advisory_xact_lock(hashtext('simhash_pg.ingest_slot'), slot);
        END IF;
        PERFORM pg_advisory_xact_lock_shared(@extschema@._simhash_ingest_key(pg_snapshot_xmin(pg_current_snapshot())));
        seen := pg_current_snapshot();
    ELSIF serialize THEN
        PERFORM pg_advisory_xact_lock(hashtext('simhash_pg.ingest'), hashtext(root::text));
    END IF;
    IF logged THEN
        -- What this ingest inserts: the leaf, the row, its fingerprint as stored.
        IF to_regclass('pg_temp._simhash_ingest_done') IS NOT NULL THEN
            DROP TABLE pg_temp._simhash_ingest_done;
        END IF;
        EXECUTE format('CREATE TEMP TABLE _simhash_ingest_done ON COMMIT DROP AS
                        SELECT t.tableoid AS rel, t.ctid AS rid, t.%I AS fp FROM %s t WITH NO DATA', col, target);
    END IF;
    IF why_row_by_row IS NOT NULL THEN
        IF unindexed THEN
            RAISE NOTICE 'simhash_ingest: % has no block indexes on %: every lookup reads the whole table',
                target, quote_ident(col) USING HINT = format('SELECT simhash_create_index(%L, %L);', target::text, col);
        END IF;
        -- One lookup per source row (on Citus, sent to every shard: Citus does not join a local
        -- batch with a distributed table on a distance), in the source's order, so that a row is
        -- compared with the target as it stands, which by then holds the batch's earlier rows
        -- that went in.
        lookup := format('SELECT EXISTS (SELECT 1 FROM %s t WHERE %s(t.%I, $1, %s)%s)', target, near_fn, col, k,
                         confirm_param);
        IF routed.col IS NOT NULL THEN
            -- A routed layout: the lookup at the statement's top level, where the planner routes
            -- it (src/routed.rs); each row goes in with its routes, past the guard.
            lookup := format('SELECT true FROM %s t WHERE %s(t.%I, $1, %s)%s LIMIT 1', target, near_fn, col, k, confirm_param);
            SELECT e.entered INTO routed_entered
              FROM @extschema@._simhash_routed_enter('writer', jsonb_build_array(routed.label)::text) AS e(entered);
        END IF;
        EXECUTE format('SELECT count(*) FROM %s', source) INTO total;
        FOR r IN EXECUTE format('SELECT tableoid AS rel, ctid AS rid, %s AS fp, %s AS features FROM %s x ORDER BY tableoid, ctid',
                                fp_of, features_of, source) LOOP
            near := false;
            IF r.fp IS NOT NULL THEN
                EXECUTE lookup INTO near USING r.fp, r.features;
            END IF;
            IF near THEN
                skipped := skipped + 1;
            ELSE
                -- A source row is named by (tableoid, ctid): in a partitioned or inherited
                -- source, each partition or child has its own row (0,1). It is copied from that
                -- partition or child itself (ONLY), so that each copy reads one table.
                IF routed.col IS NULL AND logged THEN
                    EXECUTE format('WITH i AS (INSERT INTO %s (%s) SELECT %s FROM ONLY %s WHERE ctid = $1 RETURNING tableoid, ctid, %I)
                                    INSERT INTO pg_temp._simhash_ingest_done SELECT * FROM i',
                                   target, cols, cols, r.rel::regclass, col)
                      USING r.rid;
                ELSIF routed.col IS NULL THEN
                    EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM ONLY %s WHERE ctid = $1', target, cols, cols, r.rel::regclass)
                      USING r.rid;
                ELSE
                    EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM ONLY %s WHERE ctid = $1 RETURNING %I, %I::text',
                                   target, cols, cols, r.rel::regclass, routed.col, routed.key_column)
                      INTO routed_fp, routed_key USING r.rid;
                END IF;
                -- What went in: a trigger may have dropped the row.
                GET DIAGNOSTICS near_count = ROW_COUNT;
                IF routed.col IS NOT NULL AND near_count > 0 THEN
                    PERFORM @extschema@._simhash_add_routes(routed.routes, routed.blocks, routed_fp, routed_key);
                END IF;
                inserted := inserted + near_count;
            END IF;
            done := done + 1;
            IF clock_timestamp() - last_notice >= interval '2 s' THEN
                RAISE NOTICE 'simhash_ingest: % of % rows, % inserted, % skipped%',
                    done, total, inserted, skipped, @extschema@._simhash_took(started);
                last_notice := clock_timestamp();
            END IF;
        END LOOP;
        IF routed.col IS NOT NULL THEN
            PERFORM FROM @extschema@._simhash_routed_leave('writer', routed_entered);
        END IF;
        IF logged THEN
            PERFORM @extschema@._simhash_ingest_log_done(tree, is_set);
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    -- The batch as a whole, in the source's physical order (row n), each row named by
    -- (tableoid, ctid): in a partitioned or inherited source each partition or child has its own
    -- row (0,1). The same answer as taking the rows one by one in that order, each compared
    -- with the target as it stands (which by then holds the batch's earlier rows that went in),
    -- in three statements instead of two per row:
    -- 1. the rows near a row already in the target: one semi-join, which probes the target's
    --    block indexes once per batch row;
    -- 2. of the others, the rows near an earlier one that stays (the rule is sequential: a row
    --    dropped in step 1 or 2 does not count), in memory (_simhash_keep_first_of_near);
    -- 3. the rows that stay, inserted by one INSERT ... SELECT in batch order.
    IF to_regclass('pg_temp._simhash_ingest_batch') IS NOT NULL THEN
        DROP TABLE pg_temp._simhash_ingest_batch;
    END IF;
    EXECUTE format('CREATE TEMP TABLE _simhash_ingest_batch ON COMMIT DROP AS
                    SELECT row_number() OVER (ORDER BY tableoid, ctid) AS n, tableoid AS rel, ctid AS rid,
                           %s AS fp, false AS gone, false AS dup, %s AS features
                      FROM %s x', fp_of, features_of, source);
    ANALYZE pg_temp._simhash_ingest_batch;
    SELECT count(*) INTO total FROM pg_temp._simhash_ingest_batch;
    -- Each table of the target's tree on its own (ONLY: a partitioned or inherited target's
    -- join condition would reach its partitions without their block indexes), in whichever of
    -- three ways costs least for its size and block layout (_simhash_ingest_method): one
    -- lookup per batch row through its block indexes; one pass over one of its covering block
    -- indexes, each entry checked against the batch in memory (_simhash_batch_near); or hash
    -- joins on masked keys (simhash_pairs_between's), each reading batch and table once. A
    -- lookup through 8-bit blocks reads thousands of index entries; without block indexes it
    -- reads the whole table.
    FOR leaf IN SELECT c.oid::regclass FROM pg_class c WHERE c.oid = ANY(tree) AND c.relkind <> 'p' ORDER BY c.oid LOOP
        method := CASE WHEN is_set OR k >= 64 THEN 'lookups'
                       ELSE @extschema@._simhash_ingest_method(leaf, col, k, total::float8) END;
        near_ns := NULL;
        IF method = 'pass' THEN
            EXECUTE 'SELECT @extschema@._simhash_batch_near($1, $2,
                              (SELECT array_agg(CASE WHEN b.gone THEN NULL ELSE b.fp END ORDER BY b.n)
                                 FROM pg_temp._simhash_ingest_batch b), $3)'
              INTO near_ns USING leaf, col, k;
            -- NULL: no covering index after all (dropped meanwhile): the lookups below. With
            -- verify_column the rows it found are candidates, confirmed by lookups of their own.
            method := CASE WHEN near_ns IS NULL THEN 'lookups' WHEN verify_column IS NOT NULL THEN 'confirm' END;
            IF method IS NULL THEN
                EXECUTE 'UPDATE pg_temp._simhash_ingest_batch b SET gone = true FROM unnest($1) AS u(n) WHERE b.n = u.n'
                  USING near_ns;
                GET DIAGNOSTICS done = ROW_COUNT;
                skipped := skipped + done;
            END IF;
        END IF;
        IF method = 'joins' THEN
            FOREACH mask IN ARRAY @extschema@._simhash_cross_masks(k, total, @extschema@._simhash_rows_estimate(leaf)) LOOP
                EXECUTE format('UPDATE pg_temp._simhash_ingest_batch b SET gone = true
                                  FROM (SELECT DISTINCT x.n FROM pg_temp._simhash_ingest_batch x JOIN ONLY %s t
                                          ON (t.%I::int8 & $1) = (x.fp::int8 & $1)
                                         WHERE NOT x.gone AND NOT (@extschema@.hamming_distance(t.%I, x.fp) > $2)%s) near
                                 WHERE b.n = near.n',
                               leaf, col, col, confirm_x)
                  USING mask, k;
                GET DIAGNOSTICS done = ROW_COUNT;
                skipped := skipped + done;
            END LOOP;
        ELSIF method IN ('lookups', 'confirm') THEN
            IF unindexed THEN
                RAISE NOTICE 'simhash_ingest: % has no block indexes on %: every lookup reads the whole table',
                    target, quote_ident(col) USING HINT = format('SELECT simhash_create_index(%L, %L);', target::text, col);
                unindexed := false; -- said once
            END IF;
            EXECUTE format('UPDATE pg_temp._simhash_ingest_batch b SET gone = true
                             WHERE NOT b.gone AND b.fp IS NOT NULL%s
                               AND EXISTS (SELECT 1 FROM ONLY %s t WHERE %s(t.%I, b.fp, %s)%s)',
                           CASE WHEN method = 'confirm' THEN ' AND b.n = ANY ($1)' ELSE '' END,
                           leaf, near_fn, col, k, confirm_b)
              USING near_ns;
            GET DIAGNOSTICS done = ROW_COUNT;
            skipped := skipped + done;
        END IF;
    END LOOP;
    IF clock_timestamp() - started >= interval '1 s' THEN
        RAISE NOTICE 'simhash_ingest: % of % rows near a row of the target%', skipped, total, @extschema@._simhash_took(started);
    END IF;
    step := clock_timestamp();
    -- A set's elements go position by position, NULL where a row has fewer.
    width := 1;
    IF is_set THEN
        EXECUTE 'SELECT coalesce(max(cardinality(b.fp)), 1) FROM pg_temp._simhash_ingest_batch b' INTO width;
    END IF;
    -- The fingerprints of the rows not gone (batch y), in order: a set's position by position,
    -- width of them a row ($1).
    rest_fps := CASE WHEN is_set
                     THEN '(SELECT array_agg(z.fp[array_lower(z.fp, 1) + g - 1] ORDER BY z.n, g) FROM pg_temp._simhash_ingest_batch z, generate_series(1, $1) g WHERE NOT z.gone)'
                     ELSE 'array_agg(y.fp ORDER BY y.n)' END;
    -- (dup: near an earlier row of the batch; gone: near a row of the target.)
    dedupe := format(
        'UPDATE pg_temp._simhash_ingest_batch b SET dup = true
           FROM (SELECT array_agg(y.n ORDER BY y.n) AS ns, %s AS fps
                   FROM pg_temp._simhash_ingest_batch y WHERE NOT y.gone) rest,
                unnest(rest.ns, %s) AS u(n, keep)
          WHERE b.n = u.n AND NOT u.keep',
        rest_fps,
        CASE WHEN verify_column IS NULL THEN '@extschema@._simhash_keep_first_of_near(rest.fps, $1, $2)'
             -- The rows' feature sets one after another, and each row's count (NULL: no text).
             ELSE '@extschema@._simhash_keep_first_of_verified(rest.fps, $1, $2,
                       coalesce((SELECT array_agg(e.h ORDER BY z.n, e.i) FROM pg_temp._simhash_ingest_batch z,
                                        unnest(z.features) WITH ORDINALITY AS e(h, i) WHERE NOT z.gone), ''{}''),
                       coalesce((SELECT array_agg(cardinality(z.features) ORDER BY z.n)
                                   FROM pg_temp._simhash_ingest_batch z WHERE NOT z.gone), ''{}''),
                       $3)' END);
    EXECUTE dedupe USING width, k, min_jaccard;
    GET DIAGNOSTICS done = ROW_COUNT;
    skipped := skipped + done;
    IF clock_timestamp() - step >= interval '1 s' THEN
        RAISE NOTICE 'simhash_ingest: % of the other rows near an earlier one of the batch%', done, @extschema@._simhash_took(step);
    END IF;
    step := clock_timestamp();
    -- The rows that stay; insert_more: those of the rows numbered $1 (below).
    insert_rows := format('INSERT INTO %s (%s) SELECT %s FROM %s x JOIN pg_temp._simhash_ingest_batch b
                            ON x.tableoid = b.rel AND x.ctid = b.rid WHERE NOT b.gone AND NOT b.dup ORDER BY b.n',
                          target, cols, xcols, source);
    insert_more := format('INSERT INTO %s (%s) SELECT %s FROM %s x JOIN pg_temp._simhash_ingest_batch b
                            ON x.tableoid = b.rel AND x.ctid = b.rid JOIN unnest($1::int8[]) AS a(n) ON a.n = b.n ORDER BY b.n',
                          target, cols, xcols, source);
    IF logged THEN
        insert_rows := format('WITH i AS (%s RETURNING tableoid, ctid, %I) INSERT INTO pg_temp._simhash_ingest_done SELECT * FROM i',
                              insert_rows, col);
        insert_more := format('WITH i AS (%s RETURNING tableoid, ctid, %I) INSERT INTO pg_temp._simhash_ingest_done SELECT * FROM i',
                              insert_more, col);
    END IF;
    EXECUTE insert_rows;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    IF clock_timestamp() - step >= interval '1 s' THEN
        RAISE NOTICE 'simhash_ingest: % rows inserted%', inserted, @extschema@._simhash_took(step);
    END IF;
    IF concurrent THEN
        -- Ingests into the target check their rows one at a time, from here to commit, against
        -- the rows the others committed after this one's snapshot (their log rows this snapshot
        -- does not see; those before it, its lookups saw). A batch row goes when one of those
        -- rows, still in the target, lies within k of it. Then the batch is decided again as one
        -- ingest after the other would decide it, in one pass in memory: the rows that go are
        -- out, the batch's own near-copies are found again among the rest, and what that changes
        -- is deleted or inserted. This runs while the other ingests wait, so the table is
        -- probed only for the others' fingerprints near a batch row (one probe each) and the
        -- batch table is read once, not updated row by row.
        PERFORM pg_advisory_xact_lock(hashtext('simhash_pg.ingest'), hashtext(root::text));
        step := clock_timestamp();
        SELECT array_agg(e.fp) INTO others
          FROM @extschema@._simhash_ingest_log l, unnest(l.fps) AS e(fp)
         WHERE l.leaf = ANY(tree) AND l.xid <> pg_current_xact_id() AND NOT pg_visible_in_snapshot(l.xid, seen);
        gone_now := NULL;
        IF others IS NOT NULL THEN
            -- The rows still in play (not near the target before), in order, and whether each
            -- went in; of the others, those within k of one of them (for a set, of one element).
            EXECUTE format('SELECT array_agg(y.n ORDER BY y.n), %s, array_agg(NOT y.dup ORDER BY y.n)
                              FROM pg_temp._simhash_ingest_batch y WHERE NOT y.gone', rest_fps)
              INTO ns, fps, kept USING width;
            SELECT array_agg(o.fp) INTO others
              FROM unnest(others, @extschema@._simhash_near_any_of(others, 1, coalesce(fps, '{}'), k)) AS o(fp, near)
             WHERE o.near;
        END IF;
        IF others IS NOT NULL THEN
            -- The lookups leave this ingest's own rows out by their address.
            CREATE INDEX ON pg_temp._simhash_ingest_done (rel, rid);
            ANALYZE pg_temp._simhash_ingest_done;
            IF is_set THEN
                -- Sets are near where the same position is, which the log's elements do not
                -- say: each row near one of them is looked up, as the first lookups were.
                EXECUTE format('SELECT array_agg(CASE WHEN u.near THEN EXISTS (SELECT 1 FROM %s t WHERE %s(t.%I, b.fp, %s)
                                                                          AND NOT EXISTS (SELECT 1 FROM pg_temp._simhash_ingest_done d
                                                                                           WHERE d.rel = t.tableoid AND d.rid = t.ctid))
                                                      ELSE false END ORDER BY u.n)
                                  FROM unnest($1, @extschema@._simhash_near_any_of($2, $3, $4, $5)) AS u(n, near)
                                  JOIN pg_temp._simhash_ingest_batch b ON b.n = u.n',
                               target, near_fn, col, k)
                  INTO gone_now USING ns, fps, width, others, k;
            ELSE
                -- Those still in the target (a row of the same fingerprint: one block index
                -- probe each); a batch row goes when one of them is within k of it.
                EXECUTE format('SELECT array_agg(o.fp) FROM unnest($1) AS o(fp)
                                 WHERE EXISTS (SELECT 1 FROM %s t WHERE %s(t.%I, o.fp, 0)
                                                  AND NOT EXISTS (SELECT 1 FROM pg_temp._simhash_ingest_done d
                                                                   WHERE d.rel = t.tableoid AND d.rid = t.ctid))',
                               target, near_fn, col)
                  INTO others USING others;
                IF others IS NOT NULL THEN
                    gone_now := @extschema@._simhash_near_any_of(fps, 1, others, k);
                END IF;
            END IF;
        END IF;
        IF true = ANY (gone_now) THEN
            -- dels: rows that went in and now go; adds: rows that now stay and did not go in.
            SELECT array_agg(u.n) FILTER (WHERE u.kept AND NOT u.stays),
                   array_agg(u.n) FILTER (WHERE u.stays AND NOT u.kept),
                   count(*) FILTER (WHERE u.gone)
              INTO dels, adds, late
              FROM unnest(ns, kept, gone_now, @extschema@._simhash_keep_first_of_rest(fps, width, gone_now, k))
                   AS u(n, kept, gone, stays);
            missing := coalesce(cardinality(dels), 0);
            IF dels IS NOT NULL THEN
                FOR leaf IN SELECT DISTINCT d.rel FROM pg_temp._simhash_ingest_done d LOOP
                    -- A row that went in is found by its fingerprint: two rows that stay never
                    -- have the same one (a NULL one never goes).
                    EXECUTE format('WITH dropped AS (
                                        DELETE FROM pg_temp._simhash_ingest_done d
                                         USING pg_temp._simhash_ingest_batch b, unnest($2::int8[]) AS o(n)
                                         WHERE d.rel = $1 AND b.n = o.n AND d.fp %s b.fp
                                        RETURNING d.rid)
                                    SELECT array_agg(o.rid) FROM dropped o',
                                   CASE WHEN is_set THEN '=' ELSE 'OPERATOR(@extschema@.=)' END)
                      INTO rids USING leaf, dels;
                    IF rids IS NOT NULL THEN
                        EXECUTE format('DELETE FROM ONLY %s WHERE ctid = ANY ($1)', leaf) USING rids;
                        GET DIAGNOSTICS done = ROW_COUNT;
                        missing := missing - done;
                        IF done <> cardinality(rids) THEN
                            missing := -1;
                        END IF;
                    END IF;
                END LOOP;
            END IF;
            -- Every row that goes was found and deleted, or the ingest fails: never two near
            -- rows committed, never a row that stays deleted.
            IF missing <> 0 THEN
                RAISE EXCEPTION 'simhash_ingest: could not remove the rows of % near rows another ingest committed meanwhile', target
                    USING ERRCODE = '40001',
                          HINT = 'The stored fingerprints differ from the ones the ingest computed, or rows were changed meanwhile; run the ingest again.';
            END IF;
            IF adds IS NOT NULL THEN
                EXECUTE insert_more USING adds;
            END IF;
            SELECT count(*) INTO inserted FROM pg_temp._simhash_ingest_done;
            skipped := total - inserted;
            RAISE NOTICE 'simhash_ingest: % rows near rows another ingest committed meanwhile%', late, @extschema@._simhash_took(step);
        END IF;
    END IF;
    IF logged THEN
        PERFORM @extschema@._simhash_ingest_log_done(tree, is_set);
    END IF;
    DROP TABLE pg_temp._simhash_ingest_batch;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION simhash_ingest(regclass, name, regclass, int4, bool, jsonb, name, float8, jsonb) IS
    'inserts the rows of source into target, skipping each row whose col is within k bits of a row already in target (earlier batch rows included), and with verify => {"column": c} whose texts c also pass (as in simhash_pairs); serialize: exact against other ingests into target (they check their rows against each other''s one at a time, just before commit); verify_column, min_jaccard, verify_options: deprecated (0.3.0), removed in 1.1';

-- The guard (issue 64): no two rows of tbl within k bits of each other, whoever writes them.
-- Two row triggers (src/guard.rs): a BEFORE INSERT OR UPDATE trigger that refuses
-- (23P01) or skips a row near one the table holds now, and a deferred constraint trigger that
-- at commit, holding the table's lock (an advisory lock SQL cannot take) to commit, looks each row written up
-- again in the latest snapshot: guarded transactions check one at a time, each after those
-- before it committed. Found by their functions and first argument, never by name.
COMMENT ON FUNCTION _simhash_guard_row() IS
    'internal (simhash_guard): BEFORE INSERT OR UPDATE row trigger refusing (23P01) or skipping a row within k bits of another row of the guarded table';
COMMENT ON FUNCTION _simhash_guard_check() IS
    'internal (simhash_guard): deferred AFTER INSERT OR UPDATE row trigger checking each row written again at commit, under the guarded table''s lock, in the latest snapshot';
CREATE FUNCTION _simhash_guard_triggers(tbl regclass)
RETURNS TABLE (trigger_name name, col name, k int4, on_conflict text, commit_check bool)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT g.tgname, a[1]::name, a[2]::int4, a[3], g.tgfoid = '@extschema@._simhash_guard_check()'::regprocedure
      FROM pg_trigger g, LATERAL (SELECT @extschema@._simhash_trigger_args(g.tgargs, g.tgnargs)) AS x(a)
     WHERE g.tgrelid = tbl AND g.tgparentid = 0 AND g.tgnargs = 3
       AND g.tgfoid IN ('@extschema@._simhash_guard_row()'::regprocedure, '@extschema@._simhash_guard_check()'::regprocedure)
$$;
COMMENT ON FUNCTION _simhash_guard_triggers(regclass) IS
    'internal (simhash_guard): the guard triggers made on tbl itself (not those partitions inherit), with their column, k and mode';

CREATE FUNCTION simhash_guard(tbl regclass, col name, k int4 DEFAULT 3, on_conflict text DEFAULT 'error')
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
    pair record;
    base text;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_guard', tbl, col, 'index')
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_k_problem('simhash_guard', k, 'pairs') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF on_conflict IS NULL OR on_conflict NOT IN ('error', 'skip') THEN
        RAISE EXCEPTION 'simhash_guard: on_conflict must be ''error'' or ''skip'', not %', coalesce(quote_literal(on_conflict), 'NULL')
            USING ERRCODE = '22023',
                  HINT = '''error'' refuses a row within k bits of another (SQLSTATE 23P01); ''skip'' leaves it out.';
    END IF;
    IF @extschema@._simhash_citus_table(tbl) THEN
        RAISE EXCEPTION 'simhash_guard: % is a Citus table', tbl
            USING ERRCODE = '0A000',
                  HINT = 'Its rows live on the workers, where these triggers would see one shard each; load it with simhash_ingest.';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col AND a.attgenerated NOT IN ('', 's')) THEN
        RAISE EXCEPTION 'simhash_guard: column % of % is a virtual generated column', quote_ident(col), tbl
            USING ERRCODE = '0A000', HINT = 'Guard a stored column (GENERATED ALWAYS AS (...) STORED).';
    END IF;
    -- The rows held are checked in this statement's snapshot, taken after the lock only under
    -- READ COMMITTED: an older one would miss rows committed before the lock.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'simhash_guard: needs READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = '25001',
                  HINT = 'A transaction snapshot taken before the table''s lock could miss rows committed meanwhile.';
    END IF;
    -- Row triggers on a parent of inheritance children (not partitions) do not fire for rows
    -- written into the children, whose rows its lookups read.
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = tbl) = 'r'
       AND EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhparent = tbl) THEN
        RAISE EXCEPTION 'simhash_guard: % has inheritance children', tbl
            USING ERRCODE = '0A000',
                  HINT = 'Rows written into a child would not be checked: make it a partitioned table, or guard each table on its own.';
    END IF;
    -- As CREATE TRIGGER would, now: writers wait until the rows are checked and the triggers in.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    -- A plain table's pairs by simhash_pairs' joins; a partitioned one's (whose ctid names no
    -- row) by one lookup per row.
    IF (SELECT c.relkind FROM pg_class c WHERE c.oid = tbl) = 'r' THEN
        SELECT p.a, p.b, p.distance INTO pair FROM @extschema@.simhash_pairs(tbl, col, k) p LIMIT 1;
    ELSE
        EXECUTE format('SELECT format(''%%s %%s'', x.tableoid::regclass, x.ctid) AS a, format(''%%s %%s'', y.tableoid::regclass, y.ctid) AS b
                          FROM %s x, LATERAL (SELECT z.tableoid, z.ctid FROM %s z WHERE %s(z.%I, x.%I, %s)
                                                 AND (z.tableoid, z.ctid) <> (x.tableoid, x.ctid) LIMIT 1) y
                         WHERE x.%I IS NOT NULL LIMIT 1',
                       tbl, tbl,
                       CASE WHEN (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col)
                                 = '@extschema@.simhash64[]'::regtype
                            THEN '@extschema@.simhash_near_any' ELSE '@extschema@.simhash_near' END,
                       col, col, k, col) INTO pair;
    END IF;
    IF pair.a IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_guard: % already holds two rows within % bits in %', tbl, k, quote_ident(col)
            USING ERRCODE = '23P01',
                  DETAIL = format('Rows %s and %s are within %s bits.', pair.a, pair.b, k),
                  HINT = format('Remove the near-copies first: SELECT * FROM simhash_pairs(%L, %L, %s);', tbl::text, col, k);
    END IF;
    -- A guard of col again: the new one replaces it.
    PERFORM @extschema@.simhash_drop_guard(tbl, col);
    base := CASE WHEN octet_length('~simhash_guard_' || col || '_check') <= 63 THEN 'simhash_guard_' || col
                 ELSE 'simhash_guard_' || left(md5(col), 16) END;
    -- Named to fire after the table's other BEFORE triggers (they fire in name order), which
    -- may set or change the fingerprint; on every UPDATE: an INSERT in the command of an
    -- UPDATE is a row moving to another partition, refused rather than skipped (src/guard.rs).
    EXECUTE format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@._simhash_guard_row(%L, %L, %L)',
                   '~' || base, tbl, col, k, on_conflict);
    -- Every UPDATE: a row this transaction wrote and then changed otherwise has a new version
    -- whose check only this event makes (its function passes the others at once).
    EXECUTE format('CREATE CONSTRAINT TRIGGER %I AFTER INSERT OR UPDATE ON %s DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION @extschema@._simhash_guard_check(%L, %L, %L)',
                   base || '_check', tbl, col, k, on_conflict);
END
$$;
COMMENT ON FUNCTION simhash_guard(regclass, name, int4, text) IS
    'guards tbl: no two rows whose col lies within k bits, whoever writes them (INSERT, COPY, UPDATE, any session); a row within k bits of another is refused (23P01) or, with on_conflict => ''skip'', left out; checks the rows tbl holds first';

CREATE FUNCTION simhash_drop_guard(tbl regclass, col name)
RETURNS bool
LANGUAGE plpgsql VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
    found bool := false;
BEGIN
    FOR t IN SELECT g.trigger_name FROM @extschema@._simhash_guard_triggers(tbl) g WHERE g.col = simhash_drop_guard.col LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t.trigger_name, tbl);
        found := true;
    END LOOP;
    RETURN found;
END
$$;
COMMENT ON FUNCTION simhash_drop_guard(regclass, name) IS
    'removes the guard simhash_guard put on col of tbl; false when there was none';

CREATE FUNCTION simhash_guards(tbl regclass)
RETURNS TABLE (col name, k int4, on_conflict text)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT g.col, g.k, g.on_conflict FROM @extschema@._simhash_guard_triggers(tbl) g WHERE g.commit_check ORDER BY g.col
$$;
COMMENT ON FUNCTION simhash_guards(regclass) IS
    'the guards on tbl (simhash_guard): column, k and on_conflict';
