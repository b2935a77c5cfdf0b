-- simhash_near on Citus tables: each shard's planner rewrites the call to the shard's own block
-- indexes (the coordinator leaves it alone), and every form answers what brute force on the
-- local copy answers: literals, prepared statements (custom and generic plans, k a parameter),
-- a scalar subquery, simhash('text'), <-> filters, router and multi-shard queries.

-- Rows within k of each query point, by literal query: tables x k, mismatching queries (0).
CREATE FUNCTION mismatches(tbl regclass, k int4) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    q record;
    got int8[];
    want int8[];
    bad int8 := 0;
BEGIN
    FOR q IN SELECT * FROM queries ORDER BY qid LOOP
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %s WHERE simhash_near(fp, %L, %s)', tbl, q.fp, k) INTO got;
        SELECT array_agg(id ORDER BY id) INTO want FROM local_docs WHERE hamming_distance(fp, q.fp) + 0 <= k;
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN bad;
END
$$;
SELECT t AS tbl, k, mismatches(t, k)
  FROM unnest(ARRAY['docs_before', 'docs_after', 'docs_ref', 'docs_by_fp']::regclass[]) t, unnest(ARRAY[0, 3, 7]) k
 ORDER BY 1, 2;

-- Static SQL in PL/pgSQL: plans cached as a prepared statement's, with the query and k as
-- parameters, custom plans and the default mode (60 executions each).
CREATE FUNCTION near_ids(q simhash64, k int4) RETURNS int8[] LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT array_agg(id ORDER BY id) FROM docs_after WHERE simhash_near(fp, q, k));
END
$$;
CREATE FUNCTION prepared_mismatches(mode text) RETURNS TABLE (plan_cache_mode text, k int4, mismatches int8)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('plan_cache_mode', mode, true);
    RETURN QUERY
    SELECT mode, kk, count(*) FILTER (WHERE near_ids(q.fp, kk) IS DISTINCT FROM
                   (SELECT array_agg(d.id ORDER BY d.id) FROM local_docs d WHERE hamming_distance(d.fp, q.fp) + 0 <= kk))
      FROM queries q, unnest(ARRAY[0, 3, 7]) kk
     GROUP BY kk ORDER BY kk;
END
$$;
SELECT * FROM prepared_mismatches('force_custom_plan');
SELECT * FROM prepared_mismatches('auto');
PREPARE near(simhash64, int4) AS SELECT array_agg(id ORDER BY id) FROM docs_after WHERE simhash_near(fp, $1, $2);
EXECUTE near('e4c2b3a0b9b3d6fe', 3);
EXECUTE near('e4c2b3a0b9b3d6fe', 3);
EXECUTE near('e4c2b3a0b9b3d6fe', 3);
EXECUTE near('e4c2b3a0b9b3d6fe', 3);
EXECUTE near('e4c2b3a0b9b3d6fe', 3);
EXECUTE near(fp_of('q3'), 3);
-- Citus itself refuses a forced generic plan of a multi-shard query with parameters, simhash
-- or not (a router query, by the distribution column, runs).
PREPARE by_fp(simhash64) AS SELECT count(*) FROM docs_after WHERE fp = $1;
PREPARE by_id(int8) AS SELECT id FROM docs_after WHERE id = $1;
SET plan_cache_mode = force_generic_plan;
EXECUTE by_fp(fp_of('q3'));
EXECUTE near(fp_of('q3'), 3);
EXECUTE by_id(7);
RESET plan_cache_mode;
SELECT array_agg(id ORDER BY id) AS brute_force FROM local_docs WHERE hamming_distance(fp, (SELECT fp FROM queries WHERE qid = 3)) <= 3;

-- A scalar subquery over a local table, <-> filters, and a router (single-shard) query.
SELECT array_agg(id ORDER BY id) AS scalar_subquery
  FROM docs_before WHERE simhash_near(fp, (SELECT fp FROM queries WHERE qid = 4), 3);
SELECT array_agg(id ORDER BY id) AS operator_filter
  FROM docs_before WHERE fp <-> (SELECT fp FROM queries WHERE qid = 4) <= 3;
SELECT array_agg(id ORDER BY id) AS brute_force
  FROM local_docs WHERE hamming_distance(fp, (SELECT fp FROM queries WHERE qid = 4)) <= 3;
SELECT id FROM docs_after WHERE id = 100046 AND simhash_near(fp, (SELECT fp FROM queries WHERE qid = 4), 7);

-- simhash('text') on a generated fingerprint (expression indexes on every shard).
CREATE FUNCTION news_mismatches(k int4) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    n record;
    got int8[];
    want int8[];
    bad int8 := 0;
BEGIN
    FOR n IN SELECT * FROM local_news WHERE id IN (1, 2, 50, 10001, 10050) LOOP
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM news WHERE simhash_near(fp, simhash(%L), %s)', n.body, k) INTO got;
        SELECT array_agg(id ORDER BY id) INTO want FROM local_news WHERE hamming_distance(fp, simhash(n.body)) <= k;
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN bad;
END
$$;
SELECT k, news_mismatches(k) FROM unnest(ARRAY[0, 3, 8]) k ORDER BY k;

-- Each task of a multi-shard lookup reads its own shard's block indexes (EXPLAIN of every
-- task): a Tid Scan on the shard, whose probe names that shard's indexes and no other's.
CREATE FUNCTION task_plans(query text) RETURNS TABLE (tasks int, tid_scans int, probes_on_own_shard int)
LANGUAGE plpgsql AS $$
DECLARE
    line text;
    shard text;
BEGIN
    tasks := 0;
    tid_scans := 0;
    probes_on_own_shard := 0;
    SET LOCAL citus.explain_all_tasks = on;
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ '->  Task$' THEN
            tasks := tasks + 1;
        END IF;
        IF line ~ 'Tid Scan on [a-z_]+_[0-9]+' THEN
            tid_scans := tid_scans + 1;
            shard := substring(line FROM 'Tid Scan on [a-z_]+_([0-9]+)');
        END IF;
        IF line ~ '_simhash_index_probe' AND shard IS NOT NULL THEN
            IF NOT EXISTS (SELECT 1 FROM regexp_matches(line, '_([0-9]{6,})[,}]', 'g') m WHERE m[1] <> shard) THEN
                probes_on_own_shard := probes_on_own_shard + 1;
            END IF;
        END IF;
    END LOOP;
    RETURN NEXT;
END
$$;
SELECT * FROM task_plans($$SELECT id FROM docs_before WHERE simhash_near(fp, 'e4c2b3a0b9b3d6fe', 3)$$);
SELECT * FROM task_plans($$SELECT id FROM docs_after WHERE simhash_near(fp, 'e4c2b3a0b9b3d6fe', 7)$$);
SELECT * FROM task_plans($$SELECT id FROM docs_after WHERE id = 5 AND simhash_near(fp, 'e4c2b3a0b9b3d6fe', 3)$$);
