-- Block-column indexes: the helpers that add and remove them, and the nearest-neighbour search
-- that widens its radius over them. The planner side (how WHERE simhash_near(...) finds these
-- columns) is the support function in src/planner.rs; what it sees is simhash_block_columns().
--
-- Every function here runs as its caller (no SECURITY DEFINER), pins search_path, and names the
-- extension's objects through @extschema@, so neither the caller's search_path nor objects the
-- caller created can change what it does. Table and column names only ever reach SQL through
-- regclass output and format('%I').
--
-- Names: what users call is simhash_* (and hamming_distance, the type's simhash64_* support
-- functions, released names kept); what the extension calls itself starts with _simhash_, is
-- not API, and may change in any release. Callers run these helpers with their own rights, so
-- the internal functions stay executable by PUBLIC: the underscore, not a privilege, marks them.

-- The name of block column i of m of column col: '<col>_block<i>of<m>', the col part shortened
-- (whole characters) so that the name fits in 63 bytes.
CREATE FUNCTION _simhash_block_column_name(col name, i int4, m int4) RETURNS name
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
COMMENT ON FUNCTION _simhash_block_column_name(name, int4, int4) IS
    'internal: name simhash_create_index gives block column i of m of column col: <col>_block<i>of<m>, shortened to 63 bytes';

-- The comment that marks a block column or expression index as simhash_create_index's own:
-- simhash_drop_index drops only what carries it (the same text since 0.1.0).
CREATE FUNCTION _simhash_block_marker(i int4, m int4, col name) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('simhash_pg: block %s of %s of column %s, added by simhash_create_index', i, m, quote_ident(col))
$$;
COMMENT ON FUNCTION _simhash_block_marker(int4, int4, name) IS
    'internal: the comment that marks block columns and expression indexes made by simhash_create_index';

-- The same for a table of a family of keys of several blocks: its key leads with the blocks of
-- the set lead (bit i for block i).
CREATE FUNCTION _simhash_key_marker(lead int8, m int4, col name) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('simhash_pg: key of blocks %s of %s of column %s, added by simhash_create_index',
                  (SELECT string_agg(i::text, ',' ORDER BY i) FROM generate_series(0, least(m, 64) - 1) i WHERE (lead >> i) & 1 = 1),
                  m, quote_ident(col))
$$;
COMMENT ON FUNCTION _simhash_key_marker(int8, int4, name) IS
    'internal: the comment that marks an index of a family of keys of several blocks made by simhash_create_index';

-- The columns of tbl, quoted, in order: the hint when a named column is not there.
CREATE FUNCTION _simhash_column_list(tbl regclass) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum), 'none')
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
$$;
COMMENT ON FUNCTION _simhash_column_list(regclass) IS
    'internal: the columns of tbl, quoted, in order (for hints)';

-- What is wrong with the table and columns a helper was given, as (sqlstate, message, hint), or
-- no row. The helpers raise it themselves, so that an error names the function the user called
-- and nothing internal. purpose: 'index' (a table the caller owns: simhash_create_index,
-- simhash_drop_index), 'read' (simhash_nearest, simhash_pairs, the grouping functions: key_column or
-- a ctid that names one row), 'ingest_target', 'ingest_source' (source: the staging table,
-- whose col the target's definition hints at). key_type: the type the caller asked keys in
-- (the forms with key_type), which must be the key column's (tid for ctid).
CREATE FUNCTION _simhash_table_problem(fn text, tbl regclass, col name, purpose text, key_column name DEFAULT NULL,
                                       target regclass DEFAULT NULL, key_type regtype DEFAULT NULL)
RETURNS TABLE (sqlstate text, message text, hint text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    kind "char";
    owner oid;
    col_type oid;
    arg text;
    given name;
    near_miss name;
    target_expr text;
    key_is regtype;
    citus bool;
BEGIN
    IF tbl IS NULL OR col IS NULL THEN
        RETURN QUERY SELECT '22004', format('%s: the table and the column must not be NULL', fn),
            'Name the table and its fingerprint column, as in (''docs'', ''fp'').'::text;
        RETURN;
    END IF;
    SELECT c.relkind, c.relowner INTO kind, owner FROM pg_class c WHERE c.oid = tbl;
    IF NOT FOUND THEN
        RETURN QUERY SELECT '42P01', format('%s: relation with OID %s does not exist', fn, tbl::oid),
            'The table was dropped, or the number is not a table''s OID: pass the table''s name.'::text;
        RETURN;
    END IF;
    IF purpose IN ('index', 'ingest_target') AND kind NOT IN ('r', 'p') THEN
        RETURN QUERY SELECT '42809', format('%s: %s is not a table', fn, tbl),
            CASE WHEN purpose = 'index' THEN 'Block columns are generated columns; only tables and partitioned tables have them.'
                 ELSE 'Ingest into the table the view reads from.' END;
        RETURN;
    END IF;
    IF purpose IN ('read', 'ingest_source', 'sample') AND kind NOT IN ('r', 'p', 'm') THEN
        RETURN QUERY SELECT '42809', format('%s: %s is not a table or materialized view', fn, tbl),
            CASE WHEN purpose = 'read' THEN 'Call it on the table the view reads from, or on a materialized view.'
                 WHEN purpose = 'sample' THEN 'Call it on the table that holds the fingerprints (a view: on the table it reads from).'
                 ELSE 'Load the rows into a staging table first (CREATE TABLE staging AS SELECT ...).' END;
        RETURN;
    END IF;
    IF purpose = 'index' AND NOT pg_has_role(owner, 'USAGE') THEN
        RETURN QUERY SELECT '42501', format('%s: must be owner of table %s', fn, tbl),
            'Only the table''s owner (or a member of the owning role) adds or drops its block indexes.'::text;
        RETURN;
    END IF;
    -- Said before the first write fails with PostgreSQL's own words about an internal step
    -- ("cannot execute LOCK TABLE during recovery").
    IF purpose IN ('index', 'ingest_target') AND current_setting('transaction_read_only')::bool THEN
        RETURN QUERY SELECT '25006', format('%s: cannot change %s in a read-only transaction', fn, tbl),
            CASE WHEN pg_is_in_recovery() THEN 'This server is a standby; run it on the primary.'
                 ELSE 'Run it in a read-write transaction (not BEGIN READ ONLY, default_transaction_read_only off).' END;
        RETURN;
    END IF;
    -- The fingerprint column, then the key column. Names are matched as stored, like
    -- PostgreSQL's own name arguments (case counts, no quotes); a near miss gets a hint.
    FOREACH arg IN ARRAY ARRAY['col', 'key_column'] LOOP
        given := CASE WHEN arg = 'col' THEN col ELSE key_column END;
        CONTINUE WHEN given IS NULL;
        SELECT a.atttypid INTO col_type FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attname = given AND a.attnum > 0 AND NOT a.attisdropped;
        IF FOUND THEN
            -- A set of fingerprints (simhash64[], from simhash_set) serves every helper but
            -- simhash_nearest; an ingest's source holds what its target holds.
            IF arg = 'col' AND col_type = '@extschema@.simhash64[]'::regtype AND fn = 'simhash_nearest' THEN
                RETURN QUERY SELECT '42804', format('%s: column %s of relation %s is a set of fingerprints (simhash64[]), not simhash64',
                    fn, quote_ident(given), tbl), 'Rank the rows of a set column with ORDER BY col <-> query LIMIT n.'::text;
                RETURN;
            END IF;
            IF arg = 'col' AND col_type NOT IN ('@extschema@.simhash64'::regtype, '@extschema@.simhash64[]'::regtype) THEN
                RETURN QUERY SELECT '42804', format('%s: column %s of relation %s is of type %s, not simhash64 or simhash64[]',
                    fn, quote_ident(given), tbl, format_type(col_type, NULL)),
                    'Fingerprints are simhash64: simhash(text) computes one, and a generated column keeps it up to date.'::text;
                RETURN;
            END IF;
            IF arg = 'col' AND purpose = 'ingest_source'
               AND col_type <> (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = target AND a.attname = col) THEN
                RETURN QUERY SELECT '42804', format('%s: column %s of relation %s is of type %s, but the target''s is %s',
                    fn, quote_ident(given), tbl, format_type(col_type, NULL),
                    (SELECT format_type(a.atttypid, NULL) FROM pg_attribute a WHERE a.attrelid = target AND a.attname = col)),
                    'Compute the source''s fingerprints as the target computes them.'::text;
                RETURN;
            END IF;
            CONTINUE;
        END IF;
        SELECT a.attname INTO near_miss FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attnum > 0 AND NOT a.attisdropped
           AND lower(a.attname) = lower(CASE WHEN given ~ '^".+"$' THEN replace(substr(given, 2, length(given) - 2), '""', '"')
                                             ELSE given END)
         ORDER BY a.attnum LIMIT 1;
        IF purpose = 'ingest_source' AND arg = 'col' AND near_miss IS NULL THEN
            -- The staging table lacks the fingerprint: say how the target computes it.
            SELECT pg_get_expr(d.adbin, d.adrelid) INTO target_expr
              FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
             WHERE a.attrelid = target AND a.attname = col AND a.attgenerated = 's';
        END IF;
        RETURN QUERY SELECT '42703', format('%s: column %s of relation %s does not exist', fn, quote_ident(given), tbl),
            CASE WHEN near_miss IS NOT NULL THEN format(
                     'Column names are matched as stored, case included and without quotes: %s => %L.', arg, near_miss)
                 WHEN target_expr IS NOT NULL THEN format(
                     'The source needs the fingerprint, computed as the target computes it: ALTER TABLE %s ADD COLUMN %I @extschema@.simhash64 GENERATED ALWAYS AS (%s) STORED;',
                     tbl, col, target_expr)
                 WHEN purpose = 'ingest_source' THEN format(
                     'The source needs the fingerprint column %s, computed as the target''s is.', quote_ident(col))
                 ELSE format('The columns of %s are: %s.', tbl, @extschema@._simhash_column_list(tbl))
            END;
        RETURN;
    END LOOP;
    citus := @extschema@._simhash_citus_table(tbl);
    IF purpose = 'read' AND key_column IS NULL
       AND (kind = 'p' OR citus OR EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhparent = tbl)) THEN
        -- Each partition, inheritance child or Citus shard numbers its rows from (0,1): a ctid
        -- alone would name several rows, and a join on it return rows that are not the ones meant.
        RETURN QUERY SELECT '22004', format('%s: %s %s, so ctid does not name a row; give a key column', fn, tbl,
                CASE WHEN kind = 'p' THEN 'is partitioned'
                     WHEN citus THEN 'is a Citus table'
                     ELSE 'has inheritance children' END),
            'Pass key_column, a column that names a row (its primary key, say): key_column => ''id''.';
        RETURN;
    END IF;
    IF purpose = 'read' AND key_column IS NULL AND NOT @extschema@._simhash_heap_only(tbl) THEN
        -- A columnar table (Citus's, say) cannot read its rows by ctid.
        RETURN QUERY SELECT '0A000', format('%s: %s uses access method %s, which reads no row by ctid; give a key column', fn, tbl,
                (SELECT quote_ident(a.amname) FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.oid = tbl)),
            'Pass key_column, a column that names a row (its primary key, say): key_column => ''id''.';
        RETURN;
    END IF;
    IF key_type IS NOT NULL THEN
        SELECT coalesce((SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = key_column),
                        'tid'::regtype) INTO key_is;
        -- A string type is always possible: keys as text (or varchar, ...), as the forms without
        -- key_type give them.
        IF key_is <> key_type AND (SELECT typcategory FROM pg_type WHERE oid = key_type) <> 'S' THEN
            RETURN QUERY SELECT '42804', format('%s: key_type is %s, but key column %s is of type %s', fn, key_type,
                    coalesce(quote_ident(key_column), 'ctid'), key_is),
                format('Pass a NULL of the key''s type, key_type => NULL::%s, or NULL::text for keys as text.', key_is);
        END IF;
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_table_problem(text, regclass, name, text, name, regclass, regtype) IS
    'internal: what is wrong with the table and columns given to a helper, as (sqlstate, message, hint), or no row; every problem has a hint, so callers raise it in one statement';

-- ' in 12.3 s' for progress notices, or '' under a second (so small runs print the same
-- text every time).
CREATE FUNCTION _simhash_took(started timestamptz) RETURNS text
LANGUAGE sql VOLATILE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN s >= 1 THEN format(' in %s s', round(s::numeric, 1)) ELSE '' END
      FROM (SELECT extract(epoch FROM clock_timestamp() - started) AS s) x
$$;
COMMENT ON FUNCTION _simhash_took(timestamptz) IS
    'internal: progress-notice helper: elapsed time since started as '' in N s'', empty under one second';

-- Two significant digits, grouped by thousands: a count in a NOTICE is an estimate, and a
-- long one reads as more precise than it is.
CREATE FUNCTION _simhash_about(x float8) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT to_char(CASE WHEN x < 100 THEN round(x)
                        ELSE round(x / p) * p END, 'FM999,999,999,999,999,999')
      FROM (SELECT CASE WHEN x >= 100 THEN 10::float8 ^ (floor(log(x)) - 1) END AS p) s
$$;
COMMENT ON FUNCTION _simhash_about(float8) IS
    'internal: notice helper: a count rounded to two significant digits, grouped by thousands';

COMMENT ON FUNCTION _simhash_citus_table(regclass) IS
    'internal: whether Citus manages tbl (a distributed, reference or Citus-local table, whose rows are in shards)';

-- _simhash_unique_key(tbl, key_column): src/table_info.rs (the rule's one home, also read by the
-- planner's routed lookups).
COMMENT ON FUNCTION _simhash_unique_key(regclass, text) IS
    'internal: whether tbl has a valid, non-partial unique index on key_column alone, checked at once, in the column''s collation and default operator class';

-- Whether tbl and every table under it (partitions, inheritance children) keep their rows in
-- the heap, where a row is read back by its ctid: the SQL helpers name rows by ctid (and
-- tableoid) where no key tells them apart, which Citus's columnar access method cannot read.
CREATE FUNCTION _simhash_heap_only(tbl regclass) RETURNS bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE tree(rel) AS (SELECT tbl::oid
                                 UNION
                                 SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.rel)
    SELECT coalesce(bool_and(a.amname = 'heap'), true)
      FROM tree
      JOIN pg_class c ON c.oid = tree.rel
      JOIN pg_am a ON a.oid = c.relam
     WHERE c.relkind IN ('r', 'm')
$$;
COMMENT ON FUNCTION _simhash_heap_only(regclass) IS
    'internal: whether tbl and every table under it keep their rows in the heap (so that the helpers may name rows by ctid)';

COMMENT ON FUNCTION _simhash_index_probe(regclass[], simhash64, int4) IS
    'internal: rows within k bits of query, as TIDs, found through covering block indexes (index i = block i); what WHERE simhash_near(...) runs as a TID scan';
COMMENT ON FUNCTION _simhash_index_probe(regclass[], simhash64[], int4, int4) IS
    'internal: rows with some element within k bits of the same element of query, as TIDs, through blocks covering indexes per element, element by element; what WHERE simhash_near_any(fps, q, k) on a set column runs as';

COMMENT ON FUNCTION _simhash_leaf_map(regclass) IS
    'internal: this backend''s map of a block index''s leaf level, which lookups start from instead of descending: leaf pages mapped, guesses taken and missed; no row without one (for tests)';

COMMENT ON FUNCTION _simhash_layout_to_build(int4, float8, bool, int4) IS
    'internal: the layout simhash_create_index builds for lookups up to max_k on about rows rows (or, with blocks, that block count), and what a lookup at max_k costs through it: B-tree descents, entries read, both in entries';
COMMENT ON FUNCTION _simhash_keyed_to_build(int4, float8, int4, int4) IS
    'internal: the family of keys of several blocks worth naming beside the permuted block layout simhash_create_index builds for max_k on about rows rows (the best, when it reads at most half the entries; or, with blocks and key_blocks, that family): its tables and what a lookup at max_k costs through it';
COMMENT ON FUNCTION _simhash_block_key(simhash64, int8, int4) IS
    'internal: the fingerprint with the blocks of m in the set lead (bit i for block i) first, then the others, as int8: the key of one index of a family of keys of several blocks';
COMMENT ON FUNCTION simhash_block_keys(regclass) IS
    'the families of keys of several blocks of a table as the planner sees them: source column, keys of key_blocks of blocks blocks, the blocks this index''s key leads with, its place in the family, and its index';
COMMENT ON FUNCTION _simhash_layout_bytes(float8, int4, int4, text) IS
    'internal: bytes a layout of blocks blocks of each of fingerprints fingerprints a row takes on about rows rows as simhash_create_index builds it, holding permuted, covering columns, columns, expressions or covering expressions';
COMMENT ON FUNCTION _simhash_distance_histogram(simhash64[], int4) IS
    'internal (simhash_k_report): how many pairs of rows lie at each distance 0 to 64, every pair of the rows of fps, each row width elements (a set''s fingerprints, compared as simhash_set_distance)';
COMMENT ON FUNCTION _simhash_rows_estimate(regclass) IS
    'internal: the rows the planner would expect in a table: reltuples, or before the first VACUUM or ANALYZE an estimate from its size (summed over a partitioned table''s leaves)';
COMMENT ON FUNCTION _simhash_lookup_cost(regclass, text, int4) IS
    'internal: what one lookup within k bits of col costs through the cheapest fully indexed block layout of plain table tbl, in index entries; NULL without one';
COMMENT ON FUNCTION _simhash_set_size(regclass, text) IS
    'internal: the number of fingerprints of set column col when it is generated by simhash_set with a constant count, else NULL';

-- The name of an index simhash_create_index makes: '<table>_<suffix>', shortened from the front
-- to 63 bytes.
CREATE FUNCTION _simhash_index_name(tbl regclass, suffix text) RETURNS text
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    index_name text := (SELECT c.relname FROM pg_class c WHERE c.oid = tbl) || '_' || suffix;
BEGIN
    -- More than 63 characters are more than 63 bytes: start from the last 63 (a character at a
    -- time from a long suffix took time quadratic in its length).
    index_name := right(index_name, 63);
    WHILE octet_length(index_name) > 63 LOOP
        index_name := overlay(index_name placing '' from 1 for 1);
    END LOOP;
    RETURN index_name;
END
$$;
COMMENT ON FUNCTION _simhash_index_name(regclass, text) IS
    'internal: name simhash_create_index gives an index: <table>_<suffix>, shortened from the front to 63 bytes';

-- The statements that make one index of a layout, on tbl, named _simhash_index_name(tbl,
-- suffix), with the definition tail (its keys and INCLUDE) and marked with marker as
-- simhash_create_index's own. Without online, CREATE INDEX (on a partitioned table PostgreSQL
-- makes one on each partition). With online (simhash_index_statements), statements that take
-- no lock writers wait for beyond a catalog change: CREATE INDEX CONCURRENTLY, after dropping
-- an invalid index a failed one left under the name; on a partitioned table, an index on the
-- table alone (ON ONLY: invalid, so unused, until every partition's is attached), then each
-- partition's made concurrently and attached, level by level. An index being built is invalid
-- until done, so lookups read a layout only once all of its indexes are valid (src/layout.rs).
CREATE FUNCTION _simhash_index_statements_for(tbl regclass, suffix text, tail text, marker text, online bool)
RETURNS SETOF text
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    index_name text := @extschema@._simhash_index_name(tbl, suffix);
    schema name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl);
    partitioned bool := (SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = tbl);
    valid bool := (SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                    WHERE c.relname = index_name AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl));
    part regclass;
BEGIN
    IF NOT online THEN
        RETURN NEXT format('CREATE INDEX %I ON %s %s', index_name, tbl, tail);
    ELSIF partitioned THEN
        RETURN NEXT format('CREATE INDEX IF NOT EXISTS %I ON ONLY %s %s', index_name, tbl, tail);
        FOR part IN SELECT i.inhrelid::regclass FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                     WHERE i.inhparent = tbl AND c.relkind IN ('r', 'p', 'm') ORDER BY i.inhrelid LOOP
            RETURN QUERY SELECT @extschema@._simhash_index_statements_for(part, suffix, tail, marker, true);
            RETURN NEXT format('ALTER INDEX %I.%I ATTACH PARTITION %s', schema, index_name,
                               (SELECT format('%I.%I', n.nspname, @extschema@._simhash_index_name(part, suffix))
                                  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = part));
        END LOOP;
    ELSE
        IF NOT valid THEN
            RETURN NEXT format('DROP INDEX CONCURRENTLY IF EXISTS %I.%I', schema, index_name);
        END IF;
        -- A partition's index made before (an earlier run stopped half way) is attached as it is.
        IF valid IS NOT TRUE OR NOT (SELECT c.relispartition FROM pg_class c WHERE c.oid = tbl) THEN
            RETURN NEXT format('CREATE INDEX CONCURRENTLY %I ON %s %s', index_name, tbl, tail);
        END IF;
    END IF;
    RETURN NEXT format('COMMENT ON INDEX %I.%I IS %L', schema, index_name, marker);
END
$$;
COMMENT ON FUNCTION _simhash_index_statements_for(regclass, text, text, text, bool) IS
    'internal: the statements that make one index of a layout, CREATE INDEX, or with online CREATE INDEX CONCURRENTLY (per partition on a partitioned table, attached to one on the table alone), and its mark';

-- simhash_create_index's expression indexes, m per fingerprint (per element e of a set column,
-- which is generated itself, so its blocks cannot be columns):
-- - on a set column (simhash64[], generated by simhash_set(text, b, ...)), covering ones,
--   ((simhash_block(col[e], i, m)), (col[e])), which the planner reads together (src/planner.rs):
--   two keys, not INCLUDE, because INCLUDE takes columns only (the simhash64 B-tree opclass has
--   no equalimage function, so such indexes never hold posting lists);
-- - with permuted, on a set or a plain column, (_simhash_permute(col, i, m)) or
--   (_simhash_permute(col[e], i, m)): Manku et al.'s permuted tables. A block value is a range of
--   the key, the key is the fingerprint, so the leaf-page probe checks distances on it; no block
--   column (no table rewrite, no ACCESS EXCLUSIVE lock) and 16-byte index tuples where a
--   covering block index has 24. Only the probe reads them (src/leaf_scan.rs): where it may not
--   run (row-level security), they serve no lookup.
CREATE FUNCTION _simhash_expression_index_statements(tbl regclass, col name, m int4, covering bool, permuted bool, online bool)
RETURNS TABLE (statement text, label text)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    is_set bool := (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col)
                   = '@extschema@.simhash64[]'::regtype;
    size int4 := 1;
    done int4[];
    source text;
    marked name;
BEGIN
    -- (Checked by the callers; again here, since every m - 1 block is a statement.)
    IF m IS NULL OR m < 2 OR m > 64 THEN
        RAISE EXCEPTION '_simhash_expression_index_statements: blocks must be between 2 and 64, got %', coalesce(m::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF is_set THEN
        size := @extschema@._simhash_set_size(tbl, col);
    END IF;
    -- Element e (1 for a plain column), block i is done when an index of the kind asked exists
    -- (made here or by hand).
    SELECT array_agg(DISTINCT coalesce(b.element, 1) * 100 + b.block) INTO done
      FROM @extschema@.simhash_block_columns(tbl) b
     WHERE b.source_column = col AND b.blocks = m AND b.covering AND b.permuted = _simhash_expression_index_statements.permuted;
    FOR e IN 1 .. size LOOP
        source := CASE WHEN is_set THEN format('%I[%s]', col, e) ELSE quote_ident(col) END;
        marked := CASE WHEN is_set THEN format('%s[%s]', col, e) ELSE col END;
        FOR i IN 0 .. m - 1 LOOP
            CONTINUE WHEN e * 100 + i = ANY(coalesce(done, '{}'));
            label := format('%sindex on block %s of %s of %s', CASE WHEN permuted THEN 'permuted ' ELSE '' END, i, m, source);
            IF permuted THEN
                -- <table>_<col>[<e>]_perm<i>of<m>
                RETURN QUERY SELECT x, label FROM @extschema@._simhash_index_statements_for(tbl,
                    format('%s%s_perm%sof%s', col, CASE WHEN is_set THEN e::text ELSE '' END, i, m),
                    format('((@extschema@._simhash_permute(%s, %s, %s)))', source, i, m),
                    @extschema@._simhash_block_marker(i, m, marked), online) x;
            ELSE
                -- <table>_<col><e>_block<i>of<m>
                RETURN QUERY SELECT x, label FROM @extschema@._simhash_index_statements_for(tbl,
                    @extschema@._simhash_block_column_name((col || e)::name, i, m),
                    format('((@extschema@.simhash_block(%s, %s, %s)), (%s))', source, i, m, source),
                    @extschema@._simhash_block_marker(i, m, marked), online) x;
            END IF;
        END LOOP;
    END LOOP;
END
$$;
COMMENT ON FUNCTION _simhash_expression_index_statements(regclass, name, int4, bool, bool, bool) IS
    'internal: the statements of simhash_create_index''s expression indexes that col lacks (see _simhash_create_expression_indexes), concurrent ones with online; arguments checked by the caller';

CREATE FUNCTION _simhash_create_expression_indexes(tbl regclass, col name, m int4, covering bool, permuted bool)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    made record;
    built int4 := 0;
    started timestamptz;
BEGIN
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    FOR made IN SELECT * FROM @extschema@._simhash_expression_index_statements(tbl, col, m, covering, permuted, false) LOOP
        started := clock_timestamp();
        EXECUTE made.statement;
        IF made.statement LIKE 'CREATE INDEX %' THEN
            built := built + 1;
            IF @extschema@._simhash_took(started) <> '' THEN
                RAISE NOTICE 'simhash_create_index: % built%', made.label, @extschema@._simhash_took(started);
            END IF;
        END IF;
    END LOOP;
    IF built = 0 THEN
        IF permuted THEN
            RAISE NOTICE 'simhash_create_index: % already has a permuted %-block layout of column %; nothing to do',
                tbl, m, quote_ident(col);
        ELSE
            RAISE NOTICE 'simhash_create_index: % already has an indexed %-block layout of each of the % fingerprints of column %; nothing to do',
                tbl, m, coalesce(@extschema@._simhash_set_size(tbl, col), 1), quote_ident(col);
        END IF;
        RETURN;
    END IF;
    IF NOT @extschema@._simhash_citus_table(tbl) THEN
        EXECUTE format('ANALYZE %s', tbl); -- index expressions get statistics only this way
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_create_expression_indexes(regclass, name, int4, bool, bool) IS
    'internal: simhash_create_index''s expression indexes: m covering ones per element of a set column, or m on _simhash_permute per fingerprint with permuted; arguments checked by the caller';

-- simhash_create_index's family of keys of several blocks (src/core/keys.rs; Manku et al.'s tables
-- of several blocks): one index per set of c of the m blocks, on _simhash_block_key(col, lead,
-- m), the fingerprint with those blocks first. Only simhash_near's probe reads them, so they are
-- built beside the table's block layout, never instead of it; arguments checked by the caller.
CREATE FUNCTION _simhash_key_index_statements(tbl regclass, col name, m int4, c int4, online bool)
RETURNS SETOF text
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lead int8;
    done int8[];
BEGIN
    IF NOT EXISTS (SELECT FROM @extschema@._simhash_keyed_to_build(0, 0, m, c)) THEN
        RAISE EXCEPTION '_simhash_key_index_statements: keys of % of % blocks make no family', c, m USING ERRCODE = '22023';
    END IF;
    -- A table of the family is done when an index on its key exists (made here or by hand).
    SELECT array_agg(DISTINCT (SELECT sum(1::int8 << i) FROM unnest(k.lead) i))::int8[] INTO done
      FROM @extschema@.simhash_block_keys(tbl) k
     WHERE k.source_column = col AND k.blocks = m AND k.key_blocks = c;
    FOR lead IN SELECT s FROM generate_series(1::int8, (1::int8 << m) - 1) s
                 WHERE length(replace(s::bit(64)::text, '0', '')) = c ORDER BY s LOOP
        CONTINUE WHEN lead = ANY(coalesce(done, '{}'));
        -- <table>_<col>_key<blocks joined by _>of<m>, say docs_fp_key0_2of5
        RETURN QUERY SELECT @extschema@._simhash_index_statements_for(tbl,
            format('%s_key%sof%s', col, (SELECT string_agg(i::text, '_' ORDER BY i) FROM generate_series(0, m - 1) i WHERE (lead >> i) & 1 = 1), m),
            format('((@extschema@._simhash_block_key(%I, %s::int8, %s)))', col, lead, m),
            @extschema@._simhash_key_marker(lead, m, col), online);
    END LOOP;
END
$$;
COMMENT ON FUNCTION _simhash_key_index_statements(regclass, name, int4, int4, bool) IS
    'internal: the statements of the indexes of simhash_create_index''s family of keys of c of m blocks that col lacks, concurrent ones with online; arguments checked by the caller';

CREATE FUNCTION _simhash_create_key_indexes(tbl regclass, col name, m int4, c int4)
RETURNS int4
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stmt text;
    built int4 := 0;
    started timestamptz;
BEGIN
    -- (_simhash_key_index_statements refuses keys that make no family.)
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    FOR stmt IN SELECT @extschema@._simhash_key_index_statements(tbl, col, m, c, false) LOOP
        started := clock_timestamp();
        EXECUTE stmt;
        IF stmt LIKE 'CREATE INDEX %' THEN
            built := built + 1;
            IF @extschema@._simhash_took(started) <> '' THEN
                RAISE NOTICE 'simhash_create_index: index % of the keys of % of % blocks built%', built, c, m, @extschema@._simhash_took(started);
            END IF;
        END IF;
    END LOOP;
    IF built = 0 THEN
        RAISE NOTICE 'simhash_create_index: % already has the keys of % of % blocks of column %; nothing to do',
            tbl, c, m, quote_ident(col);
    END IF;
    RETURN built;
END
$$;
COMMENT ON FUNCTION _simhash_create_key_indexes(regclass, name, int4, int4) IS
    'internal: simhash_create_index''s family of keys of c of m blocks: an index on _simhash_block_key(col, lead, m) per set lead of c blocks, beside the block layout; arguments checked by the caller';

-- The rows a block layout of tbl is sized for, as simhash_create_index and simhash_index_report
-- count them: PostgreSQL's estimate (_simhash_rows_estimate), counted exactly below a million
-- rows (an empty table is empty, not ten pages of guessed rows), and on Citus the rows of one
-- shard (the coordinator's table is an empty shell; each shard is searched through its own
-- indexes), counted.
CREATE FUNCTION _simhash_layout_rows(tbl regclass) RETURNS float8
LANGUAGE plpgsql STABLE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rows_now float8;
    shards int8;
BEGIN
    IF @extschema@._simhash_citus_table(tbl) THEN
        EXECUTE format('SELECT count(*) FROM %s', tbl) INTO rows_now;
        EXECUTE 'SELECT count(*) FROM pg_catalog.pg_dist_shard WHERE logicalrelid = $1' INTO shards USING tbl;
        RETURN rows_now / greatest(shards, 1);
    END IF;
    rows_now := @extschema@._simhash_rows_estimate(tbl);
    IF rows_now < 1e6 THEN
        -- Below a million rows counting is cheap beside a build, and exact where the estimate
        -- is a guess from pages (a table never analysed; ten pages for an empty one).
        EXECUTE format('SELECT count(*) FROM %s', tbl) INTO rows_now;
    END IF;
    RETURN rows_now;
END
$$;
COMMENT ON FUNCTION _simhash_layout_rows(regclass) IS
    'internal: the rows a block layout of tbl is sized for: the estimate, counted below a million rows, per shard on Citus';

-- Why simhash_create_index builds block columns rather than permuted indexes for tbl, or NULL
-- when permuted indexes serve: row-level security allows only the BitmapOr form, which cannot
-- range-scan a permuted index (its key function refuses bad block numbers, so it is not
-- leakproof); Citus routes lookups through block columns; sets of fingerprints have covering
-- indexes per element.
CREATE FUNCTION _simhash_not_permuted(tbl regclass, covering bool, is_set bool) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN NOT covering THEN 'covering => false asks for block columns'
        WHEN (SELECT c.relrowsecurity FROM pg_class c WHERE c.oid = tbl)
            THEN 'the table has row-level security, under which only block columns can be read'
        WHEN @extschema@._simhash_citus_table(tbl) THEN 'Citus tables use block columns'
        WHEN is_set THEN 'sets of fingerprints keep covering block indexes until permuted ones are measured on them; permuted => true builds those' END
$$;
COMMENT ON FUNCTION _simhash_not_permuted(regclass, bool, bool) IS
    'internal: why simhash_create_index builds block columns rather than permuted indexes for tbl (NULL: it builds permuted ones)';

-- simhash_create_index, and with online the statements simhash_index_statements returns in its
-- place: without online it makes the layout itself and returns nothing.
CREATE FUNCTION _simhash_create_index(tbl regclass, col name, max_k int4, blocks int4, covering bool, permuted bool,
                                      expected_rows float8, routed bool, key_blocks int4, online bool)
RETURNS SETOF text
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
    problem record;
    chosen record;
    -- A call that leaves the layout to the function replaces the layouts it made before, once
    -- the new one is built (lookups use the old one meanwhile); one that names blocks or
    -- permuted adds a layout beside them.
    replaces_old bool := blocks IS NULL AND permuted IS NULL;
    rows_for float8;
    is_set bool;
    fallback text;
    keyed record;
    made int8;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem(
                                     CASE WHEN online THEN 'simhash_index_statements' ELSE 'simhash_create_index' END, tbl, col, 'index') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    -- A generated col (simhash(body), say) cannot feed generated block columns (PostgreSQL
    -- forbids it), so its blocks go in expression indexes on simhash_block(col, i, m) instead.
    -- Online, too: a generated column cannot be added without rewriting the table under ACCESS
    -- EXCLUSIVE, an expression index can be built concurrently, and lookups read both alike.
    SELECT a.attgenerated <> '' OR online INTO in_expressions
      FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col;
    IF max_k IS NULL OR max_k < 0 OR max_k > 63 THEN
        RAISE EXCEPTION 'simhash_create_index: max_k must be between 0 and 63, got %', coalesce(max_k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF expected_rows IS NOT NULL AND NOT (expected_rows >= 0 AND expected_rows < 'Infinity') THEN
        RAISE EXCEPTION 'simhash_create_index: expected_rows must be a number of rows (0 or more), got %', expected_rows
            USING ERRCODE = '22023';
    END IF;
    IF covering IS NULL THEN
        RAISE EXCEPTION 'simhash_create_index: covering must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF routed IS NULL THEN
        RAISE EXCEPTION 'simhash_create_index: routed must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF routed AND key_blocks IS NOT NULL THEN
        RAISE EXCEPTION 'simhash_create_index: a routed layout has no keys of several blocks; leave key_blocks out'
            USING ERRCODE = '22023';
    END IF;
    IF routed THEN
        -- A routed layout on Citus (sql/routed.sql), beside the shards' own layouts.
        IF online THEN
            RAISE EXCEPTION 'simhash_index_statements: a routed layout is made by simhash_create_index(..., routed => true) alone'
                USING ERRCODE = '0A000',
                      HINT = 'Its routes are filled in one transaction; writes wait for it (docs/citus.md). The shards'' own block layouts are built online here, without routed.';
        END IF;
        PERFORM @extschema@._simhash_create_routed(tbl, col, max_k, blocks);
        RETURN;
    END IF;
    is_set := (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col) = '@extschema@.simhash64[]'::regtype;
    IF key_blocks IS NOT NULL THEN
        -- A family of keys of key_blocks of blocks blocks (src/core/keys.rs), beside the block
        -- layout: C(blocks, key_blocks) permuted indexes that only simhash_near's probe reads.
        IF blocks IS NULL OR NOT EXISTS (SELECT FROM @extschema@._simhash_keyed_to_build(0, 0, blocks, key_blocks)) THEN
            RAISE EXCEPTION 'simhash_create_index: keys of % of % blocks make no family', key_blocks, coalesce(blocks::text, 'NULL')
                USING ERRCODE = '22023',
                      HINT = 'Give blocks => m (3 to 12) and key_blocks => c (2 to m - 1), with at most 64 sets of c blocks: blocks => 5, key_blocks => 2 makes 10 indexes, exact at k = 3 with one probe each.';
        END IF;
        IF permuted IS NOT NULL AND NOT permuted OR NOT covering THEN
            RAISE EXCEPTION 'simhash_create_index: keys of several blocks are permuted indexes; leave permuted and covering out'
                USING ERRCODE = '22023';
        END IF;
        fallback := CASE WHEN is_set THEN 'sets of fingerprints are indexed by blocks'
                         ELSE @extschema@._simhash_not_permuted(tbl, true, false) END;
        IF fallback IS NOT NULL THEN
            RAISE EXCEPTION 'simhash_create_index: keys of several blocks cannot serve %: %', tbl, fallback
                USING ERRCODE = '0A000',
                      HINT = 'Only the leaf-page probe reads them; build a block layout: simhash_create_index(tbl, col, max_k => k).';
        END IF;
        rows_for := coalesce(expected_rows, @extschema@._simhash_layout_rows(tbl));
        SELECT * INTO keyed FROM @extschema@._simhash_keyed_to_build(max_k, rows_for, blocks, key_blocks);
        IF keyed.blocks IS NULL THEN
            RAISE EXCEPTION 'simhash_create_index: keys of % of % blocks cannot serve lookups within max_k = % bits: too many values to probe',
                key_blocks, blocks, max_k
                USING ERRCODE = '22023';
        END IF;
        RAISE NOTICE 'simhash_create_index: for k <= % at % rows: keys of % of % blocks, % permuted indexes (about %); a lookup at k = % takes about % index descents and reads about %; only simhash_near''s probe reads them (joins, nearest-first searches and the ETL helpers read the block layout)%',
            max_k, @extschema@._simhash_about(rows_for), key_blocks, blocks, keyed.tables,
            pg_size_pretty(round(@extschema@._simhash_layout_bytes(rows_for, keyed.tables, 1, 'permuted'))::numeric),
            max_k, keyed.descents,
            CASE WHEN keyed.entries < 1.5 THEN '1 index entry' ELSE @extschema@._simhash_about(keyed.entries) || ' index entries' END,
            CASE WHEN EXISTS (SELECT FROM @extschema@.simhash_index_report(tbl, max_k) r
                               WHERE r.column_name = col AND r.key_blocks = 1 AND r.complete) THEN ''
                 ELSE format('; the table has no block layout of column %s: simhash_create_index(%L, %L, max_k => %s) builds one',
                             quote_ident(col), tbl::text, col, max_k) END;
        IF online THEN
            RETURN QUERY SELECT @extschema@._simhash_key_index_statements(tbl, col, blocks, key_blocks, true);
        ELSE
            PERFORM @extschema@._simhash_create_key_indexes(tbl, col, blocks, key_blocks);
        END IF;
        RETURN;
    END IF;
    IF is_set THEN
        IF @extschema@._simhash_set_size(tbl, col) IS NULL THEN
            RAISE EXCEPTION 'simhash_create_index: set column % of % is not generated by simhash_set with a constant number of fingerprints',
                quote_ident(col), tbl
                USING ERRCODE = '0A000',
                      HINT = 'Index a column GENERATED ALWAYS AS (simhash_set(text, b[, options])) STORED: every row then holds b fingerprints, and the indexes of elements 1 to b serve every lookup.';
        END IF;
    END IF;
    IF is_set AND NOT covering THEN
        RAISE EXCEPTION 'simhash_create_index: a set column is indexed with covering indexes only; leave covering => true'
            USING ERRCODE = '22023';
    END IF;
    -- The layout, unless given: the block count whose lookup at k = max_k costs least at the
    -- table's size (rows now, or expected_rows for a table still being filled), permuted where
    -- permuted indexes can serve (src/core/layouts.rs, layout_to_build).
    IF blocks IS NULL OR permuted IS NULL THEN
        fallback := @extschema@._simhash_not_permuted(tbl, covering, is_set);
        -- Sized only when the count is left to the function (counting a Citus table reads it).
        rows_for := CASE WHEN blocks IS NOT NULL THEN 0
                         ELSE coalesce(expected_rows, @extschema@._simhash_layout_rows(tbl)) END;
        SELECT * INTO chosen FROM @extschema@._simhash_layout_to_build(max_k, rows_for, fallback IS NULL);
        IF chosen.blocks IS NULL AND blocks IS NULL THEN
            RAISE EXCEPTION 'simhash_create_index: no layout of 2 to 16 blocks serves lookups within max_k = % bits', max_k
                USING ERRCODE = '22023',
                      HINT = 'Near-duplicates are within a few bits: max_k is the largest k you will query. For a larger one, give blocks => m (up to 64).';
        END IF;
        permuted := coalesce(permuted, fallback IS NULL);
        IF permuted AND NOT covering THEN
            RAISE EXCEPTION 'simhash_create_index: a permuted index holds the fingerprint itself; leave covering => true'
                USING ERRCODE = '22023';
        END IF;
        IF blocks IS NULL THEN
            -- Its bytes as built (src/core/layouts.rs, layout_bytes), for the rows it is sized for.
            RAISE NOTICE 'simhash_create_index: for k <= % at % rows%: % blocks of % bits, %; a lookup at k = % takes about % index descents and reads about %',
                max_k, @extschema@._simhash_about(rows_for),
                CASE WHEN expected_rows IS NULL AND @extschema@._simhash_citus_table(tbl) THEN ' per shard' ELSE '' END,
                chosen.blocks,
                CASE WHEN 64 % chosen.blocks = 0 THEN (64 / chosen.blocks)::text ELSE 'about ' || round(64.0 / chosen.blocks) END,
                CASE WHEN permuted THEN 'one permuted index each'
                     WHEN is_set THEN 'one expression index each per fingerprint'
                     WHEN in_expressions THEN 'one expression index each'
                     WHEN covering THEN 'one generated column and covering index each'
                     ELSE 'one generated column and index each' END
                || CASE WHEN rows_for > 0 THEN format(' (about %s%s)', pg_size_pretty(round(@extschema@._simhash_layout_bytes(
                         rows_for, chosen.blocks,
                         CASE WHEN is_set THEN coalesce(@extschema@._simhash_set_size(tbl, col), 1) ELSE 1 END,
                         CASE WHEN permuted THEN 'permuted'
                              WHEN is_set OR in_expressions THEN CASE WHEN covering THEN 'covering expressions' ELSE 'expressions' END
                              WHEN covering THEN 'covering columns'
                              ELSE 'columns' END))::numeric),
                         CASE WHEN expected_rows IS NULL AND @extschema@._simhash_citus_table(tbl) THEN ' a shard' ELSE '' END) ELSE '' END,
                max_k, chosen.descents,
                CASE WHEN chosen.entries < 1.5 THEN '1 index entry'
                     ELSE @extschema@._simhash_about(chosen.entries) || ' index entries' END
                || CASE WHEN NOT permuted AND fallback IS NOT NULL THEN ' (not permuted: ' || fallback || ')' ELSE '' END
                || CASE WHEN expected_rows IS NULL AND rows_for = 0
                        THEN '; the table is empty: to size the layout for the rows to come, pass expected_rows => N'
                        ELSE '' END
                -- Space for time (Manku et al.): a family of keys of several blocks, named when it
                -- reads at most half the entries, built only when asked (its bytes are the user's).
                || coalesce((SELECT format('; keys of %s of %s blocks would cost about %s of this, taking about %s descents and reading about %s index entries in %s more indexes (about %s): simhash_create_index(%L, %L, max_k => %s, blocks => %s, key_blocks => %s) adds them',
                                           a.key_blocks, a.blocks, round((1 / a.pays)::numeric, 2),
                                           a.descents,
                                           CASE WHEN a.entries < 1.5 THEN '1' ELSE @extschema@._simhash_about(a.entries) END, a.tables,
                                           pg_size_pretty(round(@extschema@._simhash_layout_bytes(rows_for, a.tables, 1, 'permuted'))::numeric),
                                           tbl::text, col, max_k, a.blocks, a.key_blocks)
                               FROM @extschema@._simhash_keyed_to_build(max_k, rows_for) a
                              WHERE permuted AND NOT is_set AND rows_for > 0), '');
        END IF;
    END IF;
    IF NOT @extschema@._simhash_heap_only(tbl) THEN
        -- Columnar (Citus's) has neither TID nor bitmap scans: the planner leaves the call to a
        -- scan of the table, exact but not faster (src/planner.rs).
        RAISE NOTICE 'simhash_create_index: % keeps rows outside the heap (access method without TID or bitmap scans): lookups on it scan the table, exact; the block indexes will not speed them up', tbl;
    END IF;
    IF blocks IS NOT NULL THEN
        m := blocks;
    ELSE
        m := chosen.blocks;
    END IF;
    IF m < 2 OR m > 64 THEN
        RAISE EXCEPTION 'simhash_create_index: blocks must be between 2 and 64, got %', m USING ERRCODE = '22023';
    END IF;
    IF permuted THEN
        IF NOT covering THEN
            RAISE EXCEPTION 'simhash_create_index: a permuted index holds the fingerprint itself; leave covering => true'
                USING ERRCODE = '22023';
        END IF;
        IF online THEN
            RETURN QUERY SELECT x.statement FROM @extschema@._simhash_expression_index_statements(tbl, col, m, true, true, true) x;
            GET DIAGNOSTICS made = ROW_COUNT;
            RETURN QUERY SELECT @extschema@._simhash_online_end(tbl, col, m, true, replaces_old, made > 0);
            RETURN;
        END IF;
        PERFORM @extschema@._simhash_create_expression_indexes(tbl, col, m, true, true);
        IF replaces_old THEN
            PERFORM @extschema@._simhash_drop_layouts('simhash_create_index', tbl, col, m, true);
        END IF;
        RETURN;
    END IF;
    IF is_set THEN
        IF online THEN
            RETURN QUERY SELECT x.statement FROM @extschema@._simhash_expression_index_statements(tbl, col, m, covering, false, true) x;
            GET DIAGNOSTICS made = ROW_COUNT;
            RETURN QUERY SELECT @extschema@._simhash_online_end(tbl, col, m, false, replaces_old, made > 0);
            RETURN;
        END IF;
        PERFORM @extschema@._simhash_create_expression_indexes(tbl, col, m, covering, false);
        IF replaces_old THEN
            PERFORM @extschema@._simhash_drop_layouts('simhash_create_index', tbl, col, m, false);
        END IF;
        RETURN;
    END IF;
    -- Serialise helpers on this table (this lock conflicts with itself) while reads go on; the
    -- ALTER TABLE below takes ACCESS EXCLUSIVE only if columns are missing.
    IF NOT online THEN
        EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    END IF;

    -- What exists already, made by this function or by hand: block i of m of col, indexed as
    -- asked (covering or not) or not.
    have := array_fill(NULL::name, ARRAY[m], ARRAY[0]);
    indexed := array_fill(false, ARRAY[m], ARRAY[0]);
    FOR col_name, i, built IN
        SELECT b.column_name, b.block, (b.index IS NOT NULL AND (b.covering OR NOT _simhash_create_index.covering))::int AS ok
          FROM @extschema@.simhash_block_columns(tbl) b
         WHERE b.source_column = col AND b.blocks = m AND NOT b.permuted
         ORDER BY b.block, ok DESC
    LOOP
        indexed[i] := indexed[i] OR built = 1;
        have[i] := coalesce(have[i], col_name);
    END LOOP;
    built := 0;

    FOR i IN 0 .. m - 1 LOOP
        IF have[i] IS NULL AND NOT in_expressions THEN
            col_name := @extschema@._simhash_block_column_name(col, i, m);
            adds := adds || format('ADD COLUMN %I int8 GENERATED ALWAYS AS (@extschema@.simhash_block(%I, %s, %s)) STORED',
                                   col_name, col, i, m);
            comments := comments || format('COMMENT ON COLUMN %s.%I IS %L', tbl, col_name,
                @extschema@._simhash_block_marker(i, m, col));
            new_cols := new_cols || col_name::text;
            have[i] := col_name;
        END IF;
    END LOOP;

    -- A partition takes its columns from its parent: PostgreSQL would refuse with "cannot add
    -- column to a partition", which does not say what to do (issue 63).
    IF cardinality(adds) > 0 AND (SELECT c.relispartition FROM pg_class c WHERE c.oid = tbl) THEN
        RAISE EXCEPTION 'simhash_create_index: % is a partition of %, and block columns are added to the whole partitioned table',
            tbl, pg_partition_root(tbl)
            USING ERRCODE = '42809',
                  HINT = format('Call simhash_create_index(%L, %L%s, permuted => false) on the partitioned table, or make permuted indexes, which need no column, on this partition (permuted => true).',
                                pg_partition_root(tbl)::text, col,
                                CASE WHEN max_k <> 3 THEN format(', max_k => %s', max_k) ELSE '' END);
    END IF;
    rows_estimate := @extschema@._simhash_rows_estimate(tbl);
    -- Progress NOTICEs only where there is something to wait for: before rewriting a table of
    -- 100,000 rows or more, and after each step that took a second or more.
    IF cardinality(adds) > 0 THEN
        IF rows_estimate >= 1e5 THEN
            RAISE NOTICE 'simhash_create_index: adding % block column(s) to % (rewrites the table, about % rows)',
                cardinality(adds), tbl, rows_estimate::int8;
        END IF;
        started := clock_timestamp();
        EXECUTE format('ALTER TABLE %s %s', tbl, array_to_string(adds, ', '));
        FOREACH stmt IN ARRAY comments LOOP
            EXECUTE stmt;
        END LOOP;
        IF @extschema@._simhash_took(started) <> '' THEN
            RAISE NOTICE 'simhash_create_index: columns added%', @extschema@._simhash_took(started);
        END IF;
    END IF;

    SELECT count(*) INTO to_build FROM generate_series(0, m - 1) g WHERE NOT indexed[g];
    FOR i IN 0 .. m - 1 LOOP
        CONTINUE WHEN indexed[i];
        built := built + 1;
        started := clock_timestamp();
        IF in_expressions THEN
            -- Named like the column would be, after the table: <table>_<col>_block<i>of<m>.
            FOR stmt IN SELECT @extschema@._simhash_index_statements_for(tbl, @extschema@._simhash_block_column_name(col, i, m),
                                   format('((@extschema@.simhash_block(%I, %s, %s)))%s', col, i, m,
                                          CASE WHEN covering THEN format(' INCLUDE (%I)', col) ELSE '' END),
                                   @extschema@._simhash_block_marker(i, m, col), online) LOOP
                IF online THEN
                    RETURN NEXT stmt;
                ELSE
                    EXECUTE stmt;
                END IF;
            END LOOP;
            have[i] := format('simhash_block(%I, %s, %s)', col, i, m);
        ELSIF covering THEN
            EXECUTE format('CREATE INDEX ON %s (%I) INCLUDE (%I)', tbl, have[i], col);
        ELSE
            EXECUTE format('CREATE INDEX ON %s (%I)', tbl, have[i]);
        END IF;
        IF NOT online AND @extschema@._simhash_took(started) <> '' THEN
            RAISE NOTICE 'simhash_create_index: index % of % (on %) built%',
                built, to_build, CASE WHEN in_expressions THEN have[i] ELSE quote_ident(have[i]) END,
                @extschema@._simhash_took(started);
        END IF;
    END LOOP;

    IF online THEN
        RETURN QUERY SELECT @extschema@._simhash_online_end(tbl, col, m, false, replaces_old, built > 0);
    ELSIF replaces_old THEN
        PERFORM @extschema@._simhash_drop_layouts('simhash_create_index', tbl, col, m, false);
    END IF;
    IF built = 0 THEN
        RAISE NOTICE 'simhash_create_index: % already has an indexed %-block layout of column %; nothing to do',
            tbl, m, quote_ident(col);
        RETURN;
    END IF;
    IF online THEN
        RETURN;
    END IF;
    -- Statistics on the block columns (or the index expressions) let the planner cost the
    -- lookup (a few seconds at most). Not on a Citus table: its shards keep their own
    -- (autovacuum's), and Citus cannot ANALYZE a table with a placement on this node right
    -- after changing it in the same transaction.
    IF @extschema@._simhash_citus_table(tbl) THEN
        RETURN;
    END IF;
    IF in_expressions THEN
        EXECUTE format('ANALYZE %s', tbl); -- index expressions get statistics only this way
    ELSE
        EXECUTE format('ANALYZE %s (%s)', tbl,
            (SELECT string_agg(quote_ident(have[g]), ', ') FROM generate_series(0, m - 1) g));
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_create_index(regclass, name, int4, int4, bool, bool, float8, bool, int4, bool) IS
    'internal: simhash_create_index, or with online the statements simhash_index_statements returns in its place';

CREATE FUNCTION simhash_create_index(tbl regclass, col name, max_k int4 DEFAULT 3, blocks int4 DEFAULT NULL,
                                     covering bool DEFAULT true, permuted bool DEFAULT NULL,
                                     expected_rows float8 DEFAULT NULL, routed bool DEFAULT false,
                                     key_blocks int4 DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._simhash_create_index(tbl, col, max_k, blocks, covering, permuted, expected_rows, routed, key_blocks, false);
END
$$;
COMMENT ON FUNCTION simhash_create_index(regclass, name, int4, int4, bool, bool, float8, bool, int4) IS
    'indexes col for WHERE simhash_near(col, q, k) with k up to max_k: the block count whose lookup costs least at the table''s size (or expected_rows), says which in a NOTICE; one B-tree per block on _simhash_permute(col, i, m), no columns, unless permuted => false, covering => false, row-level security or Citus: then generated block columns with a B-tree each, covering col unless covering => false; blocks => m overrides the count; on a set column generated by simhash_set, covering (or permuted) expression indexes per fingerprint for simhash_near_any; rerun: repairs missing indexes, else does nothing; routed => true on a hash-distributed Citus table: a routed layout instead, a distributed table of routes sharded by block value, so that a lookup asks a few shards (docs/citus.md); blocks => m, key_blocks => c: a family of keys of c of m blocks beside the block layout, one permuted index per set of c blocks (more bytes, fewer entries read on big tables; the NOTICE names one when it pays)';

-- Drops the layouts of col that simhash_create_index made: all of them, or all but the one of
-- keep_blocks blocks (permuted or not as keep_permuted), which a rerun has just built.
-- The layout simhash_create_index would make, as statements to run one by one (psql's \gexec,
-- or the Python package's `simhash-pg index --online`), none of which holds a lock that
-- writers wait for beyond a catalog change (docs/operations.md, "Live tables"): each index
-- CREATE INDEX CONCURRENTLY, block columns as expression indexes (the same lookups, no table
-- rewrite), then ANALYZE, then the concurrent drop of the layouts this one replaces. Lookups
-- read the old layout, or the table, until the new one's last index is valid. Run again after
-- a failure, it goes on from where it stopped: an index a failed build left invalid is dropped
-- and made again.
CREATE FUNCTION simhash_index_statements(tbl regclass, col name, max_k int4 DEFAULT 3, blocks int4 DEFAULT NULL,
                                         covering bool DEFAULT true, permuted bool DEFAULT NULL,
                                         expected_rows float8 DEFAULT NULL, key_blocks int4 DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN QUERY SELECT @extschema@._simhash_create_index(tbl, col, max_k, blocks, covering, permuted, expected_rows, false, key_blocks, true);
END
$$;
COMMENT ON FUNCTION simhash_index_statements(regclass, name, int4, int4, bool, bool, float8, int4) IS
    'the statements that make the layout simhash_create_index would make, online: CREATE INDEX CONCURRENTLY of each index (expression indexes in place of block columns), ANALYZE, then DROP INDEX CONCURRENTLY of the layouts it replaces; run them with psql''s \gexec; run again after a failure, it goes on';

-- What ends an online build (simhash_index_statements): ANALYZE when an index was made (index
-- expressions get statistics only this way; not on Citus, whose shards keep their own), then,
-- when it replaces them, the concurrent drops of the other layouts of col.
CREATE FUNCTION _simhash_online_end(tbl regclass, col name, m int4, permuted bool, replaces_old bool, built bool)
RETURNS SETOF text
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF built AND NOT @extschema@._simhash_citus_table(tbl) THEN
        RETURN NEXT format('ANALYZE %s', tbl);
    END IF;
    IF replaces_old THEN
        RETURN QUERY SELECT d.statement FROM @extschema@._simhash_layout_drops(tbl, col, m, permuted, true) d WHERE d.statement IS NOT NULL;
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_online_end(regclass, name, int4, bool, bool, bool) IS
    'internal: the statements that end simhash_index_statements: ANALYZE, and the concurrent drops of the layouts it replaces';

-- simhash_drop_index's block layouts as statements to run one by one: DROP INDEX CONCURRENTLY
-- of each index (a partitioned one, which PostgreSQL cannot drop concurrently, and block
-- columns, ALTER TABLE ... DROP COLUMN: catalog changes). A routed layout is dropped by
-- simhash_drop_index alone.
CREATE FUNCTION simhash_drop_index_statements(tbl regclass, col name)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_drop_index_statements', tbl, col, 'index') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF EXISTS (SELECT FROM @extschema@._simhash_routed_layout(tbl)) THEN
        RAISE EXCEPTION 'simhash_drop_index_statements: % has a routed layout, which simhash_drop_index drops', tbl
            USING ERRCODE = '0A000', HINT = format('SELECT simhash_drop_index(%L, %L);', tbl::text, col);
    END IF;
    RETURN QUERY SELECT d.statement FROM @extschema@._simhash_layout_drops(tbl, col, NULL, NULL, true) d WHERE d.statement IS NOT NULL;
END
$$;
COMMENT ON FUNCTION simhash_drop_index_statements(regclass, name) IS
    'the statements that drop the block columns and indexes simhash_create_index added for col, online: DROP INDEX CONCURRENTLY of each index; run them with psql''s \gexec';

-- The statements that drop the layouts of col simhash_create_index made: all of them, or all
-- but the one of keep_blocks blocks (permuted or not as keep_permuted), which a rerun has just
-- built. kind: 'index' (a block index), 'columns' (one ALTER TABLE for all block columns, which
-- takes their indexes along), 'kept' (no statement: block columns that other objects depend on,
-- which a rerun keeps), 'key' (an index of keys of several blocks); objects: what each drops.
-- online: DROP INDEX CONCURRENTLY where PostgreSQL has it (not for a partitioned index), for
-- simhash_index_statements; ALTER TABLE ... DROP COLUMN is a catalog change either way.
CREATE FUNCTION _simhash_layout_drops(tbl regclass, col name, keep_blocks int4, keep_permuted bool, online bool)
RETURNS TABLE (kind text, statement text, objects text[])
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    drops text[];
    kept text[];
BEGIN
    -- Expression indexes it made (permuted ones, or for a generated col) carry the same mark,
    -- on the index. Where a table was made anew without its comments (Citus's
    -- alter_distributed_table, undistribute_table and citus_add_local_table_to_metadata), an
    -- object without a comment is taken as its own when it has the very name it gives (the
    -- definition simhash_block_columns checks). One statement an index: Citus refuses to drop
    -- several distributed indexes in one command.
    RETURN QUERY
    SELECT 'index', format('DROP INDEX %s%I.%I', CASE WHEN online AND c.relkind = 'i' THEN 'CONCURRENTLY ' ELSE '' END, n.nspname, c.relname),
           ARRAY[format('%I.%I', n.nspname, c.relname)]
      FROM @extschema@.simhash_block_columns(tbl) b
      JOIN pg_class c ON c.relname = b.index
                     AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE b.source_column = col AND b.column_name IS NULL
       AND (keep_blocks IS NULL OR b.blocks <> keep_blocks OR b.permuted <> keep_permuted)
       AND coalesce(obj_description(c.oid, 'pg_class') = @extschema@._simhash_block_marker(b.block, b.blocks,
                        CASE WHEN b.element IS NULL THEN col ELSE format('%s[%s]', col, b.element)::name END),
                    c.relname = @extschema@._simhash_index_name(tbl,
                        CASE WHEN b.permuted THEN format('%s%s_perm%sof%s', col, b.element, b.block, b.blocks)
                             ELSE @extschema@._simhash_block_column_name((col || coalesce(b.element::text, ''))::name, b.block, b.blocks) END))
     ORDER BY b.blocks, b.block;
    -- Only the columns simhash_create_index added (its comment marks them, any block of any
    -- column, so that they still go after fp was renamed); hand-made block columns stay. Their
    -- indexes go with them. A rerun also keeps a column that something else depends on (an
    -- index of the user's over it, statistics, a view, a policy): simhash_drop_index would drop
    -- those, a rerun should not.
    SELECT array_agg(quote_ident(b.column_name) ORDER BY b.blocks, b.block) FILTER (WHERE NOT b.used),
           array_agg(quote_ident(b.column_name) ORDER BY b.blocks, b.block) FILTER (WHERE b.used)
      INTO drops, kept
      FROM (SELECT DISTINCT b.column_name, b.blocks, b.block, a.attnum,
                   keep_blocks IS NOT NULL AND EXISTS (
                       SELECT FROM pg_depend d
                        WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = tbl AND d.refobjsubid = a.attnum
                          AND d.classid <> 'pg_attrdef'::regclass -- its own generation expression
                          AND NOT (d.classid = 'pg_class'::regclass
                                   AND d.objid IN (SELECT i.indexrelid FROM pg_index i
                                                    WHERE i.indrelid = tbl AND i.indkey[0] = a.attnum
                                                      AND i.indnatts <= 2 AND i.indexprs IS NULL AND i.indpred IS NULL))) AS used
              FROM @extschema@.simhash_block_columns(tbl) b
              JOIN pg_attribute a ON a.attrelid = tbl AND a.attname = b.column_name
             WHERE b.source_column = col AND b.column_name IS NOT NULL
               AND (keep_blocks IS NULL OR b.blocks <> keep_blocks OR keep_permuted)
               AND coalesce(col_description(tbl, a.attnum) LIKE 'simhash_pg: block % added by simhash_create_index',
                            b.column_name = @extschema@._simhash_block_column_name(col, b.block, b.blocks))) b;
    IF drops IS NOT NULL THEN
        RETURN QUERY SELECT 'columns', format('ALTER TABLE %s %s', tbl,
                                              (SELECT string_agg('DROP COLUMN ' || d, ', ') FROM unnest(drops) d)), drops;
    END IF;
    IF kept IS NOT NULL THEN
        RETURN QUERY SELECT 'kept', NULL::text, kept;
    END IF;
    -- Families of keys of several blocks were asked for by name (key_blocks): a rerun keeps them,
    -- dropping all of col's layouts drops them, by the same marks.
    IF keep_blocks IS NULL THEN
        RETURN QUERY
        SELECT 'key', format('DROP INDEX %s%I.%I', CASE WHEN online AND c.relkind = 'i' THEN 'CONCURRENTLY ' ELSE '' END, n.nspname, c.relname),
               ARRAY[format('%I.%I', n.nspname, c.relname)]
          FROM @extschema@.simhash_block_keys(tbl) k
          JOIN pg_class c ON c.relname = k.index
                         AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE k.source_column = col
           AND coalesce(obj_description(c.oid, 'pg_class') = @extschema@._simhash_key_marker(
                            (SELECT sum(1::int8 << i) FROM unnest(k.lead) i)::int8, k.blocks, col),
                        c.relname = @extschema@._simhash_index_name(tbl, format('%s_key%sof%s', col, array_to_string(k.lead, '_'), k.blocks)))
         ORDER BY k.blocks, k.key_blocks, k.position;
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_layout_drops(regclass, name, int4, bool, bool) IS
    'internal: the statements that drop the block columns and indexes simhash_create_index made for col, all or all but one layout, concurrently where they can with online; arguments checked by the caller';

CREATE FUNCTION _simhash_drop_layouts(fn text, tbl regclass, col name, keep_blocks int4, keep_permuted bool)
RETURNS int4
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    drop record;
    counts jsonb := '{}';
    kept text[];
BEGIN
    IF keep_blocks IS NULL THEN
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
    END IF;
    -- (A rerun already holds a lock that keeps others from changing the layouts, so it takes
    -- the exclusive one only when there is something to drop: DROP INDEX and ALTER TABLE do.)
    FOR drop IN SELECT * FROM @extschema@._simhash_layout_drops(tbl, col, keep_blocks, keep_permuted, false) LOOP
        IF drop.statement IS NOT NULL THEN
            EXECUTE drop.statement;
        END IF;
        counts := counts || jsonb_build_object(drop.kind, coalesce((counts ->> drop.kind)::int4, 0) + cardinality(drop.objects));
        IF drop.kind = 'kept' THEN
            kept := drop.objects;
        END IF;
    END LOOP;
    IF counts ? 'index' THEN
        RAISE NOTICE '%: dropped % block index(es) of column %', fn, counts ->> 'index', quote_ident(col);
    END IF;
    IF counts ? 'columns' THEN
        RAISE NOTICE '%: dropped % block column(s) of column % and their indexes', fn, counts ->> 'columns', quote_ident(col);
    END IF;
    IF kept IS NOT NULL THEN
        RAISE NOTICE '%: kept block column(s) % of column %: other objects depend on them', fn, array_to_string(kept, ', '), quote_ident(col)
            USING HINT = format('simhash_drop_index(%L, %L) drops them with what depends on them.', tbl::text, col);
    END IF;
    IF counts ? 'key' THEN
        RAISE NOTICE '%: dropped % index(es) of keys of several blocks of column %', fn, counts ->> 'key', quote_ident(col);
    END IF;
    RETURN coalesce((counts ->> 'index')::int4, 0) + coalesce((counts ->> 'columns')::int4, 0) + coalesce((counts ->> 'key')::int4, 0);
END
$$;
COMMENT ON FUNCTION _simhash_drop_layouts(text, regclass, name, int4, bool) IS
    'internal: drops the block columns and indexes simhash_create_index made for col, all or all but one layout; arguments checked by the caller';

CREATE FUNCTION simhash_drop_index(tbl regclass, col name)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
    dropped_routed bool;
BEGIN
    -- A routed layout whose column is gone (dropped, its guard with it) goes by the name the
    -- column had when the layout was made.
    IF col = (@extschema@._simhash_routed_args(tbl))[1]
       AND EXISTS (SELECT FROM @extschema@._simhash_routed_layout(tbl) l WHERE l.col IS NULL) THEN
        PERFORM @extschema@._simhash_drop_routed('simhash_drop_index', tbl);
        RETURN;
    END IF;
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_drop_index', tbl, col, 'index') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    -- The routed layout first: its view reads the table's columns.
    dropped_routed := @extschema@._simhash_drop_routed('simhash_drop_index', tbl, col);
    IF @extschema@._simhash_drop_layouts('simhash_drop_index', tbl, col, NULL, NULL) = 0 AND NOT dropped_routed THEN
        RAISE NOTICE 'simhash_drop_index: % has no block columns of column % added by simhash_create_index; nothing to do',
            tbl, quote_ident(col);
    END IF;
END
$$;
COMMENT ON FUNCTION simhash_drop_index(regclass, name) IS
    'drops the block columns (and so their indexes) and the routed layout that simhash_create_index added for col; hand-made ones stay';

-- Each block layout of tbl against the one simhash_create_index would build now for lookups
-- within k, by the same cost model (_simhash_layout_to_build): a table that has grown since it
-- was indexed, or a layout made for another k, shows here with the call that fixes it. Families
-- of keys of several blocks follow, key_blocks > 1 (the block layouts' rows say 1).
CREATE FUNCTION simhash_index_report(tbl regclass, k int4 DEFAULT 3)
RETURNS TABLE (column_name name, blocks int4, permuted bool, complete bool, table_rows float8,
               descents int8, entries float8, best_blocks int4, best_permuted bool,
               best_descents int8, best_entries float8, advice text, key_blocks int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    rows_now float8;
    l record;
    have record;
    best record;
    ratio float8;
    rerun text;
    -- The columns with a complete block layout, which lookups may read instead of a family.
    with_blocks name[] := '{}';
    family_tables int4;
BEGIN
    IF tbl IS NULL THEN
        RETURN;
    END IF;
    IF k IS NULL OR k < 0 OR k > 63 THEN
        RAISE EXCEPTION 'simhash_index_report: k must be between 0 and 63, got %', coalesce(k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    rows_now := @extschema@._simhash_layout_rows(tbl);
    FOR l IN
        SELECT b.source_column::name AS col, b.blocks AS m, b.permuted AS perm,
               bool_and(b.covering) AS covering, bool_or(b.element IS NOT NULL) AS is_set,
               -- every block of every element has an index the lookup can read (a block may
               -- have several: count blocks, not rows)
               count(DISTINCT (coalesce(b.element, 0), b.block)) FILTER (WHERE b.index IS NOT NULL)
                   = b.blocks * CASE WHEN bool_or(b.element IS NOT NULL)
                                     THEN coalesce(@extschema@._simhash_set_size(tbl, b.source_column), 0)
                                     ELSE 1 END AS whole
          FROM @extschema@.simhash_block_columns(tbl) b
         GROUP BY b.source_column, b.blocks, b.permuted
         ORDER BY b.source_column, b.blocks, b.permuted
    LOOP
        SELECT * INTO have FROM @extschema@._simhash_layout_to_build(k, rows_now, l.perm, l.m);
        SELECT * INTO best FROM @extschema@._simhash_layout_to_build(k, rows_now,
            @extschema@._simhash_not_permuted(tbl, l.covering, l.is_set) IS NULL);
        rerun := format('SELECT simhash_create_index(%L, %L, max_k => %s)', tbl::text, l.col, k);
        ratio := have.cost / nullif(best.cost, 0);
        column_name := l.col;
        blocks := l.m;
        permuted := l.perm;
        complete := l.whole;
        table_rows := rows_now;
        descents := have.descents;
        entries := have.entries;
        best_blocks := best.blocks;
        best_permuted := best.permuted;
        best_descents := best.descents;
        best_entries := best.entries;
        advice := CASE
            WHEN NOT l.whole THEN format('incomplete: a block has no index, so lookups do not use this layout; run %s to build the layout for this size',
                                         rerun)
            WHEN have.blocks IS NULL THEN format('cannot serve k = %s: too many block values to probe; run %s', k, rerun)
            WHEN best.blocks IS NULL THEN 'no layout of 2 to 16 blocks serves this k'
            -- The model ranks near counts within tens of percent of what is measured
            -- (BENCHMARKS.md), so only a clear gap is called outgrown.
            WHEN ratio >= 2 THEN format('outgrown: at %s rows a lookup at k = %s costs about %s times what %s %s blocks would; run %s (it builds them, then drops the layouts it made before)',
                                         @extschema@._simhash_about(rows_now), k, round(ratio::numeric, 1), best.blocks,
                                         CASE WHEN best.permuted THEN 'permuted' ELSE 'column' END, rerun)
            WHEN NOT l.perm AND best.permuted THEN format('fits this size; permuted indexes of these blocks would be smaller and faster: run %s',
                                                         rerun)
            ELSE 'fits this size' END;
        key_blocks := 1;
        IF l.whole THEN
            with_blocks := with_blocks || l.col;
        END IF;
        RETURN NEXT;
    END LOOP;
    -- Families of keys of several blocks (simhash_block_keys), beside the block layout they
    -- were built with: only simhash_near's probe reads them.
    FOR l IN
        SELECT f.source_column::name AS col, f.blocks AS m, f.key_blocks AS c,
               count(DISTINCT f.position) AS have_tables
          FROM @extschema@.simhash_block_keys(tbl) f
         GROUP BY f.source_column, f.blocks, f.key_blocks
         ORDER BY f.source_column, f.blocks, f.key_blocks
    LOOP
        SELECT * INTO have FROM @extschema@._simhash_keyed_to_build(k, rows_now, l.m, l.c);
        -- The family's size, at a k it always serves.
        SELECT a.tables INTO family_tables FROM @extschema@._simhash_keyed_to_build(0, 0, l.m, l.c) a;
        SELECT * INTO best FROM @extschema@._simhash_layout_to_build(k, rows_now,
            @extschema@._simhash_not_permuted(tbl, true, false) IS NULL);
        column_name := l.col;
        blocks := l.m;
        permuted := true;
        complete := l.have_tables = family_tables;
        table_rows := rows_now;
        descents := have.descents;
        entries := have.entries;
        best_blocks := best.blocks;
        best_permuted := best.permuted;
        best_descents := best.descents;
        best_entries := best.entries;
        key_blocks := l.c;
        advice := CASE
            WHEN NOT complete THEN format('incomplete: keys of %s of %s blocks need all %s indexes, so lookups do not use them; run SELECT simhash_create_index(%L, %L, max_k => %s, blocks => %s, key_blocks => %s)',
                                          l.c, l.m, family_tables,
                                          tbl::text, l.col, k, l.m, l.c)
            WHEN have.blocks IS NULL THEN format('cannot serve k = %s: too many values to probe', k)
            WHEN NOT l.col = ANY(with_blocks)
                THEN format('keys of %s of %s blocks: simhash_near''s probe reads them at k = %s (a lookup costs about %s index entries); column %s has no block layout, which joins, nearest-first searches and the ETL helpers read: run SELECT simhash_create_index(%L, %L, max_k => %s)',
                            l.c, l.m, k, @extschema@._simhash_about(have.cost), quote_ident(l.col), tbl::text, l.col, k)
            -- Each index weighed (src/core/layouts.rs, family_pays): ten cost more than they save
            -- below billions of rows.
            WHEN have.pays > 1
                THEN format('keys of %s of %s blocks: lookups at k = %s read them, %s times cheaper than %s blocks',
                            l.c, l.m, k, round(have.pays::numeric, 1), best.blocks)
            ELSE format('keys of %s of %s blocks: at %s rows a lookup at k = %s costs less through %s blocks (through the keys about %s times as much, their %s indexes weighed), which it takes; simhash_drop_index and simhash_create_index rebuild without them',
                        l.c, l.m, @extschema@._simhash_about(rows_now), k, best.blocks,
                        round((1 / greatest(have.pays, 1e-9))::numeric, 1), have.tables) END;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_index_report(regclass, int4) IS
    'each block layout of tbl, and each family of keys of several blocks (key_blocks > 1): what a lookup within k costs through it at the table''s size now (B-tree descents, index entries read) beside the layout simhash_create_index would build now, and advice with the call to run when it has outgrown';

-- What k means on a table's own rows: for k = 0 to 24, the share of random pairs of `sample` rows
-- whose fingerprints are within k, how many rows a lookup of an unrelated text would meet at that
-- k in a table this size, and, when known_copies names a table or view of pairs known to be
-- copies (its first two columns of col's type), the share of them within k: the recall. Rows are
-- drawn each with the same chance: TABLESAMPLE BERNOULLI (REPEATABLE (seed) with a seed) on heap
-- tables, a random() filter where TABLESAMPLE does not sample every row alike (Citus, other
-- access methods, foreign partitions). A set column's rows are compared as simhash_set_distance
-- does, the rows of the sample's most common set size.
CREATE FUNCTION simhash_k_report(tbl regclass, col name, sample int4 DEFAULT 2000,
                                 known_copies regclass DEFAULT NULL, seed float8 DEFAULT NULL)
RETURNS TABLE (k int4, random_pairs_within float8, matches_per_lookup float8, copies_within float8)
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
    col_type regtype;
    is_set bool;
    citus bool;
    by_pages bool;
    width int4;
    rows_now float8;
    share float8;
    row_limit int4;
    fps @extschema@.simhash64[];
    drawn int8;
    sampled int8;
    fingerprint_rows float8;
    counts int8[];
    pairs float8;
    within float8 := 0;
    copy_cols name[];
    copy_counts int8[];
    copy_total float8;
    copy_within float8 := 0;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_k_report', tbl, col, 'sample') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF sample IS NULL OR sample < 2 OR sample > 100000 THEN
        RAISE EXCEPTION 'simhash_k_report: sample must be between 2 and 100000 rows, got %', coalesce(sample::text, 'NULL')
            USING ERRCODE = '22023', HINT = 'A few thousand rows give rates down to about 1 in a million pairs.';
    END IF;
    SELECT a.atttypid INTO col_type FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    is_set := col_type = '@extschema@.simhash64[]'::regtype;
    IF known_copies IS NOT NULL THEN
        IF (SELECT c.relkind FROM pg_class c WHERE c.oid = known_copies) NOT IN ('r', 'p', 'm', 'v', 'f') THEN
            RAISE EXCEPTION 'simhash_k_report: % is not a table or view', known_copies
                USING ERRCODE = '42809', HINT = 'known_copies names a table or view of pairs of fingerprints known to be copies.';
        END IF;
        -- The pairs: the first two columns of known_copies of col's type, by position.
        SELECT array_agg(a.attname ORDER BY a.attnum) INTO copy_cols
          FROM (SELECT a.attname, a.attnum FROM pg_attribute a
                 WHERE a.attrelid = known_copies AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = col_type
                 ORDER BY a.attnum LIMIT 2) a;
        IF coalesce(cardinality(copy_cols), 0) < 2 THEN
            RAISE EXCEPTION 'simhash_k_report: % has no two columns of type %', known_copies, col_type
                USING ERRCODE = '22023',
                      HINT = format('known_copies names a table or view whose first two %s columns are the fingerprints of two texts known to be copies.', col_type);
        END IF;
    END IF;
    citus := @extschema@._simhash_citus_table(tbl);
    rows_now := CASE WHEN citus THEN 0 ELSE @extschema@._simhash_rows_estimate(tbl) END;
    IF rows_now < 1e6 THEN
        -- Counted where counting is cheap: a table never analysed has its size guessed from its
        -- pages (ten at least), and Citus's coordinator holds no rows to estimate from.
        EXECUTE format('SELECT count(*) FROM %s', tbl) INTO rows_now;
    END IF;
    -- TABLESAMPLE samples heap pages; a foreign partition would be read whole.
    by_pages := NOT citus AND @extschema@._simhash_heap_only(tbl) AND NOT EXISTS (
        WITH RECURSIVE tree(rel) AS (SELECT tbl::oid
                                     UNION
                                     SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.rel)
        SELECT FROM tree JOIN pg_class c ON c.oid = tree.rel WHERE c.relkind = 'f');
    IF seed IS NOT NULL AND NOT by_pages THEN
        RAISE NOTICE 'simhash_k_report: % is not sampled by TABLESAMPLE, so seed does not repeat the sample', tbl;
    END IF;
    -- Each row with the same chance, sample rows expected. The LIMIT only bounds the work when
    -- the table holds far more rows than its statistics say (and a NOTICE says so).
    share := CASE WHEN rows_now > 0 THEN least(100, 100.0 * sample / rows_now) ELSE 100 END;
    row_limit := least(2 * sample, 100000);
    EXECUTE format(
        'WITH s AS MATERIALIZED (SELECT %1$I AS f FROM %2$s %3$s LIMIT $2),'
        ' w AS (SELECT %4$s AS width),'
        ' kept AS (SELECT row_number() OVER () AS r, s.f FROM s, w WHERE s.f IS NOT NULL %5$s)'
        ' SELECT (SELECT count(*) FROM s), (SELECT width FROM w), array_agg(e ORDER BY r, o), count(DISTINCT r)'
        ' FROM kept CROSS JOIN LATERAL unnest(%6$s) WITH ORDINALITY AS u(e, o)',
        col, tbl,
        CASE WHEN NOT by_pages THEN 'WHERE random() * 100 < $1'
             WHEN seed IS NULL THEN 'TABLESAMPLE BERNOULLI ($1)'
             ELSE 'TABLESAMPLE BERNOULLI ($1) REPEATABLE ($3)' END,
        -- A set column: the most common size among the sample's whole sets.
        CASE WHEN is_set THEN '(SELECT cardinality(f) FROM s WHERE cardinality(f) > 0 AND array_position(f, NULL) IS NULL'
                              ' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1)'
             ELSE '1' END,
        CASE WHEN is_set THEN 'AND cardinality(s.f) = w.width AND array_position(s.f, NULL) IS NULL' ELSE '' END,
        CASE WHEN is_set THEN 'kept.f' ELSE 'ARRAY[kept.f]' END)
        INTO drawn, width, fps, sampled USING share, row_limit, seed;
    IF width > 64 THEN
        RAISE EXCEPTION 'simhash_k_report: column % holds sets of % fingerprints, more than 64', quote_ident(col), width
            USING ERRCODE = '22023';
    END IF;
    counts := @extschema@._simhash_distance_histogram(coalesce(fps, '{}'), coalesce(width, 1));
    pairs := sampled * (sampled - 1) / 2.0;
    -- The rows a lookup can meet: those with a fingerprint (of the common set size). Exact when
    -- the whole table was read; else the estimate, scaled by the share of drawn rows kept.
    fingerprint_rows := CASE WHEN share >= 100 AND drawn < row_limit THEN sampled
                             WHEN drawn > 0 THEN rows_now * sampled / drawn
                             ELSE 0 END;
    IF known_copies IS NOT NULL THEN
        EXECUTE format('SELECT array_agg(coalesce(c.n, 0) ORDER BY d.d) FROM generate_series(0, 64) d(d) LEFT JOIN ('
                       ' SELECT %2$s AS d, count(*) AS n FROM %1$s WHERE %2$s IS NOT NULL GROUP BY 1) c ON c.d = d.d',
                       known_copies,
                       CASE WHEN is_set THEN format('@extschema@.simhash_set_distance(%I, %I)', copy_cols[1], copy_cols[2])
                            ELSE format('(%I OPERATOR(@extschema@.<->) %I)', copy_cols[1], copy_cols[2]) END)
            INTO copy_counts;
        SELECT sum(c) INTO copy_total FROM unnest(copy_counts) c;
    END IF;
    RAISE NOTICE '%', format('simhash_k_report: %s pairs of %s sampled rows, of about %s rows with %s%s%s', pairs::int8, sampled,
        @extschema@._simhash_about(fingerprint_rows),
        CASE WHEN is_set THEN format('a set of %s fingerprints', coalesce(width, 0)) ELSE 'a fingerprint' END,
        CASE WHEN drawn > sampled THEN format('; %s drawn rows without one left out', drawn - sampled) ELSE '' END,
        CASE WHEN known_copies IS NULL THEN '' ELSE format('; %s known copies in %s', copy_total::int8, known_copies) END);
    IF drawn >= row_limit AND share < 100 THEN
        RAISE NOTICE 'simhash_k_report: the sample stopped at % rows, so the table''s last pages are under-represented', drawn
            USING HINT = format('The table holds more rows than its statistics say: ANALYZE %s, then run it again.', tbl);
    END IF;
    FOR d IN 0..24 LOOP
        within := within + counts[d + 1];
        k := d;
        random_pairs_within := CASE WHEN pairs > 0 THEN within / pairs END;
        matches_per_lookup := random_pairs_within * greatest(fingerprint_rows - 1, 0);
        IF known_copies IS NOT NULL THEN
            copy_within := copy_within + copy_counts[d + 1];
            copies_within := CASE WHEN copy_total > 0 THEN copy_within / copy_total END;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_k_report(regclass, name, int4, regclass, float8) IS
    'what k means on tbl''s own rows: for k = 0 to 24, the share of random pairs of sampled rows within k, the unrelated rows a lookup would meet at k in a table this size, and the share of known_copies'' pairs within k (the recall)';

-- The n rows nearest to query, named by key_column, or by ctid when key_column is NULL (refused
-- where ctid names no row: partitioned tables and tables with inheritance children, where every
-- partition or child has its own row (0,1)). Keys as text, or in their own type (key_type);
-- both forms run one internal function, as simhash_pairs does.
CREATE FUNCTION _simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name, as_type anyelement)
RETURNS TABLE (key anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    row_name text := coalesce(quote_ident(key_column), 'ctid');
BEGIN
    IF n = 0 OR query IS NULL THEN
        RETURN;
    END IF;
    -- Nearest first, ties in the key's own order. With covering block indexes this is the
    -- nearest-first scan (src/nearest_scan.rs), which reads rings of growing radius off the
    -- indexes and stops after n rows; without them, one scan and a top-n sort. Keys pass
    -- through text into as_type's type, as 0.2.0 returned them.
    RETURN QUERY EXECUTE format(
        'SELECT (t.%3$s)::text::%4$s, @extschema@.hamming_distance(t.%1$I, $1)
           FROM %2$s t
          WHERE t.%1$I IS NOT NULL
          ORDER BY @extschema@.hamming_distance(t.%1$I, $1), t.%3$s
          LIMIT $2',
        col, tbl, row_name, format_type(pg_typeof(as_type), NULL))
      USING query, n;
END
$$;
COMMENT ON FUNCTION _simhash_nearest(regclass, name, simhash64, int4, name, anyelement) IS
    'internal: the rows of simhash_nearest, keys cast to the type of as_type; arguments unchecked';

CREATE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name)
RETURNS TABLE (key text, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_nearest', tbl, col, 'read', key_column) LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF n IS NULL OR n < 0 THEN
        RAISE EXCEPTION 'simhash_nearest: n must not be negative, got %', coalesce(n::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY SELECT * FROM @extschema@._simhash_nearest(tbl, col, query, n, key_column, NULL::text);
END
$$;
COMMENT ON FUNCTION simhash_nearest(regclass, name, simhash64, int4, name) IS
    'the n rows of tbl nearest to query in col, exact, named by key_column (as text; ctid when NULL, refused on partitioned and inherited tables), ties in key order; read nearest first through the covering block indexes';

CREATE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name, key_type anyelement)
RETURNS TABLE (key anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    problem record;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_nearest', tbl, col, 'read', key_column, key_type => pg_typeof(key_type)) LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF n IS NULL OR n < 0 THEN
        RAISE EXCEPTION 'simhash_nearest: n must not be negative, got %', coalesce(n::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY SELECT * FROM @extschema@._simhash_nearest(tbl, col, query, n, key_column, key_type);
END
$$;
COMMENT ON FUNCTION simhash_nearest(regclass, name, simhash64, int4, name, anyelement) IS
    'the n rows of tbl nearest to query in col, exact, named by key_column in its own type (key_type => NULL::that type; tid for ctid), ties in key order';

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

-- Re-fingerprinting a live table (docs/operations.md, "New fingerprints on a live table"). A
-- generated column cannot change its expression without rewriting the table under ACCESS
-- EXCLUSIVE, so the new fingerprints go in a plain column that two row triggers keep equal to
-- simhash(text_column[, options]) (one home for the rule: the triggers' arguments), filled for
-- the rows already there by simhash_backfill, which only touches rows the triggers then fill.

-- The arguments of a trigger (pg_trigger.tgargs: tgnargs strings, each ended by a zero byte), in
-- the database's encoding.
CREATE FUNCTION _simhash_trigger_args(args bytea, n int2) RETURNS text[]
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    out text[] := '{}';
    at int4;
BEGIN
    FOR i IN 1 .. n LOOP
        at := position('\x00'::bytea IN args);
        EXIT WHEN at = 0;
        out := out || convert_from(substring(args FROM 1 FOR at - 1), current_setting('server_encoding'));
        args := substring(args FROM at + 1);
    END LOOP;
    RETURN out;
END
$$;
COMMENT ON FUNCTION _simhash_trigger_args(bytea, int2) IS
    'internal: the arguments of a trigger, from pg_trigger.tgargs';

-- The row trigger function behind the fill triggers: sets the fingerprint column TG_ARGV[1] to
-- simhash(TG_ARGV[0][, TG_ARGV[2]::jsonb]) of the new row. Columns are reached by name through
-- jsonb, so that one function serves every table.
CREATE FUNCTION _simhash_fill() RETURNS trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fields jsonb;
    body text;
BEGIN
    IF TG_LEVEL <> 'ROW' OR TG_WHEN <> 'BEFORE' OR TG_OP NOT IN ('INSERT', 'UPDATE') OR TG_NARGS <> 3 THEN
        RAISE EXCEPTION '_simhash_fill: a BEFORE INSERT or UPDATE row trigger with 3 arguments, made by simhash_refingerprint_statements'
            USING ERRCODE = '39P01';
    END IF;
    fields := to_jsonb(NEW);
    -- A renamed column: refused, never a row stored without its fingerprint.
    IF NOT (fields ? TG_ARGV[0] AND fields ? TG_ARGV[1]) THEN
        RAISE EXCEPTION 'simhash_pg: trigger % of % fills column % from column %, and % has no column %', TG_NAME, TG_RELID::regclass,
                quote_ident(TG_ARGV[1]), quote_ident(TG_ARGV[0]), TG_RELID::regclass,
                quote_ident(CASE WHEN fields ? TG_ARGV[0] THEN TG_ARGV[1] ELSE TG_ARGV[0] END)
            USING ERRCODE = '42703',
                  HINT = 'A column was renamed: drop the fill triggers and make them for the new names, in the transaction that renames (docs/operations.md, "New fingerprints on a live table").';
    END IF;
    body := fields ->> TG_ARGV[0];
    RETURN jsonb_populate_record(NEW, jsonb_build_object(TG_ARGV[1],
               CASE WHEN TG_ARGV[2] = '' THEN @extschema@.simhash(body) ELSE @extschema@.simhash(body, TG_ARGV[2]::jsonb) END));
END
$$;
COMMENT ON FUNCTION _simhash_fill() IS
    'internal: the fill triggers of simhash_refingerprint_statements: sets column TG_ARGV[1] of the new row to simhash(TG_ARGV[0][, TG_ARGV[2]])';

-- The fill triggers on tbl that write col: each one's name, its event ('insert' or 'update'),
-- whether it fires (pg_trigger.tgenabled: 'O' origin, 'A' always, 'R' replica, 'D' disabled),
-- its text column and options.
CREATE FUNCTION _simhash_fill_triggers(tbl regclass, col name)
RETURNS TABLE (trigger_name name, event text, enabled "char", text_column name, options jsonb)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.tgname, CASE WHEN (t.tgtype & 4) = 4 THEN 'insert' ELSE 'update' END, t.tgenabled,
           a[1]::name, nullif(a[3], '')::jsonb
      FROM pg_trigger t, LATERAL (SELECT @extschema@._simhash_trigger_args(t.tgargs, t.tgnargs) AS a) x
     WHERE t.tgrelid = tbl AND t.tgfoid = '@extschema@._simhash_fill()'::regprocedure
       AND t.tgnargs = 3 AND a[2] = col
     ORDER BY t.tgname
$$;
COMMENT ON FUNCTION _simhash_fill_triggers(regclass, name) IS
    'internal: the fill triggers of simhash_refingerprint_statements on tbl that write col: name, event, enabled, text column, options';

-- How col of tbl is filled: its text column and options (NULL: the default pipeline), or no row
-- unless both fill triggers (on INSERT and on UPDATE) are there, with one rule, firing always
-- (also under session_replication_role = replica, as logical replication applies rows). The
-- triggers on tbl itself; a partition's are its partitioned table's clones.
CREATE FUNCTION _simhash_fill_recipe(tbl regclass, col name)
RETURNS TABLE (text_column name, options jsonb)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT min(f.text_column), (array_agg(f.options))[1]
      FROM @extschema@._simhash_fill_triggers(tbl, col) f
    HAVING count(DISTINCT f.event) = 2 AND bool_and(f.enabled = 'A')
       AND count(DISTINCT f.text_column) = 1 AND count(DISTINCT coalesce(f.options::text, '')) = 1
$$;
COMMENT ON FUNCTION _simhash_fill_recipe(regclass, name) IS
    'internal: the text column and options whose fingerprint the fill triggers of simhash_refingerprint_statements keep in col (no row: not both triggers, firing always, with one rule)';

-- The name of a fill trigger: simhash_fill_<col>_on_<event>, or with a hash of the column's name
-- in its place where that would pass 63 bytes (PostgreSQL would cut it, and two long names
-- could become one).
CREATE FUNCTION _simhash_fill_trigger_name(col name, event text) RETURNS name
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN octet_length('simhash_fill_' || col || '_on_' || event) <= 63
                THEN 'simhash_fill_' || col || '_on_' || event
                ELSE 'simhash_fill_' || left(md5(col), 16) || '_on_' || event END::name
$$;
COMMENT ON FUNCTION _simhash_fill_trigger_name(name, text) IS
    'internal: the name of the fill trigger of col on event (insert, update), within 63 bytes';

-- The statements that give tbl a new fingerprint column new_column = simhash(text_column[,
-- options]) while writers go on, for psql's \gexec: the column (a catalog change), its two fill
-- triggers (new and updated rows get the new fingerprint from then on), firing always, then
-- CALL simhash_backfill, which fills the rows already there in batches, committing after each.
-- Run again, it returns what is left to do (a trigger missing or disabled, on a child made
-- later, say). The layout of the new column comes after, from simhash_index_statements(tbl,
-- new_column, ...).
CREATE FUNCTION simhash_refingerprint_statements(tbl regclass, text_column name, new_column name,
                                                 options jsonb DEFAULT NULL, batch_rows int4 DEFAULT 10000)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn constant text := 'simhash_refingerprint_statements';
    kind "char";
    have record;
    text_col record;
    other record;
    member regclass;
    ev text;
    present record;
    ruled bool;
    opts text := coalesce(options::text, '');
BEGIN
    IF tbl IS NULL OR text_column IS NULL OR new_column IS NULL THEN
        RAISE EXCEPTION '%: the table, the text column and the new column must not be NULL', fn USING ERRCODE = '22004';
    END IF;
    SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = tbl;
    IF kind NOT IN ('r', 'p') THEN
        RAISE EXCEPTION '%: % is not a table', fn, tbl USING ERRCODE = '42809';
    END IF;
    IF NOT pg_has_role((SELECT c.relowner FROM pg_class c WHERE c.oid = tbl), 'USAGE') THEN
        RAISE EXCEPTION '%: must be owner of table %', fn, tbl USING ERRCODE = '42501',
            HINT = 'Only the table''s owner (or a member of the owning role) adds columns and triggers to it.';
    END IF;
    IF @extschema@._simhash_citus_table(tbl) THEN
        RAISE EXCEPTION '%: % is a Citus table, whose row triggers Citus does not run on the shards by default', fn, tbl
            USING ERRCODE = '0A000',
                  HINT = 'Add the new column as a generated column on a new table and move the rows (docs/citus.md), or fill it with UPDATE in batches while writers pause.';
    END IF;
    IF batch_rows IS NULL OR batch_rows < 1 OR batch_rows > 10000000 THEN
        RAISE EXCEPTION '%: batch_rows must be between 1 and 10000000, got %', fn, coalesce(batch_rows::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    -- The options are checked here, once, by fingerprinting a text with them.
    IF options IS NOT NULL THEN
        PERFORM @extschema@.simhash('simhash_pg', options);
    END IF;
    SELECT a.atttypid::regtype AS type, a.attgenerated INTO text_col FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = text_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF text_col.type IS NULL THEN
        RAISE EXCEPTION '%: column % of relation % does not exist', fn, quote_ident(text_column), tbl USING ERRCODE = '42703',
            HINT = format('The columns of %s are: %s.', tbl, @extschema@._simhash_column_list(tbl));
    END IF;
    IF text_col.type NOT IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype) THEN
        RAISE EXCEPTION '%: column % of relation % is of type %, not text', fn, quote_ident(text_column), tbl, text_col.type
            USING ERRCODE = '42804';
    END IF;
    IF text_col.attgenerated <> '' THEN
        -- A BEFORE trigger sees a generated column before it is computed.
        RAISE EXCEPTION '%: column % of relation % is a generated column, which row triggers cannot read', fn, quote_ident(text_column), tbl
            USING ERRCODE = '0A000', HINT = 'Fingerprint the columns it is generated from: a generated column of the new fingerprint is what a table rewrite makes.';
    END IF;
    SELECT a.atttypid, a.attgenerated INTO have FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = new_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF FOUND AND (have.atttypid <> '@extschema@.simhash64'::regtype OR have.attgenerated <> '') THEN
        RAISE EXCEPTION '%: column % of relation % already exists and is not a plain simhash64 column', fn, quote_ident(new_column), tbl
            USING ERRCODE = '42701',
                  HINT = 'Name a new column: the triggers fill it, and queries move to it once it is filled and indexed.';
    END IF;
    -- One rule per column: fill triggers of another rule (on the table or a child) are refused.
    SELECT f.text_column, f.options, m.rel INTO other
      FROM (WITH RECURSIVE down(rel) AS (
                SELECT tbl::oid
                UNION SELECT i.inhrelid FROM pg_inherits i JOIN down ON i.inhparent = down.rel)
            SELECT d.rel::regclass AS rel FROM down d) m,
           LATERAL @extschema@._simhash_fill_triggers(m.rel, new_column) f
     WHERE f.text_column <> simhash_refingerprint_statements.text_column
        OR f.options IS DISTINCT FROM simhash_refingerprint_statements.options
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '%: column % of % is filled already from %, options %', fn, quote_ident(new_column), other.rel,
                quote_ident(other.text_column), coalesce(other.options::text, 'none')
            USING ERRCODE = '55000',
                  HINT = 'Each fingerprint column has one rule. Fill another new column.';
    END IF;
    -- A column with values and no rule yet: the backfill fills only rows without a fingerprint,
    -- so values written before (by hand, by other options) would stay.
    IF have.atttypid IS NOT NULL AND NOT EXISTS (SELECT FROM @extschema@._simhash_fill_triggers(tbl, new_column)) THEN
        EXECUTE format('SELECT EXISTS (SELECT FROM %s WHERE %I IS NOT NULL)', tbl, new_column) INTO ruled;
        IF ruled THEN
            RAISE EXCEPTION '%: column % of % already holds fingerprints that no fill trigger made', fn, quote_ident(new_column), tbl
                USING ERRCODE = '55000',
                      HINT = 'Name a new column (the backfill fills only rows without a fingerprint, so these would stay as they are).';
        END IF;
    END IF;
    IF have.atttypid IS NULL THEN
        RETURN NEXT format('ALTER TABLE %s ADD COLUMN %I @extschema@.simhash64', tbl, new_column);
    END IF;
    -- A partitioned table's triggers are cloned onto its partitions, present and future; an
    -- inheritance child has its own. Each trigger missing is made, each one not firing always
    -- made to (ENABLE ALWAYS: also under session_replication_role = replica).
    FOR member IN
        WITH RECURSIVE down(rel) AS (
            SELECT tbl::oid
            UNION SELECT i.inhrelid FROM pg_inherits i JOIN down ON i.inhparent = down.rel
             WHERE (SELECT c.relkind FROM pg_class c WHERE c.oid = down.rel) <> 'p')
        SELECT d.rel::regclass FROM down d ORDER BY d.rel LOOP
        FOREACH ev IN ARRAY ARRAY['insert', 'update'] LOOP
            SELECT * INTO present FROM @extschema@._simhash_fill_triggers(member, new_column) f
             WHERE f.event = ev ORDER BY f.trigger_name LIMIT 1;
            IF present.trigger_name IS NULL THEN
                RETURN NEXT CASE WHEN ev = 'insert' THEN
                    format('CREATE TRIGGER %I BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION @extschema@._simhash_fill(%L, %L, %L)',
                           @extschema@._simhash_fill_trigger_name(new_column, ev), member, text_column, new_column, opts)
                ELSE
                    -- Only when the text or the fingerprint changes, or the row has none yet
                    -- (which simhash_backfill's updates are).
                    format('CREATE TRIGGER %I BEFORE UPDATE ON %s FOR EACH ROW WHEN (NEW.%I IS NULL OR NEW.%I IS DISTINCT FROM OLD.%I OR NEW.%I IS DISTINCT FROM OLD.%I) EXECUTE FUNCTION @extschema@._simhash_fill(%L, %L, %L)',
                           @extschema@._simhash_fill_trigger_name(new_column, ev), member,
                           new_column, text_column, text_column, new_column, new_column, text_column, new_column, opts) END;
            END IF;
            IF present.enabled IS DISTINCT FROM 'A' THEN
                RETURN NEXT format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', member,
                                   coalesce(present.trigger_name, @extschema@._simhash_fill_trigger_name(new_column, ev)));
            END IF;
        END LOOP;
    END LOOP;
    RETURN NEXT format('CALL @extschema@.simhash_backfill(%L, %L, batch_rows => %s)', tbl::text, new_column, batch_rows);
END
$$;
COMMENT ON FUNCTION simhash_refingerprint_statements(regclass, name, name, jsonb, int4) IS
    'the statements that add new_column = simhash(text_column[, options]) to tbl while writers go on: the column, two row triggers that fill it for new and updated rows, then CALL simhash_backfill for the rows already there; run them with psql''s \gexec, then index the column with simhash_index_statements';

-- Fills col for the rows of tbl that have text but no fingerprint yet, batch_rows at a time
-- (by ranges of pages, read by TID range scans), committing after each batch, so that no
-- writer waits on more than one batch's rows. The fill triggers compute each fingerprint: a
-- batch sets col to NULL, which fires them. Run again after a failure, it skips what is
-- filled. Ends when no row is left, a pass over what moved meanwhile included.
CREATE PROCEDURE simhash_backfill(tbl regclass, col name, batch_rows int4 DEFAULT 10000)
LANGUAGE plpgsql
AS $$
DECLARE
    recipe record;
    leaf pg_catalog.regclass;
    pages pg_catalog.int8;
    per_batch pg_catalog.int8;
    first pg_catalog.int8;
    done pg_catalog.int8;
    filled pg_catalog.int8 := 0;
    left_over pg_catalog.int8;
    passes pg_catalog.int4;
    tries pg_catalog.int4;
    started pg_catalog.timestamptz := pg_catalog.clock_timestamp();
    last_notice pg_catalog.timestamptz := pg_catalog.clock_timestamp();
    leaves pg_catalog.regclass[];
    stmt pg_catalog.text;
    tid_ranges pg_catalog.bool;
    callers_path pg_catalog.text := pg_catalog.current_setting('search_path');
    callers_row_security pg_catalog.text := pg_catalog.current_setting('row_security');
BEGIN
    -- No SET clause on the procedure (it would forbid COMMIT): the search path of each
    -- transaction is set here, transaction-locally, and the caller's put back at the end (a
    -- call inside a transaction block, with nothing to fill, commits nothing). So is
    -- row_security: off, a policy that would hide rows from the batches makes PostgreSQL
    -- refuse them instead.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM pg_catalog.set_config('row_security', 'off', true);
    tid_ranges := current_setting('server_version_num')::int4 >= 140000;
    IF tbl IS NULL OR col IS NULL THEN
        RAISE EXCEPTION 'simhash_backfill: the table and the column must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF batch_rows IS NULL OR batch_rows < 1 OR batch_rows > 10000000 THEN
        RAISE EXCEPTION 'simhash_backfill: batch_rows must be between 1 and 10000000, got %', coalesce(batch_rows::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT * INTO recipe FROM @extschema@._simhash_fill_recipe(tbl, col);
    IF NOT FOUND THEN
        RAISE EXCEPTION 'simhash_backfill: no fill trigger keeps column % of %', quote_ident(col), tbl
            USING ERRCODE = '55000',
                  HINT = 'Run the statements of simhash_refingerprint_statements(tbl, text_column, new_column, options) first: they make the triggers, then call this.';
    END IF;
    -- The tables that hold rows: tbl, or its partitions and inheritance children, at every level.
    WITH RECURSIVE down(rel) AS (
        SELECT tbl::oid
        UNION SELECT i.inhrelid FROM pg_inherits i JOIN down ON i.inhparent = down.rel)
    SELECT array_agg(d.rel::regclass ORDER BY d.rel) INTO leaves
      FROM down d JOIN pg_class c ON c.oid = d.rel WHERE c.relkind = 'r';
    FOREACH leaf IN ARRAY coalesce(leaves, '{}') LOOP
        IF NOT EXISTS (SELECT FROM @extschema@._simhash_fill_recipe(leaf, col)) THEN
            RAISE EXCEPTION 'simhash_backfill: % has no fill trigger for column %, as % has', leaf, quote_ident(col), tbl
                USING ERRCODE = '55000',
                      HINT = 'Run simhash_refingerprint_statements again: it makes the missing triggers.';
        END IF;
    END LOOP;
    FOREACH leaf IN ARRAY coalesce(leaves, '{}') LOOP
        passes := 0;
        LOOP
            passes := passes + 1;
            PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM pg_catalog.set_config('row_security', 'off', true);
            pages := pg_relation_size(leaf) / current_setting('block_size')::int8;
            -- Pages per batch from the rows a page holds (the statistics, else 100 rows a page).
            SELECT greatest(1, batch_rows / greatest(1, CASE WHEN c.relpages > 0 AND c.reltuples > 0
                                                             THEN c.reltuples / c.relpages ELSE 100 END))::int8
              INTO per_batch FROM pg_class c WHERE c.oid = leaf;
            stmt := format('UPDATE ONLY %s SET %I = NULL WHERE %s AND %I IS NULL AND %I IS NOT NULL', leaf, col,
                           CASE WHEN tid_ranges THEN 'ctid >= $1 AND ctid < $2'
                                -- Before PostgreSQL 14 (no TID range scans): every TID the pages can
                                -- hold (MaxHeapTuplesPerPage of them), read by a TID scan.
                                ELSE format('ctid = ANY (ARRAY(SELECT format(''(%%s,%%s)'', p, s)::tid FROM generate_series($3, $4 - 1) p, generate_series(1, %s) s))',
                                            (current_setting('block_size')::int4 - 24) / 28) END,
                           col, recipe.text_column);
            first := 0;
            WHILE first < pages LOOP
                -- A row moved to another partition meanwhile (40001), or a deadlock with a
                -- writer (40P01): the batch again, a few times.
                tries := 0;
                LOOP
                    BEGIN
                        EXECUTE stmt USING format('(%s,0)', first)::tid, format('(%s,0)', first + per_batch)::tid, first, first + per_batch;
                        GET DIAGNOSTICS done = ROW_COUNT;
                        EXIT;
                    EXCEPTION WHEN serialization_failure OR deadlock_detected THEN
                        tries := tries + 1;
                        IF tries >= 5 THEN
                            RAISE;
                        END IF;
                    END;
                END LOOP;
                filled := filled + done;
                first := first + per_batch;
                -- Only after a batch that filled rows: with nothing to fill, the call also runs
                -- inside a transaction block (the one that renames columns, say).
                IF done > 0 THEN
                    COMMIT;
                    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM pg_catalog.set_config('row_security', 'off', true);
                END IF;
                IF clock_timestamp() - last_notice >= interval '10 s' THEN
                    RAISE NOTICE 'simhash_backfill: %: page % of %, % rows filled%', leaf, least(first, pages), pages, filled,
                        @extschema@._simhash_took(started);
                    last_notice := clock_timestamp();
                END IF;
            END LOOP;
            -- Rows an update moved behind the batches (to a page already done) still lack it.
            EXECUTE format('SELECT count(*) FROM ONLY %s WHERE %I IS NULL AND %I IS NOT NULL', leaf, col, recipe.text_column)
              INTO left_over;
            EXIT WHEN left_over = 0;
            IF passes >= 10 THEN
                RAISE EXCEPTION 'simhash_backfill: % still has % rows without %, after % passes', leaf, left_over, quote_ident(col), passes
                    USING ERRCODE = '55000',
                          HINT = 'Are the fill triggers enabled? CALL simhash_backfill again to go on.';
            END IF;
        END LOOP;
    END LOOP;
    RAISE NOTICE 'simhash_backfill: % rows of % filled%', filled, tbl, @extschema@._simhash_took(started);
    PERFORM set_config('row_security', callers_row_security, true);
    PERFORM set_config('search_path', callers_path, true);
END
$$;
COMMENT ON PROCEDURE simhash_backfill(regclass, name, int4) IS
    'fills col for the rows of tbl that have text but no fingerprint yet, batch_rows at a time, committing after each batch (its fill triggers, from simhash_refingerprint_statements, compute the fingerprints); run again, it goes on';
