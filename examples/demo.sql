-- The simhash_pg demo: run by `bash .ci/demo` in a fresh database `simhash_demo`.
\set ON_ERROR_STOP on
\pset footer off
\echo
\echo '== simhash_pg demo =='
CREATE EXTENSION simhash_pg;
SELECT extname, extversion FROM pg_extension WHERE extname = 'simhash_pg';

\echo '-- Hamming distance between two fingerprints (bitwise complements: all 64 bits differ)'
SELECT '0123456789abcdef'::simhash64 <-> 'fedcba9876543210'::simhash64 AS distance;

\echo '-- Near-duplicate test, similarity and Charikar''s cosine estimate'
SELECT simhash_near('00ff00ff00ff00ff', '00ff00ff00ff00f8', 3) AS within_3_bits,
       simhash_similarity('00ff00ff00ff00ff', '00ff00ff00ff00f8') AS similarity,
       round(simhash_cosine('00ff00ff00ff00ff', '00ff00ff00ff00f8')::numeric, 4) AS cosine;

\echo '-- Fingerprints from text: simhash(body) in a generated column'
CREATE TABLE articles (
    id int PRIMARY KEY,
    body text NOT NULL,
    fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED
);
INSERT INTO articles (id, body) VALUES
    (1, '今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。'),
    (2, '今天纽约的天气真好啊！京华大酒店的张尧经理吃了一只北京烤鸭'),
    (3, '今天纽约的天气不错，京华大酒店的张尧经理吃了一只北京烤鸭。'),
    (4, '国家主席江泽民发表新年讲话，迈向充满希望的新世纪。'),
    (5, 'PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.'),
    (6, 'PostgreSQL is a powerful open-source object-relational database system, with over 35 years of active development!'),
    (7, 'PostgreSQL is a powerful, open source object-relational database system with more than 35 years of development.'),
    (8, 'The quick brown fox jumps over the lazy dog.');
SELECT id, fp, left(body, 40) AS body FROM articles ORDER BY id;

\echo '-- Pairs of near-duplicate articles (within 6 bits) and what one of them is made of'
SELECT a.id, b.id AS near_copy, a.fp <-> b.fp AS distance
FROM articles a JOIN articles b ON a.id < b.id AND simhash_near(a.fp, b.fp, 6)
ORDER BY a.id, b.id;
SELECT * FROM simhash_features((SELECT body FROM articles WHERE id = 1)) LIMIT 5;

\echo '-- Sample data: 100,000 fingerprints, plus near-copies of documents 1..5 at 1, 2, 3 and 12 bits'
CREATE TABLE docs (id bigint PRIMARY KEY, original bigint, fp simhash64 NOT NULL);
INSERT INTO docs (id, fp)
SELECT i, ('x' || substr(md5(i::text), 1, 16))::bit(64)::simhash64
FROM generate_series(1, 100000) i;
-- A near-copy flips `flips` bits of the original, chosen by a fixed rule (no randomness).
INSERT INTO docs (id, original, fp)
SELECT 1000000 + d.id * 100 + flips, d.id,
       (d.fp::int8 # (SELECT bit_or(1::int8 << ((d.id * 7 + j * 13) % 64)::int) FROM generate_series(1, flips) j))::simhash64
FROM docs d, (VALUES (1), (2), (3), (12)) f(flips)
WHERE d.id <= 5;
ANALYZE docs;
SELECT count(*) AS rows, count(original) AS planted_copies FROM docs;

\echo '-- Block indexes for lookups within 3 bits: simhash_create_index picks the layout for the table'
\echo '-- (the NOTICE says which: here one permuted B-tree index per 16-bit block)'
SELECT simhash_create_index('docs', 'fp', max_k => 3);
SELECT * FROM simhash_block_columns('docs');

\echo '-- Near-duplicates of document 1 within 3 bits (the 12-bit copy is too far)'
SELECT d.id, d.original, d.fp, d.fp <-> q.fp AS distance
FROM docs q JOIN docs d ON simhash_near(d.fp, q.fp, 3)
WHERE q.id = 1
ORDER BY distance, d.id;

\echo '-- The plan: _simhash_index_probe reads the query''s block values in the block indexes, checks'
\echo '-- distances on the index entries, and the TID scan fetches only the matching rows'
EXPLAIN (COSTS OFF)
SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);

\echo '-- In a join, the nested loop probes the block indexes once per outer row (a TID scan each);'
\echo '-- its Filter rechecks distance and blocks on the few rows the probe found'
EXPLAIN (COSTS OFF)
SELECT d.id FROM docs q JOIN docs d ON simhash_near(d.fp, q.fp, 3) WHERE q.id = 1;

\echo '-- The same through a prepared statement (what drivers send)'
PREPARE near_copies(simhash64) AS
    SELECT id, fp <-> $1 AS distance FROM docs WHERE simhash_near(fp, $1, 3) ORDER BY distance, id;
SELECT fp AS fp2 FROM docs WHERE id = 2 \gset
EXECUTE near_copies(:'fp2');

\echo '-- The 5 nearest fingerprints to document 3, whatever their distance'
SELECT d.id, n.distance
FROM simhash_nearest('docs', 'fp', (SELECT fp FROM docs WHERE id = 3), 5) n
JOIN docs d ON d.ctid = n.ctid
ORDER BY n.distance, d.id;

\echo '-- Every planted pair within 3 bits'
SELECT a.id AS doc, b.id AS near_copy, a.fp <-> b.fp AS distance
FROM docs a JOIN docs b ON b.original = a.id
WHERE simhash_near(a.fp, b.fp, 3)
ORDER BY doc, distance;

\echo '-- ETL: every near pair of the whole table within 3 bits (in memory when the fingerprints fit'
\echo '-- maintenance_work_mem, else hash joins on block keys; no index needed)'
SELECT a::int8 AS doc, b::int8 AS near_copy, distance
FROM simhash_pairs('docs', 'fp', 3, 'id')
ORDER BY doc, near_copy;

\echo '-- ETL: the groups the pairs form, each named by its smallest id'
SELECT group_key::int8 AS cluster, array_agg(key::int8 ORDER BY key::int8) AS members
FROM simhash_chained_groups('docs', 'fp', 3, 'id')
GROUP BY 1 ORDER BY 1;

\echo '-- ETL: load a batch of texts into news without its near-copies (of the table or of each other)'
CREATE TABLE news (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, body text NOT NULL,
                   fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
SELECT simhash_create_index('news', 'fp');   -- sized for the rows to come with expected_rows => N
INSERT INTO news (body) VALUES
    ('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。'),
    ('PostgreSQL is a powerful, open source object-relational database system.');
CREATE TABLE staging (body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO staging (body) VALUES
    ('今天纽约的天气真好啊！京华大酒店的张尧经理吃了一只北京烤鸭'),
    ('Near-duplicate detection finds pages that differ only in boilerplate.'),
    ('Near-duplicate detection finds pages that differ only in boilerplate!'),
    ('SimHash maps a document to a 64-bit fingerprint.');
SELECT * FROM simhash_ingest('news', 'fp', 'staging');
\echo '-- the same batch again adds nothing'
SELECT * FROM simhash_ingest('news', 'fp', 'staging');
SELECT id, body FROM news ORDER BY id;
