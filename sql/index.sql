-- Block-column indexes: the helpers that add and remove them, and the nearest-neighbour search
-- that widens its radius over them. The planner side (how WHERE simhash_near(...) finds these
-- columns) is the support function in src/planner.rs; what it sees is simhash_block_columns().
--
-- Every function here runs as its caller (no SECURITY DEFINER), pins search_path, and names the
-- extension's objects through @extschema@, so neither the caller's search_path nor objects the
-- caller created can change what it does. Table and column names only ever reach SQL through
-- regclass output and format('%I').

-- The name of block column i of m of column col: '<col>_block<i>of<m>', the col part shortened
-- (whole characters) so that the name fits in 63 bytes.
CREATE FUNCTION simhash_block_column_name(col name, i int4, m int4) RETURNS name
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    suffix text := format('_block%sof%s', i, m);
    prefix text := col;
BEGIN
    WHILE octet_length(prefix) + octet_length(suffix) > 63 LOOP
        prefix := left(prefix, -1);
    END LOOP;
    RETURN prefix || suffix;
END
$$;
COMMENT ON FUNCTION simhash_block_column_name(name, int4, int4) IS
    'name simhash_create_index gives block column i of m of column col: <col>_block<i>of<m>, shortened to 63 bytes';

-- Checks shared by every helper that takes a table and a fingerprint column: neither is NULL,
-- the relation exists, and col is one of its simhash64 columns. Returns the column's attnum.
CREATE FUNCTION simhash_check_column(fn text, tbl regclass, col name) RETURNS int2
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col_num int2;
    col_type oid;
BEGIN
    IF tbl IS NULL OR col IS NULL THEN
        RAISE EXCEPTION '%: the table and the column must not be NULL', fn USING ERRCODE = '22004';
    END IF;
    PERFORM 1 FROM pg_class c WHERE c.oid = tbl;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: relation with OID % does not exist', fn, tbl::oid USING ERRCODE = '42P01';
    END IF;
    SELECT a.attnum, a.atttypid INTO col_num, col_type
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: column % of relation % does not exist', fn, quote_ident(col), tbl
            USING ERRCODE = '42703';
    END IF;
    IF col_type <> '@extschema@.simhash64'::regtype THEN
        RAISE EXCEPTION '%: column % of relation % is of type %, not simhash64',
            fn, quote_ident(col), tbl, format_type(col_type, NULL) USING ERRCODE = '42804';
    END IF;
    RETURN col_num;
END
$$;
COMMENT ON FUNCTION simhash_check_column(text, regclass, name) IS
    'checks for the helpers: tbl exists and col is one of its simhash64 columns; returns its attnum';

-- The checks of the helpers that change a table: those of simhash_check_column, and tbl is a
-- table the caller owns.
CREATE FUNCTION simhash_check_indexable(fn text, tbl regclass, col name) RETURNS int2
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col_num int2 := @extschema@.simhash_check_column(fn, tbl, col);
    kind "char";
    owner oid;
BEGIN
    SELECT c.relkind, c.relowner INTO kind, owner FROM pg_class c WHERE c.oid = tbl;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%: % is not a table', fn, tbl USING ERRCODE = '42809',
            HINT = 'Block columns are generated columns; only tables and partitioned tables have them.';
    END IF;
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION '%: must be owner of table %', fn, tbl USING ERRCODE = '42501';
    END IF;
    RETURN col_num;
END
$$;
COMMENT ON FUNCTION simhash_check_indexable(text, regclass, name) IS
    'checks for the index helpers: tbl is a table the caller owns and col is one of its simhash64 columns';

-- ' in 12.3 s' for progress notices, or '' under a second (so small runs print the same
-- text every time).
CREATE FUNCTION simhash_took(started timestamptz) RETURNS text
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s >= 1 THEN format(' in %s s', round(s::numeric, 1)) ELSE '' END
      FROM (SELECT extract(epoch FROM clock_timestamp() - started) AS s) x
$$;
COMMENT ON FUNCTION simhash_took(timestamptz) IS
    'progress-notice helper: elapsed time since started as '' in N s'', empty under one second';

COMMENT ON FUNCTION simhash_index_probe(regclass[], simhash64, int4) IS
    'rows within k bits of query, as TIDs, found through covering block indexes (index i = block i); what WHERE simhash_near(...) runs as a TID scan';

CREATE FUNCTION simhash_create_index(tbl regclass, col name, max_k int4 DEFAULT 3, blocks int4 DEFAULT NULL,
                                     covering bool DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m int4;
    i int4;
    have name[];
    indexed bool[];
    adds text[] := '{}';
    comments text[] := '{}';
    new_cols text[] := '{}';
    col_name name;
    stmt text;
    started timestamptz;
    rows_estimate float4;
    built int4 := 0;
    to_build int4;
    in_expressions bool;
    index_name text;
    marker text;
BEGIN
    PERFORM @extschema@.simhash_check_indexable('simhash_create_index', tbl, col);
    -- A generated col (simhash(body), say) cannot feed generated block columns (PostgreSQL
    -- forbids it), so its blocks go in expression indexes on simhash_block(col, i, m) instead.
    SELECT a.attgenerated <> '' INTO in_expressions
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col;
    IF max_k IS NULL OR max_k < 0 OR max_k > 63 THEN
        RAISE EXCEPTION 'simhash_create_index: max_k must be between 0 and 63, got %', coalesce(max_k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    m := coalesce(blocks, greatest(max_k + 1, 2));
    IF m < 2 OR m > 64 THEN
        RAISE EXCEPTION 'simhash_create_index: blocks must be between 2 and 64, got %', m USING ERRCODE = '22023';
    END IF;
    IF covering IS NULL THEN
        RAISE EXCEPTION 'simhash_create_index: covering must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- Serialise helpers on this table (this lock conflicts with itself) while reads go on; the
    -- ALTER TABLE below takes ACCESS EXCLUSIVE only if columns are missing.
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);

    -- What exists already, made by this function or by hand: block i of m of col, indexed as
    -- asked (covering or not) or not.
    have := array_fill(NULL::name, ARRAY[m], ARRAY[0]);
    indexed := array_fill(false, ARRAY[m], ARRAY[0]);
    FOR col_name, i, built IN
        SELECT b.column_name, b.block, (b.index IS NOT NULL AND (b.covering OR NOT simhash_create_index.covering))::int AS ok
          FROM @extschema@.simhash_block_columns(tbl) b
         WHERE b.source_column = col AND b.blocks = m
         ORDER BY b.block, ok DESC
    LOOP
        indexed[i] := indexed[i] OR built = 1;
        have[i] := coalesce(have[i], col_name);
    END LOOP;
    built := 0;

    FOR i IN 0 .. m - 1 LOOP
        IF have[i] IS NULL AND NOT in_expressions THEN
            col_name := @extschema@.simhash_block_column_name(col, i, m);
            adds := adds || format('ADD COLUMN %I int8 GENERATED ALWAYS AS (@extschema@.simhash_block(%I, %s, %s)) STORED',
                                   col_name, col, i, m);
            comments := comments || format('COMMENT ON COLUMN %s.%I IS %L', tbl, col_name,
                format('simhash_pg: block %s of %s of column %s, added by simhash_create_index', i, m, quote_ident(col)));
            new_cols := new_cols || col_name::text;
            have[i] := col_name;
        END IF;
    END LOOP;

    SELECT c.reltuples INTO rows_estimate FROM pg_class c WHERE c.oid = tbl;
    IF cardinality(adds) > 0 THEN
        RAISE NOTICE 'simhash_create_index: adding % block column(s) to % (rewrites the table%)',
            cardinality(adds), tbl,
            CASE WHEN rows_estimate > 0 THEN format(', about %s rows', rows_estimate::int8) ELSE '' END;
        started := clock_timestamp();
        EXECUTE format('ALTER TABLE %s %s', tbl, array_to_string(adds, ', '));
        FOREACH stmt IN ARRAY comments LOOP
            EXECUTE stmt;
        END LOOP;
        RAISE NOTICE 'simhash_create_index: columns added%', @extschema@.simhash_took(started);
    END IF;

    SELECT count(*) INTO to_build FROM generate_series(0, m - 1) g WHERE NOT indexed[g];
    FOR i IN 0 .. m - 1 LOOP
        CONTINUE WHEN indexed[i];
        built := built + 1;
        started := clock_timestamp();
        IF in_expressions THEN
            -- Named like the column would be, after the table: <table>_<col>_block<i>of<m>.
            SELECT c.relname INTO index_name FROM pg_class c WHERE c.oid = tbl;
            index_name := index_name || '_' || @extschema@.simhash_block_column_name(col, i, m);
            WHILE octet_length(index_name) > 63 LOOP
                index_name := overlay(index_name placing '' from 1 for 1);
            END LOOP;
            marker := format('simhash_pg: block %s of %s of column %s, added by simhash_create_index', i, m, quote_ident(col));
            EXECUTE format('CREATE INDEX %I ON %s ((@extschema@.simhash_block(%I, %s, %s)))%s',
                           index_name, tbl, col, i, m, CASE WHEN covering THEN format(' INCLUDE (%I)', col) ELSE '' END);
            EXECUTE format('COMMENT ON INDEX %I.%I IS %L',
                           (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl),
                           index_name, marker);
            have[i] := format('simhash_block(%I, %s, %s)', col, i, m);
        ELSIF covering THEN
            EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I)', tbl, have[i], col);
        ELSE
            EXECUTE format('CREATE INDEX ON %s (%I)', tbl, have[i]);
        END IF;
        RAISE NOTICE 'simhash_create_index: index % of % (on %) built%',
            built, to_build, CASE WHEN in_expressions THEN have[i] ELSE quote_ident(have[i]) END,
            @extschema@.simhash_took(started);
    END LOOP;

    IF built = 0 THEN
        RAISE NOTICE 'simhash_create_index: % already has an indexed %-block layout of column %; nothing to do',
            tbl, m, quote_ident(col);
        RETURN;
    END IF;
    -- Statistics on the block columns (or the index expressions) let the planner cost the
    -- lookup (a few seconds at most).
    IF in_expressions THEN
        EXECUTE format('ANALYZE %s', tbl); -- index expressions get statistics only this way
    ELSE
        EXECUTE format('ANALYZE %s (%s)', tbl,
            (SELECT string_agg(quote_ident(have[g]), ', ') FROM generate_series(0, m - 1) g));
    END IF;
END
$$;
COMMENT ON FUNCTION simhash_create_index(regclass, name, int4, int4, bool) IS
    'adds generated block columns (m = max_k + 1 blocks unless given) and a B-tree index on each, covering col unless covering => false, so WHERE simhash_near(col, q, k) uses them; rerun: repairs missing indexes, else does nothing';

CREATE FUNCTION simhash_drop_index(tbl regclass, col name)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    drops text[];
    index_drops text[];
BEGIN
    PERFORM @extschema@.simhash_check_indexable('simhash_drop_index', tbl, col);
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
    -- Expression indexes it made (for a generated col) carry the same mark, on the index.
    SELECT array_agg(format('%I.%I', n.nspname, c.relname) ORDER BY b.blocks, b.block)
      INTO index_drops
      FROM @extschema@.simhash_block_columns(tbl) b
      JOIN pg_class c ON c.relname = b.index
                     AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE b.source_column = col AND b.column_name IS NULL
       AND obj_description(c.oid, 'pg_class') = format(
           'simhash_pg: block %s of %s of column %s, added by simhash_create_index', b.block, b.blocks, quote_ident(col));
    IF index_drops IS NOT NULL THEN
        EXECUTE format('DROP INDEX %s', array_to_string(index_drops, ', '));
        RAISE NOTICE 'simhash_drop_index: dropped % block index(es) of column %', cardinality(index_drops), quote_ident(col);
    END IF;
    -- Only the columns simhash_create_index added (its comment marks them); hand-made block
    -- columns stay. Their indexes go with them.
    SELECT array_agg(format('DROP COLUMN %I', b.column_name) ORDER BY b.blocks, b.block)
      INTO drops
      FROM @extschema@.simhash_block_columns(tbl) b
      JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = b.column_name
     WHERE b.source_column = col
       AND col_description(tbl, a.attnum) LIKE 'simhash_pg: block % added by simhash_create_index';
    IF drops IS NULL THEN
        IF index_drops IS NULL THEN
            RAISE NOTICE 'simhash_drop_index: % has no block columns of column % added by simhash_create_index; nothing to do',
                tbl, quote_ident(col);
        END IF;
        RETURN;
    END IF;
    EXECUTE format('ALTER TABLE %s %s', tbl, array_to_string(drops, ', '));
    RAISE NOTICE 'simhash_drop_index: dropped % block column(s) of column % and their indexes',
        cardinality(drops), quote_ident(col);
END
$$;
COMMENT ON FUNCTION simhash_drop_index(regclass, name) IS
    'drops the block columns (and so their indexes) that simhash_create_index added for col; hand-made ones stay';

-- The n rows nearest to query, named by key_column (as text), or by ctid when key_column is NULL
-- (refused where ctid names no row: partitioned tables and tables with inheritance children,
-- where every partition or child has its own row (0,1)).
CREATE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name)
RETURNS TABLE (key text, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    row_name text := @extschema@.simhash_check_pairable('simhash_nearest', tbl, col, key_column);
    k int4;
    keys text[];
    dists int4[];
    found int4;
BEGIN
    IF n IS NULL OR n < 0 THEN
        RAISE EXCEPTION 'simhash_nearest: n must not be negative, got %', coalesce(n::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF n = 0 OR query IS NULL THEN
        RETURN;
    END IF;
    -- Every row within k bits, nearest first (ties in the key's own order): once that holds n
    -- rows, no row outside it can be nearer, so the answer is exact. Each step is an index
    -- lookup; the last is a full scan.
    FOREACH k IN ARRAY ARRAY[0, 1, 3, 7, 11, 15, 23, 64] LOOP
        EXECUTE format(
            'SELECT array_agg(s.r::text ORDER BY s.d, s.r), array_agg(s.d ORDER BY s.d, s.r), count(*)
               FROM (SELECT t.%5$s AS r, @extschema@.hamming_distance(t.%1$I, $1) AS d
                       FROM %2$s t
                      WHERE %3$s
                      ORDER BY 2, 1
                      LIMIT %4$s) s',
            col, tbl,
            CASE WHEN k < 64 THEN format('@extschema@.simhash_near(t.%I, $1, %s)', col, k)
                 ELSE format('t.%I IS NOT NULL', col) END,
            n, row_name)
          INTO keys, dists, found
          USING query;
        IF found >= n OR k = 64 THEN
            RETURN QUERY SELECT u.k, u.d FROM unnest(keys, dists) AS u(k, d);
            RETURN;
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_nearest(regclass, name, simhash64, int4, name) IS
    'the n rows of tbl nearest to query in col, exact, named by key_column (as text; ctid when NULL, refused on partitioned and inherited tables), ties in key order; widens k over the block indexes, ending in a full scan';

-- The 0.2.0 form, rows named by ctid: refused where ctid names no row (see above).
CREATE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4)
RETURNS TABLE (ctid tid, distance int4)
LANGUAGE sql STABLE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.key::tid, s.distance FROM @extschema@.simhash_nearest(tbl, col, query, n, NULL::name) s
$$;
COMMENT ON FUNCTION simhash_nearest(regclass, name, simhash64, int4) IS
    'the n rows of tbl nearest to query in col (ties by ctid), exact, as ctid; refused on partitioned and inherited tables (give key_column)';
