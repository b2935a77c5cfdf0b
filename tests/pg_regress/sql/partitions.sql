-- Naming rows in partitioned and inherited tables. Every partition and inheritance child
-- numbers its rows from (0,1), so a ctid names one row only in a plain table: 0.2.0's
-- simhash_nearest returned ctids that, joined back to a partitioned table, picked rows of other
-- partitions with other distances. The ctid forms are now refused there, with a hint; rows are
-- named by a key column instead, and every answer below is compared with brute force.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

-- List-partitioned by language, block indexes made on the parent; rows 1..30 have near-copies
-- (d consecutive bits flipped) in the other partition.
CREATE TABLE pd (id int8, lang text, fp simhash64) PARTITION BY LIST (lang);
CREATE TABLE pd_en PARTITION OF pd FOR VALUES IN ('en');
CREATE TABLE pd_zh PARTITION OF pd FOR VALUES IN ('zh');
INSERT INTO pd SELECT g, CASE WHEN g % 2 = 0 THEN 'en' ELSE 'zh' END,
                      hashtextextended('pd' || g, 0)::simhash64
                 FROM generate_series(1, 3000) g;
INSERT INTO pd SELECT 10000 + b * 10 + d, CASE WHEN b % 2 = 0 THEN 'zh' ELSE 'en' END,
                      (hashtextextended('pd' || b, 0) # (((1::int8 << d) - 1) << (b % 40)))::simhash64
                 FROM generate_series(1, 30) b, generate_series(1, 6) d;
-- Three exact copies of row 7, in both partitions: ties at distance 0, cut in key order.
INSERT INTO pd SELECT 50000 + g, CASE WHEN g % 2 = 0 THEN 'en' ELSE 'zh' END, fp
                 FROM pd, generate_series(1, 3) g WHERE id = 7;
SELECT simhash_create_index('pd', 'fp');
ANALYZE pd;

-- The 0.2.0 call (rows as ctid) is refused, as are pairs and clusters without a key.
SELECT try_sql($$SELECT * FROM simhash_nearest('pd', 'fp', '0123456789abcdef', 2)$$) AS nearest_by_ctid;
SELECT try_sql($$SELECT * FROM simhash_pairs('pd', 'fp', 3)$$) AS pairs_by_ctid;
SELECT try_sql($$SELECT * FROM simhash_chained_groups('pd', 'fp', 3)$$) AS clusters_by_ctid;
-- The hint the refusal gives.
DO $$
DECLARE
    hint text;
BEGIN
    PERFORM * FROM simhash_nearest('pd', 'fp', '0123456789abcdef', 2);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RAISE WARNING 'HINT: %', hint;
END
$$;

-- Named by key: the n nearest equal a full sort (ties in key order), for 30 queries and n 1..6.
SELECT count(*) AS queries,
       count(*) FILTER (WHERE got = want) AS same_as_full_sort
  FROM (SELECT q.id,
               (SELECT array_agg(n.key::int8 || ':' || n.distance ORDER BY n.distance, n.key::int8)
                  FROM simhash_nearest('pd', 'fp', q.fp, (q.id % 6)::int4 + 1, 'id') n) AS got,
               (SELECT array_agg(s.id || ':' || s.d ORDER BY s.d, s.id)
                  FROM (SELECT p.id, p.fp <-> q.fp AS d FROM pd p ORDER BY 2, 1 LIMIT (q.id % 6) + 1) s) AS want
          FROM pd q WHERE q.id <= 30) x;
-- What 0.2.0's README recipe meant, now exact: join back on the key.
SELECT d.id, d.lang, n.distance, d.fp <-> q.fp AS real_distance
  FROM (SELECT fp FROM pd WHERE id = 7) q
 CROSS JOIN LATERAL simhash_nearest('pd', 'fp', q.fp, 4, 'id') n
  JOIN pd d ON d.id = n.key::int8
 ORDER BY n.distance, d.id;

-- Pairs and clusters by key on the partitioned table: equal to brute force.
SELECT (SELECT count(*) FROM simhash_pairs('pd', 'fp', 3, 'id')) AS pairs,
       (SELECT count(*) FROM pd x JOIN pd y ON x.id < y.id WHERE (x.fp <-> y.fp) + 0 <= 3) AS brute_force_pairs,
       (SELECT count(DISTINCT group_key) FROM simhash_chained_groups('pd', 'fp', 3, 'id')) AS clusters;

-- Inheritance children: the same trap, the same answers.
CREATE TABLE inh (id int8, fp simhash64);
CREATE TABLE inh_child () INHERITS (inh);
INSERT INTO inh SELECT id, fp FROM pd WHERE id % 2 = 0;
INSERT INTO inh_child SELECT id, fp FROM pd WHERE id % 2 = 1;
SELECT try_sql($$SELECT * FROM simhash_nearest('inh', 'fp', '0123456789abcdef', 2)$$) AS nearest_by_ctid;
SELECT try_sql($$SELECT * FROM simhash_pairs('inh', 'fp', 3)$$) AS pairs_by_ctid;
SELECT (SELECT array_agg(n.key || ':' || n.distance ORDER BY n.distance, n.key::int8)
          FROM simhash_nearest('inh', 'fp', q.fp, 3, 'id') n)
     = (SELECT array_agg(s.id || ':' || s.d ORDER BY s.d, s.id)
          FROM (SELECT i.id, i.fp <-> q.fp AS d FROM inh i ORDER BY 2, 1 LIMIT 3) s) AS nearest_same_as_full_sort,
       NOT EXISTS (SELECT a, b FROM simhash_pairs('inh', 'fp', 3, 'id')
                   EXCEPT SELECT x.id::text, y.id::text FROM inh x JOIN inh y ON x.id < y.id WHERE (x.fp <-> y.fp) + 0 <= 3)
   AND NOT EXISTS (SELECT x.id::text, y.id::text FROM inh x JOIN inh y ON x.id < y.id WHERE (x.fp <-> y.fp) + 0 <= 3
                   EXCEPT SELECT a, b FROM simhash_pairs('inh', 'fp', 3, 'id')) AS pairs_same_as_brute_force
  FROM (SELECT fp FROM pd WHERE id = 12) q;
-- The child alone is a plain table: its ctids name its rows.
SELECT count(*) AS child_nearest_by_ctid FROM simhash_nearest('inh_child', 'fp', '0123456789abcdef', 2);
SELECT try_sql($$SELECT * FROM simhash_chained_groups('inh', 'fp', 3)$$) AS clusters_by_ctid;

-- simhash_ingest from a partitioned source: each source row once (0.2.0 named source rows by
-- ctid and copied every partition's row (0,1) for the first one).
CREATE TABLE kept (id int8, lang text, fp simhash64);
SELECT simhash_create_index('kept', 'fp');
SELECT * FROM simhash_ingest('kept', 'fp', 'pd', 3);
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       (SELECT count(*) FROM pd WHERE id <= 3000) AS originals
  FROM kept;
SELECT count(*) AS kept_pairs_within_3 FROM kept x JOIN kept y ON x.id < y.id WHERE (x.fp <-> y.fp) + 0 <= 3;

-- Plain tables keep the ctid form.
CREATE TABLE plain AS SELECT id, fp FROM pd;
SELECT (SELECT array_agg(n.distance) FROM simhash_nearest('plain', 'fp', q.fp, 3) n)
     = (SELECT array_agg(p.fp <-> q.fp ORDER BY p.fp <-> q.fp) FROM (SELECT fp FROM plain ORDER BY fp <-> q.fp LIMIT 3) p) AS plain_by_ctid
  FROM (SELECT fp FROM pd WHERE id = 7) q;

-- Block columns on one partition: a partition takes its columns from its parent, and
-- PostgreSQL's own refusal ("cannot add column to a partition") said nothing of what to do
-- (issue 63). Permuted indexes, which need no column, a partition can have on its own.
CREATE TABLE pq (id int8, fp simhash64) PARTITION BY RANGE (id);
CREATE TABLE pq1 PARTITION OF pq FOR VALUES FROM (0) TO (100);
INSERT INTO pq SELECT g, hashtextextended(g::text, 3)::simhash64 FROM generate_series(0, 99) g;
SELECT try_sql($$SELECT simhash_create_index('pq1', 'fp', permuted => false)$$) AS covering_on_a_partition;
DO $$
DECLARE
    hint text;
BEGIN
    PERFORM simhash_create_index('pq1', 'fp', max_k => 5, permuted => false, covering => false);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RAISE WARNING 'HINT: %', hint;
END
$$;
SELECT simhash_create_index('pq1', 'fp') AS permuted_on_a_partition;
SELECT count(*) AS near_rows FROM pq WHERE simhash_near(fp, (SELECT fp FROM pq WHERE id = 9), 3);

DROP TABLE pd, inh, kept, plain, pq CASCADE;
