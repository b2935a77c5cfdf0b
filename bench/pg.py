"""Connection to the local PostgreSQL for the benchmarks (database simhash_bench, role root), and
the progress log every script writes."""
import json
import sys
from pathlib import Path

import psycopg

DSN = "host=/var/run/postgresql dbname=simhash_bench"


def log(*a):
    """Progress on stderr, so that stdout stays the Markdown report."""
    print(*a, file=sys.stderr, flush=True)


def dsn(dbname="simhash_bench"):
    """The connection string of a benchmark database on the local socket."""
    return f"host=/var/run/postgresql dbname={dbname}"


def connect(dbname="simhash_bench"):
    """An autocommit connection, serial plans (the timings compare methods, not cores)."""
    conn = psycopg.connect(dsn(dbname), autocommit=True)
    conn.execute("SET max_parallel_workers_per_gather = 0")
    return conn


def simhash_many(conn, texts, options="{}"):
    """simhash(text, options) of every text, as unsigned ints, in order."""
    rows = conn.execute(
        "SELECT simhash(t, %s::jsonb)::int8 FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
        (options, texts),
    ).fetchall()
    return [r[0] & 0xFFFFFFFFFFFFFFFF for r in rows]


def reprinted(args, print_markdown):
    """With --report, prints the tables of the --json file of an earlier run and says so: the
    scripts that keep raw numbers reprint them without rerunning."""
    if not args.report:
        return False
    print_markdown(json.loads(Path(args.json).read_text()))
    return True
