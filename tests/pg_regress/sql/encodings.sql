-- Databases in other encodings than UTF-8: text is read as Unicode, converted from the
-- database's encoding, so the same text gives the same fingerprint in every database; in a
-- SQL_ASCII database, whose bytes have no declared encoding, only UTF-8 text can be read (22021,
-- the same in every function). Issue 51: these were XX000 errors, and simhash_weighted alone
-- hashed the raw bytes.
\set VERBOSITY terse
SELECT current_database() AS home, simhash('café au lait') AS utf8_fp,
       simhash_weighted(ARRAY['café'], ARRAY[1.0]) AS utf8_weighted \gset
SELECT simhash('近似重复的新闻页面在数据库里被找到') AS utf8_zh, simhash('データベースで近い重複を見つける') AS utf8_ja \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS simhash_latin1;
DROP DATABASE IF EXISTS simhash_sql_ascii;
RESET client_min_messages;
CREATE DATABASE simhash_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
CREATE DATABASE simhash_sql_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_latin1
SET client_encoding = 'UTF8';
CREATE EXTENSION simhash_pg;
SELECT simhash('café au lait') = :'utf8_fp'::simhash64 AS same_as_utf8,
       simhash('CAFÉ AU LAIT') = simhash('café au lait') AS folded,
       simhash_weighted(ARRAY['café'], ARRAY[1.0]) = :'utf8_weighted'::simhash64 AS weighted_same;
SELECT simhash_extract('<p>crème brûlée</p>', '{"markup": "html"}') AS extracted;
-- What LATIN1 cannot hold comes back as '?': an entity's dash, NFKC's Greek mu for the micro sign.
SELECT simhash_extract('<p>a &mdash; b</p>', '{"markup": "html"}') AS dash, feature FROM simhash_features('5 µm');
SELECT feature, weight FROM simhash_features('café crème café', '{"weighting": "tf"}');
SELECT simhash_jaccard('café crème', 'café noir') AS jaccard, cardinality(simhash_feature_set('café crème')) AS features,
       simhash_set('café', 2) = simhash_set('CAFÉ', 2) AS sets;
CREATE TABLE prix (id int8 PRIMARY KEY, "libellé" text, "empreinte" simhash64 GENERATED ALWAYS AS (simhash("libellé")) STORED);
INSERT INTO prix (id, "libellé") VALUES (1, 'crème brûlée à la vanille'), (2, 'crème brûlée à la vanille !');
SELECT simhash_create_index('prix', 'empreinte');
SELECT a, b, distance FROM simhash_pairs('prix', 'empreinte', 3, key_column => 'id');
\c simhash_sql_ascii
CREATE EXTENSION simhash_pg;
SELECT simhash('café au lait') = :'utf8_fp'::simhash64 AS utf8_bytes_read;
SELECT simhash(convert_from('\xe974e9'::bytea, 'SQL_ASCII'));
SELECT simhash_set(convert_from('\xe974e9'::bytea, 'SQL_ASCII'), 2);
SELECT simhash_jaccard('a', convert_from('\xe974e9'::bytea, 'SQL_ASCII'));
SELECT simhash_weighted(ARRAY[convert_from('\xe974e9'::bytea, 'SQL_ASCII')], ARRAY[1.0]);
-- EUC databases (Chinese users run EUC_CN ones). Issue 63: CREATE EXTENSION failed there, the
-- install script having a non-ASCII character in a comment ("invalid byte sequence for
-- encoding"); every install and update script is ASCII now (checked in stage 1 of the test
-- command), so the extension installs, and updates from every release, in any encoding.
SET client_min_messages = warning;
DROP DATABASE IF EXISTS simhash_euc_cn;
DROP DATABASE IF EXISTS simhash_euc_jp;
RESET client_min_messages;
CREATE DATABASE simhash_euc_cn ENCODING 'EUC_CN' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
CREATE DATABASE simhash_euc_jp ENCODING 'EUC_JP' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_euc_cn
SET client_encoding = 'UTF8';
CREATE EXTENSION simhash_pg;
SELECT simhash('近似重复的新闻页面在数据库里被找到') = :'utf8_zh'::simhash64 AS same_as_utf8;
CREATE TABLE news (id int8 PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO news (id, body) VALUES (1, '近似重复的新闻页面在数据库里被找到'), (2, '近似重复的新闻页面在数据库里被找到了'),
                                   (3, '今天的天气很好，我们去公园散步');
SELECT simhash_create_index('news', 'fp');
SELECT id FROM news WHERE simhash_near(fp, simhash('近似重复的新闻页面在数据库里被找到'), 7) ORDER BY id;
SELECT a, b FROM simhash_pairs('news', 'fp', 7, key_column => 'id');
DROP EXTENSION simhash_pg CASCADE;
CREATE EXTENSION simhash_pg VERSION '0.3.0';
ALTER EXTENSION simhash_pg UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg';
\c simhash_euc_jp
SET client_encoding = 'UTF8';
CREATE EXTENSION simhash_pg VERSION '0.1.0';
ALTER EXTENSION simhash_pg UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg';
SELECT simhash('データベースで近い重複を見つける') = :'utf8_ja'::simhash64 AS same_as_utf8;
\c :home
DROP DATABASE simhash_latin1;
DROP DATABASE simhash_sql_ascii;
DROP DATABASE simhash_euc_cn;
DROP DATABASE simhash_euc_jp;
