-- Look-alikes with our exact names and signatures, and a type named simhash64, in a schema
-- ahead of ours on the search_path. Unqualified calls then mean the look-alikes: that is what
-- PostgreSQL's search_path is for, and the first query shows it. Everything simhash_pg does
-- for itself (the planner's rewrite, block columns, the helpers) still finds its own objects:
-- calls named with our schema answer like brute force, and the plans name our functions.
SET client_min_messages = warning;
CREATE EXTENSION simhash_pg;
SELECT make_docs('docs');
SELECT simhash_create_index('docs', 'fp');
SELECT make_docs('docs_plain');
SELECT simhash_create_index('docs_plain', 'fp', 3, covering => false);

CREATE SCHEMA look;
CREATE TYPE look.simhash64 AS (a int4, b int4);
CREATE FUNCTION look.hamming_distance(public.simhash64, public.simhash64) RETURNS int4
    LANGUAGE sql IMMUTABLE AS 'SELECT 0';
CREATE FUNCTION look.simhash_near(public.simhash64, public.simhash64, int4) RETURNS bool
    LANGUAGE sql IMMUTABLE AS 'SELECT true';
CREATE FUNCTION look.simhash_block(public.simhash64, int4, int4) RETURNS int8
    LANGUAGE sql IMMUTABLE AS 'SELECT 0::int8';
CREATE FUNCTION look._simhash_block_ball(public.simhash64, int4, int4, int4) RETURNS int8[]
    LANGUAGE sql IMMUTABLE AS 'SELECT ''{0}''::int8[]';
CREATE FUNCTION look._simhash_index_probe(regclass[], public.simhash64, int4) RETURNS tid[]
    LANGUAGE sql STABLE AS 'SELECT ''{}''::tid[]';
CREATE FUNCTION look.simhash_block_columns(regclass)
    RETURNS TABLE (column_name name, source_column name, block int4, blocks int4, index name, covering bool)
    LANGUAGE sql STABLE AS 'SELECT NULL::name, NULL::name, 0, 0, NULL::name, false WHERE false';
SET search_path = look, public;

SELECT count(*) AS lookalike_answers_every_row FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3);
SELECT * FROM public.lookups_agree('docs');
SELECT * FROM public.lookups_agree('docs_plain', 5);
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE public.simhash_near(fp, '0123456789abcdef'::public.simhash64, 3);
EXPLAIN (COSTS OFF) SELECT id FROM docs_plain WHERE public.simhash_near(fp, '0123456789abcdef'::public.simhash64, 3);
SELECT * FROM public.simhash_block_columns('docs');
SELECT * FROM public.helpers_agree('docs');
SELECT public.simhash_drop_index('docs', 'fp');
SELECT public.simhash_create_index('docs', 'fp');
SELECT * FROM public.lookups_agree('docs', 3);
SELECT * FROM public.ingest_counts('docs');
-- Rows of simhash64 values (simhash_features) and single ones are of our type.
SELECT feature, hash, pg_typeof(hash) AS type
  FROM public.simhash_features('near duplicate') ORDER BY feature;
SELECT pg_typeof(public.simhash('near duplicate')) AS simhash_type;

RESET search_path;
DROP SCHEMA look CASCADE;
DROP TABLE docs, docs_plain;
DROP EXTENSION simhash_pg;
