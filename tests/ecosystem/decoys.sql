-- Look-alikes of every function simhash_pg has, as other extensions and users make them, for
-- the run of the whole SQL regression suite in stage 6 of .ci/test: in public, the extension's
-- own schema in the suite (where pgvector's hamming_distance(bit, bit) lands, and where 0.2.0's
-- lookups by name broke), and in decoy_last, after it on the search_path. The suite's answers
-- must not change. A decoy that is ever called raises an error naming itself.
--
-- Each name gets one look-alike with simhash64 replaced by bit and one argument more than our
-- widest overload of that name: present wherever a lookup by name alone would trip over it,
-- yet unable to capture a call written for ours, whatever its argument types.
-- hamming_distance also gets pgvector's own signature, (bit, bit), in decoy_last.
--
-- Not here: look-alikes in a schema ahead of ours. PostgreSQL creates objects in the first
-- schema of the search_path, so such a schema would receive every table the suite creates and
-- change how its output names them. tests/ecosystem/sql/lookalikes.sql puts look-alikes with
-- our exact signatures, and a type named simhash64, ahead of ours and checks every function
-- there; tests/pg_regress/sql/security.sql does the same for the helpers' own calls.
--
-- The names come from the installed extension's dependency records, so a new function gets its
-- decoys without an edit here. Run with simhash_pg installed; the extension may be dropped
-- afterwards (the decoys use built-in types only).
CREATE SCHEMA decoy_last;

DO $$
DECLARE
    f record;
    args text;
    s text;
BEGIN
    FOR f IN
        SELECT p.proname,
               -- simhash64 becomes bit (a set, simhash64[], bit[]); pseudo-types (cstring, internal)
               -- text, as PL/pgSQL takes no pseudo-types.
               array(SELECT CASE WHEN t = 'simhash64'::regtype THEN 'bit'
                                 WHEN t = 'simhash64[]'::regtype THEN 'bit[]'
                                 WHEN (SELECT typtype FROM pg_type WHERE oid = t) = 'p' THEN 'text'
                                 ELSE format_type(t, NULL) END
                       FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, n) ORDER BY n) AS types,
               max(p.pronargs) OVER (PARTITION BY p.proname) AS widest,
               row_number() OVER (PARTITION BY p.proname ORDER BY p.pronargs DESC, p.oid) AS nth
          FROM pg_proc p
          JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
          JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg'
    LOOP
        CONTINUE WHEN f.nth > 1; -- one per name: the widest overload, one argument more
        args := array_to_string(f.types || 'bit'::text, ', ');
        FOREACH s IN ARRAY ARRAY['public', 'decoy_last'] LOOP
            EXECUTE format('CREATE FUNCTION %1$I.%2$I(%3$s) RETURNS int4 LANGUAGE plpgsql AS %4$L',
                s, f.proname, args,
                format('BEGIN RAISE EXCEPTION %L; END', format('%s.%s(%s) was called', s, f.proname, args)));
        END LOOP;
    END LOOP;
END
$$;

-- pgvector's signature, after ours, and an operator named like ours on bit.
CREATE FUNCTION decoy_last.hamming_distance(bit, bit) RETURNS float8 LANGUAGE plpgsql
    AS $$BEGIN RAISE EXCEPTION 'decoy_last.hamming_distance(bit, bit) was called'; END$$;
CREATE OPERATOR decoy_last.<-> (LEFTARG = bit, RIGHTARG = bit, FUNCTION = decoy_last.hamming_distance);

SELECT count(*) AS decoys
  FROM pg_proc
 WHERE pronamespace = 'decoy_last'::regnamespace OR prosrc LIKE '%public.%was called%';
