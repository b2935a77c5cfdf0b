-- Every SQL context a near-duplicate test can stand in, on every layout, against brute force.
--
-- The planner rewrites `simhash_near(fp, q, k)` (and `fp <-> q <= k`, `simhash_near_any` on
-- sets) into index lookups. That is equivalent only where the call filters the rows of a scan
-- of the table: in WHERE and JOIN ... ON, through AND and OR. Anywhere else (RETURNING, ON
-- CONFLICT, target lists, WITH CHECK, under NOT, ...) the call must run as written. 0.3.0 also
-- rewrote it in RETURNING, where the indexes cannot see the row just written: NULL instead of
-- true.
--
-- For each context below, each layout and each spelling, the statement runs twice, each time in
-- a subtransaction that is rolled back: once with the spelling, once with the brute-force test
-- `hamming_distance(fp, q) - k <= 0`, which nothing rewrites (`NOT (d > k)` would do too, but
-- PostgreSQL 17.11's COPY FROM ... WHERE fails on any negated comparison). The rows it returns,
-- the error it raises, and the table and log contents after it must be the same. The matrix
-- also counts where the rewrite fired (EXPLAIN VERBOSE names a probe, a block column or a
-- permuted key), so that the filter contexts prove the fast path is the one compared.
SET client_min_messages = warning;

-- Layouts: four covering blocks (the default), plain block columns (BitmapOr), permuted keys,
-- eight blocks (max_k => 7), a partitioned table (indexes on each partition), a family of keys
-- of 2 of 5 blocks alone (read by the probe only), and a set column.
-- Rows 1..300 are unrelated; 301..360 are copies of rows 1..12 with 1..5 bits flipped; 361 and
-- 362 have no fingerprint. The query is row 7's fingerprint.
CREATE FUNCTION ctx_fill(tbl regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format($f$
        INSERT INTO %1$s (id, body, fp)
        SELECT g, 'doc ' || g, hashtextextended('ctx' || g, 0)::simhash64 FROM generate_series(1, 300) g
        UNION ALL
        SELECT 300 + (b - 1) * 5 + d, 'copy ' || b || ' ' || d,
               (hashtextextended('ctx' || b, 0) # (((1::int8 << d) - 1) << (b * 3)))::simhash64
          FROM generate_series(1, 12) b, generate_series(1, 5) d
        UNION ALL
        SELECT g, NULL, NULL FROM generate_series(361, 362) g$f$, tbl);
END
$$;
CREATE TABLE ctx_cover (id int8 PRIMARY KEY, body text, fp simhash64, note text);
CREATE TABLE ctx_plain (LIKE ctx_cover INCLUDING ALL);
CREATE TABLE ctx_perm (LIKE ctx_cover INCLUDING ALL);
CREATE TABLE ctx_wide (LIKE ctx_cover INCLUDING ALL);
CREATE TABLE ctx_keyed (LIKE ctx_cover INCLUDING ALL);
CREATE TABLE ctx_part (id int8 PRIMARY KEY, body text, fp simhash64, note text) PARTITION BY RANGE (id);
CREATE TABLE ctx_part_low PARTITION OF ctx_part FOR VALUES FROM (MINVALUE) TO (200);
CREATE TABLE ctx_part_high PARTITION OF ctx_part FOR VALUES FROM (200) TO (MAXVALUE);
SELECT ctx_fill(t) FROM unnest('{ctx_cover,ctx_plain,ctx_perm,ctx_wide,ctx_keyed,ctx_part}'::regclass[]) t;
SELECT simhash_create_index('ctx_cover', 'fp', permuted => false);
SELECT simhash_create_index('ctx_plain', 'fp', covering => false);
SELECT simhash_create_index('ctx_perm', 'fp', permuted => true);
SELECT simhash_create_index('ctx_wide', 'fp', max_k => 7, permuted => false);
SELECT simhash_create_index('ctx_part', 'fp');
SELECT simhash_create_index('ctx_keyed', 'fp', blocks => 5, key_blocks => 2);

-- The set layout: four fingerprints of the body's character bigrams per row. Rows 301..360
-- are copies of rows 1..12 with one to five characters changed.
CREATE TABLE ctx_set (id int8 PRIMARY KEY, body text, fp simhash64, note text,
                      fps simhash64[] GENERATED ALWAYS AS
                          (simhash_set(body, 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')) STORED);
INSERT INTO ctx_set (id, body)
SELECT g, format('report %s on the harbour district budget, approved by the council in session %s', g, g * 7)
  FROM generate_series(1, 300) g
UNION ALL
SELECT 300 + (b - 1) * 5 + d,
       overlay(format('report %s on the harbour district budget, approved by the council in session %s', b, b * 7)
               PLACING repeat('#', d) FROM 20)
  FROM generate_series(1, 12) b, generate_series(1, 5) d
UNION ALL
SELECT g, NULL FROM generate_series(361, 362) g;
UPDATE ctx_set SET fp = simhash(body);
SELECT simhash_create_index('ctx_set', 'fps');
ANALYZE ctx_cover, ctx_plain, ctx_perm, ctx_wide, ctx_keyed, ctx_part, ctx_set;

-- Rows the contexts insert: near the query, far from it, without a fingerprint, near again.
CREATE TABLE ctx_new_fp AS
SELECT 100000 + n AS id, 'new ' || n AS body,
       CASE n WHEN 1 THEN q WHEN 2 THEN (q::int8 # 15)::simhash64 WHEN 4 THEN (q::int8 # 1)::simhash64 END AS fp
  FROM (SELECT hashtextextended('ctx7', 0)::simhash64 AS q) s, generate_series(1, 4) n;
CREATE TABLE ctx_new_set AS
SELECT 100000 + n AS id,
       CASE n WHEN 1 THEN (SELECT body FROM ctx_set WHERE id = 7)
              WHEN 2 THEN 'an unrelated sentence about something else entirely, nothing shared'
              WHEN 4 THEN (SELECT body FROM ctx_set WHERE id = 331) END AS body,
       NULL::simhash64 AS fp
  FROM generate_series(1, 4) n;
-- The rewrite counts below depend on plans, so the statistics stay as ANALYZE left them:
-- autovacuum re-analyzing a table mid-test (the rolled-back statements leave dead rows) gave
-- other plans on a busy machine (15 of 17 rewrites instead of 17).
DO $$
DECLARE
    t regclass;
BEGIN
    FOREACH t IN ARRAY '{ctx_cover,ctx_plain,ctx_perm,ctx_wide,ctx_keyed,ctx_part_low,ctx_part_high,ctx_set,ctx_new_fp,ctx_new_set}'::regclass[] LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', t);
    END LOOP;
END
$$;
-- What triggers and rules write.
CREATE TABLE ctx_log (id int8, what text);
CREATE FUNCTION ctx_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ctx_log VALUES (NEW.id, TG_NAME);
    RETURN NEW;
END
$$;

-- The layouts: table, column, query value, rows to insert.
CREATE TABLE ctx_layouts (layout text, tbl text, col text, q text, new text, gen text);
INSERT INTO ctx_layouts
SELECT l, 'ctx_' || l, 'fp', quote_literal(hashtextextended('ctx7', 0)::simhash64) || '::simhash64', 'ctx_new_fp', 'fp'
  FROM unnest('{cover,plain,perm,wide,keyed,part}'::text[]) l
UNION ALL
SELECT 'set', 'ctx_set', 'fps', quote_literal(fps) || '::simhash64[]', 'ctx_new_set',
       $$simhash_set(body, 4, '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}')$$
  FROM ctx_set WHERE id = 7;

-- The spellings (%1$s the column side, %2$s the query side, %3$s k), per kind of column, and
-- the brute force they are compared with.
CREATE TABLE ctx_spellings (kind text, spelling text, brute bool);
INSERT INTO ctx_spellings VALUES
    ('fp', 'hamming_distance(%1$s, %2$s) - %3$s <= 0', true),
    ('fp', 'simhash_near(%1$s, %2$s, %3$s)', false),
    ('fp', '%1$s <-> %2$s <= %3$s', false),
    ('fp', '%3$s + 1 > hamming_distance(%2$s, %1$s)', false),
    ('fps', 'simhash_set_distance(%1$s, %2$s) - %3$s <= 0', true),
    ('fps', 'simhash_near_any(%1$s, %2$s, %3$s)', false),
    ('fps', '%1$s <-> %2$s <= %3$s', false);

-- The contexts. In a statement, NEAR(a, b) or NEAR(a, b, k) stands for the spelling (k = 3
-- when not given); {t} is the table, {c} its column, {q} the query value, {new} the rows to
-- insert, {gen} the column's value computed from the row (a generated column cannot read
-- another). `setup` runs first in the same subtransaction; `role` runs both as an ordinary role.
CREATE TABLE ctx_cases (n serial, context text, setup text DEFAULT '', stmt text, role bool DEFAULT false);
INSERT INTO ctx_cases (context, setup, stmt, role) VALUES
-- Filters of a scan: the rewrite fires.
('SELECT WHERE', '', 'SELECT id FROM {t} WHERE NEAR({c}, {q})', false),
('SELECT WHERE, AND', '', 'SELECT id FROM {t} WHERE NEAR({c}, {q}) AND id > 5', false),
('SELECT WHERE, OR', '', 'SELECT id FROM {t} WHERE NEAR({c}, {q}) OR id = 3', false),
('SELECT JOIN ON', '', 'SELECT a.id, b.id FROM {t} a JOIN {t} b ON NEAR(b.{c}, a.{c}) AND a.id <> b.id WHERE a.id <= 20 OR a.id > 300', false),
('SELECT LEFT JOIN ON', '', 'SELECT p.n, d.id FROM (VALUES (1, {q}), (2, NULL)) p(n, q) LEFT JOIN {t} d ON NEAR(d.{c}, p.q)', false),
('EXISTS subquery', '', 'SELECT a.id FROM {t} a WHERE a.id < 40 AND EXISTS (SELECT FROM {t} b WHERE NEAR(b.{c}, a.{c}) AND b.id <> a.id)', false),
('NOT EXISTS subquery', '', 'SELECT a.id FROM {t} a WHERE a.id < 40 AND NOT EXISTS (SELECT FROM {t} b WHERE NEAR(b.{c}, a.{c}) AND b.id <> a.id)', false),
('scalar subquery', '', 'SELECT (SELECT count(*) FROM {t} WHERE NEAR({c}, {q}))', false),
('LATERAL', '', 'SELECT p.n, x.id FROM (VALUES (1, {q})) p(n, q), LATERAL (SELECT id FROM {t} d WHERE NEAR(d.{c}, p.q)) x', false),
('CTE', '', 'WITH n AS (SELECT id, {c} FROM {t}) SELECT id FROM n WHERE NEAR({c}, {q})', false),
('view', 'CREATE TEMP VIEW ctx_v AS SELECT id, {c} FROM {t} WHERE NEAR({c}, {q})', 'SELECT id FROM ctx_v', false),
('UPDATE WHERE', '', 'UPDATE {t} SET note = ''u'' WHERE NEAR({c}, {q}) RETURNING id', false),
('UPDATE FROM', '', 'UPDATE {t} d SET note = ''f'' FROM (SELECT {q} AS q) p WHERE NEAR(d.{c}, p.q) RETURNING d.id', false),
('DELETE WHERE', '', 'DELETE FROM {t} WHERE NEAR({c}, {q}) RETURNING id', false),
('DELETE USING', '', 'DELETE FROM {t} d USING (SELECT {q} AS q) p WHERE NEAR(d.{c}, p.q) RETURNING d.id', false),
('MERGE ON', '', 'MERGE INTO {t} d USING (SELECT {q} AS q) p ON NEAR(d.{c}, p.q) WHEN MATCHED THEN UPDATE SET note = ''m'' WHEN NOT MATCHED THEN INSERT (id, body) VALUES (999999, ''none'')', false),
('data-modifying CTE WHERE', '', 'WITH d AS (DELETE FROM {t} WHERE NEAR({c}, {q}) RETURNING id) SELECT id FROM d', false),
('prepared, generic plan', 'PREPARE ctx_p(int4) AS SELECT id FROM {t} WHERE NEAR({c}, {q}, $1); SET LOCAL plan_cache_mode = force_generic_plan', 'EXECUTE ctx_p(3)', false),
('prepared, custom plan', 'PREPARE ctx_p(int4) AS SELECT id FROM {t} WHERE NEAR({c}, {q}, $1); SET LOCAL plan_cache_mode = force_custom_plan', 'EXECUTE ctx_p(3)', false),
-- Values, and filters where NULL and false differ: the call runs as written.
('WHERE NOT', '', 'SELECT id FROM {t} WHERE NOT NEAR({c}, {q})', false),
('WHERE IS NOT TRUE', '', 'SELECT id FROM {t} WHERE NEAR({c}, {q}) IS NOT TRUE', false),
('target list', '', 'SELECT id, NEAR({c}, {q}) FROM {t}', false),
('CASE', '', 'SELECT id, CASE WHEN NEAR({c}, {q}) THEN ''dup'' ELSE ''new'' END FROM {t}', false),
('COALESCE', '', 'SELECT id, coalesce(NEAR({c}, {q}), false) FROM {t}', false),
('aggregate FILTER', '', 'SELECT count(*) FILTER (WHERE NEAR({c}, {q})), count(*) FROM {t}', false),
('window function', '', 'SELECT id, count(*) FILTER (WHERE NEAR({c}, {q})) OVER (ORDER BY id) FROM {t}', false),
('GROUP BY', '', 'SELECT NEAR({c}, {q}) AS near, count(*) FROM {t} GROUP BY 1', false),
('HAVING', '', 'SELECT id % 7 AS g FROM {t} GROUP BY 1 HAVING bool_or(NEAR({c}, {q}))', false),
('ORDER BY', '', 'SELECT id FROM {t} ORDER BY NEAR({c}, {q}) DESC NULLS LAST, id LIMIT 12', false),
('correlated subquery value', '', 'SELECT d.id, (SELECT NEAR(d.{c}, {q})) FROM {t} d', false),
('CTE value', '', 'WITH n AS MATERIALIZED (SELECT id, NEAR({c}, {q}) AS near FROM {t}) SELECT id FROM n WHERE near', false),
('view value', 'CREATE TEMP VIEW ctx_v AS SELECT id, NEAR({c}, {q}) AS near FROM {t}', 'SELECT id, near FROM ctx_v', false),
('INSERT RETURNING', '', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} RETURNING id, NEAR({c}, {q})', false),
('INSERT RETURNING CASE', '', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} RETURNING id, CASE WHEN NEAR({c}, {q}) THEN ''dup'' ELSE ''new'' END', false),
('UPDATE RETURNING', '', 'UPDATE {t} SET note = ''r'' WHERE id <= 20 OR id > 300 RETURNING id, NEAR({c}, {q})', false),
('UPDATE RETURNING new value', '', 'UPDATE {t} SET body = n.body, fp = n.fp FROM {new} n WHERE {t}.id = n.id - 99990 RETURNING {t}.id, NEAR({t}.{c}, {q})', false),
('UPDATE SET', '', 'UPDATE {t} SET note = NEAR({c}, {q})::text WHERE id <= 20 OR id > 300 RETURNING id, note', false),
('DELETE RETURNING', '', 'DELETE FROM {t} WHERE id <= 20 OR id > 300 RETURNING id, NEAR({c}, {q})', false),
('MERGE WHEN MATCHED AND', '', 'MERGE INTO {t} d USING (SELECT id FROM {t}) s ON d.id = s.id WHEN MATCHED AND NEAR(d.{c}, {q}) THEN UPDATE SET note = ''m''', false),
('MERGE WHEN NOT MATCHED AND', '', 'MERGE INTO {t} d USING {new} s ON d.id = s.id WHEN NOT MATCHED AND NEAR(s.{c}, {q}) THEN INSERT (id, body, fp) VALUES (s.id, s.body, s.fp)', false),
('MERGE UPDATE SET', '', 'MERGE INTO {t} d USING (SELECT id FROM {t}) s ON d.id = s.id WHEN MATCHED THEN UPDATE SET note = NEAR(d.{c}, {q})::text', false),
('ON CONFLICT SET and WHERE', '', 'INSERT INTO {t} AS d (id, body, fp) SELECT id, body, fp FROM {t} WHERE id <= 20 OR id > 300 UNION ALL SELECT id, body, fp FROM {new} ON CONFLICT (id) DO UPDATE SET note = CASE WHEN NEAR(d.{c}, {q}) THEN ''dup'' ELSE ''new'' END WHERE NEAR(d.{c}, {q}) OR d.id > 355 RETURNING id, note, NEAR({c}, {q})', false),
('data-modifying CTE RETURNING', '', 'WITH i AS (INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} RETURNING id, NEAR({c}, {q}) AS near) SELECT * FROM i', false),
('prepared RETURNING, generic plan', 'PREPARE ctx_p(int4) AS INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} RETURNING id, NEAR({c}, {q}, $1); SET LOCAL plan_cache_mode = force_generic_plan', 'EXECUTE ctx_p(3)', false),
('CHECK constraint, near row', 'ALTER TABLE {t} ADD CONSTRAINT ctx_ck CHECK (NEAR({c}, {q}) IS NOT TRUE) NOT VALID', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} WHERE id = 100001', false),
('CHECK constraint, far row', 'ALTER TABLE {t} ADD CONSTRAINT ctx_ck CHECK (NEAR({c}, {q}) IS NOT TRUE) NOT VALID', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} WHERE id = 100002', false),
('column default', 'ALTER TABLE {t} ALTER COLUMN note SET DEFAULT NEAR({q}, {q})::text', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} RETURNING id, note', false),
('generated column', 'ALTER TABLE {t} ADD COLUMN near bool GENERATED ALWAYS AS (NEAR({gen}, {q})) STORED', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} RETURNING id, near', false),
('index expression', 'CREATE INDEX ctx_ix ON {t} ((NEAR({c}, {q}))); SET LOCAL enable_seqscan = off', 'SELECT id FROM {t} WHERE NEAR({c}, {q}) IS TRUE', false),
('partial index predicate', 'CREATE INDEX ctx_ix ON {t} (id) WHERE NEAR({c}, {q}); SET LOCAL enable_seqscan = off', 'SELECT id FROM {t} WHERE NEAR({c}, {q}) AND id > 0', false),
('policy USING', 'ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; CREATE POLICY ctx_pol ON {t} USING (NEAR({c}, {q}))', 'SELECT id FROM {t}', true),
('policy WITH CHECK, near row', 'ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; CREATE POLICY ctx_pol ON {t} USING (true) WITH CHECK (NEAR({c}, {q}))', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} WHERE id = 100001 RETURNING id', true),
('policy WITH CHECK, far row', 'ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; CREATE POLICY ctx_pol ON {t} USING (true) WITH CHECK (NEAR({c}, {q}))', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new} WHERE id = 100002 RETURNING id', true),
('view WITH CHECK OPTION', 'CREATE TEMP VIEW ctx_v AS SELECT id, body, fp FROM {t} WHERE NEAR({c}, {q}) WITH CHECK OPTION', 'INSERT INTO ctx_v (id, body, fp) SELECT id, body, fp FROM {new} WHERE id = 100001 RETURNING id', false),
('trigger WHEN', 'CREATE TRIGGER ctx_tr AFTER UPDATE ON {t} FOR EACH ROW WHEN (NEAR(NEW.{c}, {q})) EXECUTE FUNCTION ctx_log_row()', 'UPDATE {t} SET note = ''t'' WHERE id <= 20 OR id > 300', false),
('rule action', 'CREATE RULE ctx_rule AS ON INSERT TO {t} DO ALSO INSERT INTO ctx_log SELECT NEW.id, NEAR(NEW.{c}, {q})::text', 'INSERT INTO {t} (id, body, fp) SELECT id, body, fp FROM {new}', false),
('rule WHERE', 'CREATE RULE ctx_rule AS ON UPDATE TO {t} WHERE NEAR(NEW.{c}, {q}) DO ALSO INSERT INTO ctx_log VALUES (NEW.id, ''rule'')', 'UPDATE {t} SET note = ''w'' WHERE id <= 20 OR id > 300', false),
('COPY FROM WHERE', format('COPY (SELECT id, body, fp FROM {new}) TO %L', '/tmp/simhash_pg_contexts.copy'),
 format('COPY {t} (id, body, fp) FROM %L WHERE NEAR({c}, {q})', '/tmp/simhash_pg_contexts.copy'), false);

-- Runs one case: its rows (sorted unless it orders them), its error, then the table's and the
-- log's contents; rolled back. `rewritten` says whether the plan holds our lookup.
CREATE FUNCTION ctx_run(setup text, stmt text, tbl text, as_role bool, OUT result text, OUT rewritten bool)
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    rows text[] := '{}';
    plan text := '';
BEGIN
    DEALLOCATE ALL;
    BEGIN
        BEGIN
            IF setup <> '' THEN
                EXECUTE setup;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION 'ctx: setup failed: %', SQLERRM;
        END;
        IF as_role THEN
            CREATE ROLE ctx_role;
            EXECUTE format('GRANT ALL ON %s, ctx_log, ctx_new_fp, ctx_new_set TO ctx_role', tbl);
            SET LOCAL ROLE ctx_role;
        END IF;
        BEGIN
            IF stmt !~ '^COPY' THEN
                FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || stmt LOOP
                    plan := plan || r::text || E'\n';
                END LOOP;
            END IF;
            rewritten := plan ~ '_simhash_index_probe|_simhash_permute|_block[0-9]+of[0-9]+ = ';
            IF stmt ~ 'RETURNING|^(SELECT|WITH|EXECUTE)' THEN
                FOR r IN EXECUTE stmt LOOP
                    rows := rows || r::text;
                END LOOP;
            ELSE
                EXECUTE stmt;
            END IF;
            IF stmt !~ 'ORDER BY' THEN
                rows := ARRAY(SELECT x FROM unnest(rows) x ORDER BY x);
            END IF;
            result := array_to_string(rows, ' ');
        EXCEPTION WHEN OTHERS THEN
            result := 'ERROR ' || SQLSTATE;
        END;
        RESET ROLE;
        EXECUTE format('SELECT %L || '' | '' || (SELECT md5(coalesce(string_agg(t::text, '';'' ORDER BY t::text), '''')) FROM %s t)
                               || '' | '' || (SELECT coalesce(string_agg(l::text, '';'' ORDER BY l::text), '''') FROM ctx_log l)',
                       result, tbl) INTO result;
        RAISE EXCEPTION 'ctx: roll back';
    EXCEPTION WHEN raise_exception THEN
        IF SQLERRM <> 'ctx: roll back' THEN
            RAISE;
        END IF;
    END;
END
$$;

-- A statement with NEAR(...) replaced by a spelling and the placeholders filled in.
CREATE FUNCTION ctx_sql(template text, spelling text, l ctx_layouts) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    m text[];
BEGIN
    LOOP
        m := regexp_match(template, 'NEAR\(([^,()]+), ([^,()]+)(, ([^,()]+))?\)');
        EXIT WHEN m IS NULL;
        template := regexp_replace(template, 'NEAR\(([^,()]+), ([^,()]+)(, ([^,()]+))?\)',
                                   replace(format('(' || spelling || ')', m[1], m[2], coalesce(m[4], '3')), '\', '\\'));
    END LOOP;
    RETURN replace(replace(replace(replace(replace(template, '{t}', l.tbl), '{c}', l.col), '{q}', l.q), '{new}', l.new),
                   '{gen}', l.gen);
END
$$;

-- The matrix: for each context, the runs whose answer equals brute force's, out of all
-- (layout x spelling), and the runs where the rewrite fired.
CREATE TEMP TABLE ctx_results AS
SELECT c.n, c.context, l.layout, s.spelling, b.result AS brute, x.result, x.rewritten
  FROM ctx_cases c
 CROSS JOIN ctx_layouts l
  JOIN ctx_spellings s ON s.kind = l.col AND NOT s.brute
  JOIN ctx_spellings bs ON bs.kind = l.col AND bs.brute
 CROSS JOIN LATERAL ctx_run(ctx_sql(c.setup, bs.spelling, l), ctx_sql(c.stmt, bs.spelling, l), l.tbl, c.role) b
 CROSS JOIN LATERAL ctx_run(ctx_sql(c.setup, s.spelling, l), ctx_sql(c.stmt, s.spelling, l), l.tbl, c.role) x;

SELECT context,
       format('%s of %s', count(*) FILTER (WHERE result = brute), count(*)) AS same_as_brute_force,
       format('%s of %s', count(*) FILTER (WHERE rewritten), count(*)) AS rewritten
  FROM ctx_results GROUP BY n, context ORDER BY n;

-- Any run that differs, with both answers (none expected).
SELECT context, layout, spelling, brute, result FROM ctx_results WHERE result IS DISTINCT FROM brute ORDER BY n, layout, spelling;

-- The matrix is not vacuous: the brute-force answers hold near rows, far rows and NULLs.
SELECT count(DISTINCT brute) AS distinct_answers,
       bool_and(brute !~ '^ERROR') FILTER (WHERE context = 'SELECT WHERE') AS where_runs,
       bool_or(brute ~ '\(100001,t\)') FILTER (WHERE context = 'INSERT RETURNING') AS returning_finds_the_new_copy
  FROM ctx_results;

DROP FUNCTION ctx_run, ctx_sql, ctx_fill, ctx_log_row;
DROP TABLE ctx_cover, ctx_plain, ctx_perm, ctx_wide, ctx_keyed, ctx_part, ctx_set, ctx_new_fp, ctx_new_set, ctx_log,
           ctx_layouts, ctx_spellings, ctx_cases;
