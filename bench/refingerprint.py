"""Writers during a re-fingerprinting migration (issue 64): the statements of
simhash_refingerprint_statements (a new column, its fill triggers, CALL simhash_backfill), then
the new column's layout built online (simhash_index_statements), while other sessions insert
and update rows.

The table: --rows rows of `news (id int8 PRIMARY KEY, body text, fp simhash64)`, each body three
sentences of 10 words drawn from 10,000 (about 200 bytes, 30 words: a short article's lead),
fp the old fingerprints (random: the migration never reads them). Two writer threads on
connections of their own, for the whole run: one-row INSERTs at --rate per second, and one-row
UPDATEs of a random row's body at --rate / 4 (which the backfill's batches can make wait).
Phases: --pause seconds of writes alone, the backfill (its triggers made first), the layout's
build, --pause seconds after. Reported per phase: p50, p99 and the longest INSERT and UPDATE,
each phase's seconds, the table's size before and after, and the check that every row holds
simhash(body, options). With --way rewrite, the same table moves the way there was before:
ADD COLUMN fp2 ... GENERATED ALWAYS AS (simhash(body, options)) STORED (a rewrite under ACCESS
EXCLUSIVE), then simhash_create_index. Raw numbers go to bench/results/refingerprint.json.
"""
import random
import threading
import time

import psycopg

from pg import arguments, connect, dsn, latencies, log, save, server

OPTIONS = '{"weighting": "tf", "ngram": 2}'


class Writer(threading.Thread):
    """One statement per transaction at a steady rate; (start time, latency in ms) of each."""

    def __init__(self, dbname, rate, rows, kind):
        super().__init__(daemon=True)
        self.conn = psycopg.connect(dsn(dbname), autocommit=True)
        self.rate, self.rows, self.kind = rate, rows, kind
        self.samples = []
        self.errors = 0
        self.stop = threading.Event()

    def run(self):
        rng = random.Random(64 + len(self.kind))
        n = 0
        start = time.perf_counter()
        while not self.stop.is_set():
            n += 1
            wait = start + n / self.rate - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            t = time.perf_counter()
            try:
                if self.kind == "insert":
                    self.conn.execute("INSERT INTO news (id, body) VALUES (nextval('news_writer'), %s)",
                                      (f"written during the migration, row {n}, about topic {n % 97}",))
                else:
                    self.conn.execute("UPDATE news SET body = body || ' (updated)' WHERE id = %s",
                                      (rng.randint(1, self.rows),))
            except psycopg.Error:
                self.errors += 1
                continue
            self.samples.append((t, (time.perf_counter() - t) * 1000))



def run_all(conn, query, *params):
    for (stmt,) in conn.execute(query, params).fetchall():
        conn.execute(stmt)


def main():
    ap = arguments("refingerprint.json", rows=10_000_000)
    ap.add_argument("--rate", type=float, default=200, help="INSERTs per second (UPDATEs: a quarter of it)")
    ap.add_argument("--pause", type=float, default=20, help="seconds of writes alone before and after")
    ap.add_argument("--batch-rows", type=int, default=10_000)
    ap.add_argument("--dbname", default="simhash_refingerprint")
    ap.add_argument("--way", choices=("online", "rewrite"), default="online")
    args = ap.parse_args()
    conn = connect(args.dbname)
    conn.execute("SET client_min_messages = warning")
    report = {"way": args.way, "rows": args.rows, "rate": args.rate, "batch_rows": args.batch_rows, "options": OPTIONS, "settings": {
        s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "maintenance_work_mem")}}
    log(f"loading {args.rows:,} rows")
    t = time.time()
    conn.execute("DROP TABLE IF EXISTS news, news_sentences")
    conn.execute("CREATE TABLE news (id int8 PRIMARY KEY, body text, fp simhash64)")
    conn.execute("DROP SEQUENCE IF EXISTS news_writer")
    conn.execute("CREATE SEQUENCE news_writer START 1000000000000")
    conn.execute("SELECT setseed(0.64)")
    conn.execute("""CREATE TABLE news_sentences AS
                    SELECT s AS id, (SELECT string_agg('w' || (1 + (random() * 9999)::int4), ' ') FROM generate_series(1, 10 + s * 0)) AS words
                      FROM generate_series(0, 9999) s""")
    conn.execute(f"""INSERT INTO news
                     SELECT g, a.words || '. ' || b.words || '. ' || c.words || '.',
                            (((random() * 4294967295)::int8 << 32) | (random() * 4294967295)::int8)::simhash64
                       FROM generate_series(1, {args.rows}) g
                       JOIN news_sentences a ON a.id = g % 10000
                       JOIN news_sentences b ON b.id = (g / 10000 + g * 7) % 10000
                       JOIN news_sentences c ON c.id = (g / 100000000 + g * 13 + 5) % 10000""")
    conn.execute("VACUUM ANALYZE news")
    report["load_s"] = time.time() - t
    report["table_bytes_before"] = conn.execute("SELECT pg_table_size('news')").fetchone()[0]
    writers = [Writer(args.dbname, args.rate, args.rows, "insert"), Writer(args.dbname, args.rate / 4, args.rows, "update")]
    for w in writers:
        w.start()
    marks = {}
    try:
        time.sleep(args.pause)
        marks["backfill"] = time.perf_counter()
        if args.way == "online":
            log("triggers and backfill")
            run_all(conn, "SELECT simhash_refingerprint_statements('news', 'body', 'fp2', %s::jsonb, batch_rows => %s)",
                    OPTIONS, args.batch_rows)
        else:
            log("generated column (rewrite)")
            conn.execute(f"ALTER TABLE news ADD COLUMN fp2 simhash64 GENERATED ALWAYS AS (simhash(body, '{OPTIONS}'::jsonb)) STORED")
        marks["layout"] = time.perf_counter()
        log("layout of fp2")
        if args.way == "online":
            run_all(conn, "SELECT simhash_index_statements('news', 'fp2', max_k => 3)")
        else:
            conn.execute("SELECT simhash_create_index('news', 'fp2', max_k => 3)")
        marks["after"] = time.perf_counter()
        time.sleep(args.pause)
        marks["end"] = time.perf_counter()
    finally:
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join()
    start = marks["backfill"] - args.pause
    spans = {"before": (start, marks["backfill"]), "backfill": (marks["backfill"], marks["layout"]),
             "layout": (marks["layout"], marks["after"]), "after": (marks["after"], marks["end"])}
    report["phases"] = {name: {"s": b - a, **{w.kind: latencies(w.samples, a, b) for w in writers}}
                        for name, (a, b) in spans.items()}
    report["writer_errors"] = {w.kind: w.errors for w in writers}
    report["table_bytes_after"] = conn.execute("SELECT pg_table_size('news')").fetchone()[0]
    report["wrong_rows"] = conn.execute(
        "SELECT count(*) FROM news WHERE fp2 IS DISTINCT FROM simhash(body, %s::jsonb)", (OPTIONS,)).fetchone()[0]
    report["layout"] = conn.execute("SELECT DISTINCT blocks, permuted FROM simhash_block_columns('news')").fetchall()
    save(report, args.json)
    print_markdown(report)


def print_markdown(r):
    print(f"{r.get('way', 'online')}: {server(r['settings'])}, {r['rows']:,} rows of about 200 bytes of text "
          f"({r['table_bytes_before'] / 2**30:.1f} GiB before, {r['table_bytes_after'] / 2**30:.1f} GiB after), "
          f"new fingerprints with {r['options']}, batches of {r['batch_rows']:,} rows; one-row INSERTs at "
          f"{r['rate']:.0f}/s and UPDATEs of the text at {r['rate'] / 4:.0f}/s beside it; "
          f"rows not holding the new fingerprint afterwards: {r['wrong_rows']}; failed writes: {r['writer_errors']}\n")
    print("| phase | seconds | INSERTs | INSERT p50 / p99 / longest (ms) | UPDATEs | UPDATE p50 / p99 / longest (ms) |")
    print("|---|---|---|---|---|---|")
    f = lambda x, k: f"{x[k]:.1f}" if k in x else "-"  # noqa: E731
    for name, p in r["phases"].items():
        i, u = p["insert"], p["update"]
        print(f"| {name} | {p['s']:.0f} | {i['n']} | {f(i, 'p50_ms')} / {f(i, 'p99_ms')} / {f(i, 'max_ms')} "
              f"| {u['n']} | {f(u, 'p50_ms')} / {f(u, 'p99_ms')} / {f(u, 'max_ms')} |")


if __name__ == "__main__":
    main()
