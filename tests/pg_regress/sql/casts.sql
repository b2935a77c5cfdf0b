-- int8: the same 64 bits, two's complement, both ways.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SELECT '0000000000000001'::simhash64::int8 AS one,
       'ffffffffffffffff'::simhash64::int8 AS minus_one,
       '8000000000000000'::simhash64::int8 AS int8_min,
       '7fffffffffffffff'::simhash64::int8 AS int8_max;
SELECT (-1)::int8::simhash64 AS from_minus_one,
       (-9223372036854775808)::int8::simhash64 AS from_int8_min,
       81985529216486895::int8::simhash64 AS from_positive;
SELECT v, v::simhash64::int8::simhash64 = v::simhash64 AS round_trips
FROM (VALUES ('0123456789abcdef'), ('fedcba9876543210'), ('8000000000000000')) t(v);

-- bytea: exactly 8 bytes, network order.
SELECT 'ff00ff00ff00ff01'::simhash64::bytea AS to_bytea,
       '\x0123456789abcdef'::bytea::simhash64 AS from_bytea,
       'fedcba9876543210'::simhash64::bytea::simhash64 AS round_trip;
SELECT v AS input, try_sql(format('SELECT %L::bytea::simhash64', v)) AS result
FROM (VALUES ('\x'), ('\x01'), ('\x01020304050607'), ('\x010203040506070809')) t(v);

-- bit(64): most significant bit first, as in the hex text.
SELECT '8000000000000001'::simhash64::bit(64) AS to_bit;
SELECT B'1000000000000000000000000000000000000000000000000000000000000001'::simhash64 AS from_bit;
SELECT v, v::simhash64::bit(64)::simhash64 = v::simhash64 AS round_trips
FROM (VALUES ('0123456789abcdef'), ('ffffffffffffffff'), ('0000000000000000')) t(v);
-- The bit form agrees with PostgreSQL's own int8 -> bit(64) cast.
SELECT v::simhash64::bit(64) = v::simhash64::int8::bit(64) AS agrees_with_int8
FROM (VALUES ('0123456789abcdef'), ('fedcba9876543210')) t(v);
SELECT v AS input, try_sql(format('SELECT %s::simhash64', v)) AS result
FROM (VALUES ('B''101'''), ('B'''''), ('repeat(''1'', 65)::varbit::bit(65)'), ('repeat(''1'', 63)::bit(63)')) t(v);

-- No implicit casts: an int8 is not silently a fingerprint.
SELECT try_sql('SELECT hamming_distance(1::int8, 2::int8)') AS implicit_cast;
