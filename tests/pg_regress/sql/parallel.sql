-- Parallel query gives the answers of serial query: simhash(), simhash_near (sequential scan and
-- block indexes) and simhash_pairs, with workers forced on by zero parallel costs. (What a Citus
-- cluster relies on too: the functions are PARALLEL SAFE and run in any backend.)
CREATE TABLE par (id int8 PRIMARY KEY, body text, fp simhash64);
INSERT INTO par (id, fp)
SELECT g, hashint8extended(g / 3, 11)::simhash64 FROM generate_series(1, 60000) g;
-- near-copies: every third row moved by 1 to 4 bits
UPDATE par SET fp = (fp::int8 # (1::int8 << (id % 64)::int4) # ((id % 4)::int8 << 20))::simhash64 WHERE id % 3 = 0;
UPDATE par SET body = 'text number ' || (id / 3) || ' of the parallel test' WHERE id <= 6000;
CREATE TABLE par_plain (LIKE par);
INSERT INTO par_plain SELECT * FROM par;
SELECT simhash_create_index('par_plain', 'fp', 3, 4, covering => false);
CREATE TABLE par_q AS SELECT id AS qid, fp FROM par WHERE id % 1200 = 1;
VACUUM ANALYZE par, par_plain, par_q;

-- Whether a plan has a Gather (parallel workers) in it.
CREATE FUNCTION plan_is_parallel(query text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ 'Gather' THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;

CREATE VIEW near_scan AS
SELECT q.qid, p.id FROM par_q q JOIN par p ON simhash_near(p.fp, q.fp, 5);
CREATE VIEW near_index AS
SELECT p.id FROM par_plain p WHERE simhash_near(p.fp, (SELECT fp FROM par_q ORDER BY qid LIMIT 1), 7);
CREATE VIEW fingerprints AS
SELECT id, simhash(body) AS fp FROM par WHERE body IS NOT NULL;

SET max_parallel_workers_per_gather = 0;
CREATE TABLE serial_scan AS SELECT * FROM near_scan;
CREATE TABLE serial_index AS SELECT * FROM near_index;
CREATE TABLE serial_fps AS SELECT * FROM fingerprints;
CREATE TABLE serial_pairs AS SELECT a, b, distance FROM simhash_pairs('par', 'fp', 3, 'id');

SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;
SELECT plan_is_parallel('SELECT * FROM near_scan') AS scan_parallel,
       plan_is_parallel('SELECT * FROM near_index') AS index_parallel,
       plan_is_parallel('SELECT * FROM fingerprints') AS simhash_parallel;
SELECT (SELECT count(*) FROM serial_scan) AS scan_rows,
       (SELECT count(*) FROM ((SELECT * FROM near_scan EXCEPT ALL SELECT * FROM serial_scan)
                              UNION ALL (SELECT * FROM serial_scan EXCEPT ALL SELECT * FROM near_scan)) d) AS scan_differences,
       (SELECT count(*) FROM serial_index) AS index_rows,
       (SELECT count(*) FROM ((SELECT * FROM near_index EXCEPT ALL SELECT * FROM serial_index)
                              UNION ALL (SELECT * FROM serial_index EXCEPT ALL SELECT * FROM near_index)) d) AS index_differences,
       (SELECT count(*) FROM serial_fps) AS fp_rows,
       (SELECT count(*) FROM ((SELECT * FROM fingerprints EXCEPT ALL SELECT * FROM serial_fps)
                              UNION ALL (SELECT * FROM serial_fps EXCEPT ALL SELECT * FROM fingerprints)) d) AS fp_differences;
CREATE TABLE parallel_pairs AS SELECT a, b, distance FROM simhash_pairs('par', 'fp', 3, 'id');
SELECT (SELECT count(*) FROM serial_pairs) AS pairs,
       (SELECT count(*) FROM ((TABLE parallel_pairs EXCEPT ALL TABLE serial_pairs)
                              UNION ALL (TABLE serial_pairs EXCEPT ALL TABLE parallel_pairs)) d) AS pair_differences,
       (SELECT count(*) FROM serial_pairs s
         WHERE hamming_distance((SELECT fp FROM par WHERE id = s.a::int8), (SELECT fp FROM par WHERE id = s.b::int8)) <> s.distance) AS wrong_distances;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET min_parallel_index_scan_size;
DROP VIEW near_scan, near_index, fingerprints;
DROP TABLE par, par_plain, par_q, serial_scan, serial_index, serial_fps, serial_pairs, parallel_pairs;
DROP FUNCTION plan_is_parallel(text);
