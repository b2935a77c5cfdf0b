-- What the comments on the extension's functions claim that a machine can check, checked
-- against the functions themselves, so that a comment cannot drift from the code unnoticed.
CREATE TEMP VIEW commented AS
SELECT p.oid, p.oid::regprocedure AS function, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg';
-- Markings a comment names are the function's own (no rows).
SELECT function, upper(m[1]) AS claimed
FROM commented, regexp_matches(comment, '\m(immutable|stable|volatile|strict|parallel (?:safe|restricted|unsafe))\M', 'gi') m
JOIN pg_proc p ON true
WHERE p.oid = commented.oid
  AND NOT CASE upper(m[1])
      WHEN 'IMMUTABLE' THEN p.provolatile = 'i'
      WHEN 'STABLE' THEN p.provolatile = 's'
      WHEN 'VOLATILE' THEN p.provolatile = 'v'
      WHEN 'STRICT' THEN p.proisstrict
      WHEN 'PARALLEL SAFE' THEN p.proparallel = 's'
      WHEN 'PARALLEL RESTRICTED' THEN p.proparallel = 'r'
      ELSE p.proparallel = 'u' END;
-- Defaults a comment states for an argument, as "name (default value)" or "name => value by
-- default", are the argument's own (no rows).
SELECT function, m[1] AS argument, m[2] AS claimed, d[1] AS actual
FROM commented,
     regexp_matches(comment, '\m(\w+) (?:\(default ([^)]+)\)|=> (\S+) by default)', 'g') m0,
     LATERAL (SELECT ARRAY[m0[1], coalesce(m0[2], m0[3])]) AS c(m),
     LATERAL (SELECT regexp_match(pg_get_function_arguments(commented.oid),
                                  '\m' || m[1] || ' [^,]* DEFAULT ([^,]+)')) AS x(d)
WHERE m[1] = ANY ((SELECT proargnames FROM pg_proc WHERE oid = commented.oid)::text[])
  AND (d IS NULL OR btrim(d[1]) NOT LIKE '%' || btrim(m[2], '''') || '%');
-- The default pipeline that the comments of simhash(text) and simhash_set(text, int4) describe:
-- each setting a comment names gives the same fingerprints as no options on these texts, and
-- a setting it does not name would change them (so the phrase list below stays discriminating).
CREATE TEMP TABLE claim (phrase text, options jsonb);
INSERT INTO claim VALUES
    ('TF-IDF weights', '{"weighting": "tfidf"}'), ('TF weights', '{"weighting": "tf"}'),
    ('binary weights', '{"weighting": "binary"}'), ('case folding', '{"case_fold": true}'),
    ('jieba/UAX #29 words', '{"tokenizer": "auto", "ngram": 1}'),
    ('word shingles', '{"tokenizer": "auto", "ngram": 3}'), ('characters', '{"tokenizer": "chars"}');
CREATE TEMP TABLE sample (body text);
INSERT INTO sample VALUES
    ('The quick brown fox jumps over the lazy dog, and the dog sleeps on.'),
    ('Near-duplicate detection finds copies that differ in a few WORDS; SimHash makes it cheap.'),
    ('今天天气很好，我们一起去公园散步，然后在湖边喝茶聊天。'), ('数据工程师需要在数据库里找出近似重复的文本。');
SELECT c.function, claim.phrase,
       bool_and(simhash(s.body) = simhash(s.body, claim.options)) AS same_as_default
FROM commented c, claim, sample s
WHERE c.function IN ('simhash(text)'::regprocedure, 'simhash_set(text, int4)'::regprocedure)
  AND position(lower(claim.phrase) IN lower(c.comment)) > 0
GROUP BY 1, 2 ORDER BY 1::text, 2;
-- Every phrase of the list changes the fingerprints when it is not the default (so a wrong
-- claim would show above as false).
SELECT phrase, bool_and(simhash(body) = simhash(body, options)) AS is_default
FROM claim, sample GROUP BY 1 ORDER BY 1;
