-- Privileges and search_path: every function works for an ordinary role, helpers change only
-- tables their caller owns, nothing runs with elevated rights, and objects a caller plants in
-- its search_path cannot change what the extension's functions do.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all

-- The extension's functions, for the catalog checks below.
CREATE VIEW ext_functions AS
SELECT p.* FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg';

-- No function of the extension is SECURITY DEFINER, and every one written in SQL or PL/pgSQL
-- pins its search_path (the C functions look nothing up by name).
SELECT p.oid::regprocedure AS function, p.prosecdef AS security_definer, l.lanname, p.proconfig
  FROM ext_functions p
  JOIN pg_language l ON l.oid = p.prolang
 WHERE p.prosecdef OR (l.lanname <> 'c' AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false))
 ORDER BY p.oid::regprocedure::text;

-- Volatility, strictness and parallel safety of every function, for review when they change.
SELECT p.oid::regprocedure AS function, p.provolatile AS volatility, p.proisstrict AS strict,
       p.proparallel AS parallel
  FROM ext_functions p
 ORDER BY p.oid::regprocedure::text;

-- An ordinary role, owning a schema and a table of its own.
CREATE ROLE simhash_ordinary;
CREATE ROLE simhash_other;
CREATE SCHEMA ordinary AUTHORIZATION simhash_ordinary;
CREATE TABLE public.not_theirs (id int8, fp simhash64);
INSERT INTO public.not_theirs SELECT g, simhash('row ' || g) FROM generate_series(1, 100) g;
-- The role may execute every function of the extension (EXECUTE is granted to PUBLIC).
SELECT count(*) AS functions, count(*) FILTER (WHERE NOT has_function_privilege('simhash_ordinary', p.oid, 'EXECUTE')) AS not_executable
  FROM ext_functions p;
SET ROLE simhash_ordinary;
CREATE TABLE ordinary.docs (id int8 PRIMARY KEY, body text NOT NULL,
                            fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO ordinary.docs (id, body)
SELECT g, 'news item ' || (g % 700) || ' about topic ' || (g % 13) || ' in region ' || (g % 7)
  FROM generate_series(1, 3000) g;
-- Every kind of function, as this role.
SELECT '0123456789abcdef'::simhash64 <-> 'fedcba9876543210' AS distance,
       hamming_distance('0123456789abcdef'::simhash64, '0123456789abcdee') AS hamming,
       simhash_similarity('0123456789abcdef', '0123456789abcdee') AS similarity,
       simhash_block('0123456789abcdef', 1, 4) AS block,
       simhash_weighted('{a,b}', '{1,2}') AS weighted,
       (SELECT count(*) FROM simhash_features('two words')) AS features;
SELECT simhash_cosine('0123456789abcdef', '0123456789abcdee') > 0.99 AS cosine,
       cardinality(_simhash_block_ball('0123456789abcdef', 0, 4, 1)) AS ball,
       simhash64_hash('0123456789abcdef') = simhash64_hash('0123456789abcdef') AS hash,
       '0123456789abcdef'::simhash64::bytea::simhash64::bit(64)::simhash64::int8::simhash64 AS casts,
       simhash('两个 words', '{"ngram": 2}') = simhash('两个 words', '{"ngram": 2}') AS options,
       cardinality(_simhash_pair_masks(3, 1000)) AS masks,
       (SELECT count(*) FROM _simhash_components('{a,b}', '{b,c}')) AS components,
       _simhash_block_column_name('fp', 1, 4) AS block_column_name;
SELECT simhash_create_index('ordinary.docs', 'fp');
SELECT count(*) AS block_columns FROM simhash_block_columns('ordinary.docs');
SELECT count(*) AS near FROM ordinary.docs WHERE simhash_near(fp, simhash('news item 5 about topic 5 in region 5'), 3);
SELECT cardinality(_simhash_index_probe(ARRAY(SELECT ('ordinary.' || quote_ident(index))::regclass FROM simhash_block_columns('ordinary.docs') ORDER BY block),
                                       simhash('news item 5 about topic 5 in region 5'), 3)) AS probe_tids;
SELECT count(*) AS nearest FROM simhash_nearest('ordinary.docs', 'fp', simhash('news item 5 about topic 5 in region 5'), 5);
SELECT count(*) AS pairs FROM simhash_pairs('ordinary.docs', 'fp', 3, 'id');
SELECT count(DISTINCT key) AS clusters FROM simhash_chained_groups('ordinary.docs', 'fp', 3, 'id');
CREATE TABLE ordinary.incoming (id int8, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO ordinary.incoming (id, body) VALUES (9001, 'news item 5 about topic 5 in region 5'), (9002, 'something else entirely new');
CREATE TABLE ordinary.kept (id int8, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO ordinary.kept SELECT id, body FROM ordinary.docs;
SELECT * FROM simhash_ingest('ordinary.kept', 'fp', 'ordinary.incoming');
-- ... but not on a table it does not own, which is left as it was.
SELECT try_sql($$SELECT simhash_create_index('public.not_theirs', 'fp')$$) AS create_not_owned,
       try_sql($$SELECT simhash_drop_index('public.not_theirs', 'fp')$$) AS drop_not_owned;
RESET ROLE;
SELECT count(*) AS not_theirs_indexes FROM pg_index WHERE indrelid = 'public.not_theirs'::regclass;

-- Column privileges are enough for the lookup: a role that may read id and fp (not body) uses
-- the covering expression indexes of the generated fp and gets the brute-force answer.
GRANT USAGE ON SCHEMA ordinary TO simhash_other;
SET ROLE simhash_ordinary;
GRANT SELECT (id, fp) ON ordinary.docs TO simhash_other;
RESET ROLE;
SET ROLE simhash_other;
PREPARE near_other(simhash64) AS SELECT id FROM ordinary.docs WHERE simhash_near(fp, $1, 3);
EXPLAIN (COSTS OFF) EXECUTE near_other('0123456789abcdef');
SELECT (SELECT array_agg(id ORDER BY id) FROM ordinary.docs WHERE simhash_near(fp, q.fp, 3))
     = (SELECT array_agg(id ORDER BY id) FROM ordinary.docs WHERE hamming_distance(fp, q.fp) + 0 <= 3) AS same_as_brute_force,
       count(*) AS queries
  FROM (SELECT fp FROM ordinary.docs WHERE id % 300 = 0) q
 GROUP BY 1;
SELECT try_sql($$SELECT body FROM ordinary.docs LIMIT 1$$) AS body_still_hidden;
DEALLOCATE near_other;
RESET ROLE;

-- search_path hijacking: the caller puts a schema of look-alikes first (functions the helpers
-- call, operators they use, a table named like a catalog). Answers stay those computed above
-- with a clean search_path, and the ownership check still holds.
CREATE SCHEMA evil AUTHORIZATION simhash_other;
SET ROLE simhash_other;
CREATE FUNCTION evil.quote_ident(text) RETURNS text LANGUAGE sql AS $$ SELECT 'hijacked' $$;
CREATE FUNCTION evil.format(text, text) RETURNS text LANGUAGE sql AS $$ SELECT 'SELECT 1' $$;
CREATE FUNCTION evil.pg_has_role(oid, text) RETURNS bool LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION evil.hamming_distance(simhash64, simhash64) RETURNS int4 LANGUAGE sql AS $$ SELECT 0 $$;
CREATE FUNCTION evil.simhash_block(simhash64, int4, int4) RETURNS int8 LANGUAGE sql AS $$ SELECT 0::int8 $$;
CREATE FUNCTION evil.int4le(int4, int4) RETURNS bool LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.<= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = evil.int4le);
CREATE TABLE evil.pg_class (oid oid, relkind "char", relowner oid);
SET search_path = evil, public;
SELECT try_sql($$SELECT simhash_create_index('public.not_theirs', 'fp')$$) AS create_not_owned;
SELECT count(*) AS near FROM ordinary.docs WHERE simhash_near(fp, simhash('news item 5 about topic 5 in region 5'), 3);
RESET ROLE;
SET ROLE simhash_ordinary;
SET search_path = evil, public;
SELECT count(*) AS nearest FROM simhash_nearest('ordinary.docs', 'fp', simhash('news item 5 about topic 5 in region 5'), 5);
SELECT count(*) AS pairs FROM simhash_pairs('ordinary.docs', 'fp', 3, 'id');
SELECT count(DISTINCT key) AS clusters FROM simhash_chained_groups('ordinary.docs', 'fp', 3, 'id');
SELECT simhash_drop_index('ordinary.docs', 'fp');
SELECT simhash_create_index('ordinary.docs', 'fp');
SELECT * FROM simhash_ingest('ordinary.kept', 'fp', 'ordinary.incoming');
RESET search_path;
RESET ROLE;

DROP SCHEMA evil CASCADE;
DROP SCHEMA ordinary CASCADE;
DROP TABLE public.not_theirs;
DROP ROLE simhash_ordinary;
DROP ROLE simhash_other;
DROP VIEW ext_functions;
