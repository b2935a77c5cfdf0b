-- Hostile and careless inputs to every function, in one table: each gives a clear ERROR with its
-- SQLSTATE or a documented result (shown as 'ok: <first column of the first row>'), never a
-- crash; afterwards no failed helper has left DDL behind.
CREATE SCHEMA hostile;
CREATE TABLE hostile.docs (id int8 PRIMARY KEY, body text, fp simhash64);
INSERT INTO hostile.docs SELECT g, 'doc ' || g, simhash('doc ' || g) FROM generate_series(1, 50) g;
CREATE INDEX docs_plain ON hostile.docs (simhash_block(fp, 0, 4));
CREATE VIEW hostile.docs_view AS SELECT * FROM hostile.docs;
CREATE TABLE hostile."Tab ""quoted""; DROP TABLE hostile.docs; --" (id int8, fp simhash64);
CREATE TABLE hostile."日本語 テーブル" (id int8, "指紋 列" simhash64);
CREATE TABLE hostile.wrong_type (id int8, fp int8);
CREATE TABLE hostile.target (id int8, body text, fp simhash64);

-- Runs stmt; 'ok: ' and the first column of its first row, or 'SQLSTATE: message'.
CREATE FUNCTION hostile.run(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    answer text;
BEGIN
    EXECUTE stmt INTO answer;
    RETURN 'ok: ' || coalesce(answer, 'NULL');
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

CREATE TABLE hostile.cases (n int4 GENERATED ALWAYS AS IDENTITY, input text, stmt text, stranger bool DEFAULT false);
INSERT INTO hostile.cases (input, stmt) VALUES
    -- the type's text and binary input
    ('simhash64: empty text', $$SELECT ''::simhash64$$),
    ('simhash64: 15 digits', $$SELECT '00ff00ff00ff00f'::simhash64$$),
    ('simhash64: 17 digits', $$SELECT '00ff00ff00ff00ff0'::simhash64$$),
    ('simhash64: non-hex letter', $$SELECT '00ff00ff00ff00fg'::simhash64$$),
    ('simhash64: 0x alone', $$SELECT '0x'::simhash64$$),
    ('simhash64: inner space', $$SELECT '00ff00ff 0ff00ff'::simhash64$$),
    ('simhash64: trailing tab', $$SELECT E'00ff00ff00ff00ff\t'::simhash64$$),
    ('simhash64: leading newline', $$SELECT E'\n00ff00ff00ff00ff'::simhash64$$),
    ('simhash64: control character', $$SELECT E'00ff00ff00ff\x0100ff'::simhash64$$),
    ('simhash64: fullwidth digits', $$SELECT '００ff00ff00ff00ff'::simhash64$$),
    ('simhash64: minus sign', $$SELECT '-0ff00ff00ff00ff'::simhash64$$),
    ('simhash64: SQL fragment', $$SELECT $x$'; DROP TABLE hostile.docs; --$x$::simhash64$$),
    ('simhash64: NULL', $$SELECT NULL::text::simhash64$$),
    ('simhash64: bytea of 7 bytes', $$SELECT '\x00010203040506'::bytea::simhash64$$),
    ('simhash64: bytea of 9 bytes', $$SELECT '\x000102030405060708'::bytea::simhash64$$),
    ('simhash64: empty bytea', $$SELECT ''::bytea::simhash64$$),
    ('simhash64: bit(63)', $$SELECT repeat('1', 63)::bit(63)::simhash64$$),
    ('simhash64: varbit of 65', $$SELECT repeat('1', 65)::varbit::simhash64$$),
    -- simhash(text [, options])
    ('simhash: NULL text', $$SELECT simhash(NULL::text)$$),
    ('simhash: empty text', $$SELECT simhash('')$$),
    ('simhash: whitespace only', $$SELECT simhash(E' \t\n\r  ')$$),
    ('simhash: control characters only', $$SELECT simhash(E'\x01\x02\x1b\x7f')$$),
    ('simhash: punctuation only', $$SELECT simhash('!!! ... ，。？')$$),
    ('simhash: 50 MB text', $$SELECT simhash(repeat('word ', 10000000))$$),
    ('simhash: options not JSON', $$SELECT simhash('a b', 'not json')$$),
    ('simhash: options NULL', $$SELECT simhash('a b', NULL)$$),
    ('simhash: options JSON null', $$SELECT simhash('a b', 'null')$$),
    ('simhash: options an array', $$SELECT simhash('a b', '[1, 2]')$$),
    ('simhash: unknown option', $$SELECT simhash('a b', '{"stemming": true}')$$),
    ('simhash: ngram 0', $$SELECT simhash('a b', '{"ngram": 0}')$$),
    ('simhash: ngram a million', $$SELECT simhash('a b', '{"ngram": 1000000}')$$),
    ('simhash: ngram as text', $$SELECT simhash('a b', '{"ngram": "2"}')$$),
    ('simhash: unknown weighting', $$SELECT simhash('a b', '{"weighting": "bm25"}')$$),
    ('simhash: top_k 0', $$SELECT simhash('a b', '{"top_k": 0}')$$),
    ('simhash: negative seed', $$SELECT simhash('a b', '{"seed": -1}')$$),
    ('simhash: fractional seed', $$SELECT simhash('a b', '{"seed": 1.5}')$$),
    ('simhash: future version', $$SELECT simhash('a b', '{"version": 99}')$$),
    ('simhash_features: tokenizer a number', $$SELECT simhash_features('a b', '{"tokenizer": 5}')$$),
    -- simhash_weighted
    ('simhash_weighted: NaN weight', $$SELECT simhash_weighted('{a,b}', '{1,NaN}')$$),
    ('simhash_weighted: Infinity weight', $$SELECT simhash_weighted('{a}', '{Infinity}')$$),
    ('simhash_weighted: -Infinity weight', $$SELECT simhash_weighted('{a}', '{-Infinity}')$$),
    ('simhash_weighted: NULL weight element', $$SELECT simhash_weighted('{a,b}', '{1,NULL}')$$),
    ('simhash_weighted: NULL feature element', $$SELECT simhash_weighted('{a,NULL}', '{1,2}')$$),
    ('simhash_weighted: lengths differ', $$SELECT simhash_weighted('{a,b}', '{1}')$$),
    ('simhash_weighted: empty arrays', $$SELECT simhash_weighted('{}', '{}')$$),
    ('simhash_weighted: NULL array', $$SELECT simhash_weighted(NULL, '{1}')$$),
    -- distances and blocks
    ('hamming_distance: NULL', $$SELECT hamming_distance(NULL::simhash64, '00000000000000ff')$$),
    ('simhash_near: k = -1', $$SELECT simhash_near(fp, fp, -1) FROM hostile.docs LIMIT 1$$),
    ('simhash_near: k = 65', $$SELECT simhash_near(fp, fp, 65) FROM hostile.docs LIMIT 1$$),
    ('simhash_near: k NULL', $$SELECT simhash_near(fp, fp, NULL) FROM hostile.docs LIMIT 1$$),
    ('simhash_near: k = -1 in WHERE', $$SELECT count(*) FROM hostile.docs WHERE simhash_near(fp, '0000000000000000', -1)$$),
    ('simhash_block: i = -1', $$SELECT simhash_block('00000000000000ff', -1, 4)$$),
    ('simhash_block: i = m', $$SELECT simhash_block('00000000000000ff', 4, 4)$$),
    ('simhash_block: m = 0', $$SELECT simhash_block('00000000000000ff', 0, 0)$$),
    ('simhash_block: m = 65', $$SELECT simhash_block('00000000000000ff', 0, 65)$$),
    ('simhash_block: NULL block index', $$SELECT simhash_block('00000000000000ff', NULL, 4)$$),
    ('_simhash_block_ball: radius -1', $$SELECT _simhash_block_ball('00000000000000ff', 0, 4, -1)$$),
    ('_simhash_block_ball: radius 64 of one block', $$SELECT _simhash_block_ball('00000000000000ff', 0, 1, 64)$$),
    ('_simhash_pair_masks: k = -1', $$SELECT _simhash_pair_masks(-1, 1000)$$),
    ('_simhash_pair_masks: rows NaN', $$SELECT _simhash_pair_masks(3, 'NaN')$$),
    ('_simhash_pair_masks: rows negative', $$SELECT _simhash_pair_masks(3, -5)$$),
    ('_simhash_components: lengths differ', $$SELECT _simhash_components('{a}', '{b,c}')$$),
    ('_simhash_components: NULL element', $$SELECT _simhash_components('{NULL}', '{a}')$$),
    ('_simhash_block_column_name: 100-byte column', $$SELECT _simhash_block_column_name(repeat('é', 50), 1, 4)$$),
    -- the probe behind WHERE simhash_near
    ('_simhash_index_probe: NULL array', $$SELECT _simhash_index_probe(NULL, '00000000000000ff', 3)$$),
    ('_simhash_index_probe: NULL index', $$SELECT _simhash_index_probe(ARRAY[NULL]::regclass[], '00000000000000ff', 3)$$),
    ('_simhash_index_probe: no indexes', $$SELECT _simhash_index_probe('{}', '00000000000000ff', 3)$$),
    ('_simhash_index_probe: a table, not an index', $$SELECT _simhash_index_probe('{hostile.docs}', '00000000000000ff', 3)$$),
    ('_simhash_index_probe: non-covering index', $$SELECT _simhash_index_probe('{hostile.docs_plain}', '00000000000000ff', 0)$$),
    -- index helpers
    ('simhash_create_index: column of type text', $$SELECT simhash_create_index('hostile.docs', 'body')$$),
    ('simhash_create_index: no such column', $$SELECT simhash_create_index('hostile.docs', 'nope')$$),
    ('simhash_create_index: NULL table', $$SELECT simhash_create_index(NULL, 'fp')$$),
    ('simhash_create_index: NULL column', $$SELECT simhash_create_index('hostile.docs', NULL)$$),
    ('simhash_create_index: no such table OID', $$SELECT simhash_create_index(1::oid::regclass, 'fp')$$),
    ('simhash_create_index: int8 column', $$SELECT simhash_create_index('hostile.wrong_type', 'fp')$$),
    ('simhash_create_index: max_k = -1', $$SELECT simhash_create_index('hostile.docs', 'fp', -1)$$),
    ('simhash_create_index: max_k = 70', $$SELECT simhash_create_index('hostile.docs', 'fp', 70)$$),
    ('simhash_create_index: blocks = 0', $$SELECT simhash_create_index('hostile.docs', 'fp', 3, 0)$$),
    ('simhash_create_index: blocks = 65', $$SELECT simhash_create_index('hostile.docs', 'fp', 3, 65)$$),
    ('simhash_create_index: covering NULL', $$SELECT simhash_create_index('hostile.docs', 'fp', 3, 4, NULL)$$),
    ('simhash_create_index: a view', $$SELECT simhash_create_index('hostile.docs_view', 'fp')$$),
    ('simhash_create_index: a table named with quotes and SQL', $$SELECT simhash_create_index('hostile."Tab ""quoted""; DROP TABLE hostile.docs; --"', 'fp')$$),
    ('simhash_create_index: unicode names with spaces', $$SELECT simhash_create_index('hostile."日本語 テーブル"', '指紋 列')$$),
    ('simhash_create_index: run again (no-op)', $$SELECT simhash_create_index('hostile."日本語 テーブル"', '指紋 列')$$),
    ('simhash_drop_index: unicode names with spaces', $$SELECT simhash_drop_index('hostile."日本語 テーブル"', '指紋 列')$$),
    ('simhash_drop_index: run again (no-op)', $$SELECT simhash_drop_index('hostile."日本語 テーブル"', '指紋 列')$$),
    ('simhash_nearest: n = -1', $$SELECT simhash_nearest('hostile.docs', 'fp', '00000000000000ff', -1)$$),
    ('simhash_nearest: NULL query', $$SELECT simhash_nearest('hostile.docs', 'fp', NULL, 3)$$),
    -- ETL helpers
    ('simhash_pairs: NULL table', $$SELECT simhash_pairs(NULL, 'fp')$$),
    ('simhash_pairs: k = 64', $$SELECT simhash_pairs('hostile.docs', 'fp', 64)$$),
    ('simhash_pairs: k NULL', $$SELECT simhash_pairs('hostile.docs', 'fp', NULL)$$),
    ('simhash_pairs: no such key column', $$SELECT simhash_pairs('hostile.docs', 'fp', 3, 'nope')$$),
    ('simhash_chained_groups: column of type text', $$SELECT simhash_chained_groups('hostile.docs', 'body')$$),
    ('simhash_ingest: source of the wrong type', $$SELECT simhash_ingest('hostile.target', 'fp', 'hostile.wrong_type')$$),
    ('simhash_ingest: NULL source', $$SELECT simhash_ingest('hostile.target', 'fp', NULL)$$),
    ('simhash_ingest: k = 65', $$SELECT simhash_ingest('hostile.target', 'fp', 'hostile.docs', 65)$$);

-- The same calls by a role that owns nothing and may not read or write the tables.
INSERT INTO hostile.cases (input, stmt, stranger) VALUES
    ('stranger: simhash works', $$SELECT simhash('a b c')$$, true),
    ('stranger: simhash_create_index', $$SELECT simhash_create_index('hostile.docs', 'fp')$$, true),
    ('stranger: simhash_drop_index', $$SELECT simhash_drop_index('hostile.docs', 'fp')$$, true),
    ('stranger: simhash_near on an unreadable table', $$SELECT count(*) FROM hostile.docs WHERE simhash_near(fp, '00000000000000ff', 3)$$, true),
    ('stranger: _simhash_index_probe', $$SELECT _simhash_index_probe('{hostile.docs_plain}', '00000000000000ff', 0)$$, true),
    ('stranger: simhash_nearest', $$SELECT simhash_nearest('hostile.docs', 'fp', '00000000000000ff', 3)$$, true),
    ('stranger: simhash_pairs', $$SELECT simhash_pairs('hostile.docs', 'fp')$$, true),
    ('stranger: simhash_ingest', $$SELECT simhash_ingest('hostile.target', 'fp', 'hostile.docs')$$, true);

-- What the tables look like before: every column and index.
CREATE TABLE hostile.shape AS
SELECT c.relname, a.attname, a.attnum FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
 WHERE c.relnamespace = 'hostile'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
   AND c.relname NOT IN ('cases', 'shape');

SELECT n, input, hostile.run(stmt) AS result FROM hostile.cases WHERE NOT stranger ORDER BY n;

CREATE ROLE simhash_hostile_user;
GRANT USAGE ON SCHEMA hostile TO simhash_hostile_user;
GRANT SELECT ON hostile.cases TO simhash_hostile_user;
SET ROLE simhash_hostile_user;
SELECT n, input, hostile.run(stmt) AS result FROM hostile.cases WHERE stranger ORDER BY n;
RESET ROLE;

-- The only DDL that stayed is what succeeded: the quoted table's block columns and their
-- indexes; the unicode table's were dropped again, and no failed call left anything.
SELECT relname, attname FROM (
    SELECT c.relname, a.attname, a.attnum FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
     WHERE c.relnamespace = 'hostile'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
       AND c.relname NOT IN ('cases', 'shape')
    EXCEPT SELECT * FROM hostile.shape) added
ORDER BY 1, 2;
SELECT count(*) AS docs_rows FROM hostile.docs;

DROP SCHEMA hostile CASCADE;
DROP ROLE simhash_hostile_user;
