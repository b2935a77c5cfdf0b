-- simhash_ingest's one pass over a covering block index (_simhash_batch_near), against brute
-- force: which batch rows lie within k bits of a visible row of the target, with deleted,
-- updated and uncommitted rows, NULL fingerprints, and batches full of near-copies.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all

-- 3,000 rows on the 8-block layout (max_k 7), where a lookup per row through 8-bit blocks reads
-- thousands of entries; every 10th row NULL.
CREATE TABLE ip (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO ip SELECT g, CASE WHEN g % 10 = 0 THEN NULL ELSE hashtextextended(g::text, 3)::simhash64 END
  FROM generate_series(1, 3000) g;
SELECT simhash_create_index('ip', 'fp', max_k => 7);
-- The batch: copies of target rows 0-9 bits away, near-copies of each other, unrelated rows and
-- NULLs, in the order of ib.id.
CREATE TABLE ib (id int8 PRIMARY KEY, fp simhash64);
INSERT INTO ib
SELECT 100000 + g, CASE g % 5
            WHEN 0 THEN NULL
            WHEN 1 THEN (hashtextextended((g * 7 % 3000 + 1)::text, 3) # ((1::int8 << (g % 10)) - 1))::simhash64
            WHEN 2 THEN (hashtextextended(((g - 1) * 7 % 3000 + 1)::text, 3) # (1::int8 << (g % 64)) # 1)::simhash64
            ELSE hashtextextended((g + 100000)::text, 3)::simhash64 END
  FROM generate_series(1, 600) g;
ANALYZE ip;
ANALYZE ib;
-- Deleted rows (some near batch rows) must not count; an updated row counts at its new value.
DELETE FROM ip WHERE id % 7 = 0;
UPDATE ip SET fp = (fp::int8 # 255)::simhash64 WHERE id % 11 = 0;

CREATE FUNCTION ip_brute(k int4) RETURNS int8[] LANGUAGE sql AS $$
    SELECT coalesce(array_agg(b.id - 100000 ORDER BY b.id), '{}') FROM ib b
     WHERE EXISTS (SELECT 1 FROM ip t WHERE (t.fp <-> b.fp) + 0 <= k)
$$;
CREATE FUNCTION ip_pass(k int4) RETURNS int8[] LANGUAGE sql AS $$
    SELECT _simhash_batch_near('ip', 'fp', (SELECT array_agg(fp ORDER BY id) FROM ib), k)
$$;
SELECT k, cardinality(ip_brute(k)) AS near, ip_pass(k) = ip_brute(k) AS pass_is_exact
  FROM unnest(ARRAY[0, 1, 2, 3, 5, 7, 9, 13, 64]) k ORDER BY k;

-- In a transaction: its own deletes hide rows, its own inserts show.
BEGIN;
DELETE FROM ip WHERE id < 1500;
INSERT INTO ip VALUES (90001, (SELECT fp FROM ib WHERE id = 100003));
SELECT ip_pass(3) = ip_brute(3) AS pass_sees_its_own_changes, 3 = ANY(ip_pass(3)) AS own_insert_counts;
ROLLBACK;

-- A batch of 600 into this table goes by the pass; the same rows of simhash_ingest as the rule
-- applied row by row.
SELECT _simhash_ingest_method('ip', 'fp', 3, 600) AS method_at_k3,
       _simhash_ingest_method('ip', 'fp', 7, 600) AS method_at_k7;
CREATE TABLE ip_copy AS SELECT * FROM ip;
SELECT * FROM simhash_ingest('ip', 'fp', 'ib', 3);
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT * FROM ib ORDER BY ctid LOOP
        IF r.fp IS NULL OR NOT EXISTS (SELECT 1 FROM ip_copy c WHERE (c.fp <-> r.fp) + 0 <= 3) THEN
            INSERT INTO ip_copy VALUES (r.id, r.fp);
        END IF;
    END LOOP;
END
$$;
SELECT (SELECT array_agg(id ORDER BY id) FROM ip) = (SELECT array_agg(id ORDER BY id) FROM ip_copy) AS ingest_same_as_rule;

-- Without covering indexes (plain block indexes, or none) there is no pass.
CREATE TABLE ip_plain (id int8, fp simhash64, b0 int8 GENERATED ALWAYS AS (simhash_block(fp, 0, 2)) STORED,
                       b1 int8 GENERATED ALWAYS AS (simhash_block(fp, 1, 2)) STORED);
CREATE INDEX ON ip_plain (b0);
CREATE INDEX ON ip_plain (b1);
SELECT _simhash_ingest_method('ip_plain', 'fp', 3, 600) AS plain_blocks,
       _simhash_batch_near('ip_plain', 'fp', '{0000000000000000}', 3) AS plain_blocks_no_pass;

-- Row-level security that applies to the caller: never the pass (the lookups honour the
-- policies), and the pass itself refuses.
CREATE ROLE simhash_ingest_pass_user;
GRANT SELECT ON ip TO simhash_ingest_pass_user;
ALTER TABLE ip ENABLE ROW LEVEL SECURITY;
CREATE POLICY ip_odd ON ip FOR SELECT USING (id % 2 = 1);
SET ROLE simhash_ingest_pass_user;
SELECT _simhash_ingest_method('ip', 'fp', 3, 600) AS under_rls;
SELECT try_sql($$SELECT _simhash_batch_near('ip', 'fp', '{0000000000000000}', 3)$$) AS pass_under_rls;
RESET ROLE;

-- Bad arguments.
SELECT try_sql($$SELECT _simhash_batch_near('ip', 'fp', '{0000000000000000}', 65)$$) AS bad_k,
       try_sql($$SELECT _simhash_ingest_method('ip', 'fp', -1, 10)$$) AS bad_method_k,
       _simhash_batch_near('ip', 'no_such_column', '{0000000000000000}', 3) AS no_column;

DROP TABLE ip, ib, ip_copy, ip_plain;
DROP FUNCTION ip_brute(int4), ip_pass(int4);
DROP ROLE simhash_ingest_pass_user;
