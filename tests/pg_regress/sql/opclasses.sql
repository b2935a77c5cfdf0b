-- The B-tree and hash opclasses at work: ORDER BY, DISTINCT, GROUP BY, UNIQUE, merge and hash joins.
CREATE TABLE fps (id int PRIMARY KEY, fp simhash64);
INSERT INTO fps VALUES
    (1, '8000000000000000'), (2, '7fffffffffffffff'), (3, '0000000000000001'),
    (4, 'ffffffffffffffff'), (5, '8000000000000000'), (6, NULL), (7, '0000000000000001');

-- Unsigned order: 8000... sorts after 7fff..., NULLs last.
SELECT id, fp FROM fps ORDER BY fp, id;
SELECT id, fp FROM fps ORDER BY fp DESC NULLS LAST, id;
SELECT DISTINCT fp FROM fps ORDER BY fp;
SELECT fp, count(*) FROM fps GROUP BY fp ORDER BY fp;
SELECT min(id), max(id) FROM fps WHERE fp > '7fffffffffffffff';

-- Hash aggregation and sorting give the same groups.
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT fp, count(*) FROM fps GROUP BY fp;
SELECT fp, count(*) FROM fps GROUP BY fp ORDER BY 1;
RESET enable_sort;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT fp, count(*) FROM fps GROUP BY fp;
RESET enable_hashagg;

-- A B-tree index is used for equality and ranges.
CREATE INDEX fps_fp ON fps (fp);
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM fps WHERE fp = '0000000000000001';
SELECT id FROM fps WHERE fp = '0000000000000001' ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id FROM fps WHERE fp >= '7fffffffffffffff' AND fp < 'ffffffffffffffff';
SELECT id FROM fps WHERE fp >= '7fffffffffffffff' AND fp < 'ffffffffffffffff' ORDER BY id;
RESET enable_seqscan;

-- UNIQUE: a duplicate fingerprint is rejected.
CREATE TABLE uniq (fp simhash64 UNIQUE);
INSERT INTO uniq VALUES ('0123456789abcdef'), ('fedcba9876543210');
INSERT INTO uniq VALUES ('0X0123456789ABCDEF');
DROP TABLE uniq;

-- Hash index.
CREATE INDEX fps_fp_hash ON fps USING hash (fp);
SET enable_seqscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM fps WHERE fp = '8000000000000000';
SELECT id FROM fps WHERE fp = '8000000000000000' ORDER BY id;
RESET enable_seqscan;
RESET enable_indexscan;
DROP INDEX fps_fp_hash;

-- Joins: hash, merge and nested loop give the same rows.
CREATE TABLE other (tag text, fp simhash64);
INSERT INTO other VALUES ('a', '8000000000000000'), ('b', '0000000000000001'), ('c', '1111111111111111'), ('d', NULL);
SET enable_mergejoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT f.id, o.tag FROM fps f JOIN other o ON f.fp = o.fp;
SELECT f.id, o.tag FROM fps f JOIN other o ON f.fp = o.fp ORDER BY f.id;
RESET enable_mergejoin; RESET enable_nestloop;
SET enable_hashjoin = off; SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT f.id, o.tag FROM fps f JOIN other o ON f.fp = o.fp;
SELECT f.id, o.tag FROM fps f JOIN other o ON f.fp = o.fp ORDER BY f.id;
RESET enable_hashjoin; RESET enable_nestloop;

-- Hash partitioning uses the extended hash.
CREATE TABLE parts (fp simhash64) PARTITION BY HASH (fp);
CREATE TABLE parts_0 PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO parts SELECT fp FROM fps WHERE fp IS NOT NULL;
-- The hash is part of the on-disk contract of hash-partitioned tables: these counts never change.
SELECT tableoid::regclass AS partition, count(*) FROM parts GROUP BY 1 ORDER BY 1;
SELECT count(*) AS found FROM parts WHERE fp = '8000000000000000';
DROP TABLE parts;

-- The extended hash with seed 0 agrees with the 32-bit hash in its low 32 bits (a PostgreSQL rule).
SELECT bool_and((simhash64_hash_extended(fp, 0) & 4294967295) = (simhash64_hash(fp)::int8 & 4294967295)) AS seed0_agrees,
       count(DISTINCT simhash64_hash_extended(fp, 1)) = count(DISTINCT fp) AS seeded_distinct
FROM fps WHERE fp IS NOT NULL;

-- Pinned hash values: hash indexes and hash partitions store them, so they must never change.
SELECT simhash64_hash('0123456789abcdef') AS hash32, simhash64_hash_extended('0123456789abcdef', 42) AS hash64_seed42;

-- Distance in ORDER BY and as a join condition.
SELECT id, fp <-> '0000000000000000' AS d FROM fps WHERE fp IS NOT NULL ORDER BY d, id;
SELECT f.id, o.tag, f.fp <-> o.fp AS d FROM fps f JOIN other o ON simhash_near(f.fp, o.fp, 1) ORDER BY f.id, o.tag;

DROP TABLE fps, other;
