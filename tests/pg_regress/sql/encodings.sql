-- Databases in other encodings than UTF-8: text is read as Unicode, converted from the
-- database's encoding, so the same text gives the same fingerprint in every database; in a
-- SQL_ASCII database, whose bytes have no declared encoding, only UTF-8 text can be read (22021,
-- the same in every function). Issue 51: these were XX000 errors, and simhash_weighted alone
-- hashed the raw bytes.
\set VERBOSITY terse
SELECT current_database() AS home, simhash('café au lait') AS utf8_fp,
       simhash_weighted(ARRAY['café'], ARRAY[1.0]) AS utf8_weighted \gset
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
\c :home
DROP DATABASE simhash_latin1;
DROP DATABASE simhash_sql_ascii;
