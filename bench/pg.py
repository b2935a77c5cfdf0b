"""Connection to the local PostgreSQL for the benchmarks (database simhash_bench, role root)."""
import psycopg

DSN = "host=/var/run/postgresql dbname=simhash_bench"


def connect():
    conn = psycopg.connect(DSN, autocommit=True)
    conn.execute("SET max_parallel_workers_per_gather = 0")
    return conn


def simhash_many(conn, texts, options="{}"):
    """simhash(text, options) of every text, as unsigned ints, in order."""
    rows = conn.execute(
        "SELECT simhash(t, %s::jsonb)::int8 FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
        (options, texts),
    ).fetchall()
    return [r[0] & 0xFFFFFFFFFFFFFFFF for r in rows]
