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
 WHERE p.prosecdef OR (l.lanname <> 'c' AND p.prokind <> 'p' AND NOT coalesce('search_path=pg_catalog, pg_temp' = ANY (p.proconfig), false))
 ORDER BY p.oid::regprocedure::text;
-- A procedure that commits cannot have a SET clause (PostgreSQL then forbids COMMIT): it sets
-- its search path itself, transaction-locally, first and after each COMMIT, and puts the
-- caller's back at the end.
SELECT p.oid::regprocedure AS procedure, p.prosecdef AS security_definer,
       (SELECT count(*) FROM regexp_matches(p.prosrc, 'set_config\(''search_path'', ''pg_catalog, pg_temp'', true\)', 'g')) AS sets_its_path,
       p.prosrc ~ 'set_config\(''search_path'', callers_path, true\)' AS restores_the_callers
  FROM ext_functions p WHERE p.prokind = 'p' ORDER BY 1;

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

-- Column privileges are enough for the lookup: a role that may read id and fp (not body) gets
-- the brute-force answer through the block indexes, as a BitmapOr: the probe's TID scan would
-- hand it row addresses, which PostgreSQL shows only to a role that may read the whole table
-- (issue 63).
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
-- Nor does the probe, called directly, give them ctids, which a plain query refuses.
SELECT try_sql($$SELECT ctid FROM ordinary.docs LIMIT 1$$) AS ctid_refused,
       try_sql(format('SELECT _simhash_index_probe(%L, %L, 3)',
                      (SELECT array_agg(c.oid::regclass::text ORDER BY c.relname) FROM pg_class c
                        WHERE c.relname LIKE 'docs\_fp\_perm%of4'), '0123456789abcdef')) AS probe_refused;
DEALLOCATE near_other;
RESET ROLE;
-- A plan made for a role that may read the table (a TID scan over the probe) is made again for
-- one that may read only columns, which gets the BitmapOr and the same rows, not an error.
SET ROLE simhash_ordinary;
SET plan_cache_mode = force_generic_plan;
PREPARE near_owner(simhash64) AS SELECT count(*) FROM ordinary.docs WHERE simhash_near(fp, $1, 3);
EXPLAIN (COSTS OFF) EXECUTE near_owner('0123456789abcdef');
SELECT fp AS q FROM ordinary.docs WHERE id = 600 \gset
EXECUTE near_owner(:'q');
SET ROLE simhash_other;
EXECUTE near_owner(:'q');
EXPLAIN (COSTS OFF) EXECUTE near_owner('0123456789abcdef');
RESET ROLE;
DEALLOCATE near_owner;
RESET plan_cache_mode;
-- simhash_pairs gives a role with column grants the same pairs on every path: in memory, and as
-- hash joins, which told rows with equal keys apart by tableoid and ctid (denied to it); there
-- rows are numbered instead, or need no tie-break where the key is unique.
SET ROLE simhash_ordinary;
CREATE TABLE ordinary.tk (k text, fp simhash64);
INSERT INTO ordinary.tk SELECT 'k' || (g % 20000), hashtextextended((g % 25000)::text, 7)::simhash64
  FROM generate_series(1, 50000) g;
CREATE TABLE ordinary.tu (k text PRIMARY KEY, fp simhash64);
INSERT INTO ordinary.tu SELECT 'u' || g, hashtextextended((g % 25000)::text, 7)::simhash64 FROM generate_series(1, 50000) g;
ANALYZE ordinary.tk, ordinary.tu;
GRANT SELECT (k, fp) ON ordinary.tk, ordinary.tu TO simhash_other;
SELECT count(*) AS owner_pairs_tk FROM simhash_pairs('ordinary.tk', 'fp', 3, 'k');
SET ROLE simhash_other;
SET client_min_messages = warning;
SELECT count(*) AS pairs_in_memory FROM simhash_pairs('ordinary.tk', 'fp', 3, 'k');
SET maintenance_work_mem = '1MB';
SELECT count(*) AS pairs_by_joins FROM simhash_pairs('ordinary.tk', 'fp', 3, 'k');
SELECT (SELECT count(*) FROM simhash_pairs('ordinary.tu', 'fp', 3, 'k'))
     = (SELECT count(*) FROM ordinary.tu x JOIN ordinary.tu y ON x.k < y.k AND x.fp = y.fp) AS unique_key_pairs_by_joins;
RESET maintenance_work_mem;
RESET client_min_messages;
RESET ROLE;
DROP TABLE ordinary.tk, ordinary.tu;

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
