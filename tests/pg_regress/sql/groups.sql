-- simhash_representative_groups: groups that do not chain, against brute force. Every row is within k of its
-- representative (and passes the exact check when asked), no two representatives are within k,
-- the representative comes first by the keep rule, and each row is in one group.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SET client_min_messages = warning;

-- Chains: row 10*c + j is row 10*c with its first j bits flipped (j = 0..6), so neighbours are
-- 1 bit apart and the ends of a chain 6; plus rows of their own and NULLs.
CREATE TABLE gr (id int8 PRIMARY KEY, fp simhash64, fetched int4, body text);
INSERT INTO gr
SELECT 10 * c + j, (hashtextextended(c::text, 9) # ((1::int8 << j) - 1))::simhash64, (j * 7 + c) % 5,
       'chain ' || c || ' copy ' || j || repeat(' shared words of chain ' || c, 3)
  FROM generate_series(1, 40) c, generate_series(0, 6) j;
INSERT INTO gr SELECT 1000 + g, hashtextextended('alone' || g, 9)::simhash64, 0, 'alone ' || g FROM generate_series(1, 50) g;
INSERT INTO gr VALUES (2000, NULL, 0, NULL);
ANALYZE gr;

CREATE FUNCTION gr_check(k int4, keep_column name, keep_largest bool) RETURNS TABLE (
    rows_in_groups int8, groups int8, members_near_rep bool, reps_apart bool, rep_first bool, one_group_each bool)
LANGUAGE sql AS $$
    WITH g AS (SELECT s.key::int8 AS id, s.representative::int8 AS rep FROM simhash_representative_groups('gr', 'fp', k, 'id', keep_column => keep_column, keep_largest => keep_largest) s),
         o AS (SELECT id, row_number() OVER (ORDER BY CASE WHEN keep_column IS NULL THEN 0
                                                          WHEN keep_largest THEN -fetched ELSE fetched END, id) AS rank FROM gr)
    SELECT count(*), count(*) FILTER (WHERE g.id = g.rep),
           bool_and((x.fp <-> r.fp) + 0 <= k),
           NOT EXISTS (SELECT 1 FROM g a JOIN g b ON a.id = a.rep AND b.id = b.rep AND a.id < b.id
                         JOIN gr x ON x.id = a.id JOIN gr y ON y.id = b.id WHERE (x.fp <-> y.fp) + 0 <= k),
           bool_and(orr.rank <= ox.rank),
           count(DISTINCT g.id) = count(*)
      FROM g JOIN gr x ON x.id = g.id JOIN gr r ON r.id = g.rep
      JOIN o ox ON ox.id = g.id JOIN o orr ON orr.id = g.rep
$$;
-- Every row on a pair is in a group (the pairs' rows, by brute force).
SELECT k, (SELECT rows_in_groups FROM gr_check(k, NULL, false))
        = (SELECT count(DISTINCT x.id) FROM gr x JOIN gr y ON x.id <> y.id AND (x.fp <-> y.fp) + 0 <= k) AS every_row,
       c.*
  FROM unnest(ARRAY[1, 3, 6]) k, gr_check(k, NULL, false) c ORDER BY k;
-- Keep rules: the smallest or largest fetched first.
SELECT 'smallest fetched' AS keep, * FROM gr_check(3, 'fetched', false)
UNION ALL
SELECT 'largest fetched', * FROM gr_check(3, 'fetched', true);
-- Connected components chain a whole chain into one cluster; groups split it.
SELECT (SELECT count(DISTINCT group_key) FROM simhash_chained_groups('gr', 'fp', 1, 'id')) AS clusters,
       (SELECT count(*) FROM simhash_representative_groups('gr', 'fp', 1, 'id') WHERE key = representative) AS groups;
-- Chain 1 at k = 1, taken in id order: 10 takes 11, 12 takes 13, 14 takes 15; 16, whose one
-- neighbour 15 is taken, is a group of its own.
SELECT key, representative FROM simhash_representative_groups('gr', 'fp', 1, 'id') WHERE key::int8 BETWEEN 10 AND 16 ORDER BY key::int8;
-- Verified: only pairs whose bodies share enough word 3-shingles; here a different body breaks a pair.
UPDATE gr SET body = 'something else entirely, not the chain text at all' WHERE id = 11;
SELECT key, representative FROM simhash_representative_groups('gr', 'fp', 1, 'id', verify => '{"column": "body", "min_jaccard": 0.3}')
 WHERE key::int8 BETWEEN 10 AND 16 ORDER BY key::int8;
-- Without a key column rows are named by ctid: as many groups.
SELECT (SELECT count(*) FROM simhash_representative_groups('gr', 'fp', 3) WHERE key = representative)
     = (SELECT count(*) FROM simhash_representative_groups('gr', 'fp', 3, 'id') WHERE key = representative) AS by_ctid_same;

-- Errors.
SELECT try_sql($$SELECT * FROM simhash_representative_groups('gr', 'fp', 64)$$) AS bad_k,
       try_sql($$SELECT * FROM simhash_representative_groups('gr', 'fp', 3, 'id', 'no_such')$$) AS bad_keep_column,
       try_sql($$SELECT * FROM simhash_representative_groups('gr', 'fp', 3, 'id', verify => '{"column": "fetched"}')$$) AS verify_not_text,
       try_sql($$SELECT * FROM simhash_representative_groups('gr', 'fp', 3, 'id', verify => '{"column": "body", "min_jaccard": 2}')$$) AS bad_jaccard,
       try_sql($$SELECT * FROM _simhash_stars('{a}', '{a,b}', '{b}')$$) AS stars_lengths;

DROP TABLE gr;
DROP FUNCTION gr_check(int4, name, bool);
