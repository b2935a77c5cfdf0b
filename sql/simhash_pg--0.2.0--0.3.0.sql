-- simhash_pg 0.2.0 -> 0.3.0, run by ALTER EXTENSION simhash_pg UPDATE. Every PL/pgSQL and SQL
-- function of sql/index.sql and sql/etl.sql, as CREATE OR REPLACE (0.3.0 changed most of them),
-- after dropping the helpers 0.3.0 no longer has; `python3 .ci/update-script` rewrites that part.
-- tests/pg_regress/sql/upgrade.sql checks that an updated database has exactly the objects,
-- definitions and comments of a fresh install.
\echo Use "ALTER EXTENSION simhash_pg UPDATE" to load this file. \quit

-- 0.3.0: rows are never named by ctid alone where ctid names several rows (partitioned tables,
-- inheritance children); simhash_nearest gains key_column; simhash_pairs, simhash_clusters and
-- simhash_nearest gain forms that return keys in their own type (key_type); the helpers' errors
-- name the function called, with hints; progress NOTICEs only for steps of a second or more;
-- Citus tables are read through their shards.
DROP FUNCTION simhash_check_pairable(text, regclass, name, name);
DROP FUNCTION simhash_check_indexable(text, regclass, name);
DROP FUNCTION simhash_check_column(text, regclass, name);
-- Internal helpers are named _simhash_* from 0.3.0 on.
DROP FUNCTION simhash_took(timestamptz);
DROP FUNCTION simhash_block_column_name(name, int4, int4);

-- The default pipeline is word unigrams with TF-IDF weights, as it always was; the comment said
-- otherwise.
COMMENT ON FUNCTION simhash(text) IS 'SimHash fingerprint of a text with the default pipeline (version 1: NFKC, case folding, jieba/UAX #29 words, TF-IDF weights, xxh3-64)';

-- Reading a text costs about as much as to_tsvector (COST 100), so that the planner tests a
-- cheap condition (a distance) before it reads texts (a Jaccard check).
ALTER FUNCTION simhash(text) COST 100;
ALTER FUNCTION simhash(text, jsonb) COST 100;

-- New in Rust (src/text.rs, src/core/markup.rs): HTML read as its visible text
-- ({"markup": "html"}), and the text a fingerprint reads.
CREATE FUNCTION simhash_extract(body text, options jsonb) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE COST 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_extract_wrapper';
COMMENT ON FUNCTION simhash(text, jsonb) IS 'SimHash fingerprint of a text with options: tokenizer, ngram, weighting, top_k, case_fold, seed, markup, version';
-- And the exact similarity of two texts, to verify a near pair.
CREATE FUNCTION simhash_jaccard(a text, b text, options jsonb DEFAULT '{}') RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE COST 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_jaccard_wrapper';
CREATE FUNCTION simhash_containment(a text, b text, options jsonb DEFAULT '{}') RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE COST 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_containment_wrapper';
CREATE FUNCTION simhash_feature_set(body text, options jsonb DEFAULT '{}') RETURNS int8[]
    IMMUTABLE STRICT PARALLEL SAFE COST 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_feature_set_wrapper';
CREATE FUNCTION simhash_jaccard(a int8[], b int8[]) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE COST 10
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_jaccard_sets_wrapper';
CREATE FUNCTION simhash_containment(a int8[], b int8[]) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE COST 10
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_containment_sets_wrapper';
COMMENT ON FUNCTION simhash_feature_set(text, jsonb) IS 'the distinct features of a text as their 64-bit hashes, sorted: what simhash_jaccard compares, to compute once per row';
COMMENT ON FUNCTION simhash_jaccard(int8[], int8[]) IS 'Jaccard similarity of two feature sets (simhash_feature_set)';
COMMENT ON FUNCTION simhash_containment(int8[], int8[]) IS 'share of the first feature set (simhash_feature_set) that the second holds';
COMMENT ON FUNCTION simhash_jaccard(text, text, jsonb) IS 'Jaccard similarity of the distinct features of two texts as simhash(text, options) reads them (word 3-shingles with {"ngram": 3}): the exact check of a near pair';
COMMENT ON FUNCTION simhash_containment(text, text, jsonb) IS 'share of the distinct features of the first text that the second has, as simhash(text, options) reads them: a text quoted whole in a longer one scores 1';
COMMENT ON FUNCTION simhash_extract(text, jsonb) IS 'the text simhash(body, options) reads before normalising: body itself, or with {"markup": "html"} the visible text of the page';

-- New in Rust (src/distance_bounds.rs): fp <-> q <= k, hamming_distance(fp, q) <= k and their
-- other spellings use the block indexes as simhash_near does. The distances' support function
-- only makes PostgreSQL load the library in time for the planner hook to see the comparison.
CREATE FUNCTION simhash_distance_support(request internal) RETURNS internal
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_distance_support_wrapper';
ALTER FUNCTION hamming_distance(simhash64, simhash64) SUPPORT simhash_distance_support;
COMMENT ON FUNCTION simhash_distance_support(internal) IS 'planner support for hamming_distance and simhash_set_distance: offers nothing, but loads the library in time for the planner to rewrite <-> comparisons (fp <-> q <= k) into simhash_near';

-- New in Rust (src/etl.rs): the in-batch half of the set-based simhash_ingest.
CREATE FUNCTION _simhash_keep_first_of_near(fps simhash64[], width int4, k int4) RETURNS bool[]
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_keep_first_of_near_wrapper';
-- And of a verified ingest (verify_column).
CREATE FUNCTION _simhash_keep_first_of_verified(fps simhash64[], width int4, k int4, features int8[], counts int4[],
                                                min_jaccard float8) RETURNS bool[]
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_keep_first_of_verified_wrapper';

-- And the bounds of k, from the core, for the PL/pgSQL functions to raise.
CREATE FUNCTION _simhash_k_problem(caller text, k int4, purpose text)
    RETURNS TABLE (sqlstate text, message text, hint text)
    IMMUTABLE PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_k_problem_wrapper';

-- simhash_pairs, simhash_clusters and simhash_ingest gain trailing parameters for the exact
-- check of a pair (verify_column, min_jaccard, verify_options): each is dropped here and comes
-- back below with them, so that a call with 0.2.0's arguments finds one function. A view or a
-- BEGIN ATOMIC function that calls one of them makes the update fail (drop it first and
-- recreate it after); PL/pgSQL and quoted SQL bodies are not affected.
DROP FUNCTION simhash_pairs(regclass, name, int4, name);
DROP FUNCTION simhash_clusters(regclass, name, int4, name);
DROP FUNCTION simhash_ingest(regclass, name, regclass, int4, bool);

-- New in Rust (src/table_info.rs): how many rows the helpers size their work for (reltuples, or
-- the planner's estimate from the table's size before the first VACUUM or ANALYZE; 0.2.0
-- assumed a million rows there).
CREATE FUNCTION _simhash_rows_estimate(tbl regclass) RETURNS float8
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_rows_estimate_wrapper';

-- New in Rust (src/table_info.rs): the layout simhash_create_index builds for a k and a table
-- size, or what a given block count costs there (simhash_index_report), by one cost model.
CREATE FUNCTION _simhash_layout_to_build(max_k int4, rows float8, permuted_ok bool, blocks int4 DEFAULT NULL)
    RETURNS TABLE (blocks int4, permuted bool, descents int8, entries float8, cost float8)
    IMMUTABLE PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_layout_to_build_wrapper';
-- New in Rust (src/citus.rs): whether Citus manages a table.
CREATE FUNCTION _simhash_citus_table(tbl regclass) RETURNS bool
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_citus_table_wrapper';

-- New in Rust: sets of seeded fingerprints (src/sets.rs), their lookup (src/index_probe.rs)
-- and size (src/table_info.rs); simhash_block_columns gains the element of a set column.
CREATE FUNCTION simhash_set(body text, b int4) RETURNS simhash64[]
    IMMUTABLE STRICT PARALLEL SAFE COST 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_set_default_wrapper';
CREATE FUNCTION simhash_set(body text, b int4, options jsonb) RETURNS simhash64[]
    IMMUTABLE STRICT PARALLEL SAFE COST 100
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_set_with_options_wrapper';
CREATE FUNCTION simhash_set_distance(a simhash64[], b simhash64[]) RETURNS int4
    IMMUTABLE STRICT PARALLEL SAFE SUPPORT simhash_distance_support
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_set_distance_wrapper';
CREATE FUNCTION simhash_near_any(a simhash64[], b simhash64[], k int4) RETURNS bool
    IMMUTABLE STRICT PARALLEL SAFE SUPPORT simhash_near_support
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_near_any_wrapper';
CREATE OPERATOR <-> (
    LEFTARG = simhash64[], RIGHTARG = simhash64[], FUNCTION = simhash_set_distance, COMMUTATOR = <->
);
CREATE FUNCTION simhash_index_probe(indexes regclass[], query simhash64[], k int4, blocks int4) RETURNS tid[]
    STABLE STRICT PARALLEL SAFE COST 1000
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_index_probe_sets_wrapper';
CREATE FUNCTION _simhash_set_size(tbl regclass, col text) RETURNS int4
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_set_size_wrapper';
DROP FUNCTION simhash_block_columns(regclass);
CREATE FUNCTION simhash_block_columns(tbl regclass)
    RETURNS TABLE (column_name text, source_column text, block int4, blocks int4, index text, covering bool, element int4,
                   permuted bool)
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_block_columns_wrapper';
COMMENT ON FUNCTION simhash_block_columns(regclass) IS 'the block layouts of a table as the planner sees them: source column, block i of m, the B-tree index used (NULL: none), whether it covers the fingerprint, the element of a set column, and whether the index is a permuted one (simhash_permute)';

-- New in Rust: permuted block indexes (src/distance.rs, src/leaf_scan.rs); simhash_create_index
-- gains permuted => false.
DROP FUNCTION simhash_create_index(regclass, name, int4, int4, bool);
CREATE FUNCTION simhash_permute(fp simhash64, i int4, m int4) RETURNS int8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_permute_wrapper';
COMMENT ON FUNCTION simhash_permute(simhash64, int4, int4) IS 'the fingerprint rotated left so that block i of m leads, as int8: the key of a permuted block index, which serves the block as a key range and holds the whole fingerprint';
COMMENT ON FUNCTION simhash_set(text, int4) IS 'b SimHash fingerprints of a text (default pipeline), seeds 0 .. b-1: element 1 is simhash(body); near when any same-position pair is within k (simhash_near_any)';
COMMENT ON FUNCTION simhash_set(text, int4, jsonb) IS 'b SimHash fingerprints of a text with options, seeds seed .. seed+b-1: element 1 is simhash(body, options)';
COMMENT ON FUNCTION simhash_set_distance(simhash64[], simhash64[]) IS 'smallest distance between same-position fingerprints of two sets (up to the shorter), NULL when no position has both; also <->';
COMMENT ON FUNCTION simhash_near_any(simhash64[], simhash64[], int4) IS 'true when some same-position pair of the two sets is within k bits; uses the block indexes of every element of a set column generated by simhash_set';

-- New in Rust (src/etl.rs, src/table_info.rs): the keys of pairs across two tables
-- (simhash_pairs_between), and what simhash_ingest weighs to choose between lookups per row and
-- hash joins.
CREATE FUNCTION _simhash_cross_masks(k int4, a float8, b float8) RETURNS int8[]
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_cross_masks_wrapper';
CREATE FUNCTION _simhash_batch_prefers_joins(k int4, batch_rows float8, target_rows float8, lookup float8) RETURNS bool
    IMMUTABLE PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_batch_prefers_joins_wrapper';
CREATE FUNCTION _simhash_lookup_cost(tbl regclass, col text, k int4) RETURNS float8
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_lookup_cost_wrapper';
-- Groups that do not chain (simhash_groups, in sql/etl.sql).
CREATE FUNCTION simhash_stars(keep_order text[], a text[], b text[]) RETURNS TABLE (node text, representative text)
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'simhash_stars_wrapper';
-- How simhash_pairs finds the pairs of a table that fits maintenance_work_mem: in memory.
CREATE FUNCTION _simhash_pairs_memory(rows float8, width int4, key_bytes float8) RETURNS float8
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_pairs_memory_wrapper';
CREATE FUNCTION _simhash_close_pairs(fps simhash64[], width int4, k int4, method text) RETURNS TABLE (i int4, j int4, distance int4)
    IMMUTABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_close_pairs_wrapper';
-- And the one pass over a covering block index that it may choose instead (src/batch_probe.rs).
CREATE FUNCTION _simhash_ingest_method(tbl regclass, col text, k int4, batch_rows float8) RETURNS text
    STABLE STRICT PARALLEL SAFE
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_ingest_method_wrapper';
CREATE FUNCTION _simhash_batch_near(tbl regclass, col text, fps simhash64[], k int4) RETURNS int8[]
    STABLE STRICT PARALLEL SAFE COST 10000
    LANGUAGE c AS 'MODULE_PATHNAME', '_simhash_batch_near_wrapper';

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
-- simhash_drop_index), 'read' (simhash_nearest, simhash_pairs, simhash_clusters: key_column or
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
    IF purpose IN ('read', 'ingest_source') AND kind NOT IN ('r', 'p', 'm') THEN
        RETURN QUERY SELECT '42809', format('%s: %s is not a table or materialized view', fn, tbl),
            CASE WHEN purpose = 'read' THEN 'Call it on the table the view reads from, or on a materialized view.'
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
    IF key_type IS NOT NULL THEN
        SELECT coalesce((SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = key_column),
                        'tid'::regtype) INTO key_is;
        IF key_is <> key_type THEN
            RETURN QUERY SELECT '42804', format('%s: key_type is %s, but key column %s is of type %s', fn, key_type,
                    coalesce(quote_ident(key_column), 'ctid'), key_is),
                format('Pass a NULL of the key''s type: key_type => NULL::%s.', key_is);
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

COMMENT ON FUNCTION simhash_index_probe(regclass[], simhash64, int4) IS
    'rows within k bits of query, as TIDs, found through covering block indexes (index i = block i); what WHERE simhash_near(...) runs as a TID scan';
COMMENT ON FUNCTION simhash_index_probe(regclass[], simhash64[], int4, int4) IS
    'rows with some element within k bits of the same element of query, as TIDs, through blocks covering indexes per element, element by element; what WHERE simhash_near_any(fps, q, k) on a set column runs as';

COMMENT ON FUNCTION _simhash_layout_to_build(int4, float8, bool, int4) IS
    'internal: the layout simhash_create_index builds for lookups up to max_k on about rows rows (or, with blocks, that block count), and what a lookup at max_k costs through it: B-tree descents, entries read, both in entries';
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
    WHILE octet_length(index_name) > 63 LOOP
        index_name := overlay(index_name placing '' from 1 for 1);
    END LOOP;
    RETURN index_name;
END
$$;
COMMENT ON FUNCTION _simhash_index_name(regclass, text) IS
    'internal: name simhash_create_index gives an index: <table>_<suffix>, shortened from the front to 63 bytes';

-- simhash_create_index's expression indexes, m per fingerprint (per element e of a set column,
-- which is generated itself, so its blocks cannot be columns):
-- - on a set column (simhash64[], generated by simhash_set(text, b, ...)), covering ones,
--   ((simhash_block(col[e], i, m)), (col[e])), which the planner reads together (src/planner.rs):
--   two keys, not INCLUDE, because INCLUDE takes columns only (the simhash64 B-tree opclass has
--   no equalimage function, so such indexes never hold posting lists);
-- - with permuted, on a set or a plain column, (simhash_permute(col, i, m)) or
--   (simhash_permute(col[e], i, m)): Manku et al.'s permuted tables. A block value is a range of
--   the key, the key is the fingerprint, so the leaf-page probe checks distances on it; no block
--   column (no table rewrite, no ACCESS EXCLUSIVE lock) and 16-byte index tuples where a
--   covering block index has 24. Only the probe reads them (src/leaf_scan.rs): where it may not
--   run (row-level security), they serve no lookup.
CREATE OR REPLACE FUNCTION _simhash_create_expression_indexes(tbl regclass, col name, m int4, covering bool, permuted bool)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    is_set bool := (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col)
                   = '@extschema@.simhash64[]'::regtype;
    size int4 := 1;
    done int4[];
    built int4 := 0;
    source text;
    marked name;
    index_name text;
    started timestamptz;
    schema name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tbl);
BEGIN
    IF is_set THEN
        size := @extschema@._simhash_set_size(tbl, col);
    END IF;
    EXECUTE format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE', tbl);
    -- Element e (1 for a plain column), block i is done when an index of the kind asked exists
    -- (made here or by hand).
    SELECT array_agg(DISTINCT coalesce(b.element, 1) * 100 + b.block) INTO done
      FROM @extschema@.simhash_block_columns(tbl) b
     WHERE b.source_column = col AND b.blocks = m AND b.covering AND b.permuted = _simhash_create_expression_indexes.permuted;
    FOR e IN 1 .. size LOOP
        source := CASE WHEN is_set THEN format('%I[%s]', col, e) ELSE quote_ident(col) END;
        marked := CASE WHEN is_set THEN format('%s[%s]', col, e) ELSE col END;
        FOR i IN 0 .. m - 1 LOOP
            CONTINUE WHEN e * 100 + i = ANY(coalesce(done, '{}'));
            started := clock_timestamp();
            IF permuted THEN
                -- <table>_<col>[<e>]_perm<i>of<m>
                index_name := @extschema@._simhash_index_name(tbl,
                    format('%s%s_perm%sof%s', col, CASE WHEN is_set THEN e::text ELSE '' END, i, m));
                EXECUTE format('CREATE INDEX %I ON %s ((@extschema@.simhash_permute(%s, %s, %s)))', index_name, tbl, source, i, m);
            ELSE
                -- <table>_<col><e>_block<i>of<m>
                index_name := @extschema@._simhash_index_name(tbl, @extschema@._simhash_block_column_name((col || e)::name, i, m));
                EXECUTE format('CREATE INDEX %I ON %s ((@extschema@.simhash_block(%s, %s, %s)), (%s))',
                               index_name, tbl, source, i, m, source);
            END IF;
            EXECUTE format('COMMENT ON INDEX %I.%I IS %L', schema, index_name, @extschema@._simhash_block_marker(i, m, marked));
            built := built + 1;
            IF @extschema@._simhash_took(started) <> '' THEN
                RAISE NOTICE 'simhash_create_index: %index on block % of % of % built%',
                    CASE WHEN permuted THEN 'permuted ' ELSE '' END, i, m, source, @extschema@._simhash_took(started);
            END IF;
        END LOOP;
    END LOOP;
    IF built = 0 THEN
        IF permuted THEN
            RAISE NOTICE 'simhash_create_index: % already has a permuted %-block layout of column %; nothing to do',
                tbl, m, quote_ident(col);
        ELSE
            RAISE NOTICE 'simhash_create_index: % already has an indexed %-block layout of each of the % fingerprints of column %; nothing to do',
                tbl, m, size, quote_ident(col);
        END IF;
        RETURN;
    END IF;
    IF NOT @extschema@._simhash_citus_table(tbl) THEN
        EXECUTE format('ANALYZE %s', tbl); -- index expressions get statistics only this way
    END IF;
END
$$;
COMMENT ON FUNCTION _simhash_create_expression_indexes(regclass, name, int4, bool, bool) IS
    'internal: simhash_create_index''s expression indexes: m covering ones per element of a set column, or m on simhash_permute per fingerprint with permuted; arguments checked by the caller';

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

CREATE OR REPLACE FUNCTION simhash_create_index(tbl regclass, col name, max_k int4 DEFAULT 3, blocks int4 DEFAULT NULL,
                                     covering bool DEFAULT true, permuted bool DEFAULT NULL,
                                     expected_rows float8 DEFAULT NULL)
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
    problem record;
    chosen record;
    -- A call that leaves the layout to the function replaces the layouts it made before, once
    -- the new one is built (lookups use the old one meanwhile); one that names blocks or
    -- permuted adds a layout beside them.
    replaces_old bool := blocks IS NULL AND permuted IS NULL;
    rows_for float8;
    is_set bool;
    fallback text;
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_create_index', tbl, col, 'index') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    -- A generated col (simhash(body), say) cannot feed generated block columns (PostgreSQL
    -- forbids it), so its blocks go in expression indexes on simhash_block(col, i, m) instead.
    SELECT a.attgenerated <> '' INTO in_expressions
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
    is_set := (SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = tbl AND a.attname = col) = '@extschema@.simhash64[]'::regtype;
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
            RAISE NOTICE 'simhash_create_index: for k <= % at % rows%: % blocks of % bits, %; a lookup at k = % takes about % index descents and reads about %',
                max_k, @extschema@._simhash_about(rows_for),
                CASE WHEN expected_rows IS NULL AND @extschema@._simhash_citus_table(tbl) THEN ' per shard' ELSE '' END,
                chosen.blocks,
                CASE WHEN 64 % chosen.blocks = 0 THEN (64 / chosen.blocks)::text ELSE 'about ' || round(64.0 / chosen.blocks) END,
                CASE WHEN permuted THEN 'one permuted index each'
                     WHEN is_set THEN 'one expression index each per fingerprint'
                     WHEN in_expressions THEN 'one expression index each'
                     WHEN covering THEN 'one generated column and covering index each'
                     ELSE 'one generated column and index each' END,
                max_k, chosen.descents,
                CASE WHEN chosen.entries < 1.5 THEN '1 index entry'
                     ELSE @extschema@._simhash_about(chosen.entries) || ' index entries' END
                || CASE WHEN NOT permuted AND fallback IS NOT NULL THEN ' (not permuted: ' || fallback || ')' ELSE '' END
                || CASE WHEN expected_rows IS NULL AND rows_for = 0
                        THEN '; the table is empty: to size the layout for the rows to come, pass expected_rows => N'
                        ELSE '' END;
        END IF;
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
        PERFORM @extschema@._simhash_create_expression_indexes(tbl, col, m, true, true);
        IF replaces_old THEN
            PERFORM @extschema@._simhash_drop_layouts('simhash_create_index', tbl, col, m, true);
        END IF;
        RETURN;
    END IF;
    IF is_set THEN
        PERFORM @extschema@._simhash_create_expression_indexes(tbl, col, m, covering, false);
        IF replaces_old THEN
            PERFORM @extschema@._simhash_drop_layouts('simhash_create_index', tbl, col, m, false);
        END IF;
        RETURN;
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
            index_name := @extschema@._simhash_index_name(tbl, @extschema@._simhash_block_column_name(col, i, m));
            marker := @extschema@._simhash_block_marker(i, m, col);
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
        IF @extschema@._simhash_took(started) <> '' THEN
            RAISE NOTICE 'simhash_create_index: index % of % (on %) built%',
                built, to_build, CASE WHEN in_expressions THEN have[i] ELSE quote_ident(have[i]) END,
                @extschema@._simhash_took(started);
        END IF;
    END LOOP;

    IF replaces_old THEN
        PERFORM @extschema@._simhash_drop_layouts('simhash_create_index', tbl, col, m, false);
    END IF;
    IF built = 0 THEN
        RAISE NOTICE 'simhash_create_index: % already has an indexed %-block layout of column %; nothing to do',
            tbl, m, quote_ident(col);
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
COMMENT ON FUNCTION simhash_create_index(regclass, name, int4, int4, bool, bool, float8) IS
    'indexes col for WHERE simhash_near(col, q, k) with k up to max_k: the block count whose lookup costs least at the table''s size (or expected_rows), says which in a NOTICE; one B-tree per block on simhash_permute(col, i, m), no columns, unless permuted => false, covering => false, row-level security or Citus: then generated block columns with a B-tree each, covering col unless covering => false; blocks => m overrides the count; on a set column generated by simhash_set, covering (or permuted) expression indexes per fingerprint for simhash_near_any; rerun: repairs missing indexes, else does nothing';

-- Drops the layouts of col that simhash_create_index made: all of them, or all but the one of
-- keep_blocks blocks (permuted or not as keep_permuted), which a rerun has just built.
CREATE OR REPLACE FUNCTION _simhash_drop_layouts(fn text, tbl regclass, col name, keep_blocks int4, keep_permuted bool)
RETURNS int4
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    drops text[];
    kept text[];
    index_drops text[];
    index_name text;
BEGIN
    IF keep_blocks IS NULL THEN
        EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', tbl);
    END IF;
    -- (A rerun already holds a lock that keeps others from changing the layouts, so it takes
    -- the exclusive one only when there is something to drop: DROP INDEX and ALTER TABLE do.)
    -- Expression indexes it made (permuted ones, or for a generated col) carry the same mark,
    -- on the index.
    SELECT array_agg(format('%I.%I', n.nspname, c.relname) ORDER BY b.blocks, b.block)
      INTO index_drops
      FROM @extschema@.simhash_block_columns(tbl) b
      JOIN pg_class c ON c.relname = b.index
                     AND c.relnamespace = (SELECT t.relnamespace FROM pg_class t WHERE t.oid = tbl)
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE b.source_column = col AND b.column_name IS NULL
       AND (keep_blocks IS NULL OR b.blocks <> keep_blocks OR b.permuted <> keep_permuted)
       AND obj_description(c.oid, 'pg_class') = @extschema@._simhash_block_marker(b.block, b.blocks,
               CASE WHEN b.element IS NULL THEN col ELSE format('%s[%s]', col, b.element)::name END);
    IF index_drops IS NOT NULL THEN
        -- One at a time: Citus refuses to drop several distributed indexes in one command.
        FOREACH index_name IN ARRAY index_drops LOOP
            EXECUTE format('DROP INDEX %s', index_name);
        END LOOP;
        RAISE NOTICE '%: dropped % block index(es) of column %', fn, cardinality(index_drops), quote_ident(col);
    END IF;
    -- Only the columns simhash_create_index added (its comment marks them, any block of any
    -- column, so that they still go after fp was renamed); hand-made block columns stay. Their
    -- indexes go with them. A rerun also keeps a column that something else depends on (an
    -- index of the user's over it, statistics, a view, a policy): simhash_drop_index would drop
    -- those, a rerun should not.
    SELECT array_agg(format('DROP COLUMN %I', b.column_name) ORDER BY b.blocks, b.block) FILTER (WHERE NOT b.used),
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
               AND col_description(tbl, a.attnum) LIKE 'simhash_pg: block % added by simhash_create_index') b;
    IF drops IS NOT NULL THEN
        EXECUTE format('ALTER TABLE %s %s', tbl, array_to_string(drops, ', '));
        RAISE NOTICE '%: dropped % block column(s) of column % and their indexes', fn, cardinality(drops), quote_ident(col);
    END IF;
    IF kept IS NOT NULL THEN
        RAISE NOTICE '%: kept block column(s) % of column %: other objects depend on them', fn, array_to_string(kept, ', '), quote_ident(col)
            USING HINT = format('simhash_drop_index(%L, %L) drops them with what depends on them.', tbl::text, col);
    END IF;
    RETURN coalesce(cardinality(index_drops), 0) + coalesce(cardinality(drops), 0);
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
BEGIN
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_drop_index', tbl, col, 'index') LOOP
        RAISE EXCEPTION USING ERRCODE = problem.sqlstate, MESSAGE = problem.message, HINT = problem.hint;
    END LOOP;
    IF @extschema@._simhash_drop_layouts('simhash_drop_index', tbl, col, NULL, NULL) = 0 THEN
        RAISE NOTICE 'simhash_drop_index: % has no block columns of column % added by simhash_create_index; nothing to do',
            tbl, quote_ident(col);
    END IF;
END
$$;
COMMENT ON FUNCTION simhash_drop_index(regclass, name) IS
    'drops the block columns (and so their indexes) that simhash_create_index added for col; hand-made ones stay';

-- Each block layout of tbl against the one simhash_create_index would build now for lookups
-- within k, by the same cost model (_simhash_layout_to_build): a table that has grown since it
-- was indexed, or a layout made for another k, shows here with the call that fixes it.
CREATE OR REPLACE FUNCTION simhash_index_report(tbl regclass, k int4 DEFAULT 3)
RETURNS TABLE (column_name name, blocks int4, permuted bool, complete bool, table_rows float8,
               descents int8, entries float8, best_blocks int4, best_permuted bool,
               best_descents int8, best_entries float8, advice text)
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
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_index_report(regclass, int4) IS
    'each block layout of tbl: what a lookup within k costs through it at the table''s size now (B-tree descents, index entries read) beside the layout simhash_create_index would build now, and advice with the call to run when it has outgrown';

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

-- From sql/etl.sql.
-- Dedup in ETL jobs: every near pair of a table, the groups they form, and inserting a batch
-- without its near-copies. Same rules as sql/index.sql: callers' rights, pinned search_path,
-- @extschema@-qualified calls, names only through regclass output and format('%I').
-- The joins' distance tests are spelled NOT (hamming_distance(x, y) > k): the planner hook
-- (src/distance_bounds.rs) turns "<= k" into simhash_near, whose block probes per row would
-- replace these hash joins.

COMMENT ON FUNCTION simhash_pair_masks(int4, float8) IS
    'the fp & mask keys simhash_pairs joins on to find every pair within k bits among about rows fingerprints';
COMMENT ON FUNCTION _simhash_keep_first_of_near(simhash64[], int4, int4) IS
    'internal (simhash_ingest): which rows of an ordered batch stay when a row within k bits of an earlier row that stays is dropped; width fingerprints per row';
COMMENT ON FUNCTION _simhash_keep_first_of_verified(simhash64[], int4, int4, int8[], int4[], float8) IS
    'internal (simhash_ingest with verify_column): the same, a near earlier row dropping a row only when their feature sets (features, counts per row) have Jaccard >= min_jaccard';
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
COMMENT ON FUNCTION _simhash_ingest_method(regclass, text, int4, float8) IS
    'internal: how simhash_ingest finds the rows of a batch of batch_rows rows within k bits of a row of plain table tbl: lookups, pass (one read of a covering block index) or joins, whichever costs least';
COMMENT ON FUNCTION _simhash_batch_near(regclass, text, simhash64[], int4) IS
    'internal (simhash_ingest): the positions of the fingerprints of fps within k bits of a visible row of plain table tbl, by one read of a covering block index of col; NULL without one';
COMMENT ON FUNCTION simhash_stars(text[], text[], text[]) IS
    'groups that do not chain: nodes taken in keep_order, each one in no group yet becoming the representative of its neighbours (edges a[i]-b[i]) in no group yet; every node on an edge with its representative';
COMMENT ON FUNCTION simhash_components(text[], text[]) IS
    'connected components of the graph with edges a[i]-b[i]: every node with the smallest node (text order) of its component';

-- simhash_pairs and simhash_clusters come in two forms each: keys as text (0.1.0's form), and
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
-- need a hash-distributed table, a writable transaction and CREATE on tbl's schema (for two
-- intermediate tables); reference and Citus-local tables are whole on one node, joined there.
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
    'internal: NULL when simhash_pairs joins the Citus table tbl on the workers, otherwise why not (simhash_pg.citus_pairs, table kind, read-only, privilege)';

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
    branches text;
    earlier text;
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
    x_fp text;
    y_fp text;
BEGIN
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
    IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                WHERE i.indrelid = tbl AND i.indisunique AND i.indisvalid AND i.indpred IS NULL
                  AND i.indnkeyatts = 1 AND a.attname = key_column) THEN
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
        -- A pair is returned by the first key it shares only: key j's branch checks that its
        -- element is near, that the element's earlier masks are not shared, and that no earlier
        -- element is near (those returned it already).
        branches := '';
        earlier := '';
        FOR j IN 1 .. last LOOP
            x_fp := CASE WHEN is_set THEN format('x.fp[%s]', key_elements[j]) ELSE 'x.fp' END;
            y_fp := CASE WHEN is_set THEN format('y.fp[%s]', key_elements[j]) ELSE 'y.fp' END;
            IF j > 1 AND key_elements[j] <> key_elements[j - 1] THEN
                -- A new element: the last one's masks give way to "it was not near".
                earlier := array_to_string(ARRAY(SELECT format('coalesce(@extschema@.hamming_distance(x.fp[%1$s], y.fp[%1$s]) > %2$s, true)', g, k)
                                                   FROM generate_series(1, key_elements[j] - 1) g), ' AND ');
            END IF;
            IF j >= first THEN
                branches := branches || format(' WHEN %s THEN %s', j, coalesce(nullif(concat_ws(' AND ',
                    CASE WHEN is_set THEN format('NOT (@extschema@.hamming_distance(%s, %s) > %s)', x_fp, y_fp, k) END,
                    nullif(earlier, '')), ''), 'true'));
            END IF;
            earlier := concat_ws(' AND ', nullif(earlier, ''), format('((%s::int8 # %s::int8) & %s) <> 0', x_fp, y_fp, key_masks[j]));
        END LOOP;
        RETURN QUERY EXECUTE format(
            'SELECT x.key::%1$s, y.key::%1$s, %5$s(x.fp, y.fp)
               FROM %2$s x JOIN %2$s y ON x.b = y.b AND x.i = y.i
              WHERE (x.key, x.s, x.c) < (y.key, y.s, y.c)
                AND NOT (%5$s(x.fp, y.fp) > %3$s)
                AND CASE x.i%4$s END',
            out_type, tables[1], k, branches,
            CASE WHEN is_set THEN '@extschema@.simhash_set_distance' ELSE '@extschema@.hamming_distance' END);
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
    total int8 := 0;
    started timestamptz := clock_timestamp();
    last_notice timestamptz := clock_timestamp();
    joins text[] := '{}';
    citus bool := @extschema@._simhash_citus_table(tbl);
    in_memory bool;
    memory_needed float8;
    key_bytes float8;
    fixed_length_key bool;
    array_key bool;
    -- A registered setting (src/settings.rs), checked again for a value set before the library
    -- loaded; 'auto' (or the empty string of 0.3.0) leaves the choice to the function.
    pairs_method text := nullif(nullif(current_setting('simhash_pg.pairs_method', true), ''), 'auto');
BEGIN
    IF pairs_method NOT IN ('joins', 'compare', 'sort') THEN
        RAISE EXCEPTION 'simhash_pg.pairs_method must be auto, joins, compare or sort, got %', quote_literal(pairs_method)
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
    -- One equi-join per key (see simhash_pair_masks): rows sharing fp & mask are the candidates.
    -- A pair is returned by the first key it shares only, and once, the smaller row first.
    masks := @extschema@.simhash_pair_masks(k, rows_estimate);
    IF citus AND @extschema@._simhash_pairs_on_workers_or_why(tbl, rows_estimate,
            CASE WHEN is_set AND set_size IS NULL
                 THEN format('set column %s is not generated by simhash_set (rows may lack fingerprints)', quote_ident(col)) END) IS NULL THEN
        RETURN QUERY SELECT * FROM @extschema@._simhash_pairs_on_workers(tbl, col, k, key_column, as_type,
                                                                         masks, rows_estimate, elements, is_set);
        RETURN;
    END IF;
    IF citus THEN
        -- A Citus table (a key column is required, see _simhash_table_problem): Citus joins
        -- distributed tables only on their distribution columns, so every (key, fp) is read
        -- from the shards once, into an intermediate result on this node, and the joins run
        -- here. Rows are numbered there, so that rows sharing a key are still told apart.
        FOR e IN 1 .. elements LOOP
            x_fp := CASE WHEN is_set THEN format('x.fp[%s]', e) ELSE 'x.fp' END;
            y_fp := CASE WHEN is_set THEN format('y.fp[%s]', e) ELSE 'y.fp' END;
            earlier := '';
            FOR i IN 1 .. cardinality(masks) LOOP
                joins := joins || format(
                    'SELECT x.key::%1$s, y.key::%1$s, %8$s(x.fp, y.fp)
                       FROM r x JOIN r y ON (%5$s::int8 & %2$s) = (%6$s::int8 & %2$s)
                      WHERE (x.key, x.n) < (y.key, y.n) AND NOT (@extschema@.hamming_distance(%5$s, %6$s) > %3$s)%4$s%7$s',
                    out_type, masks[i], k, earlier, x_fp, y_fp, other_elements, distance_fn);
                earlier := earlier || format(E'\n                    AND ((%s::int8 # %s::int8) & %s) <> 0', x_fp, y_fp, masks[i]);
            END LOOP;
            other_elements := other_elements || format(
                E'\n                    AND coalesce(@extschema@.hamming_distance(%s, %s) > %s, true)', x_fp, y_fp, k);
        END LOOP;
        IF cardinality(joins) = 0 THEN
            RETURN;
        END IF;
        RETURN QUERY EXECUTE format(
            'WITH shards AS MATERIALIZED (SELECT t.%1$s AS key, t.%2$I%4$s AS fp FROM %3$s t
                                          WHERE t.%1$s IS NOT NULL AND t.%2$I IS NOT NULL),
                  r AS MATERIALIZED (SELECT s.key, s.fp, row_number() OVER () AS n FROM shards s) ',
            row_name, col, tbl, by_position) || array_to_string(joins, E'\nUNION ALL\n');
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
    IF pairs_method = 'compare' AND rows_estimate > 100000 THEN
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
    memory_needed := @extschema@._simhash_pairs_memory(rows_estimate, greatest(elements, 1), key_bytes);
    in_memory := CASE WHEN array_key OR pairs_method = 'joins' THEN false
                      WHEN pairs_method IN ('compare', 'sort') THEN true
                      ELSE coalesce(memory_needed <= pg_size_bytes(current_setting('maintenance_work_mem')), false) END;
    IF NOT in_memory AND pairs_method IS NULL AND NOT array_key AND memory_needed IS NOT NULL THEN
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
                      WHERE (x.%1$s, x.tableoid, x.ctid) < (y.%1$s, y.tableoid, y.ctid)
                        AND NOT (@extschema@.hamming_distance(%7$s, %8$s) > $2)%4$s%5$s%9$s',
                    row_name, col, tbl, earlier,
                    CASE WHEN slices > 1 THEN format(
                        E'\n                    AND ((%1$s::int8 & $1) >> $5) & $3 = $4 '
                        'AND ((%2$s::int8 & $1) >> $5) & $3 = $4', x_fp, y_fp)
                    ELSE '' END,
                    out_type, x_fp, y_fp, other_elements, distance_fn)
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

-- The exact check a caller may ask of simhash_pairs, simhash_clusters, simhash_groups and
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
        RETURN QUERY SELECT '22023', format('%s: with verify_column, min_jaccard must be between 0 and 1 (got %s) and verify_options not NULL',
                                            fn, coalesce(min_jaccard::text, 'NULL')),
            'min_jaccard is a similarity from 0 to 1 (0.5 by default), verify_options simhash''s options (''{"ngram": 3}'' by default).'::text;
        RETURN;
    END IF;
    IF jsonb_typeof(verify_options) <> 'object' THEN
        RETURN QUERY SELECT '22023', format('%s: verify_options must be a JSON object like simhash''s options, got %s', fn, verify_options),
            'verify_options => ''{"ngram": 3}'', with "markup" when the fingerprint has it.';
        RETURN;
    END IF;
    FOREACH tbl IN ARRAY tables LOOP
        SELECT a.atttypid INTO given_type FROM pg_attribute a
         WHERE a.attrelid = tbl AND a.attname = verify_column AND a.attnum > 0 AND NOT a.attisdropped;
        IF NOT FOUND THEN
            RETURN QUERY SELECT '42703', format('%s: column %s of relation %s does not exist (verify_column)', fn, quote_ident(verify_column), tbl),
                format('The columns of %s are: %s.', tbl, @extschema@._simhash_column_list(tbl));
            RETURN;
        END IF;
        IF given_type NOT IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype) THEN
            RETURN QUERY SELECT '42804', format('%s: verify_column %s of relation %s is of type %s, not text', fn, quote_ident(verify_column), tbl,
                format_type(given_type, NULL)),
                'verify_column names the text the fingerprints were computed from (text, varchar or char).'::text;
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
BEGIN
    SELECT CASE WHEN key_column IS NULL THEN 'tid' ELSE format_type(a.atttypid, a.atttypmod) END, a.attnum
      INTO key_type, key_attnum
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND (a.attname = key_column OR (key_column IS NULL AND a.attnum = -1));
    -- ctid names one row of a plain table (the only kind it is accepted for).
    unique_key := key_column IS NULL
               OR EXISTS (SELECT 1 FROM pg_index i
                           WHERE i.indrelid = tbl AND i.indisunique AND i.indisvalid AND i.indpred IS NULL
                             AND i.indnkeyatts = 1 AND i.indkey[0] = key_attnum);
    -- ok: the pairs that pass. With unique keys they are the answer; otherwise each pair
    -- numbered i comes out once when some rows with its keys passed.
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (SELECT %6$s AS i, s.a, s.b, s.distance
                                   FROM @extschema@._simhash_pairs($1, $2, $3, $4, NULL::%4$s) s),
              f AS MATERIALIZED (SELECT n.node, @extschema@.simhash_feature_set(t.%2$I::text, $5) AS features
                                   FROM (SELECT p.a FROM p UNION SELECT p.b FROM p) n(node)
                                   JOIN %3$s t ON t.%1$s = n.node),
              ok AS (SELECT q.i, q.a, q.b, q.distance FROM p q JOIN f x ON x.node = q.a JOIN f y ON y.node = q.b
                      WHERE @extschema@.simhash_jaccard(x.features, y.features) >= $6)
         SELECT r.a::%5$s, r.b::%5$s, r.distance FROM %7$s',
        coalesce(quote_ident(key_column), 'ctid'), verify_column, tbl, key_type, format_type(pg_typeof(as_type), NULL),
        CASE WHEN unique_key THEN 'NULL::int8' ELSE 'row_number() OVER ()' END,
        CASE WHEN unique_key THEN 'ok r' ELSE 'p r WHERE r.i IN (SELECT ok.i FROM ok)' END)
      USING tbl, col, k, key_column, verify_options, min_jaccard;
END
$$;
COMMENT ON FUNCTION _simhash_verified_pairs(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'internal: the pairs of simhash_pairs whose verify_column texts have simhash_jaccard(verify_options) >= min_jaccard; arguments unchecked';

-- The argument checks simhash_pairs, simhash_clusters and simhash_groups share: the table,
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
    'internal: raises the first problem with the arguments of simhash_pairs, simhash_clusters or simhash_groups (fn): table, column, key, exact check, k';

-- verify_column is text, not name, here: a key type passed by position (NULL::text, the typed
-- form below) would otherwise match both forms equally (42725 "function is not unique"); as
-- text it picks this form, whose keys are text too.
CREATE OR REPLACE FUNCTION simhash_pairs(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                              verify_column text DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                              verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (a text, b text, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._simhash_check_pairs_call('simhash_pairs', tbl, col, k, key_column, NULL,
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_checked_pairs(tbl, col, k, key_column, NULL::text,
                                                                  verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_pairs(regclass, name, int4, name, text, float8, jsonb) IS
    'every pair of rows of tbl whose col is within k bits, once each (a < b), named by key_column (as text) or ctid, with the distance; with verify_column only pairs whose texts have simhash_jaccard(verify_options) >= min_jaccard';

CREATE OR REPLACE FUNCTION simhash_pairs(tbl regclass, col name, k int4, key_column name, key_type anyelement,
                              verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                              verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (a anyelement, b anyelement, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._simhash_check_pairs_call('simhash_pairs', tbl, col, k, key_column, pg_typeof(key_type),
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_checked_pairs(tbl, col, k, key_column, key_type,
                                                                  verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_pairs(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'every pair of rows of tbl whose col is within k bits, once each (a < b), named by key_column in its own type (key_type => NULL::that type; tid for ctid), with the distance; verify_column as in the text form';

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
              c AS (SELECT g.node, g.component FROM p, @extschema@.simhash_components(p.a, p.b) g)
         SELECT g.node::%1$s::%2$s, g.first::%1$s::%2$s
           FROM (SELECT c.node, first_value(c.node) OVER (PARTITION BY c.component ORDER BY c.node::%1$s) AS first
                   FROM c) g
          ORDER BY g.first::%1$s, g.node::%1$s',
        key_type, format_type(pg_typeof(as_type), NULL))
      USING tbl, col, k, key_column, verify_column, min_jaccard, verify_options;
END
$$;
COMMENT ON FUNCTION _simhash_clusters(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'internal: the groups of simhash_clusters, keys cast to the type of as_type; arguments unchecked';

-- verify_column is text, not name, here: a key type passed by position (NULL::text, the typed
-- form below) would otherwise match both forms equally (42725 "function is not unique"); as
-- text it picks this form, whose keys are text too.
CREATE OR REPLACE FUNCTION simhash_clusters(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                                 verify_column text DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                                 verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (key text, cluster_key text)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._simhash_check_pairs_call('simhash_clusters', tbl, col, k, key_column, NULL,
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_clusters(tbl, col, k, key_column, NULL::text,
                                                             verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_clusters(regclass, name, int4, name, text, float8, jsonb) IS
    'groups of rows linked by near pairs (connected components): every row with a near-copy and the smallest key of its group, as text; with verify_column only through pairs whose texts have simhash_jaccard(verify_options) >= min_jaccard';

CREATE OR REPLACE FUNCTION simhash_clusters(tbl regclass, col name, k int4, key_column name, key_type anyelement,
                                 verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                                 verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (key anyelement, cluster_key anyelement)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@._simhash_check_pairs_call('simhash_clusters', tbl, col, k, key_column, pg_typeof(key_type),
                                                  verify_column, min_jaccard, verify_options);
    RETURN QUERY SELECT * FROM @extschema@._simhash_clusters(tbl, col, k, key_column, key_type,
                                                             verify_column, min_jaccard, verify_options);
END
$$;
COMMENT ON FUNCTION simhash_clusters(regclass, name, int4, name, anyelement, name, float8, jsonb) IS
    'groups of rows linked by near pairs (connected components): every row with a near-copy and the smallest key of its group, in the key''s own type (key_type => NULL::that type); verify_column as in the text form';

-- Groups that do not chain: each row near its group's representative, the representative the
-- first row by the user's keep rule (keep_by ascending, or descending with keep_largest; NULLs
-- last; then the key), optionally only through pairs whose texts pass the exact check.
CREATE OR REPLACE FUNCTION simhash_groups(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL,
                               keep_by name DEFAULT NULL, keep_largest bool DEFAULT false,
                               verify_column name DEFAULT NULL, min_jaccard float8 DEFAULT 0.5,
                               verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (key text, representative text)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    row_name text := coalesce(quote_ident(key_column), 'ctid');
BEGIN
    PERFORM @extschema@._simhash_check_pairs_call('simhash_groups', tbl, col, k, key_column, NULL,
                                                  verify_column, min_jaccard, verify_options);
    IF keep_largest IS NULL THEN
        RAISE EXCEPTION 'simhash_groups: keep_largest must not be NULL' USING ERRCODE = '22023';
    END IF;
    IF keep_by IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                                            WHERE a.attrelid = tbl AND a.attname = keep_by AND a.attnum > 0 AND NOT a.attisdropped) THEN
        RAISE EXCEPTION 'simhash_groups: column % of relation % does not exist (keep_by)', quote_ident(keep_by), tbl
            USING ERRCODE = '42703';
    END IF;
    -- The pairs (each once, keys as text, checked when asked); the rows on a pair in keep
    -- order; then the groups, in memory (simhash_stars). Rows are found again by their key's
    -- text: a key column should be unique (rows that share a key are one node). On Citus the
    -- columns needed are first read from the shards into this node (Citus joins a distributed
    -- table with other rows only on its distribution column).
    RETURN QUERY EXECUTE format(
        'WITH p AS MATERIALIZED (SELECT s.a, s.b FROM @extschema@._simhash_checked_pairs($1, $2, $3, $4, NULL::text, $5, $6, $7) s),
              r AS %1$s (SELECT t.%2$s::text AS node, t.%2$s AS key, %3$s AS keep FROM %4$s t),
              n AS (SELECT p.a AS node FROM p UNION SELECT p.b FROM p),
              o AS (SELECT array_agg(n.node ORDER BY %5$s r.key) AS nodes FROM n JOIN r ON r.node = n.node)
         SELECT g.node, g.representative
           FROM o, (SELECT array_agg(p.a) AS a, array_agg(p.b) AS b FROM p) e,
                @extschema@.simhash_stars(coalesce(o.nodes, ''{}''), coalesce(e.a, ''{}''), coalesce(e.b, ''{}'')) g',
        CASE WHEN @extschema@._simhash_citus_table(tbl) THEN 'MATERIALIZED' ELSE 'NOT MATERIALIZED' END,
        row_name,
        CASE WHEN keep_by IS NULL THEN 'NULL::int4' ELSE format('t.%I', keep_by) END,
        tbl,
        CASE WHEN keep_by IS NULL THEN ''
             ELSE format('r.keep %s NULLS LAST, ', CASE WHEN keep_largest THEN 'DESC' ELSE 'ASC' END) END)
      USING tbl, col, k, key_column, verify_column, min_jaccard, verify_options;
END
$$;
COMMENT ON FUNCTION simhash_groups(regclass, name, int4, name, name, bool, name, float8, jsonb) IS
    'groups of near rows that do not chain: each row within k bits of its group''s representative (the first by keep_by, descending with keep_largest; then the key), through pairs whose verify_column texts have simhash_jaccard >= min_jaccard when given';

CREATE OR REPLACE FUNCTION simhash_ingest(target regclass, col name, source regclass, k int4 DEFAULT 3,
                               serialize bool DEFAULT true, verify_column name DEFAULT NULL,
                               min_jaccard float8 DEFAULT 0.5, verify_options jsonb DEFAULT '{"ngram": 3}')
RETURNS TABLE (inserted int8, skipped int8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
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
BEGIN
    inserted := 0;
    skipped := 0;
    FOR problem IN SELECT * FROM @extschema@._simhash_table_problem('simhash_ingest', target, col, 'ingest_target')
                   UNION ALL
                   SELECT * FROM @extschema@._simhash_table_problem('simhash_ingest', source, col, 'ingest_source',
                                                                    target => target)
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
        -- One ingest per target at a time, until commit. Each lookup below is a new statement,
        -- so under READ COMMITTED it sees what the ingest before ours committed; a
        -- REPEATABLE READ snapshot would not, so that combination is refused.
        IF current_setting('transaction_isolation') = 'repeatable read' THEN
            RAISE EXCEPTION 'simhash_ingest: serialize => true needs READ COMMITTED or SERIALIZABLE, not REPEATABLE READ'
                USING ERRCODE = '25001',
                      HINT = 'A REPEATABLE READ snapshot cannot see rows another ingest committed meanwhile.';
        END IF;
        -- Keyed by the root of the target's partition (or inheritance) tree: an ingest into a
        -- partition and one into its parent look at the same rows.
        PERFORM pg_advisory_xact_lock(hashtext('simhash_pg.ingest'), hashtext((
            WITH RECURSIVE up(rel) AS (
                SELECT target::oid
                UNION SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.rel)
            SELECT min(u.rel) FROM up u WHERE NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = u.rel))::text));
    END IF;
    IF verify_column IS NOT NULL THEN
        features_of := format('@extschema@.simhash_feature_set(x.%I::text, %L::jsonb)', verify_column, verify_options);
        confirm_param := format(' AND @extschema@.simhash_jaccard(@extschema@.simhash_feature_set(t.%I::text, %L::jsonb), $2) >= %s',
                                verify_column, verify_options, min_jaccard);
        confirm_x := format(' AND @extschema@.simhash_jaccard(@extschema@.simhash_feature_set(t.%I::text, %L::jsonb), x.features) >= %s',
                            verify_column, verify_options, min_jaccard);
        confirm_b := format(' AND @extschema@.simhash_jaccard(@extschema@.simhash_feature_set(t.%I::text, %L::jsonb), b.features) >= %s',
                            verify_column, verify_options, min_jaccard);
    END IF;
    IF @extschema@._simhash_citus_table(source) THEN
        -- A Citus source has no row addresses this node can name (each shard numbers its own
        -- rows): its rows are copied here first, in the order Citus returns them.
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
    unindexed := NOT EXISTS (SELECT 1 FROM @extschema@.simhash_block_columns(target) b
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
                     AND (g.tgtype & 7) = 7) -- ROW, BEFORE, INSERT
       OR EXISTS (SELECT 1 FROM pg_rewrite w WHERE w.ev_class = ANY(tree) AND w.ev_type = '3') THEN
        why_row_by_row := 'triggers';
        RAISE NOTICE 'simhash_ingest: % has a BEFORE INSERT row trigger or an INSERT rule: each row is looked up and inserted on its own (slower)',
            target;
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
        EXECUTE format('SELECT count(*) FROM %s', source) INTO total;
        FOR r IN EXECUTE format('SELECT tableoid AS rel, ctid AS rid, %I AS fp, %s AS features FROM %s x ORDER BY tableoid, ctid',
                                col, features_of, source) LOOP
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
                EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM ONLY %s WHERE ctid = $1', target, cols, cols, r.rel::regclass)
                  USING r.rid;
                -- What went in: a trigger may have dropped the row.
                GET DIAGNOSTICS near_count = ROW_COUNT;
                inserted := inserted + near_count;
            END IF;
            done := done + 1;
            IF clock_timestamp() - last_notice >= interval '2 s' THEN
                RAISE NOTICE 'simhash_ingest: % of % rows, % inserted, % skipped%',
                    done, total, inserted, skipped, @extschema@._simhash_took(started);
                last_notice := clock_timestamp();
            END IF;
        END LOOP;
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
                           %I AS fp, false AS gone, %s AS features
                      FROM %s x', col, features_of, source);
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
    EXECUTE format(
        'UPDATE pg_temp._simhash_ingest_batch b SET gone = true
           FROM (SELECT array_agg(y.n ORDER BY y.n) AS ns, %s AS fps
                   FROM pg_temp._simhash_ingest_batch y WHERE NOT y.gone) rest,
                unnest(rest.ns, %s) AS u(n, keep)
          WHERE b.n = u.n AND NOT u.keep',
        CASE WHEN is_set
             THEN '(SELECT array_agg(z.fp[array_lower(z.fp, 1) + g - 1] ORDER BY z.n, g) FROM pg_temp._simhash_ingest_batch z, generate_series(1, $1) g WHERE NOT z.gone)'
             ELSE 'array_agg(y.fp ORDER BY y.n)' END,
        CASE WHEN verify_column IS NULL THEN '@extschema@._simhash_keep_first_of_near(rest.fps, $1, $2)'
             -- The rows' feature sets one after another, and each row's count (NULL: no text).
             ELSE '@extschema@._simhash_keep_first_of_verified(rest.fps, $1, $2,
                       coalesce((SELECT array_agg(e.h ORDER BY z.n, e.i) FROM pg_temp._simhash_ingest_batch z,
                                        unnest(z.features) WITH ORDINALITY AS e(h, i) WHERE NOT z.gone), ''{}''),
                       coalesce((SELECT array_agg(cardinality(z.features) ORDER BY z.n)
                                   FROM pg_temp._simhash_ingest_batch z WHERE NOT z.gone), ''{}''),
                       $3)' END)
      USING width, k, min_jaccard;
    GET DIAGNOSTICS done = ROW_COUNT;
    skipped := skipped + done;
    IF clock_timestamp() - step >= interval '1 s' THEN
        RAISE NOTICE 'simhash_ingest: % of the other rows near an earlier one of the batch%', done, @extschema@._simhash_took(step);
    END IF;
    step := clock_timestamp();
    EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM %s x JOIN pg_temp._simhash_ingest_batch b
                     ON x.tableoid = b.rel AND x.ctid = b.rid WHERE NOT b.gone ORDER BY b.n',
                   target, cols, xcols, source);
    GET DIAGNOSTICS inserted = ROW_COUNT;
    IF clock_timestamp() - step >= interval '1 s' THEN
        RAISE NOTICE 'simhash_ingest: % rows inserted%', inserted, @extschema@._simhash_took(step);
    END IF;
    DROP TABLE pg_temp._simhash_ingest_batch;
    RETURN NEXT;
END
$$;
COMMENT ON FUNCTION simhash_ingest(regclass, name, regclass, int4, bool, name, float8, jsonb) IS
    'inserts the rows of source into target, skipping each row whose col is within k bits of a row already in target (earlier batch rows included), and with verify_column whose texts also have simhash_jaccard(verify_options) >= min_jaccard; serialize: one ingest per target at a time';
