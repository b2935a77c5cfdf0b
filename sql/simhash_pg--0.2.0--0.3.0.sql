-- simhash_pg 0.2.0 -> 0.3.0, run by ALTER EXTENSION simhash_pg UPDATE. The definitions are
-- those of sql/index.sql and sql/etl.sql; tests/pg_regress/sql/upgrade.sql checks that an
-- updated database has exactly the objects, definitions and comments of a fresh install.
\echo Use "ALTER EXTENSION simhash_pg UPDATE" to load this file. \quit

-- Rows are no longer named by ctid alone where ctid names several rows (partitioned tables,
-- tables with inheritance children): simhash_pairs, simhash_clusters and simhash_nearest refuse
-- them without a key column; simhash_nearest gains a form with key_column; simhash_ingest names
-- source rows by (tableoid, ctid).
CREATE OR REPLACE FUNCTION simhash_check_pairable(fn text, tbl regclass, col name, key_column name) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    kind "char";
BEGIN
    PERFORM @extschema@.simhash_check_column(fn, tbl, col);
    SELECT c.relkind INTO kind FROM pg_class c WHERE c.oid = tbl;
    IF kind NOT IN ('r', 'p', 'm') THEN
        RAISE EXCEPTION '%: % is not a table or materialized view', fn, tbl USING ERRCODE = '42809';
    END IF;
    IF key_column IS NULL THEN
        -- Each partition or inheritance child numbers its rows from (0,1): a ctid alone would
        -- name several rows, and a join on it return rows that are not the ones meant.
        IF kind = 'p' OR EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhparent = tbl) THEN
            RAISE EXCEPTION '%: % %, so ctid does not name a row; give a key column', fn, tbl,
                CASE WHEN kind = 'p' THEN 'is partitioned' ELSE 'has inheritance children' END
                USING ERRCODE = '22004',
                      HINT = 'Pass key_column, a column that names a row (its primary key, say): key_column => ''id''.';
        END IF;
        RETURN 'ctid';
    END IF;
    PERFORM 1 FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = key_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: column % of relation % does not exist', fn, quote_ident(key_column), tbl
            USING ERRCODE = '42703';
    END IF;
    RETURN quote_ident(key_column);
END
$$;
COMMENT ON FUNCTION simhash_check_pairable(text, regclass, name, name) IS
    'checks for simhash_pairs, simhash_clusters and simhash_nearest; returns the expression naming a row (the key column, or ctid where it names one)';

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

CREATE OR REPLACE FUNCTION simhash_nearest(tbl regclass, col name, query simhash64, n int4)
RETURNS TABLE (ctid tid, distance int4)
LANGUAGE sql STABLE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.key::tid, s.distance FROM @extschema@.simhash_nearest(tbl, col, query, n, NULL::name) s
$$;
COMMENT ON FUNCTION simhash_nearest(regclass, name, simhash64, int4) IS
    'the n rows of tbl nearest to query in col (ties by ctid), exact, as ctid; refused on partitioned and inherited tables (give key_column)';

CREATE OR REPLACE FUNCTION simhash_ingest(target regclass, col name, source regclass, k int4 DEFAULT 3,
                               serialize bool DEFAULT true)
RETURNS TABLE (inserted int8, skipped int8)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    cols text;
    r record;
    near bool;
    lookup text;
    total int8;
    done int8 := 0;
    started timestamptz := clock_timestamp();
    last_notice timestamptz := clock_timestamp();
BEGIN
    inserted := 0;
    skipped := 0;
    PERFORM @extschema@.simhash_check_column('simhash_ingest', target, col);
    PERFORM @extschema@.simhash_check_column('simhash_ingest', source, col);
    IF k IS NULL OR k < 0 OR k > 64 THEN
        RAISE EXCEPTION 'simhash_ingest: k must be between 0 and 64, got %', coalesce(k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
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
        PERFORM pg_advisory_xact_lock(hashtext('simhash_pg.ingest'), hashtext(target::oid::text));
    END IF;
    -- The target's insertable columns that the source has too (generated ones, including the
    -- block columns, compute themselves).
    SELECT string_agg(quote_ident(t.attname), ', ' ORDER BY t.attnum) INTO cols
      FROM pg_attribute t
      JOIN pg_attribute s ON s.attrelid = source AND s.attname = t.attname AND s.attnum > 0 AND NOT s.attisdropped
     WHERE t.attrelid = target AND t.attnum > 0 AND NOT t.attisdropped
       AND t.attgenerated = '' AND t.attidentity <> 'a';
    IF cols IS NULL THEN
        RAISE EXCEPTION 'simhash_ingest: % and % have no insertable columns in common', target, source
            USING ERRCODE = '42703';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM @extschema@.simhash_block_columns(target) b
                    WHERE b.source_column = col AND b.index IS NOT NULL) THEN
        RAISE NOTICE 'simhash_ingest: % has no block indexes on %: every lookup reads the whole table',
            target, quote_ident(col) USING HINT = format('SELECT simhash_create_index(%L, %L);', target::text, col);
    END IF;
    lookup := format('SELECT EXISTS (SELECT 1 FROM %s t WHERE @extschema@.simhash_near(t.%I, $1, %s))',
                     target, col, k);
    EXECUTE format('SELECT count(*) FROM %s', source) INTO total;
    -- In the source's physical order: a row is compared with the target as it stands, which by
    -- then holds the batch's earlier rows that went in.
    FOR r IN EXECUTE format('SELECT tableoid AS rel, ctid AS rid, %I AS fp FROM %s ORDER BY tableoid, ctid', col, source) LOOP
        near := false;
        IF r.fp IS NOT NULL THEN
            EXECUTE lookup INTO near USING r.fp;
        END IF;
        IF near THEN
            skipped := skipped + 1;
        ELSE
            -- A source row is named by (tableoid, ctid): in a partitioned or inherited source,
            -- each partition or child has its own row (0,1). It is copied from that partition or
            -- child itself (ONLY), so that each copy plans and reads one table, not all of them.
            EXECUTE format('INSERT INTO %s (%s) SELECT %s FROM ONLY %s WHERE ctid = $1', target, cols, cols, r.rel::regclass)
              USING r.rid;
            inserted := inserted + 1;
        END IF;
        done := done + 1;
        IF clock_timestamp() - last_notice >= interval '2 s' THEN
            RAISE NOTICE 'simhash_ingest: % of % rows, % inserted, % skipped%',
                done, total, inserted, skipped, @extschema@.simhash_took(started);
            last_notice := clock_timestamp();
        END IF;
    END LOOP;
    RETURN NEXT;
END
$$;
