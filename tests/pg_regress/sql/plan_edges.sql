-- Edges of the planner glue found by review: hand-written probes in joins, sampled tables,
-- volatile operands, table sizes after growth, ingest into partitioned targets and targets
-- with triggers. Every answer is compared with brute force.
SET client_min_messages = warning;

CREATE TABLE ea (id int8, fp simhash64);
CREATE TABLE eb (id int8, fp simhash64);
INSERT INTO ea SELECT g, hashtextextended(g::text, 1)::simhash64 FROM generate_series(1, 2000) g;
INSERT INTO eb SELECT g, (hashtextextended(g::text, 1) # (g % 5))::simhash64 FROM generate_series(1, 2000) g;
SELECT simhash_create_index('eb', 'fp');
ANALYZE ea, eb;

-- A hand-written probe whose argument reads the probed table itself cannot drive a TID scan of
-- it (there is no row yet to read it from): it stays a filter, and the server stays up.
SET enable_seqscan = off;
SELECT count(*) AS own_column_probe FROM ea a JOIN eb b
    ON b.ctid = ANY(_simhash_index_probe(
           (SELECT array_agg(format('%I', index)::regclass ORDER BY block) FROM simhash_block_columns('eb')),
           CASE WHEN a.id = b.id THEN a.fp END, 3));
RESET enable_seqscan;

-- A sampled table is read by its sample scan, never by our TID or nearest-first scans: the
-- sample decides which rows exist.
SELECT (SELECT count(*) FROM ea a JOIN eb b TABLESAMPLE BERNOULLI (5) REPEATABLE (7) ON b.fp <-> a.fp <= 3)
     = (SELECT count(*) FROM ea a JOIN eb b TABLESAMPLE BERNOULLI (5) REPEATABLE (7) ON (b.fp <-> a.fp) + 0 <= 3)
       AS sampled_join_same,
       (SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM eb TABLESAMPLE BERNOULLI (5) REPEATABLE (7)
                                                ORDER BY fp <-> '0123456789abcdef', id LIMIT 3) s)
     = (SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM eb TABLESAMPLE BERNOULLI (5) REPEATABLE (7)
                                                ORDER BY (fp <-> '0123456789abcdef') + 0, id LIMIT 3) s)
       AS sampled_order_same;

-- A volatile side is evaluated once, as written: the comparison is not rewritten.
EXPLAIN (COSTS OFF) SELECT id FROM eb WHERE fp <-> (CASE WHEN random() < 2 THEN fp END) = 0;
SELECT count(*) AS volatile_side FROM eb WHERE fp <-> (CASE WHEN random() < 2 THEN fp END) = 0;

-- A table analysed small and loaded since is sized as it is now, as the planner sizes it.
CREATE TABLE grows (id int8, fp simhash64);
INSERT INTO grows SELECT g, hashtextextended(g::text, 2)::simhash64 FROM generate_series(1, 500) g;
ANALYZE grows;
INSERT INTO grows SELECT g, hashtextextended(g::text, 2)::simhash64 FROM generate_series(501, 50000) g;
SELECT _simhash_rows_estimate('grows') BETWEEN 40000 AND 60000 AS sized_as_now;

-- simhash_ingest into a partitioned target: each partition is probed through its own block
-- indexes, with the answer the rule gives row by row.
CREATE TABLE ep (id int8, part int4, fp simhash64) PARTITION BY LIST (part);
CREATE TABLE ep_0 PARTITION OF ep FOR VALUES IN (0);
CREATE TABLE ep_1 PARTITION OF ep FOR VALUES IN (1);
INSERT INTO ep SELECT id, id % 2, fp FROM ea;
SELECT simhash_create_index('ep', 'fp');
CREATE TABLE ep_batch (id int8, part int4, fp simhash64);
INSERT INTO ep_batch SELECT 5000 + g, g % 2, (hashtextextended((g * 7)::text, 1) # (g % 9))::simhash64
  FROM generate_series(1, 300) g;
INSERT INTO ep_batch SELECT 6000 + g, 0, hashtextextended('fresh' || g, 1)::simhash64 FROM generate_series(1, 50) g;
CREATE TABLE ep_copy AS SELECT * FROM ep;
SELECT * FROM simhash_ingest('ep', 'fp', 'ep_batch', 3);
-- Brute force: a batch row goes in when nothing in the target or among the earlier rows that
-- went in lies within 3 bits.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM ep_batch ORDER BY ctid LOOP
        IF NOT EXISTS (SELECT 1 FROM ep_copy c WHERE (c.fp <-> r.fp) + 0 <= 3) THEN
            INSERT INTO ep_copy VALUES (r.id, r.part, r.fp);
        END IF;
    END LOOP;
END
$$;
SELECT (SELECT array_agg(id ORDER BY id) FROM ep) = (SELECT array_agg(id ORDER BY id) FROM ep_copy) AS partitioned_ingest_same;
-- How each partition is probed: a batch of 350 rows by one pass over a covering block index,
-- three rows by a lookup each (pairs_between.sql weighs lookups against joins). Every way gives
-- the rule's answer.
SELECT p AS partition, _simhash_ingest_method(p, 'fp', 3, 350) AS batch_of_350,
       _simhash_ingest_method(p, 'fp', 3, 3) AS batch_of_3
  FROM unnest(ARRAY['ep_0'::regclass, 'ep_1'::regclass]) p;
SELECT _simhash_batch_prefers_joins(3, 350, 2000, sum(_simhash_lookup_cost(p, 'fp', 3))) AS batch_of_350_joins,
       _simhash_batch_prefers_joins(3, 3, 2365, sum(_simhash_lookup_cost(p, 'fp', 3))) AS batch_of_3_joins,
       _simhash_batch_prefers_joins(3, 3, 2365, NULL) AS unindexed_joins
  FROM unnest(ARRAY['ep_0'::regclass, 'ep_1'::regclass]) p;
TRUNCATE ep_batch;
INSERT INTO ep_batch VALUES (7001, 0, (SELECT fp FROM ea WHERE id = 11)), (7002, 1, hashtextextended('x', 1)::simhash64),
                            (7003, 1, (hashtextextended('x', 1) # 3)::simhash64);
SELECT * FROM simhash_ingest('ep', 'fp', 'ep_batch', 3);
SELECT array_agg(id ORDER BY id) AS went_in FROM ep WHERE id > 7000;

-- A target with a BEFORE INSERT row trigger (here it drops every second row): rows are looked
-- up one by one against the target as it stands, so a dropped row does not hide a later one.
CREATE TABLE et (id int8, fp simhash64);
SELECT simhash_create_index('et', 'fp');
CREATE FUNCTION et_drop_even() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RETURN CASE WHEN NEW.id % 2 = 0 THEN NULL ELSE NEW END;
END
$$;
CREATE TRIGGER et_drop_even BEFORE INSERT ON et FOR EACH ROW EXECUTE FUNCTION et_drop_even();
CREATE TABLE et_batch (id int8, fp simhash64);
INSERT INTO et_batch VALUES (2, '0000000000000000'), (3, '0000000000000001'), (4, 'ffffffffffffffff'), (5, 'fffffffffffffffe');
SET client_min_messages = notice;
SELECT * FROM simhash_ingest('et', 'fp', 'et_batch', 3);
SET client_min_messages = warning;
SELECT id FROM et ORDER BY id;

-- A join at a k far past the layouts': the lookup of either side would read the whole table
-- (past layouts::JOIN_LOOKUP_MAX_SHARE, a tenth), per outer row or, on the preserved side of a
-- LEFT JOIN, per pair as a filter: 23 s for 20 rows by 240, found by
-- tests/hostile/query_shapes.py (issue 63). Such a join keeps the distance as written.
CREATE TABLE ja (id int8, fp simhash64);
CREATE TABLE jb (id int8, fp simhash64);
INSERT INTO ja SELECT g, hashtextextended(g::text, 4)::simhash64 FROM generate_series(1, 240) g;
INSERT INTO jb SELECT g, (hashtextextended(g::text, 4) # (g % 9))::simhash64 FROM generate_series(1, 240) g;
SELECT simhash_create_index('ja', 'fp', max_k => 7), simhash_create_index('jb', 'fp');
ANALYZE ja, jb;
EXPLAIN (COSTS OFF) SELECT a.id, r.id FROM ja a LEFT JOIN jb r ON simhash_near(r.fp, a.fp, 64) WHERE a.id % 12 = 5;
SELECT count(*) AS k64_pairs FROM ja a LEFT JOIN jb r ON simhash_near(r.fp, a.fp, 64) WHERE a.id % 12 = 5;
-- At a k the layouts serve, the join still looks up.
SELECT (SELECT count(*) FROM ja a LEFT JOIN jb r ON simhash_near(r.fp, a.fp, 3) WHERE a.id % 12 = 5)
     = (SELECT count(*) FROM ja a LEFT JOIN jb r ON (r.fp <-> a.fp) + 0 <= 3 WHERE a.id % 12 = 5) AS k3_exact;
EXPLAIN (COSTS OFF) SELECT a.id, r.id FROM ja a JOIN jb r ON simhash_near(r.fp, a.fp, 3) WHERE a.id % 12 = 5;

DROP TABLE ea, eb, grows, ep, ep_batch, ep_copy, et, et_batch, ja, jb;
DROP FUNCTION et_drop_even();
