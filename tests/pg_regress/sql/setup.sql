-- Runs first, right after pg_regress (re)creates the database.
CREATE EXTENSION simhash_pg;
-- A helper for the error tables of the other tests: runs a statement and returns 'ok' or
-- 'SQLSTATE: message (detail)', so that many bad inputs fit in one readable result.
CREATE FUNCTION public.try_sql(stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE stmt;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || SQLERRM || coalesce(' (' || nullif(detail, '') || ')', '');
END
$$;
