"""The guard's cost per row written (issue 64): one-row INSERTs with pgbench -M prepared, and one
INSERT ... SELECT of --batch rows, into three tables of --rows random fingerprints with the layout
simhash_create_index builds for k = 3: without a guard, with a UNIQUE constraint on the
fingerprint (what PostgreSQL's own check costs), and with simhash_guard(k => 3). Rounds interleave
the tables; the new fingerprints are random, so none is refused. Raw numbers in
bench/results/guard_cost.json.
"""
import re
import statistics
import subprocess
import tempfile
import time

from pg import arguments, connect, dsn, log, save, server

TABLES = {"plain": "no guard", "unique": "UNIQUE (fp)", "guarded": "simhash_guard(k => 3)"}


def setup(conn, rows):
    for name in TABLES:
        t = f"gc_{name}"
        have = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (t,)).fetchone()[0]
        if have and conn.execute(f"SELECT count(*) FROM {t} WHERE id <= %s", (rows,)).fetchone()[0] == rows:
            log(f"reusing {t}")
        else:
            log(f"making {t}: {rows:,} rows")
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(f"CREATE TABLE {t} (id int8, fp simhash64)")
            conn.execute(f"""INSERT INTO {t} SELECT g, ((random() * 4294967296)::int8 << 32
                                                     | (random() * 4294967296)::int8)::simhash64
                               FROM generate_series(1, %s) g""", (rows,))
            conn.execute("SET client_min_messages = warning")
            conn.execute(f"SELECT simhash_create_index('{t}', 'fp', max_k => 3)")
            if name == "unique":
                conn.execute(f"ALTER TABLE {t} ADD UNIQUE (fp)")
            if name == "guarded":
                conn.execute(f"SELECT simhash_guard('{t}', 'fp', 3)")
            conn.execute("RESET client_min_messages")
            conn.execute(f"VACUUM ANALYZE {t}")
        conn.execute(f"DELETE FROM {t} WHERE id > %s", (rows,))


def one_row(dbname, table, seconds):
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        # (pgbench's random() spans at most 2^63 - 1 values: the fingerprint comes from SQL.)
        f.write("\\set a random(1, 1000000000000000)\n"
                f"INSERT INTO {table} (id, fp) VALUES (:a::int8 + 1000000000, ((random() * 4294967296)::int8 << 32"
                " | (random() * 4294967296)::int8)::simhash64);\n")
    out = subprocess.run(["pgbench", "-n", "-M", "prepared", "-c", "1", "-T", str(seconds), "-f", f.name, dsn(dbname)],
                         check=True, capture_output=True, text=True).stdout
    return {"tps": float(re.search(r"tps = ([\d.]+)", out).group(1)),
            "latency_ms": float(re.search(r"latency average = ([\d.]+) ms", out).group(1))}


def batch(conn, table, rows, n):
    start = time.perf_counter()
    conn.execute(f"""INSERT INTO {table} SELECT %s + g, ((random() * 4294967296)::int8 << 32
                                                      | (random() * 4294967296)::int8)::simhash64
                       FROM generate_series(1, %s) g""", (rows * 10, n))
    conn.commit()
    return time.perf_counter() - start


def markdown(report):
    print(report["server"] + f"; {report['rows']:,} rows, batches of {report['batch']:,} rows\n")
    print("| table | one-row INSERT, ms (median) | rounds | vs no guard | batch INSERT, s (median) | rounds | per row, us | vs no guard |")
    print("|---|---:|---|---:|---:|---|---:|---:|")
    med = lambda name, key: statistics.median(r[key] for r in report["runs"] if r["table"] == name)
    for name, label in TABLES.items():
        runs = [r for r in report["runs"] if r["table"] == name]
        lat, secs = med(name, "latency_ms"), med(name, "batch_s")
        lats = ", ".join("%.3f" % r["latency_ms"] for r in runs)
        batches = ", ".join("%.2f" % r["batch_s"] for r in runs)
        print(f"| {label} | {lat:.3f} | {lats} | {lat / med('plain', 'latency_ms'):.2f}x"
              f" | {secs:.2f} | {batches} | {secs / report['batch'] * 1e6:.1f}"
              f" | {secs / med('plain', 'batch_s'):.2f}x |")


def main():
    ap = arguments("guard_cost.json", rows=1_000_000, seconds=15, runs=3, report=True)
    ap.add_argument("--dbname", default="simhash_bench")
    ap.add_argument("--batch", type=int, default=100_000)
    args = ap.parse_args()
    if args.report:
        import json
        markdown(json.load(open(args.json)))
        return
    conn = connect(args.dbname)
    conn.autocommit = True
    setup(conn, args.rows)
    settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'shared_buffers')").fetchall())
    report = {"server": server(settings), "rows": args.rows, "batch": args.batch, "runs": []}
    conn.autocommit = False
    for r in range(args.runs):
        for name in (TABLES if r % 2 == 0 else reversed(list(TABLES))):
            t = f"gc_{name}"
            one = one_row(args.dbname, t, args.seconds)
            secs = batch(conn, t, args.rows, args.batch)
            conn.execute(f"DELETE FROM {t} WHERE id > %s", (args.rows,))
            conn.commit()
            conn.autocommit = True
            conn.execute(f"VACUUM {t}")
            conn.autocommit = False
            conn.commit()
            run = {"round": r + 1, "table": name, **one, "batch_s": secs}
            log(run)
            report["runs"].append(run)
    save(report, args.json)
    markdown(report)


if __name__ == "__main__":
    main()
