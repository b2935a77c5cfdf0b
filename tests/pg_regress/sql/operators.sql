-- Hamming distance: the operator and the function agree and are symmetric.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SELECT '0123456789abcdef'::simhash64 <-> 'fedcba9876543210'::simhash64 AS complement_distance;
SELECT a, b, a <-> b AS d, hamming_distance(a, b) AS fn, b <-> a AS swapped
FROM (VALUES
    ('0000000000000000'::simhash64, '0000000000000000'::simhash64),
    ('0000000000000000', 'ffffffffffffffff'),
    ('0000000000000000', '8000000000000001'),
    ('00ff00ff00ff00ff', '00ff00ff00ff00fe'),
    ('0123456789abcdef', '0123456789abcdee')
) t(a, b);

-- simhash_near is distance <= k, for k in 0..64.
SELECT k, simhash_near('0000000000000000', '0000000000000007', k) AS near
FROM generate_series(0, 4) k;
SELECT simhash_near('0000000000000000', 'ffffffffffffffff', 64) AS all_bits;
SELECT k AS bad_k, try_sql(format('SELECT simhash_near(%L, %L, %s)', '0000000000000000', '0000000000000000', k)) AS result
FROM (VALUES (-1), (65), (2147483647), (-2147483648)) t(k);
SELECT simhash_near('0000000000000000', '0000000000000000', NULL) IS NULL AS null_k_gives_null;

-- Similarity and Charikar's cosine estimate.
SELECT d, simhash_similarity(0::int8::simhash64, (2::numeric ^ d - 1)::int8::simhash64) AS similarity,
       round(simhash_cosine(0::int8::simhash64, (2::numeric ^ d - 1)::int8::simhash64)::numeric, 6) AS cosine
FROM (VALUES (0), (1), (16), (32), (48), (63)) t(d);
SELECT simhash_similarity('0000000000000000', 'ffffffffffffffff') AS opposite,
       simhash_cosine('0000000000000000', 'ffffffffffffffff') AS opposite_cosine;

-- Comparison operators, in unsigned order (the order of the hex text).
SELECT a, b, a = b AS eq, a <> b AS ne, a < b AS lt, a <= b AS le, a > b AS gt, a >= b AS ge
FROM (VALUES
    ('7fffffffffffffff'::simhash64, '8000000000000000'::simhash64),
    ('ffffffffffffffff', '0000000000000000'),
    ('0123456789abcdef', '0123456789abcdef')
) t(a, b);

-- Blocks: contiguous, most significant first; 64 = 16+16+16+16 for m = 4.
SELECT i, simhash_block('0123456789abcdef', i, 4) AS block, to_hex(simhash_block('0123456789abcdef', i, 4)) AS hex
FROM generate_series(0, 3) i;
-- Widths show on an all-ones fingerprint: 2^w - 1. m = 3: 22, 21, 21 (wider blocks first);
-- m = 5: 13, 13, 13, 13, 12.
SELECT m, array_agg(simhash_block('ffffffffffffffff', i, m) ORDER BY i) AS all_ones,
       array_agg(log(2, simhash_block('ffffffffffffffff', i, m) + 1.0)::int ORDER BY i) AS widths
FROM (VALUES (3), (5)) t(m), generate_series(0, m - 1) i GROUP BY m ORDER BY m;
-- m = 2: the halves, the widest possible blocks; m = 64: single bits.
SELECT simhash_block('ffffffff00000000', 0, 2) AS high_half, simhash_block('ffffffff00000000', 1, 2) AS low_half,
       simhash_block('8000000000000001', 0, 64) AS first_bit, simhash_block('8000000000000001', 63, 64) AS last_bit,
       simhash_block('8000000000000001', 1, 64) AS second_bit;
SELECT i, m, try_sql(format('SELECT simhash_block(%L, %s, %s)', '0123456789abcdef', i, m)) AS result
FROM (VALUES (0, 1), (0, 65), (0, 0), (0, -4), (4, 4), (-1, 4), (64, 64)) t(i, m);

-- Every function is IMMUTABLE, STRICT, PARALLEL SAFE and commented.
SELECT p.oid::regprocedure AS function, p.provolatile, p.proisstrict, p.proparallel,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg'
ORDER BY p.oid::regprocedure::text;
