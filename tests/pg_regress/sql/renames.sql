-- A layout knows its column by identity (issue 52): renaming the fingerprint column and adding a
-- new one under its old name (a re-fingerprinting migration) keeps the indexes on the renamed
-- column, and the new column, which has none, is read row by row: never an index of another
-- column. Every answer against brute force; simhash_index_report names the renamed column.
SET client_min_messages = warning;
CREATE TABLE rn_perm (id int8 PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO rn_perm (id, body) SELECT g, 'doc ' || (g % 2500) || ' ' || md5((g % 2500)::text) FROM generate_series(1, 5000) g;
SELECT simhash_create_index('rn_perm', 'fp');
CREATE TABLE rn_cols (id int8 PRIMARY KEY, body text, fp simhash64);
INSERT INTO rn_cols SELECT id, body, fp FROM rn_perm;
SELECT simhash_create_index('rn_cols', 'fp', covering => false);
RESET client_min_messages;
ALTER TABLE rn_perm RENAME COLUMN fp TO fp_v1;
ALTER TABLE rn_perm ADD COLUMN fp simhash64 GENERATED ALWAYS AS (simhash(body, '{"ngram": 2}')) STORED;
ALTER TABLE rn_cols RENAME COLUMN fp TO fp_v1;
ALTER TABLE rn_cols ADD COLUMN fp simhash64;
UPDATE rn_cols SET fp = simhash(body, '{"ngram": 2}');
ANALYZE rn_perm, rn_cols;
SELECT DISTINCT source_column, blocks FROM simhash_block_columns('rn_perm');
SELECT DISTINCT source_column, blocks FROM simhash_block_columns('rn_cols');
-- The plans: the new column's lookups filter a scan, the renamed one's use its indexes.
CREATE FUNCTION rn_plan(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || stmt LOOP
        RETURN split_part(trim(line), ' on ', 1);
    END LOOP;
END
$$;
SELECT t, c, rn_plan(format('SELECT id FROM %I WHERE simhash_near(%I, %L, 3)', t, c, '0123456789abcdef')) AS plan
  FROM unnest('{rn_perm,rn_cols}'::text[]) t, unnest('{fp,fp_v1}'::text[]) c ORDER BY t, c;
-- Every row's own fingerprint (and within 3 bits) as a lookup, through each column, against
-- brute force: the number of lookups that differ.
CREATE FUNCTION rn_mismatches(t text, c text) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE
    q simhash64;
    bad int8 := 0;
    got int8[];
    want int8[];
BEGIN
    FOR q IN EXECUTE format('SELECT DISTINCT %I FROM %I ORDER BY 1 LIMIT 200', c, t) LOOP
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %I WHERE simhash_near(%I, $1, 3)', t, c) INTO got USING q;
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM %I WHERE hamming_distance(%I, $1) + 0 <= 3', t, c) INTO want USING q;
        IF got IS DISTINCT FROM want THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN bad;
END
$$;
SELECT t, c, rn_mismatches(t, c) FROM unnest('{rn_perm,rn_cols}'::text[]) t, unnest('{fp,fp_v1}'::text[]) c ORDER BY t, c;
SELECT column_name, blocks, complete FROM simhash_index_report('rn_perm');
SELECT column_name, blocks, complete FROM simhash_index_report('rn_cols');
-- The key renamed and a new column under its old name: simhash_pairs reads the key it is given.
ALTER TABLE rn_cols RENAME COLUMN id TO doc_id;
ALTER TABLE rn_cols ADD COLUMN id int8;
SELECT count(*) AS pairs, count(*) FILTER (WHERE a IS NULL OR b IS NULL) AS null_keys
  FROM simhash_pairs('rn_cols', 'fp_v1', 3, key_column => 'doc_id');
DROP TABLE rn_perm, rn_cols;
DROP FUNCTION rn_plan, rn_mismatches;
