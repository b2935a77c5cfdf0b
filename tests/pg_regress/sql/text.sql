-- simhash(text): golden vectors of pipeline version 1 (the same as src/core/tests/golden.rs).
-- A fingerprint stored today must equal the one computed after any upgrade.
\set ECHO none
\i sql/include/try_sql.psql
\set ECHO all
SELECT t, o, simhash(t, o::jsonb) AS fp, simhash(t, o::jsonb)::text = g AS golden
FROM (VALUES
    ('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。', '{}', '46b58b86d69c7ead'),
    ('1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。', '{}', '74da053de8485330'),
    ('PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.', '{}', 'f6778d820191359a'),
    ('The quick brown fox jumps over the lazy dog.', '{}', '860c8692885a92e3'),
    ('Straße ＡＢＣ café naïve ﬁle Ⅻ', '{}', '4c825094c0277200'),
    ('我们在北京大学学习 PostgreSQL 数据库, it''s the simhash way! 2024年', '{}', 'd929ee2b0d6bb402'),
    ('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。', '{"weighting":"tf"}', '44bdcf96c68dfebd'),
    ('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。', '{"top_k":5}', 'c6f58384f5dc568d'),
    ('The quick brown fox jumps over the lazy dog.', '{"ngram":3,"weighting":"binary"}', '1ddfc1db808db829'),
    ('The quick brown fox jumps over the lazy dog.', '{"tokenizer":"chars","ngram":3}', '49bf484ec6fd8e9b'),
    ('我们在北京大学学习 PostgreSQL 数据库, it''s the simhash way! 2024年', '{"tokenizer":"jieba","case_fold":false,"seed":42}', '64d036d31b20b1fd'),
    ('我们在北京大学学习 PostgreSQL 数据库, it''s the simhash way! 2024年', '{"tokenizer":"words","ngram":2}', 'e1350bc5640d1321')
) v(t, o, g);

-- simhash(body) is simhash(body, '{}'), and '{"version": 1}' names the same pipeline.
SELECT simhash('The quick brown fox') = simhash('The quick brown fox', '{}') AS same_default,
       simhash('The quick brown fox') = simhash('The quick brown fox', '{"version": 1}') AS same_version;

-- Near-copies are near, different texts are far.
SELECT simhash('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。')
       <-> simhash('今天纽约的天气真好啊！京华大酒店的张尧经理吃了一只北京烤鸭') AS punctuation_only,
       simhash('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。')
       <-> simhash('今天纽约的天气不错，京华大酒店的张尧经理吃了一只北京烤鸭。') AS one_word_changed,
       simhash('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。')
       <-> simhash('PostgreSQL is a powerful, open source object-relational database system.') AS unrelated;
SELECT simhash('The Quick Brown Fox!') = simhash('the quick brown fox') AS case_and_punctuation_ignored,
       simhash('ＡＢＣ　ｄｅｆ') = simhash('abc def') AS full_width_is_nfkc_equal;

-- What went into a fingerprint: distinct features, weights, hashes, in order of first occurrence.
SELECT * FROM simhash_features('The quick brown fox jumps over the lazy dog; the dog sleeps.');
SELECT * FROM simhash_features('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。');
SELECT * FROM simhash_features('The quick brown fox jumps over the lazy dog', '{"ngram": 2, "weighting": "tf"}');
SELECT * FROM simhash_features('北京烤鸭 北京烤鸭 北京 天气 天气 天气', '{"top_k": 2}');
-- The features reproduce the fingerprint through simhash_weighted.
SELECT bool_and(simhash_weighted(f, w) = simhash(t, o::jsonb)) AS features_reproduce
FROM (VALUES
        ('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。', '{}'),
        ('The quick brown fox jumps over the lazy dog; the dog sleeps.', '{"ngram": 2}'),
        ('我们在北京大学学习 PostgreSQL 数据库', '{"weighting": "binary", "tokenizer": "chars", "ngram": 2}')
     ) v(t, o),
     LATERAL (SELECT array_agg(feature) AS f, array_agg(weight) AS w FROM simhash_features(t, o::jsonb)) x;

-- Texts without features get 0000000000000000 (all 64 sums are zero); count features to filter them.
SELECT t, simhash(t) AS fp, (SELECT count(*) FROM simhash_features(t)) AS features
FROM (VALUES (''), ('   '), ('!!! ... ，。'), ('the of and'), ('的 了 是')) v(t);
SELECT simhash(NULL) IS NULL AS null_text, simhash('x', NULL) IS NULL AS null_options;

-- simhash_weighted: caller's features and weights (e.g. keyword levels 1-5).
SELECT simhash_weighted(ARRAY['北京烤鸭', '天气', '纽约'], ARRAY[5, 1, 3]) AS levels,
       simhash_weighted(ARRAY['x'], ARRAY[1]) = simhash('x', '{"weighting":"tf"}') AS one_feature,
       simhash_weighted(ARRAY[]::text[], ARRAY[]::float8[]) AS empty;

-- Bad options and arrays: SQLSTATE 22023 naming the key or element.
SELECT o AS options, try_sql(format('SELECT simhash(%L, %L::jsonb)', 'some text', o)) AS result
FROM (VALUES
    ('{"ngramm": 2}'), ('{"ngram": 0}'), ('{"ngram": 9}'), ('{"ngram": "2"}'), ('{"ngram": 2.5}'),
    ('{"tokenizer": "spaces"}'), ('{"weighting": "bm25"}'), ('{"top_k": 0}'), ('{"top_k": -1}'),
    ('{"case_fold": "yes"}'), ('{"seed": -1}'), ('{"seed": 18446744073709551616}'), ('{"version": 2}'),
    ('[1, 2]'), ('"tf"'), ('{"top_k": null}'), ('{"seed": 18446744073709551615}')
) v(o);
SELECT q AS call, try_sql(q) AS result
FROM (VALUES
    ('SELECT simhash_weighted(ARRAY[''a'', ''b''], ARRAY[1.0])'),
    ('SELECT simhash_weighted(ARRAY[''a'', NULL], ARRAY[1.0, 2.0])'),
    ('SELECT simhash_weighted(ARRAY[''a'', ''b''], ARRAY[1.0, NULL])'),
    ('SELECT simhash_weighted(ARRAY[''a''], ARRAY[''NaN''::float8])'),
    ('SELECT simhash_weighted(ARRAY[''a'', ''b''], ARRAY[1, ''Infinity''::float8])'),
    ('SELECT simhash_weighted(ARRAY[''a''], ARRAY[''-Infinity''::float8])'),
    ('SELECT simhash_features(''x'', ''{"bad": 1}'')')
) v(q);

-- A 64 MB text is cancelled by statement_timeout, and the session goes on.
SET statement_timeout = '200ms';
SELECT simhash(repeat('数据库系统 database 中文 ', 2000000));
RESET statement_timeout;
SELECT 'still alive' AS after_cancel;

-- {"markup": "html"}: a page is read as the text a reader sees (golden vectors of
-- src/core/tests/golden.rs). Tags, comments, the head's script and style go; entities are
-- decoded; block elements break words apart, inline ones join them.
SELECT simhash_extract('<!DOCTYPE html><html><head><title>PostgreSQL &amp; SimHash</title><style>body{margin:0}</style>'
    || '<script>var nav = ''<a href="/">Home</a>'';</script></head><body><nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>'
    || '<!-- main --><article><h1>Near&#45;duplicates</h1><p>PostgreSQL is a <b>powerful</b>, open source object-relational database '
    || 'system with over 35 years of active development.<p>The quick brown fox jumps over the lazy dog.</article></body></html>',
    '{"markup": "html"}') AS visible;
SELECT o, simhash(t, o::jsonb) AS fp, simhash(t, o::jsonb)::text = g AS golden
FROM (VALUES
    ('<!DOCTYPE html><html><head><title>PostgreSQL &amp; SimHash</title><style>body{margin:0}</style>'
     || '<script>var nav = ''<a href="/">Home</a>'';</script></head><body><nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>'
     || '<!-- main --><article><h1>Near&#45;duplicates</h1><p>PostgreSQL is a <b>powerful</b>, open source object-relational database '
     || 'system with over 35 years of active development.<p>The quick brown fox jumps over the lazy dog.</article></body></html>',
     '{"markup":"html"}', '9634c78311d2b282'),
    ('<html><body><div class="nav">首页 &gt; 新闻</div><p>今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。</p>'
     || '<p>1998年新年讲话：迈向充满希望的新世纪&#12290;</p><script>document.write("广告")</script></body></html>',
     '{"markup":"html","tokenizer":"chars","ngram":2,"weighting":"tf"}', 'f32801633b205a0e'),
    ('The quick brown fox jumps over the lazy dog.', '{"markup":"html"}', '860c8692885a92e3')
) v(t, o, g);
-- The same words in another template are one fingerprint; raw, the markup decides.
SELECT simhash(a, '{"markup": "html"}') = simhash(b, '{"markup": "html"}') AS same_visible_text,
       simhash(a) <-> simhash(b) AS raw_distance
FROM (VALUES ('<div class="post"><p>Fish &amp; chips are <em>good</em>.</p></div>',
              '<table><tr><td style="x"><span>Fish & chips are <i>good</i>.</span></td></tr></table><script>track()</script>')) v(a, b);
-- Broken markup never fails; plain text reads as it is; the option is checked.
SELECT simhash_extract('<p>unclosed <b>bold <script>var x', '{"markup": "html"}') AS broken,
       simhash_extract('a < b && c > d', '{"markup": "html"}') AS plain,
       simhash_extract('<b>kept</b>', '{}') AS without_markup;
SELECT try_sql($$SELECT simhash('x', '{"markup": "xml"}')$$) AS bad_markup;

-- The exact check of a near pair: Jaccard and containment of the feature sets, read as simhash
-- reads the texts (stopwords out, case folded; word 3-shingles with ngram 3; pages by their
-- visible text with markup).
SELECT simhash_jaccard('Red cat sat, red cat!', 'red CAT ran') AS words,
       simhash_containment('Red cat sat', 'red CAT sat on the mat today') AS contained,
       simhash_jaccard('x y z', 'x y z w', '{"ngram": 2}') AS bigrams,
       simhash_jaccard('<div><p>Fish &amp; chips</p></div>', '<td>Fish & chips</td><script>x()</script>', '{"markup": "html"}') AS same_visible_text,
       simhash_jaccard('', '') AS both_empty, simhash_jaccard('', 'words') AS one_empty,
       simhash_jaccard('今天纽约的天气真好啊', '今天纽约的天气不错', '{"tokenizer": "chars", "ngram": 2}') AS chinese_bigrams;
SELECT simhash_jaccard('a', NULL) IS NULL AS strict,
       try_sql($$SELECT simhash_jaccard('a', 'b', '{"ngram": 0}')$$) AS bad_option;
-- Feature sets computed once per row give the same answers.
SELECT simhash_jaccard(simhash_feature_set('Red cat sat, red cat!'), simhash_feature_set('red CAT ran')) AS words,
       simhash_containment(simhash_feature_set('Red cat sat'), simhash_feature_set('red CAT sat on the mat today')) AS contained,
       cardinality(simhash_feature_set('Red cat sat, red cat!')) AS distinct_features,
       simhash_jaccard('{3,1,2,2}'::int8[], '{1,2,3}'::int8[]) AS unsorted_input,
       try_sql($$SELECT simhash_jaccard('{1,NULL}'::int8[], '{1}'::int8[])$$) AS null_element;
-- {"markup": "html-main"}: the main content only (golden vectors of src/core/tests/golden.rs);
-- the same article under two sites' templates reads the same.
SELECT simhash('<!DOCTYPE html><html><head><title>PostgreSQL &amp; SimHash</title><style>body{margin:0}</style>'
    || '<script>var nav = ''<a href="/">Home</a>'';</script></head><body><nav><a href="/">Home</a> | <a href="/docs">Docs</a></nav>'
    || '<!-- main --><article><h1>Near&#45;duplicates</h1><p>PostgreSQL is a <b>powerful</b>, open source object-relational database '
    || 'system with over 35 years of active development.<p>The quick brown fox jumps over the lazy dog.</article></body></html>',
    '{"markup": "html-main"}')::text = '9626879201d09283' AS golden_main;
SELECT simhash_extract(a, '{"markup": "html-main"}') AS main_a, simhash_extract(b, '{"markup": "html-main"}') AS main_b,
       simhash(a, '{"markup": "html-main"}') = simhash(b, '{"markup": "html-main"}') AS same_main,
       simhash(a, '{"markup": "html"}') <-> simhash(b, '{"markup": "html"}') AS visible_distance
FROM (VALUES ('<body><div class="related" role="navigation">index modules next</div><div class="body" role="main">'
              || '<h1>json</h1><p>Encode and decode JSON.</p></div><div class="footer">© Copyright PSF</div></body>',
              '<body><div class="navheader"><table><tr><td>Prev</td><td>Up</td><td>Next</td></tr></table></div>'
              || '<h1>json</h1><p>Encode and decode JSON.</p><div class="navfooter">Home</div></body>')) v(a, b);
SELECT simhash_extract('<div class="menu">only a frame</div>', '{"markup": "html-main"}') = '' AS frame_only_is_empty,
       simhash('<div class="menu">only a frame</div>', '{"markup": "html-main"}') AS empty_fingerprint;
