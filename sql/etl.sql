-- Dedup in ETL jobs: every near pair of a table, the groups they form, and inserting a batch
-- without its near-copies. Same rules as sql/index.sql: callers' rights, pinned search_path,
-- @extschema@-qualified calls, names only through regclass output and format('%I').

COMMENT ON FUNCTION simhash_pair_masks(int4, float8) IS
    'the fp & mask keys simhash_pairs joins on to find every pair within k bits among about rows fingerprints';
COMMENT ON FUNCTION simhash_components(text[], text[]) IS
    'connected components of the graph with edges a[i]-b[i]: every node with the smallest node (text order) of its component';

-- Checks for the read-only helpers: tbl is a table or materialized view, col one of its
-- simhash64 columns, key (when given) one of its columns. Returns the expression that names a
-- row: the key column, or ctid where ctid names one row.
CREATE FUNCTION simhash_check_pairable(fn text, tbl regclass, col name, key_column name) RETURNS text
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

CREATE FUNCTION simhash_pairs(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL)
RETURNS TABLE (a text, b text, distance int4)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
-- The planner cannot know how few rows share a key, so it overestimates the joins by orders of
-- magnitude and would JIT-compile each one: a quarter second per join spent for nothing.
SET jit = off
AS $$
DECLARE
    row_name text := @extschema@.simhash_check_pairable('simhash_pairs', tbl, col, key_column);
    masks int8[];
    rows_estimate float8;
    slices int4;
    shift int4;
    earlier text := '';
    n int8;
    total int8 := 0;
    started timestamptz := clock_timestamp();
    last_notice timestamptz := clock_timestamp();
BEGIN
    IF k IS NULL OR k < 0 OR k > 63 THEN
        RAISE EXCEPTION 'simhash_pairs: k must be between 0 and 63, got %', coalesce(k::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    SELECT c.reltuples INTO rows_estimate FROM pg_class c WHERE c.oid = tbl;
    IF rows_estimate < 0 THEN
        rows_estimate := 1e6; -- never analysed: plan for a big table
    END IF;
    -- One equi-join per key (see simhash_pair_masks): rows sharing fp & mask are the candidates.
    -- A pair is returned by the first key it shares only, and once, the smaller row first.
    masks := @extschema@.simhash_pair_masks(k, rows_estimate);
    -- Big tables: each join in slices of two to three million rows a side, by the lowest bits
    -- of the key (rows that share a key share its slice; the key's lowest set bits are as
    -- random as the fingerprint), so that a slice's hash table fits in memory and progress
    -- comes every few seconds. Each slice reads the table again, so not smaller: at 10M rows,
    -- 16 slices took 231 s, 4 effective ones 154 s, none (spilling 3.8 GB) 247 s. A power of
    -- two, so that a slice is two bit operations per row.
    slices := 1;
    WHILE slices < rows_estimate / 3e6 LOOP
        slices := slices * 2;
    END LOOP;
    FOR i IN 1 .. cardinality(masks) LOOP
        shift := 0;
        WHILE (masks[i] >> shift) & 1 = 0 LOOP
            shift := shift + 1;
        END LOOP;
        FOR s IN 0 .. slices - 1 LOOP
            RETURN QUERY EXECUTE format(
                'SELECT x.%1$s::text, y.%1$s::text, @extschema@.hamming_distance(x.%2$I, y.%2$I)
                   FROM %3$s x JOIN %3$s y ON (x.%2$I::int8 & $1) = (y.%2$I::int8 & $1)
                  WHERE (x.%1$s, x.tableoid, x.ctid) < (y.%1$s, y.tableoid, y.ctid)
                    AND @extschema@.hamming_distance(x.%2$I, y.%2$I) <= $2%4$s%5$s',
                row_name, col, tbl, earlier,
                CASE WHEN slices > 1 THEN format(
                    E'\n                    AND ((x.%1$I::int8 & $1) >> $5) & $3 = $4 '
                    'AND ((y.%1$I::int8 & $1) >> $5) & $3 = $4', col)
                ELSE '' END)
              USING masks[i], k, (slices - 1)::int8, s::int8, shift;
            GET DIAGNOSTICS n = ROW_COUNT;
            total := total + n;
            IF clock_timestamp() - last_notice >= interval '2 s' THEN
                RAISE NOTICE 'simhash_pairs: key % of %, slice % of %, % pairs so far%',
                    i, cardinality(masks), s + 1, slices, total, @extschema@.simhash_took(started);
                last_notice := clock_timestamp();
            END IF;
        END LOOP;
        earlier := earlier || format(E'\n                    AND ((x.%1$I::int8 # y.%1$I::int8) & %2$s) <> 0', col, masks[i]);
    END LOOP;
END
$$;
COMMENT ON FUNCTION simhash_pairs(regclass, name, int4, name) IS
    'every pair of rows of tbl whose col is within k bits, once each (a < b), named by key_column (as text) or ctid, with the distance; runs as hash joins on block keys';

CREATE FUNCTION simhash_clusters(tbl regclass, col name, k int4 DEFAULT 3, key_column name DEFAULT NULL)
RETURNS TABLE (key text, cluster_key text)
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    row_name text := @extschema@.simhash_check_pairable('simhash_clusters', tbl, col, key_column);
    key_type text;
BEGIN
    -- The smallest key of a group in the key's own order (numbers as numbers), so cast back.
    SELECT CASE WHEN row_name = 'ctid' THEN 'tid' ELSE format_type(a.atttypid, a.atttypmod) END INTO key_type
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND (a.attname = key_column OR (key_column IS NULL AND a.attnum = -1));
    RETURN QUERY EXECUTE format(
        'WITH p AS (SELECT array_agg(s.a) AS a, array_agg(s.b) AS b
                      FROM @extschema@.simhash_pairs($1, $2, $3, $4) s),
              c AS (SELECT g.node, g.component FROM p, @extschema@.simhash_components(p.a, p.b) g)
         SELECT g.node, g.first
           FROM (SELECT c.node, first_value(c.node) OVER (PARTITION BY c.component ORDER BY c.node::%1$s) AS first
                   FROM c) g
          ORDER BY g.first::%1$s, g.node::%1$s',
        key_type)
      USING tbl, col, k, key_column;
END
$$;
COMMENT ON FUNCTION simhash_clusters(regclass, name, int4, name) IS
    'groups of rows linked by near pairs (connected components): every row with a near-copy and the smallest key of its group';

CREATE FUNCTION simhash_ingest(target regclass, col name, source regclass, k int4 DEFAULT 3,
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
COMMENT ON FUNCTION simhash_ingest(regclass, name, regclass, int4, bool) IS
    'inserts the rows of source into target, skipping each row whose col is within k bits of a row already in target (earlier batch rows included); serialize: one ingest per target at a time';
