"""The package against the server: the same fingerprints on real texts for every option set the docs
name, and the psycopg, asyncpg and SQLAlchemy adapters. Needs SIMHASH_TEST_DSN (a database with
the extension, which the tests may write to) and, for the corpora, SIMHASH_TEST_CORPORA (a folder
with spam-assassin/ and 199801.txt, as python/test.sh fetches them)."""
import asyncio
import glob
import os
import random
import re

import pytest

import simhash_pg
from simhash_pg import Fingerprint

DSN = os.environ.get("SIMHASH_TEST_DSN")
CORPORA = os.environ.get("SIMHASH_TEST_CORPORA")
pytestmark = pytest.mark.skipif(not DSN, reason="SIMHASH_TEST_DSN is not set")

# Every option set README.md and docs/text.md name, and one of each option's other values.
OPTION_SETS = [
    None,
    {"weighting": "tf"},
    {"weighting": "binary"},
    {"ngram": 2},
    {"ngram": 2, "weighting": "tf"},
    {"ngram": 3, "weighting": "tf"},
    {"tokenizer": "chars", "ngram": 2, "weighting": "tf"},
    {"tokenizer": "chars", "ngram": 3},
    {"tokenizer": "chars", "ngram": 3, "weighting": "tf"},
    {"tokenizer": "jieba"},
    {"tokenizer": "words"},
    {"top_k": 20},
    {"case_fold": False},
    {"seed": 18446744073709551615},
    {"markup": "html"},
    {"markup": "html", "ngram": 2},
    {"markup": "html-main"},
]


def texts():
    """About 3,000 real texts: English mail bodies (many of them HTML), Chinese news paragraphs."""
    if not CORPORA:
        pytest.skip("SIMHASH_TEST_CORPORA is not set")
    out = []
    for path in sorted(glob.glob(os.path.join(CORPORA, "spam-assassin", "*", "*.txt")))[:1500]:
        raw = open(path, "rb").read().decode("utf-8", errors="replace")
        out.append(raw.split("\n\n", 1)[1] if "\n\n" in raw else raw)
    with open(os.path.join(CORPORA, "199801.txt"), encoding="utf-8") as f:
        for line in f:
            words = [re.sub(r"/[A-Za-z]+\]?[a-z]*$", "", w).lstrip("[") for w in line.split()]
            if words:
                out.append("".join(words))
            if len(out) >= 3000:
                break
    # PostgreSQL text holds no NUL character.
    return [t.replace("\x00", "") for t in out]


@pytest.fixture(scope="module")
def conn():
    psycopg = pytest.importorskip("psycopg")
    import simhash_pg.psycopg

    with psycopg.connect(DSN, autocommit=True) as c:
        simhash_pg.psycopg.register(c)
        yield c


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "default" if o is None else str(o))
def test_the_same_fingerprints_as_the_server(conn, options):
    import json

    body = texts()
    opts = "{}" if options is None else json.dumps(options)
    server = [r[0] for r in conn.execute("SELECT simhash(t, %s::jsonb) FROM unnest(%s::text[]) WITH ORDINALITY u(t, n) ORDER BY n",
                                         (opts, body)).fetchall()]
    mine = simhash_pg.simhash_many(body, options)
    differ = [i for i, (a, b) in enumerate(zip(server, mine)) if a != b]
    assert not differ, f"{len(differ)} of {len(body)} differ, first: text {differ[0]}"
    assert len(server) == len(body) >= 3000


@pytest.mark.parametrize("options", [None, {"tokenizer": "chars", "ngram": 3}, {"tokenizer": "chars", "ngram": 2, "weighting": "tf"}])
def test_the_same_sets_features_and_text_as_the_server(conn, options):
    import json

    body = random.Random(5).sample(texts(), 300)
    opts = "{}" if options is None else json.dumps(options)
    sets = [r[0] for r in conn.execute("SELECT simhash_set(t, 4, %s::jsonb) FROM unnest(%s::text[]) WITH ORDINALITY u(t, n) ORDER BY n",
                                       (opts, body)).fetchall()]
    assert sets == [simhash_pg.simhash_set(t, 4, options) for t in body]
    for t in body[:20]:
        rows = conn.execute("SELECT feature, weight, hash FROM simhash_features(%s, %s::jsonb)", (t, opts)).fetchall()
        assert [(f, w, int(h)) for f, w, h in rows] == [(f, w, int(h)) for f, w, h in simhash_pg.simhash_features(t, options)]
        assert conn.execute("SELECT simhash_extract(%s, '{\"markup\": \"html\"}')", (t,)).fetchone()[0] \
            == simhash_pg.simhash_extract(t, {"markup": "html"})
        other = body[-1]
        assert conn.execute("SELECT simhash_jaccard(%s, %s, %s::jsonb)", (t, other, opts)).fetchone()[0] \
            == simhash_pg.simhash_jaccard(t, other, options)


def test_bad_options_have_the_servers_message(conn):
    import psycopg

    for options in ['{"ngramm": 3}', '{"ngram": 9}', '{"tokenizer": "bpe"}', '[1]', '{"ngram": 2.0}', '{"seed": 1000.0}']:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as server:
            conn.execute("SELECT simhash('x', %s::jsonb)", (options,))
        with pytest.raises(ValueError) as mine:
            simhash_pg.simhash("x", options)
        assert str(mine.value) == server.value.diag.message_primary
    # Numbers as jsonb stores them: 1e3 and 1.0e3 are the integer 1000.
    for options in ['{"seed": 1e3}', '{"seed": 1.0e3}', '{"ngram": 3, "ngram": 2}']:
        assert conn.execute("SELECT simhash('some words here', %s::jsonb)", (options,)).fetchone()[0] \
            == simhash_pg.simhash("some words here", options)


def test_psycopg_text_binary_arrays_and_copy(conn):
    fps = [Fingerprint(v) for v in (0, 1, -1, 0x0123456789ABCDEF, 1 << 63)]
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        assert cur.execute("SELECT %s::simhash64", (fps[3],)).fetchone()[0] == fps[3]
        assert cur.execute("SELECT %s", (fps[4],)).fetchone()[0] == fps[4]  # typed by the dumper
        assert cur.execute("SELECT %s::simhash64[]", (fps,)).fetchone()[0] == fps
        assert cur.execute("SELECT '0123456789abcdef'::simhash64::int8").fetchone()[0] == int(fps[3])
    conn.execute("DROP TABLE IF EXISTS py_copy")
    conn.execute("CREATE TABLE py_copy (id int8, fp simhash64, fps simhash64[])")
    with conn.cursor() as cur:
        with cur.copy("COPY py_copy (id, fp, fps) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "simhash64", "simhash64[]"])
            for i, fp in enumerate(fps):
                copy.write_row((i, fp, [fp, fps[0]]))
        with cur.copy("COPY py_copy (id, fp, fps) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "simhash64", "simhash64[]"])
            back = list(copy.rows())
    assert back == [(i, fp, [fp, fps[0]]) for i, fp in enumerate(fps)]
    assert conn.execute("SELECT count(*) FROM py_copy WHERE fp = ANY(%s)", (fps,)).fetchone()[0] == len(fps)
    conn.execute("DROP TABLE py_copy")


def test_asyncpg_codec_and_binary_copy():
    asyncpg = pytest.importorskip("asyncpg")
    import simhash_pg.asyncpg

    async def run():
        conn = await asyncpg.connect(_asyncpg_dsn())
        try:
            await simhash_pg.asyncpg.register(conn)
            fps = [Fingerprint(v) for v in (0, -1, 0x0123456789ABCDEF)]
            assert await conn.fetchval("SELECT $1::simhash64", fps[2]) == fps[2]
            assert await conn.fetchval("SELECT $1::simhash64[]", fps) == fps
            assert await conn.fetchval("SELECT $1::simhash64::text", "0123456789abcdef") == "0123456789abcdef"
            await conn.execute("DROP TABLE IF EXISTS py_async; CREATE TABLE py_async (id int8, fp simhash64)")
            await conn.copy_records_to_table("py_async", records=[(i, fp) for i, fp in enumerate(fps)])
            rows = await conn.fetch("SELECT id, fp FROM py_async ORDER BY id")
            assert [(r["id"], r["fp"]) for r in rows] == list(enumerate(fps))
            await conn.execute("DROP TABLE py_async")
        finally:
            await conn.close()

    asyncio.run(run())


def test_psycopg_async_connection():
    psycopg = pytest.importorskip("psycopg")
    import simhash_pg.psycopg

    async def run():
        async with await psycopg.AsyncConnection.connect(DSN) as aconn:
            info = await simhash_pg.psycopg.register_async(aconn)
            # The catalog query leaves no transaction open.
            assert aconn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            fps = [Fingerprint(v) for v in (0, -1, 0x0123456789ABCDEF)]
            for binary in (False, True):
                cur = aconn.cursor(binary=binary)
                await cur.execute("SELECT %s::simhash64, %s::simhash64[], %s", (fps[2], fps, fps[1]))
                assert await cur.fetchone() == (fps[2], fps, fps[1])
            await aconn.rollback()
            return info

    info = asyncio.run(run())
    assert info.name == "simhash64"


def _asyncpg_dsn():
    # asyncpg takes keyword DSNs poorly: turn "host=... dbname=..." into arguments of a URL.
    parts = dict(p.split("=", 1) for p in DSN.split())
    host = parts.get("host", "/var/run/postgresql")
    return f"postgresql:///{parts.get('dbname', 'postgres')}?host={host}" + (f"&user={parts['user']}" if "user" in parts else "")


def test_sqlalchemy_near_and_distance_reach_the_indexes(conn):
    pytest.importorskip("sqlalchemy")
    from sqlalchemy import Column, Integer, MetaData, Table, create_engine, select, text

    from simhash_pg.sqlalchemy import SimHash64, register_on

    conn.execute("DROP TABLE IF EXISTS py_docs")
    conn.execute("CREATE TABLE py_docs (id int8 PRIMARY KEY, fp simhash64)")
    conn.execute("INSERT INTO py_docs SELECT g, ((hashint8(g)::int8 << 32) | (hashint8(-g)::int8 & 4294967295))::simhash64"
                 " FROM generate_series(1, 20000) g")
    conn.execute("SELECT simhash_create_index('py_docs', 'fp', max_k => 7)")
    conn.execute("ANALYZE py_docs")
    engine = register_on(create_engine("postgresql+psycopg:///?" + "&".join(f"{k}={v}" for k, v in (p.split("=", 1) for p in DSN.split()))))
    docs = Table("py_docs", MetaData(), Column("id", Integer, primary_key=True), Column("fp", SimHash64))
    q = conn.execute("SELECT fp FROM py_docs WHERE id = 17").fetchone()[0]
    near = select(docs.c.id, docs.c.fp.distance(q).label("d")).where(docs.c.fp.near(q, 7)).order_by(docs.c.id)
    with engine.connect() as sa:
        got = sa.execute(near).all()
        want = conn.execute("SELECT id, fp <-> %s FROM py_docs WHERE (fp <-> %s) <= 7 ORDER BY id", (q, q)).fetchall()
        assert [tuple(r) for r in got] == [tuple(r) for r in want] and (17, 0) in [tuple(r) for r in got]
        compiled = near.compile(engine)
        assert "simhash_near(py_docs.fp, " in str(compiled)
        # The query fingerprint goes as a typed parameter, so the planner probes the indexes.
        plan = "\n".join(r[0] for r in sa.exec_driver_sql("EXPLAIN " + str(compiled), compiled.params))
        assert "_simhash_index_probe" in plan, plan
        row = sa.execute(select(docs.c.fp).where(docs.c.id == 17)).one()
        assert isinstance(row.fp, Fingerprint) and row.fp == q
    engine.dispose()
    conn.execute("DROP TABLE py_docs")


def test_the_etl_example(conn, tmp_path):
    """examples/etl_python.py: workers' fingerprints, the batch's near-copies dropped, binary COPY,
    simhash_ingest; every stored fingerprint is the server's, and nothing near stays twice."""
    import subprocess
    import sys

    body = texts()[:2000]
    rng = random.Random(9)
    lines = body + [t + " " + rng.choice(["a", "the", "and"]) for t in rng.sample(body, 200)]
    path = tmp_path / "texts.txt"
    path.write_text("".join(t.replace("\n", " ").replace("\r", " ") + "\n" for t in lines), encoding="utf-8")
    conn.execute("DROP TABLE IF EXISTS py_etl")
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "etl_python.py")
    out = subprocess.run([sys.executable, example, str(path), "--dsn", DSN, "--table", "py_etl", "--batch", "500"],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"read {len(lines)} texts;"), out
    stored = conn.execute("SELECT count(*), count(*) FILTER (WHERE fp <> simhash(body, '{\"weighting\": \"tf\"}')) FROM py_etl").fetchone()
    assert stored[1] == 0 and 0 < stored[0] < len(lines)
    near = conn.execute("SELECT count(*) FROM py_etl a JOIN py_etl b ON a.id < b.id AND a.fp <-> b.fp <= 7").fetchone()[0]
    assert near == 0
    conn.execute("DROP TABLE py_etl")


def test_the_etl_example_checked_by_the_client(conn, tmp_path):
    """examples/etl_python.py --check client: one transaction under a table lock, a NearIndex of
    the table's fingerprints, binary COPY straight into the table. The rows kept are exactly what
    simhash_ingest's rule keeps of the whole file, in order; a second load of the same file into
    the full table keeps nothing."""
    import subprocess
    import sys

    body = texts()[:2000]
    rng = random.Random(11)
    lines = [t.replace("\n", " ").replace("\r", " ") for t in body + [t + " " + rng.choice(["a", "the", "and"]) for t in rng.sample(body, 200)]]
    path = tmp_path / "texts.txt"
    path.write_text("".join(t + "\n" for t in lines), encoding="utf-8")
    conn.execute("DROP TABLE IF EXISTS py_etl_client")
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "etl_python.py")
    run = [sys.executable, example, str(path), "--dsn", DSN, "--table", "py_etl_client", "--batch", "300", "--check", "client"]
    out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"read {len(lines)} texts;"), out
    options = {"weighting": "tf"}
    keep = simhash_pg.keep_first_of_near(simhash_pg.simhash_many(lines, options), 7)
    stored = [r[0] for r in conn.execute("SELECT body FROM py_etl_client ORDER BY id").fetchall()]
    assert stored == [t for t, stays in zip(lines, keep) if stays] and len(stored) < len(lines)
    assert conn.execute("SELECT count(*) FROM py_etl_client WHERE fp <> simhash(body, '{\"weighting\": \"tf\"}')").fetchone()[0] == 0
    out = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert f"inserted 0 in" in out, out
    assert conn.execute("SELECT count(*) FROM py_etl_client").fetchone()[0] == len(stored)
    conn.execute("DROP TABLE py_etl_client")


def test_online_build_resumes_and_drops(conn, capsys):
    """simhash_pg.online runs simhash_index_statements in autocommit with progress, resumes after
    a failed build (an index left invalid), and drops online; lookups equal brute force."""
    import psycopg
    import simhash_pg.online as online
    conn.execute("DROP TABLE IF EXISTS py_live")
    conn.execute("CREATE TABLE py_live (id int8 PRIMARY KEY, fp simhash64)")
    conn.execute("INSERT INTO py_live SELECT g, hashtextextended(g::text, 9)::simhash64 FROM generate_series(1, 5000) g")
    conn.execute("INSERT INTO py_live VALUES (9001, '0123456789abcdef'), (9002, '0123456789abcdef')")
    # A failed build: a unique index over equal keys, left invalid under the layout's name.
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("CREATE UNIQUE INDEX CONCURRENTLY py_live_fp_perm1of4 ON py_live ((_simhash_permute(fp, 1, 4)))")
    assert online.clean(conn, "py_live", "fp", blocks=4, permuted=True) == 1
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname = 'py_live_fp_perm1of4'").fetchone()[0] == 0
    seen = []
    assert online.build(conn, "py_live", "fp", progress=lambda s, row: seen.append(s), blocks=4, permuted=True) == 9
    assert sum(s.startswith("CREATE INDEX CONCURRENTLY") for s in seen) == 4
    assert online.build(conn, "py_live", "fp", blocks=4, permuted=True) == 0
    q = "0123456789abcdee"
    fast = conn.execute("SELECT array_agg(id ORDER BY id) FROM py_live WHERE simhash_near(fp, %s::simhash64, 3)", [q]).fetchone()[0]
    slow = conn.execute("SELECT array_agg(id ORDER BY id) FROM py_live WHERE hamming_distance(fp, %s::simhash64) + 0 <= 3", [q]).fetchone()[0]
    assert fast == slow == [9001, 9002]
    plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN SELECT id FROM py_live WHERE simhash_near(fp, '{q}', 3)"))
    assert "py_live_fp_perm0of4" in plan
    with pytest.raises(TypeError):
        online.statements(conn, "py_live", "fp", nonsense=1)
    assert online.main([DSN, "py_live", "fp", "--drop"]) == 0
    assert conn.execute("SELECT count(*) FROM simhash_block_columns('py_live')").fetchone()[0] == 0
    assert "DROP INDEX CONCURRENTLY public.py_live_fp_perm0of4" in capsys.readouterr().out
    conn.execute("DROP TABLE py_live")


def test_refingerprint_fills_a_new_column_and_indexes_it(conn):
    """simhash_pg.online.refingerprint: a new column that the fill triggers keep and the backfill
    fills, the Python package's fingerprints equal to it, then its layout built online; the
    command line does the same for another column."""
    import simhash_pg.online as online
    conn.execute("DROP TABLE IF EXISTS py_refp")
    conn.execute("CREATE TABLE py_refp (id int8 PRIMARY KEY, body text)")
    conn.execute("INSERT INTO py_refp SELECT g, 'a story about ' || (g % 50) || ' told by ' || md5(g::text) FROM generate_series(1, 3000) g")
    options = {"weighting": "tf", "ngram": 2}
    n = online.refingerprint(conn, "py_refp", "body", "fp2", options, batch_rows=500, max_k=3)
    assert n >= 4 + 5  # column, 2 triggers, CALL; 4 indexes + ANALYZE
    conn.execute("INSERT INTO py_refp VALUES (9001, 'written after the migration')")
    rows = conn.execute("SELECT body, fp2 FROM py_refp ORDER BY id").fetchall()
    assert [fp for _, fp in rows] == simhash_pg.simhash_many([b for b, _ in rows], options)
    assert conn.execute("SELECT count(*) FROM simhash_block_columns('py_refp') WHERE source_column = 'fp2'").fetchone()[0] == 4
    assert online.refingerprint(conn, "py_refp", "body", "fp2", options, max_k=3) == 1  # only the CALL, nothing to fill
    assert online.main([DSN, "py_refp", "fp3", "--from-text", "body", "--options", '{"weighting": "tf"}', "--max-k", "3"]) == 0
    assert conn.execute("SELECT count(*) FROM py_refp WHERE fp3 IS DISTINCT FROM simhash(body, '{\"weighting\": \"tf\"}')").fetchone()[0] == 0
    conn.execute("DROP TABLE py_refp")
