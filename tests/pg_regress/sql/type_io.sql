-- Text form: 16 hex digits, optional 0x prefix, upper or lower case in, lower case out.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SELECT '00ff00ff00ff00ff'::simhash64 AS plain,
       '0x00FF00FF00FF00FF'::simhash64 AS prefixed_upper,
       '0X0123456789AbCdEf'::simhash64 AS mixed,
       '0000000000000000'::simhash64 AS zero,
       'ffffffffffffffff'::simhash64 AS ones;

-- Text round trip keeps every value.
SELECT v, v::simhash64::text = lower(v) AS round_trips
FROM (VALUES ('0123456789abcdef'), ('8000000000000000'), ('7FFFFFFFFFFFFFFF')) t(v);

-- Malformed text is SQLSTATE 22P02, quoting the value.
SELECT v AS input, try_sql(format('SELECT %L::simhash64', v)) AS result
FROM (VALUES
    (''),
    ('0x'),
    ('abc'),
    ('00ff00ff00ff00f'),
    ('00ff00ff00ff00ff0'),
    ('00ff00ff00ff00fg'),
    ('00ff 00ff00ff00ff'),
    (' 00ff00ff00ff00ff'),
    ('00ff00ff00ff00ff '),
    ('-0ff00ff00ff00ff'),
    ('+0ff00ff00ff00ff'),
    ('0x0x00ff00ff00ff'),
    ('0b0101010101010101'),
    ('00ff_00ff_00ff_00'),
    ('００ff00ff00ff00ff')
) t(v);

-- The full error, as a user sees it.
SELECT 'not a fingerprint'::simhash64;

-- NULL in, NULL out.
SELECT NULL::simhash64 IS NULL AS null_stays_null;

-- Binary send/recv through COPY (FORMAT binary): 8 bytes in network order.
CREATE TABLE io_src (id int, fp simhash64);
INSERT INTO io_src VALUES (1, '0123456789abcdef'), (2, '8000000000000001'), (3, NULL), (4, 'ffffffffffffffff');
COPY io_src TO '/tmp/simhash_pg_regress_io.bin' (FORMAT binary);
CREATE TABLE io_dst (LIKE io_src);
COPY io_dst FROM '/tmp/simhash_pg_regress_io.bin' (FORMAT binary);
SELECT s.id, s.fp, d.fp AS copied, s.fp IS NOT DISTINCT FROM d.fp AS same
FROM io_src s JOIN io_dst d USING (id) ORDER BY id;
SELECT simhash64_send('0123456789abcdef') AS send_bytes;
DROP TABLE io_src, io_dst;
