-- simhash_pg 1.0.0 -> 1.1.0, run by ALTER EXTENSION simhash_pg UPDATE. Its hand-written head
-- (new Rust functions, renames, drops of changed argument lists, changed comments of Rust
-- functions), then every PL/pgSQL and SQL function of sql/index.sql, sql/routed.sql and
-- sql/etl.sql as CREATE OR REPLACE, which `python3 .ci/update-script` rewrites.
-- tests/pg_regress/sql/upgrade.sql checks that an updated database equals a fresh install.
\echo Use "ALTER EXTENSION simhash_pg UPDATE" to load this file. \quit

-- From sql/index.sql.
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
CREATE OR REPLACE FUNCTION _simhash_block_column_name(col name, i int4, m int4) RETURNS name
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
CREATE OR REPLACE FUNCTION _simhash_block_marker(i int4, m int4, col name) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('simhash_pg: block %s of %s of column %s, added by simhash_create_index', i, m, quote_ident(col))
$$;
COMMENT ON FUNCTION _simhash_block_marker(int4, int4, name) IS
    'internal: the comment that marks block columns and expression indexes made by simhash_create_index';

-- The same for a table of a family of keys of several blocks: its key leads with the blocks of
-- the set lead (bit i for block i).
CREATE OR REPLACE FUNCTION _simhash_key_marker(lead int8, m int4, col name) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_column_list(tbl regclass) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_table_problem(fn text, tbl regclass, col name, purpose text, key_column name DEFAULT NULL,
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
CREATE OR REPLACE FUNCTION _simhash_took(started timestamptz) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_about(x float8) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_heap_only(tbl regclass) RETURNS bool
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
CREATE OR REPLACE FUNCTION _simhash_index_name(tbl regclass, suffix text) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_index_statements_for(tbl regclass, suffix text, tail text, marker text, online bool)
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
CREATE OR REPLACE FUNCTION _simhash_expression_index_statements(tbl regclass, col name, m int4, covering bool, permuted bool, online bool)
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

CREATE OR REPLACE FUNCTION _simhash_create_expression_indexes(tbl regclass, col name, m int4, covering bool, permuted bool)
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
CREATE OR REPLACE FUNCTION _simhash_key_index_statements(tbl regclass, col name, m int4, c int4, online bool)
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

CREATE OR REPLACE FUNCTION _simhash_create_key_indexes(tbl regclass, col name, m int4, c int4)
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
CREATE OR REPLACE FUNCTION _simhash_layout_rows(tbl regclass) RETURNS float8
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
CREATE OR REPLACE FUNCTION _simhash_not_permuted(tbl regclass, covering bool, is_set bool) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_create_index(tbl regclass, col name, max_k int4, blocks int4, covering bool, permuted bool,
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

CREATE OR REPLACE FUNCTION simhash_create_index(tbl regclass, col name, max_k int4 DEFAULT 3, blocks int4 DEFAULT NULL,
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
CREATE OR REPLACE FUNCTION simhash_index_statements(tbl regclass, col name, max_k int4 DEFAULT 3, blocks int4 DEFAULT NULL,
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
CREATE OR REPLACE FUNCTION _simhash_online_end(tbl regclass, col name, m int4, permuted bool, replaces_old bool, built bool)
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
CREATE OR REPLACE FUNCTION simhash_drop_index_statements(tbl regclass, col name)
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
CREATE OR REPLACE FUNCTION _simhash_layout_drops(tbl regclass, col name, keep_blocks int4, keep_permuted bool, online bool)
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

CREATE OR REPLACE FUNCTION _simhash_drop_layouts(fn text, tbl regclass, col name, keep_blocks int4, keep_permuted bool)
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

CREATE OR REPLACE FUNCTION simhash_drop_index(tbl regclass, col name)
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
CREATE OR REPLACE FUNCTION simhash_index_report(tbl regclass, k int4 DEFAULT 3)
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
CREATE OR REPLACE FUNCTION simhash_k_report(tbl regclass, col name, sample int4 DEFAULT 2000,
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
CREATE OR REPLACE FUNCTION _simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name, as_type anyelement)
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

CREATE OR REPLACE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name)
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

CREATE OR REPLACE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4, key_column name, key_type anyelement)
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
CREATE OR REPLACE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4)
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
CREATE OR REPLACE FUNCTION _simhash_trigger_args(args bytea, n int2) RETURNS text[]
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
CREATE OR REPLACE FUNCTION _simhash_fill() RETURNS trigger
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
CREATE OR REPLACE FUNCTION _simhash_fill_triggers(tbl regclass, col name)
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
CREATE OR REPLACE FUNCTION _simhash_fill_recipe(tbl regclass, col name)
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
CREATE OR REPLACE FUNCTION _simhash_fill_trigger_name(col name, event text) RETURNS name
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
CREATE OR REPLACE FUNCTION simhash_refingerprint_statements(tbl regclass, text_column name, new_column name,
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
CREATE OR REPLACE PROCEDURE simhash_backfill(tbl regclass, col name, batch_rows int4 DEFAULT 10000)
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

-- From sql/routed.sql.
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
CREATE OR REPLACE FUNCTION _simhash_routed_view(tbl regclass) RETURNS regclass
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
CREATE OR REPLACE FUNCTION _simhash_routed_layout(tbl regclass)
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
CREATE OR REPLACE FUNCTION _simhash_routed_enter(setting text, layouts text) RETURNS text[]
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
CREATE OR REPLACE FUNCTION _simhash_routed_leave(setting text, entered text[]) RETURNS void
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
CREATE OR REPLACE FUNCTION _simhash_routed_set(setting text, value text) RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM FROM @extschema@._simhash_routed_set_local(setting, value);
END
$$;
-- (SET statements, not set_config: Citus propagates the statements only.)
CREATE OR REPLACE FUNCTION _simhash_routed_set_local(setting text, value text) RETURNS void
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
CREATE OR REPLACE FUNCTION _simhash_routed_covers(setting text, schema_name text, name text) RETURNS bool
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
CREATE OR REPLACE FUNCTION _simhash_routed_key_allowed(schema_name text, name text, key text) RETURNS bool
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
CREATE OR REPLACE FUNCTION _simhash_transaction() RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_routed_guard() RETURNS trigger
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
CREATE OR REPLACE FUNCTION _simhash_routed_view_made_again(tbl regclass) RETURNS regclass
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
CREATE OR REPLACE FUNCTION _simhash_routed_drop_view(inserts regclass) RETURNS void
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
CREATE OR REPLACE FUNCTION _simhash_routed_view_aside(tbl regclass, columns text[]) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_routed_view_restore(tbl regclass, spec jsonb) RETURNS regclass
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

CREATE OR REPLACE FUNCTION _simhash_routed_ddl_start() RETURNS event_trigger
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'simhash_routed_ddl_start';
COMMENT ON FUNCTION _simhash_routed_ddl_start() IS
    'internal: the event trigger that sets a routed layout''s inserts view aside before an ALTER TABLE changes or drops a column it shows';

-- At the end of an ALTER TABLE (in its own transaction, before Citus sends it to the shards):
-- - the inserts views set aside at its start (above) are made again;
-- - a guard trigger disabled lets writes skip the routes, and enabled again it would make
--   lookups read routes that miss those rows (issue 67: a silent miss found by
--   tests/citus/invariant.py). So no ALTER TABLE may leave one of them disabled (DISABLE
--   TRIGGER, DISABLE TRIGGER ALL or USER, ENABLE REPLICA TRIGGER).
-- (The layout's own columns keep their types: PostgreSQL refuses to change a column a trigger's
-- WHEN clause reads.)
CREATE OR REPLACE FUNCTION _simhash_routed_ddl() RETURNS event_trigger
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

-- The name a routed layout goes by in simhash_pg.routed_writer and simhash_pg.routed_changes: its
-- routes table's schema and name, as a JSON pair.
CREATE OR REPLACE FUNCTION _simhash_routes_name(routes regclass) RETURNS jsonb
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
CREATE OR REPLACE FUNCTION _simhash_add_routes(routes regclass, m int4, fp simhash64, key text) RETURNS void
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
CREATE OR REPLACE FUNCTION _simhash_key_equality(typ regtype) RETURNS text
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
CREATE OR REPLACE FUNCTION _simhash_routed_drain(tbl regclass, keys text[] DEFAULT NULL) RETURNS int8
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
CREATE OR REPLACE FUNCTION _simhash_routed_drain_keys(changes regclass, routes regclass, m int4, keys text[]) RETURNS int8
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
CREATE OR REPLACE FUNCTION _simhash_routed_insert() RETURNS trigger
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
CREATE OR REPLACE FUNCTION _simhash_routed_make_view(tbl regclass, col name, routes regclass, m int4, schema_name name, view_name name,
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
CREATE OR REPLACE FUNCTION _simhash_insert_columns(tbl regclass) RETURNS jsonb
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
CREATE OR REPLACE FUNCTION _simhash_routed_lookup(tbl regclass, col text, query simhash64, k int4, row_type anyelement,
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
CREATE OR REPLACE FUNCTION _simhash_create_routed(tbl regclass, col name, max_k int4, blocks int4)
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
CREATE OR REPLACE FUNCTION _simhash_drop_routed(fn text, tbl regclass, col name DEFAULT NULL)
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

-- From sql/etl.sql.
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
CREATE OR REPLACE FUNCTION _simhash_pairs_on_workers_or_why(tbl regclass, rows_estimate float8, obstacle text DEFAULT NULL) RETURNS text
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

CREATE OR REPLACE FUNCTION _simhash_pairs_on_workers(tbl regclass, col name, k int4, key_column name, as_type anyelement,
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

CREATE OR REPLACE FUNCTION _simhash_pairs(tbl regclass, col name, k int4, key_column name, as_type anyelement)
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
CREATE OR REPLACE FUNCTION _simhash_verify_parts(fn text, verify jsonb, old_column name DEFAULT NULL, old_min_jaccard float8 DEFAULT NULL,
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
CREATE OR REPLACE FUNCTION _simhash_verify_problem(fn text, tables regclass[], verify_column name, min_jaccard float8,
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
CREATE OR REPLACE FUNCTION _simhash_checked_pairs(tbl regclass, col name, k int4, key_column name, as_type anyelement,
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
CREATE OR REPLACE FUNCTION _simhash_verified_pairs(tbl regclass, col name, k int4, key_column name, as_type anyelement,
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
CREATE OR REPLACE FUNCTION _simhash_check_pairs_call(fn text, tbl regclass, col name, k int4, key_column name, key_type regtype,
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
CREATE OR REPLACE FUNCTION simhash_pairs(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION simhash_pairs(tbl regclass, col name, k int4, key_column name, key_type anyelement,
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
CREATE OR REPLACE FUNCTION simhash_pairs_between(tbl regclass, col name, other regclass, other_col name, k int4 DEFAULT 3,
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
CREATE OR REPLACE FUNCTION simhash_pairs_between(tbl regclass, col name, other regclass, other_col name, k int4,
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
CREATE OR REPLACE FUNCTION _simhash_clusters(tbl regclass, col name, k int4, key_column name, as_type anyelement,
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
CREATE OR REPLACE FUNCTION simhash_chained_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION simhash_chained_groups(tbl regclass, col name, k int4, key_column name, key_type anyelement,
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
CREATE OR REPLACE FUNCTION _simhash_representative_groups(fn text, tbl regclass, col name, k int4, key_column name, as_type anyelement,
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
CREATE OR REPLACE FUNCTION simhash_representative_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION simhash_representative_groups(tbl regclass, col name, k int4, key_column name, key_type anyelement,
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
CREATE OR REPLACE FUNCTION simhash_clusters(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
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

CREATE OR REPLACE FUNCTION simhash_clusters(tbl regclass, col name, k int4, key_column name, key_type anyelement,
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

CREATE OR REPLACE FUNCTION simhash_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
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

-- The advisory lock key by which an ingest says that the rows of transactions before xmin are
-- visible to it: a tag in bits 48-62 and the 48 low bits of xmin (its epoch up to 65,535). A
-- key that is not one of ours but looks like it can only hold the horizon back.
CREATE OR REPLACE FUNCTION _simhash_ingest_key(xmin xid8) RETURNS int8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (21320::int8 << 48) | (xmin::text::int8 & 281474976710655) $$;
COMMENT ON FUNCTION _simhash_ingest_key(xid8) IS
    'internal (simhash_ingest): the advisory lock key a running ingest holds to say that the log rows of transactions before xmin are visible to it';

-- The oldest transaction whose log rows a running ingest may still need: the least xmin any
-- running ingest holds a key for, and at most the oldest transaction still running.
CREATE OR REPLACE FUNCTION _simhash_ingest_horizon() RETURNS xid8
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
CREATE OR REPLACE FUNCTION _simhash_ingest_log_readable(path oid[]) RETURNS bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(path) r(rel) WHERE has_any_column_privilege(r.rel, 'SELECT'))
           OR NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = path[1])
$$;
COMMENT ON FUNCTION _simhash_ingest_log_readable(oid[]) IS
    'internal (simhash_ingest): whether the caller may read a log row of these tables (a leaf and the tables above it)';

-- The leaf, then every table above it, of each of leaves.
CREATE OR REPLACE FUNCTION _simhash_ingest_paths(leaves oid[]) RETURNS TABLE (leaf oid, path oid[])
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
CREATE OR REPLACE FUNCTION _simhash_ingest_log_done(tree oid[], is_set bool) RETURNS void
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
CREATE OR REPLACE FUNCTION simhash_ingest(target regclass, col name, source regclass, k int4 DEFAULT 3,
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
CREATE OR REPLACE FUNCTION _simhash_guard_triggers(tbl regclass)
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

CREATE OR REPLACE FUNCTION simhash_guard(tbl regclass, col name, k int4 DEFAULT 3, on_conflict text DEFAULT 'error')
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

CREATE OR REPLACE FUNCTION simhash_drop_guard(tbl regclass, col name)
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

CREATE OR REPLACE FUNCTION simhash_guards(tbl regclass)
RETURNS TABLE (col name, k int4, on_conflict text)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT g.col, g.k, g.on_conflict FROM @extschema@._simhash_guard_triggers(tbl) g WHERE g.commit_check ORDER BY g.col
$$;
COMMENT ON FUNCTION simhash_guards(regclass) IS
    'the guards on tbl (simhash_guard): column, k and on_conflict';
