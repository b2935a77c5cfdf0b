"""Writers during a layout build (issue 64): one-row INSERTs from another session while
simhash_create_index builds a layout, against the same while the statements of
simhash_index_statements run one by one (CREATE INDEX CONCURRENTLY ...), as psql's \\gexec runs
them.

The table: --rows rows of `live (id int8 PRIMARY KEY, body text, fp simhash64)`, a text of about
200 bytes a row (md5 strings: the row width of a short page's main text; the build reads the
fingerprints, not the text) and random fingerprints. A writer thread inserts one row per
transaction at --rate rows per second on a connection of its own, for the whole run, and keeps
each INSERT's latency. Each round builds the layout for max_k = 7 both ways (one after the
other, the layout dropped between), with --pause seconds of writes alone before and after
each build. Reported per way and phase (before, during, after the build): p50, p99 and the
longest INSERT, and the build's seconds. Raw numbers go to bench/results/online_build.json.
"""
import threading
import time

import psycopg

from pg import arguments, connect, dsn, latencies, log, save, server


class Writer(threading.Thread):
    """One-row INSERTs at a steady rate; (start time, latency in ms) of each."""

    def __init__(self, dbname, rate):
        super().__init__(daemon=True)
        self.conn = psycopg.connect(dsn(dbname), autocommit=True)
        self.rate = rate
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        n = 0
        start = time.perf_counter()
        while not self.stop.is_set():
            n += 1
            due = start + n / self.rate
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            t = time.perf_counter()
            self.conn.execute(
                "INSERT INTO live (id, body, fp) VALUES (nextval('live_writer'), md5(%s::text) || md5(%s::text), "
                "(((random() * 4294967295)::int8 << 32) | (random() * 4294967295)::int8)::simhash64)",
                (n, -n))
            self.samples.append((t, (time.perf_counter() - t) * 1000))



def build_locked(conn):
    conn.execute("SELECT simhash_create_index('live', 'fp', max_k => 7)")


def build_online(conn):
    for (stmt,) in conn.execute("SELECT simhash_index_statements('live', 'fp', max_k => 7)").fetchall():
        conn.execute(stmt)


def drop_online(conn):
    for (stmt,) in conn.execute("SELECT simhash_drop_index_statements('live', 'fp')").fetchall():
        conn.execute(stmt)


def main():
    ap = arguments("online_build.json", rows=10_000_000, runs=2)
    ap.add_argument("--rate", type=float, default=200, help="writer's INSERTs per second")
    ap.add_argument("--pause", type=float, default=10, help="seconds of writes alone before and after each build")
    ap.add_argument("--dbname", default="simhash_online")
    args = ap.parse_args()
    conn = connect(args.dbname)
    conn.execute("SET client_min_messages = warning")
    report = {"rows": args.rows, "rate": args.rate, "settings": {
        s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "maintenance_work_mem")}}
    log(f"loading {args.rows:,} rows")
    t = time.time()
    conn.execute("DROP TABLE IF EXISTS live")
    conn.execute("CREATE TABLE live (id int8 PRIMARY KEY, body text, fp simhash64)")
    conn.execute("DROP SEQUENCE IF EXISTS live_writer")
    conn.execute("CREATE SEQUENCE live_writer START 1000000000000")
    conn.execute("SELECT setseed(0.64)")
    conn.execute(f"""INSERT INTO live SELECT g, md5(g::text) || md5((-g)::text) || md5((g * 7)::text) || md5((g * 11)::text)
                                       || md5((g * 13)::text) || md5((g * 17)::text),
                                    (((random() * 4294967295)::int8 << 32) | (random() * 4294967295)::int8)::simhash64
                       FROM generate_series(1, {args.rows}) g""")
    conn.execute("VACUUM ANALYZE live")
    report["load_s"] = time.time() - t
    report["table_bytes"] = conn.execute("SELECT pg_table_size('live')").fetchone()[0]
    writer = Writer(args.dbname, args.rate)
    writer.start()
    ways = {"simhash_create_index": build_locked, "simhash_index_statements (online)": build_online}
    results = {w: {"before": [], "during": [], "after": [], "build_s": []} for w in ways}
    try:
        for r in range(args.runs):
            for way, build in ways.items():
                drop_online(conn)
                time.sleep(args.pause)
                t0 = time.perf_counter()
                log(f"round {r + 1}: {way}")
                build(conn)
                t1 = time.perf_counter()
                time.sleep(args.pause)
                t2 = time.perf_counter()
                for name, (a, b) in (("before", (t0 - args.pause, t0)), ("during", (t0, t1)), ("after", (t1, t2))):
                    results[way][name].append(latencies(writer.samples, a, b))
                results[way]["build_s"].append(t1 - t0)
                report["results"] = results
                save(report, args.json)
    finally:
        writer.stop.set()
        writer.join()
    report["layout"] = conn.execute("SELECT DISTINCT blocks, permuted FROM simhash_block_columns('live')").fetchall()
    save(report, args.json)
    print_markdown(report)


def print_markdown(r):
    print(f"{server(r['settings'])}, {r['rows']:,} rows of about 200 bytes of text ({r['table_bytes'] / 2**30:.1f} GiB), "
          f"a layout for max_k = 7; a writer of one-row INSERTs at {r['rate']:.0f}/s beside it:\n")
    print("| build | round | build (s) | INSERTs during | p50 before / during / after (ms) | p99 before / during / after (ms) | longest during (ms) |")
    print("|---|---|---|---|---|---|---|")
    for way, res in r["results"].items():
        for i, s in enumerate(res["build_s"]):
            b, d, a = res["before"][i], res["during"][i], res["after"][i]
            f = lambda x, k: f"{x[k]:.2f}" if k in x else "-"  # noqa: E731
            print(f"| {way} | {i + 1} | {s:.1f} | {d['n']} | {f(b, 'p50_ms')} / {f(d, 'p50_ms')} / {f(a, 'p50_ms')} "
                  f"| {f(b, 'p99_ms')} / {f(d, 'p99_ms')} / {f(a, 'p99_ms')} | {f(d, 'max_ms')} |")


if __name__ == "__main__":
    main()
