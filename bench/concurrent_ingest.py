"""Concurrent simhash_ingest (issue 64): 1, 2, 4 and 8 sessions each loading a batch of
--batch rows into one table of --rows rows at the same time, with near-copies planted across
the writers' batches.

The table: `live (id int8, fp simhash64)`, --rows random fingerprints, with the layout
simhash_create_index builds for k = 3. Each writer's staging table holds --batch rows: 10 % are
copies of table rows 1-2 bits away, 10 % copies (1 bit away) of one of --shared fingerprints
that every writer's batch has a copy of (the collisions across writers), the rest new. A round
starts the writers together, each `SELECT * FROM simhash_ingest('live', 'fp', 'batch_<w>', 3)`
in one transaction on its own connection, and reports the wall time from the first start to
the last commit, rows per second (rows offered, all writers), the rows inserted, how many rows
each writer found near rows another committed meanwhile (the NOTICE), and errors (deadlocks or
serialization failures: none expected). Then the check: no loaded row has another row within 3
bits (one lookup per loaded row through the layout), the rule a serial load keeps. The loaded
rows are deleted and the table vacuumed before the next round. Rounds interleave the writer
counts; raw numbers in bench/results/concurrent_ingest.json.
"""
import random
import re
import statistics
import threading
import time

import psycopg

from pg import arguments, connect, dsn, log, save, server

K = 3


def near_copy(fp, rng, bits):
    for b in rng.sample(range(64), bits):
        fp ^= 1 << b
    return fp


def signed(fp):
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def setup(conn, rows, batch, writers, shared):
    have = conn.execute("SELECT to_regclass('live') IS NOT NULL").fetchone()[0]
    if have and conn.execute("SELECT count(*) FROM live WHERE id <= %s", (rows,)).fetchone()[0] == rows:
        log("reusing table live")
    else:
        log(f"making live: {rows:,} rows")
        conn.execute("DROP TABLE IF EXISTS live")
        conn.execute("CREATE TABLE live (id int8, fp simhash64)")
        conn.execute("""INSERT INTO live SELECT g, ((random() * 4294967296)::int8 << 32
                                                   | (random() * 4294967296)::int8)::simhash64
                          FROM generate_series(1, %s) g""", (rows,))
        conn.execute("SET client_min_messages = warning")
        conn.execute("SELECT simhash_create_index('live', 'fp', max_k => %s)", (K,))
        conn.execute("RESET client_min_messages")
        conn.execute("VACUUM ANALYZE live")
    rng = random.Random(64)
    sample = [r[0] & 0xFFFFFFFFFFFFFFFF for r in conn.execute(
        # (a join: = ANY over a long array is a linear search per table row.)
        "SELECT l.fp::int8 FROM live l JOIN unnest(%s::int8[]) AS u(id) ON l.id = u.id", ([rng.randint(1, rows) for _ in range(batch // 10 * max(writers))],))]
    common = [rng.getrandbits(64) for _ in range(shared)]
    next_id = rows + 1
    for w in range(max(writers)):
        fps = []
        fps += [near_copy(fp, rng, rng.randint(1, 2)) for fp in sample[w * (batch // 10):(w + 1) * (batch // 10)]]
        fps += [near_copy(rng.choice(common), rng, 1) for _ in range(batch // 10)]
        fps += [rng.getrandbits(64) for _ in range(batch - len(fps))]
        rng.shuffle(fps)
        conn.execute(f"DROP TABLE IF EXISTS batch_{w}")
        conn.execute(f"CREATE TABLE batch_{w} (id int8, fp simhash64)")
        with conn.cursor().copy(f"COPY batch_{w} (id, fp) FROM STDIN") as cp:
            for i, fp in enumerate(fps):
                cp.write_row((next_id + i, f"{fp:016x}"))
        next_id += batch
        conn.execute(f"ANALYZE batch_{w}")


class Ingest(threading.Thread):
    def __init__(self, dbname, w, start):
        super().__init__(daemon=True)
        self.conn = psycopg.connect(dsn(dbname), autocommit=True)
        self.conn.execute("SET max_parallel_workers_per_gather = 0")
        self.w, self.start_at = w, start
        self.notices = []
        self.conn.add_notice_handler(lambda d: self.notices.append(d.message_primary))
        self.result = None
        self.error = None

    def run(self):
        self.start_at.wait()
        self.t0 = time.perf_counter()
        try:
            self.result = self.conn.execute(f"SELECT * FROM simhash_ingest('live', 'fp', 'batch_{self.w}', {K})").fetchone()
        except psycopg.Error as e:
            self.error = e.sqlstate
        self.t1 = time.perf_counter()
        self.conn.close()

    def late(self):
        for m in self.notices:
            hit = re.search(r"(\d+) rows near rows another ingest committed meanwhile", m)
            if hit:
                return int(hit.group(1))
        return 0


def one_round(conn, dbname, rows, batch, writers):
    start = threading.Event()
    threads = [Ingest(dbname, w, start) for w in range(writers)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    start.set()
    for t in threads:
        t.join()
    wall = max(t.t1 for t in threads) - min(t.t0 for t in threads)
    inserted = sum(t.result[0] for t in threads if t.result)
    # Every loaded row against every other row of the table: none within K.
    violations = conn.execute(f"""SELECT count(*) FROM live a WHERE a.id > %s
                                   AND EXISTS (SELECT 1 FROM live b WHERE simhash_near(b.fp, a.fp, {K}) AND b.id <> a.id)""",
                              (rows,)).fetchone()[0]
    out = {"writers": writers, "wall_s": wall, "rows_per_s": writers * batch / wall, "inserted": inserted,
           "late": [t.late() for t in threads], "errors": [t.error for t in threads if t.error],
           "each_s": [t.t1 - t.t0 for t in threads], "violations": violations}
    conn.execute("DELETE FROM live WHERE id > %s", (rows,))
    conn.execute("VACUUM live")
    return out


def main():
    ap = arguments("concurrent_ingest.json", rows=10_000_000, runs=2)
    ap.add_argument("--dbname", default="simhash_bench")
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--writers", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--shared", type=int, default=2000, help="fingerprints every writer has a copy of")
    args = ap.parse_args()
    conn = connect(args.dbname)
    settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name IN ('server_version', 'shared_buffers')").fetchall())
    settings["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
    for name in ("max_wal_size", "checkpoint_timeout"):
        settings[name] = conn.execute(f"SHOW {name}").fetchone()[0]
    setup(conn, args.rows, args.batch, args.writers, args.shared)
    conn.execute("DELETE FROM live WHERE id > %s", (args.rows,))
    conn.execute("VACUUM live")
    report = {"rows": args.rows, "batch": args.batch, "settings": settings, "rounds": []}
    for r in range(args.runs):
        order = args.writers if r % 2 == 0 else list(reversed(args.writers))
        for w in order:
            log(f"round {r + 1}: {w} writers")
            out = one_round(conn, args.dbname, args.rows, args.batch, w)
            out["round"] = r + 1
            log(out)
            report["rounds"].append(out)
            save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    wal = report["settings"]
    print(f"{server(wal)}, max_wal_size {wal.get('max_wal_size', '?')}, checkpoint_timeout {wal.get('checkpoint_timeout', '?')}; "
          f"{report['rows']:,} rows, {report['batch']:,} rows a writer\n")
    print("| writers | rows/s (median) | rounds | vs 1 writer | inserted | near rows others committed meanwhile | errors | loaded rows within 3 bits of another |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|")
    by = {}
    for o in report["rounds"]:
        by.setdefault(o["writers"], []).append(o)
    one = statistics.median(o["rows_per_s"] for o in by.get(1, [])) if 1 in by else None
    for w, os_ in sorted(by.items()):
        med = statistics.median(o["rows_per_s"] for o in os_)
        ratio = f"{med / one:.2f}x" if one else ""
        rates = ", ".join(f"{o['rows_per_s']:,.0f}" for o in os_)
        inserted = ", ".join(f"{o['inserted']:,}" for o in os_)
        late = ", ".join(str(sum(o["late"])) for o in os_)
        errors = sum(len(o["errors"]) for o in os_)
        violations = sum(o["violations"] for o in os_)
        print(f"| {w} | {med:,.0f} | {rates} | {ratio} | {inserted} | {late} | {errors} | {violations} |")


if __name__ == "__main__":
    main()
