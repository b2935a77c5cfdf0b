-- 0.3.0's names and arguments, kept for one release (removed in 1.1): each gives the same
-- answer as its 1.0 form and says, with a warning (SQLSTATE 01P01), what to call instead.
CREATE TABLE dep (id int8 PRIMARY KEY, body text, fp simhash64, len int4);
INSERT INTO dep SELECT g, 'story ' || (g % 60) || ' on desk ' || (g % 4), hashtextextended('d' || (g % 60), 0)::simhash64, g % 13
  FROM generate_series(1, 300) g;
UPDATE dep SET fp = (fp::int8 # (1::int8 << (id % 64)))::simhash64 WHERE id % 3 = 0;
CREATE TABLE dep_src (LIKE dep);
INSERT INTO dep_src SELECT id + 1000, body, fp, len FROM dep WHERE id % 5 = 0;
CREATE TABLE dep_a (LIKE dep);
CREATE TABLE dep_b (LIKE dep);

-- simhash_clusters -> simhash_chained_groups (cluster_key -> group_key), both forms.
SELECT (SELECT array_agg((key, cluster_key) ORDER BY key::int8) FROM simhash_clusters('dep', 'fp', 3, 'id'))
     = (SELECT array_agg((key, group_key) ORDER BY key::int8) FROM simhash_chained_groups('dep', 'fp', 3, 'id')) AS clusters_same;
SELECT (SELECT count(*) FROM simhash_chained_groups('dep', 'fp', 3, 'id', verify => '{"column": "body", "min_jaccard": 0.6}')) AS rows_in_checked_groups,
       (SELECT array_agg((key, cluster_key) ORDER BY key) FROM simhash_clusters('dep', 'fp', 3, 'id', NULL::int8,
                                                                                 verify_column => 'body', min_jaccard => 0.6))
     = (SELECT array_agg((key, group_key) ORDER BY key) FROM simhash_chained_groups('dep', 'fp', 3, 'id', NULL::int8,
                                                                                 verify => '{"column": "body", "min_jaccard": 0.6}')) AS clusters_typed_verified_same;
-- simhash_groups -> simhash_representative_groups (keep_by -> keep_column).
SELECT (SELECT array_agg((key, representative) ORDER BY key::int8) FROM simhash_groups('dep', 'fp', 3, 'id', 'len', true))
     = (SELECT array_agg((key, representative) ORDER BY key::int8)
          FROM simhash_representative_groups('dep', 'fp', 3, 'id', keep_column => 'len', keep_largest => true)) AS groups_same;
-- The trio verify_column, min_jaccard, verify_options -> verify.
SELECT (SELECT array_agg((a, b, distance) ORDER BY a::int8, b::int8)
          FROM simhash_pairs('dep', 'fp', 3, 'id', verify_column => 'body', min_jaccard => 0.7, verify_options => '{"ngram": 1}'))
     = (SELECT array_agg((a, b, distance) ORDER BY a::int8, b::int8)
          FROM simhash_pairs('dep', 'fp', 3, 'id', verify => '{"column": "body", "min_jaccard": 0.7, "options": {"ngram": 1}}')) AS pairs_same;
SELECT (SELECT count(*) FROM simhash_pairs('dep', 'fp', 3, 'id', verify => '{"column": "body"}')) AS checked_pairs,
       (SELECT array_agg((a, b) ORDER BY a, b) FROM simhash_pairs('dep', 'fp', 3, 'id', NULL::int8, verify_column => 'body'))
     = (SELECT array_agg((a, b) ORDER BY a, b) FROM simhash_pairs('dep', 'fp', 3, 'id', NULL::int8, verify => '{"column": "body"}')) AS pairs_typed_same;
SELECT * FROM simhash_ingest('dep_a', 'fp', 'dep_src', 3, verify_column => 'body', min_jaccard => 0.6);
SELECT * FROM simhash_ingest('dep_b', 'fp', 'dep_src', 3, verify => '{"column": "body", "min_jaccard": 0.6}');
SELECT (SELECT array_agg(id ORDER BY id) FROM dep_a) = (SELECT array_agg(id ORDER BY id) FROM dep_b) AS ingest_same;
-- Both forms at once is an error, not a guess.
\set VERBOSITY terse
SELECT * FROM simhash_pairs('dep', 'fp', 3, 'id', verify => '{"column": "body"}', verify_column => 'body');
\set VERBOSITY default
-- Keys asked as text by position (NULL::text, which 0.3.0 took to the text form) are text keys,
-- whatever the key column's type.
SELECT (SELECT array_agg((a::int8, b::int8) ORDER BY a::int8, b::int8) FROM simhash_pairs('dep', 'fp', 3, 'id', NULL::text))
     = (SELECT array_agg((a::int8, b::int8) ORDER BY a::int8, b::int8) FROM simhash_pairs('dep', 'fp', 3, 'id')) AS text_keys_same,
       (SELECT pg_typeof(a) FROM simhash_pairs('dep', 'fp', 3, 'id', NULL::text) LIMIT 1) AS key_type;
-- Every deprecated function says so in its comment, and only those do.
SELECT p.oid::regprocedure AS deprecated
  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg'
 WHERE obj_description(p.oid, 'pg_proc') ~ '(^|: )deprecated \('
 ORDER BY 1::text;
