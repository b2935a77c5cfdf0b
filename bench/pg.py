"""What the benchmark scripts share: the connection to the local PostgreSQL (database
simhash_bench, role root), the progress log, the common options, and where raw numbers go."""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import psycopg

DSN = "host=/var/run/postgresql dbname=simhash_bench"
RESULTS = Path(__file__).resolve().parent / "results"


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


def arguments(results, rows=None, seconds=None, runs=None, report=False):
    """A parser with the options the database benchmarks share: --rows (a list when `rows` is
    one), --seconds per pgbench run, --runs interleaved rounds, and --json, the raw numbers'
    file (`results` in bench/results, made here); each only when its default is given. With
    `report`, --report reprints the --json file's tables instead of running (`reprinted`)."""
    RESULTS.mkdir(exist_ok=True)
    ap = argparse.ArgumentParser()
    if rows is not None:
        ap.add_argument("--rows", type=int, nargs="+" if isinstance(rows, list) else None, default=rows)
    if seconds is not None:
        ap.add_argument("--seconds", type=int, default=seconds, help="per pgbench run")
    if runs is not None:
        ap.add_argument("--runs", type=int, default=runs, help="interleaved rounds")
    ap.add_argument("--json", default=str(RESULTS / results), help="where the raw numbers go")
    if report:
        ap.add_argument("--report", action="store_true", help="only print the tables of the --json file")
    return ap


def save(report, path):
    """Writes the raw numbers (after each table, so a long run that stops keeps what it has)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(report, indent=1))


def latencies(samples, start, end):
    """p50, p99 and the longest of the (start time, latency in ms) samples that started in
    [start, end), and how many: a writer's latencies over one phase of a run."""
    lat = sorted(ms for t, ms in samples if start <= t < end)
    if not lat:
        return {"n": 0}
    return {"n": len(lat), "p50_ms": statistics.median(lat), "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
            "max_ms": lat[-1]}


def server(settings):
    """The opening words of every report: the server, its memory and, when recorded, JIT."""
    jit = f", jit {settings['jit']}" if "jit" in settings else ""
    return f"PostgreSQL {settings['server_version']}, shared_buffers {settings['shared_buffers']}{jit}"


def plan_of(conn, sql):
    """The plan of `sql` as text, without costs."""
    return "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + sql))


@contextlib.contextmanager
def one_cpu(conn, cpu):
    """Within it, the backends the postmaster starts (pgbench's among them) and pgbench itself
    run on CPU `cpu` (no-op for None). On this 2-CPU virtual machine a client and a backend on
    two idle CPUs wake each other across CPUs: a primary-key lookup's round trip then costs
    30-90 us depending on what else keeps the other CPU awake (the floor flipped from 0.09 to
    0.03 ms between runs). On one CPU the round trip is two context switches, the same in every
    run. Restores the postmaster's CPUs on the way out."""
    if cpu is None:
        yield
        return
    data = conn.execute("SHOW data_directory").fetchone()[0]
    pid = (Path(data) / "postmaster.pid").read_text().split()[0]
    every = f"0-{os.cpu_count() - 1}"
    subprocess.run(["taskset", "-pc", str(cpu), pid], check=True, capture_output=True)
    os.environ["BENCH_CPU"] = str(cpu)
    try:
        yield
    finally:
        os.environ.pop("BENCH_CPU", None)
        subprocess.run(["taskset", "-pc", every, pid], check=True, capture_output=True)
