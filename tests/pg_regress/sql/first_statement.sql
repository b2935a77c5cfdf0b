-- A connection's first statement that compares fingerprint columns is planned before
-- simhash_pg's library is loaded (no simhash64 literal or parameter loads it while parsing):
-- the library loads while the planner simplifies the distance, and the conditions are rewritten
-- then (src/distance_bounds.rs). The plan must be the one later statements get. Each \c below
-- opens a new connection; nothing before the statement under test calls simhash_pg. Uses the
-- tables and helpers of distance_bounds.sql.

-- A join.
SELECT plan_kind('SELECT a.id FROM arrivals a JOIN bounds b ON b.fp <-> a.fp <= 3') AS join_first;
SELECT plan_kind('SELECT a.id FROM arrivals a JOIN bounds b ON b.fp <-> a.fp <= 3') AS join_second;
\c
-- An anti-join, the ETL idiom, with its rows.
SELECT same_rows('SELECT a.id FROM arrivals a WHERE NOT EXISTS (SELECT 1 FROM bounds b WHERE a.fp <-> b.fp < 4)',
                 'SELECT a.id FROM arrivals a WHERE NOT EXISTS (SELECT 1 FROM bounds b WHERE (a.fp <-> b.fp) + 0 < 4)') AS anti_join_rows;
\c
SELECT plan_kind('SELECT a.id FROM arrivals a WHERE NOT EXISTS (SELECT 1 FROM bounds b WHERE a.fp <-> b.fp < 4)') AS anti_join_first;
\c
-- A correlated subquery (its outer column is a parameter by the time the library loads).
SELECT plan_kind('SELECT a.id, (SELECT count(*) FROM bounds b WHERE hamming_distance(b.fp, a.fp) <= 3) FROM arrivals a') AS correlated_first;
\c
-- A scalar subquery as the query value, and a set column.
SELECT plan_kind('SELECT id FROM bounds WHERE fp <-> (SELECT fp FROM bounds WHERE id = 2) <= 3') AS subquery_first;
\c
SELECT plan_kind('SELECT id FROM bound_sets WHERE fps <-> (SELECT fps FROM bound_sets WHERE id = 4) <= 7') AS set_first;
-- simhash_near written out in the first statement: its support function has already run when the
-- library is loaded, and the distance test it leaves beside the probe is not rewritten again
-- (one probe in the plan, as in later statements).
CREATE FUNCTION probes_in(query text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    n int := 0;
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        n := n + (length(line) - length(replace(line, '_simhash_index_probe', ''))) / length('_simhash_index_probe');
    END LOOP;
    RETURN n;
END
$$;
\c
SELECT probes_in('SELECT a.id FROM arrivals a JOIN bounds b ON simhash_near(b.fp, a.fp, 3)') AS near_first,
       probes_in('SELECT a.id FROM arrivals a JOIN bounds b ON simhash_near(b.fp, a.fp, 3)') AS near_second;
DROP FUNCTION probes_in(text);
