-- The ecosystem suite: simhash_pg beside the extensions our users already have (pgvector,
-- created before and after ours, in our schema or another), look-alike objects on the
-- search_path, and the libraries preloaded beside ours. .ci/test runs it on a server with
-- shared_preload_libraries set, once per order. Every check compares with brute force.
-- This file only defines helpers; each test creates the extensions in the order it is about.
SET client_min_messages = warning;

-- 'ok', or the SQLSTATE and message of the error a statement raises.
CREATE FUNCTION try_sql(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- docs(id, fp): 4,000 pseudo-random fingerprints, and for rows 1..40 planted neighbours at
-- every distance 0..8 (d consecutive bits flipped), so that every radius finds something.
CREATE FUNCTION make_docs(tbl text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- In public whatever the search_path, as the tests put schemas ahead of it.
    EXECUTE format('CREATE TABLE public.%I (id int8 PRIMARY KEY, fp public.simhash64)', tbl);
    EXECUTE format($q$INSERT INTO public.%I SELECT g, hashtextextended('doc' || g, 0)::public.simhash64
                        FROM generate_series(1, 4000) g$q$, tbl);
    EXECUTE format($q$INSERT INTO public.%I
                      SELECT 10000 + b * 10 + d,
                             (hashtextextended('doc' || b, 0) # (((1::int8 << d) - 1) << (b %% 50)))::public.simhash64
                        FROM generate_series(1, 40) b, generate_series(0, 8) d$q$, tbl);
    EXECUTE format('INSERT INTO public.%I VALUES (20000, NULL)', tbl);
    EXECUTE format('ANALYZE public.%I', tbl);
END
$$;

-- For k = 0..max_k: whether simhash_near (through whatever the planner made of it) finds
-- exactly the rows brute force finds, for the 40 query rows, and how many it found. Our
-- functions are named with their schema, so look-alikes on the caller's search_path cannot
-- stand in for them here.
CREATE FUNCTION lookups_agree(tbl regclass, max_k int4 DEFAULT 8)
RETURNS TABLE (k int4, found int8, same_as_brute_force bool)
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    FOR r IN 0 .. max_k LOOP
        RETURN QUERY EXECUTE format($q$
            WITH q AS (SELECT id, fp FROM %1$s WHERE id <= 40),
                 got AS (SELECT q.id, (SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') FROM %1$s t
                                        WHERE public.simhash_near(t.fp, q.fp, %2$s)) AS ids FROM q),
                 want AS (SELECT q.id, (SELECT coalesce(array_agg(t.id ORDER BY t.id), '{}') FROM %1$s t
                                         WHERE public.hamming_distance(t.fp, q.fp) + 0 <= %2$s) AS ids FROM q)
            SELECT %2$s, sum(cardinality(got.ids))::int8, bool_and(got.ids = want.ids)
              FROM got JOIN want USING (id)$q$, tbl, r);
    END LOOP;
END
$$;

-- The ETL helpers on tbl against brute force at k: the pair set, the groups (each planted
-- group is one cluster, and random rows have no near-copy), the nearest rows' distances.
CREATE FUNCTION helpers_agree(tbl regclass, k int4 DEFAULT 3)
RETURNS TABLE (pairs int8, pairs_right bool, clusters int8, nearest_right bool)
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    q int8; -- a fingerprint's bits (the type does not exist yet when this is created)
BEGIN
    EXECUTE format($q$
        WITH brute AS (SELECT x.id::text AS a, y.id::text AS b FROM %1$s x JOIN %1$s y ON x.id < y.id
                        WHERE public.hamming_distance(x.fp, y.fp) + 0 <= %2$s),
             ours AS (SELECT s.a, s.b FROM public.simhash_pairs(%3$L, 'fp', %2$s, 'id') s)
        SELECT (SELECT count(*) FROM ours),
               NOT EXISTS (SELECT * FROM brute EXCEPT SELECT * FROM ours)
               AND NOT EXISTS (SELECT * FROM ours EXCEPT SELECT * FROM brute)$q$, tbl, k, tbl::text)
      INTO pairs, pairs_right;
    SELECT count(DISTINCT c.group_key) INTO clusters FROM public.simhash_chained_groups(tbl, 'fp', k, 'id') c;
    EXECUTE format('SELECT fp::int8 FROM %s WHERE id = 7', tbl) INTO q;
    EXECUTE format($q$SELECT array(SELECT n.distance FROM public.simhash_nearest(%1$L, 'fp', $1::public.simhash64, 5) n)
                       = array(SELECT public.hamming_distance(t.fp, $1::public.simhash64) AS d FROM %2$s t
                                WHERE t.fp IS NOT NULL ORDER BY d LIMIT 5)$q$, tbl::text, tbl)
      INTO nearest_right USING q;
    RETURN NEXT;
END
$$;

-- simhash_ingest of a batch (10 near-copies of rows 1..10, 10 new rows) into a copy of tbl:
-- how many went in and how many were skipped as near-copies (expected: 10 and 10).
CREATE FUNCTION ingest_counts(tbl regclass) RETURNS TABLE (inserted int8, skipped int8)
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
BEGIN
    DROP TABLE IF EXISTS pg_temp.batch;
    CREATE TEMP TABLE batch (id int8, fp public.simhash64);
    EXECUTE format($q$INSERT INTO batch SELECT 50000 + id, (fp::int8 # 3)::public.simhash64 FROM %s
                       WHERE id BETWEEN 1 AND 10$q$, tbl);
    INSERT INTO batch SELECT 60000 + g, hashtextextended('new' || g, 0)::public.simhash64 FROM generate_series(1, 10) g;
    RETURN QUERY SELECT * FROM public.simhash_ingest(tbl, 'fp', 'pg_temp.batch'::regclass, 3);
    DROP TABLE pg_temp.batch;
END
$$;
