"""The queries users write, side by side with `simhash_near`: every spelling of "within k bits",
generic plans, and joins, at the same table, k and layout.

Tables: 1M random fingerprints with 1 % planted near-copies (as bench/index_lookup.py), one
indexed with `simhash_create_index(t, 'fp', max_k => 3)` (4 blocks) and one with `max_k => 7`
(8 blocks); an outer table `arrivals` of 10,000 fingerprints taken from random rows. Then, with
pgbench, prepared statements, one client, interleaved rounds, k = 3 and 7 on each table:

  near        WHERE simhash_near(fp, $1, k)                 (the reference)
  le          WHERE fp <-> $1 <= k
  lt          WHERE fp <-> $1 < k + 1
  hamming     WHERE hamming_distance(fp, $1) <= k
  le generic  fp <-> $1 <= $2 under plan_cache_mode = force_generic_plan (k a parameter)
  seq         WHERE (fp <-> $1) + 0 <= k (+ 0: not rewritten), a few transactions only
  join        100 arrivals JOIN t ON t.fp <-> a.fp <= k: per outer row (latency / 100)
  join bitmap the same with enable_tidscan = off: the BitmapOr per outer row, what every join
              got before the parameterized TID path
  join lateral the probe called per outer row by hand through LATERAL (the issue's reference)

Ingest: a batch of --ingest-rows rows (half copies of target rows 1-2 bits away, half new random
fingerprints; ids past the table's), into each table: `simhash_ingest(t, 'fp', batch)` against a
plain `INSERT INTO t SELECT * FROM batch` of the same rows into the same indexed table, each in
a transaction rolled back (so every run starts from the same table), alternated, --runs each.

Bulk load: the 1M rows of the 4-block table copied (COPY ... TO STDOUT into COPY ... FROM STDIN)
into a new table, either plain and then `simhash_create_index`, or with the block indexes made
first; --runs each, alternated (--only-copy runs just this part on the tables of an earlier run).

Exactness: for 50 arrivals, the join's rows equal brute force. Prints Markdown; raw numbers go to
bench/results/query_forms.json. Usage: bench/.venv/bin/python bench/query_forms.py [--rows N]
[--seconds 5] [--runs 3] [--reuse]. Run through bench/run_forms.sh (release build, 8 GB buffers).
"""
import json
import os
import statistics
from pathlib import Path

import psycopg

from index_lookup import pgbench, summary
from pg import arguments, dsn, log, plan_of, save, server
from planted import load_planted

# SIMHASH_BENCH_DB: another database, to keep tables of another size beside these.
DSN = dsn(os.environ.get("SIMHASH_BENCH_DB", "simhash_forms"))
Q = "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"


def scripts(table, k, arrivals):
    q = ":q::int8::simhash64"
    join_from = "(SELECT fp FROM arrivals WHERE g BETWEEN :start AND :start + 99) a"
    s = f"\\set start random(1, {arrivals - 99})\n"
    indexes = f"(SELECT array_agg(format('%I', index)::regclass ORDER BY block) FROM simhash_block_columns('{table}'))"
    return {
        "near": Q + f"SELECT id FROM {table} WHERE simhash_near(fp, {q}, {k});\n",
        "le": Q + f"SELECT id FROM {table} WHERE fp <-> {q} <= {k};\n",
        "lt": Q + f"SELECT id FROM {table} WHERE fp <-> {q} < {k + 1};\n",
        "hamming": Q + f"SELECT id FROM {table} WHERE hamming_distance(fp, {q}) <= {k};\n",
        "le generic": Q + f"\\set k {k}\nSELECT id FROM {table} WHERE fp <-> {q} <= :k;\n",
        "join": s + f"SELECT count(*) FROM {join_from} JOIN {table} t ON t.fp <-> a.fp <= {k};\n",
        "join bitmap": s + f"SELECT count(*) FROM {join_from} JOIN {table} t ON t.fp <-> a.fp <= {k};\n",
        "join lateral": s + f"SELECT count(*) FROM {join_from}, LATERAL (SELECT 1 FROM {table} t WHERE t.ctid = ANY("
                        f"_simhash_index_probe({indexes}, a.fp, {k})) AND (t.fp <-> a.fp) + 0 <= {k} OFFSET 0) x;\n",
        "seq": Q + f"SELECT id FROM {table} WHERE (fp <-> {q}) + 0 <= {k};\n",
    }


ENV = {
    "le generic": {"PGOPTIONS": "-c plan_cache_mode=force_generic_plan"},
    "join bitmap": {"PGOPTIONS": "-c enable_tidscan=off"},
}
PER_ROW = {"join", "join bitmap", "join lateral"}



def main():
    ap = arguments("query_forms.json", rows=1_000_000, seconds=5, runs=3)
    ap.add_argument("--arrivals", type=int, default=10_000)
    ap.add_argument("--seq-transactions", type=int, default=3)
    ap.add_argument("--ingest-rows", type=int, default=50_000)
    ap.add_argument("--only-copy", action="store_true", help="only the bulk-load part, on the tables of an earlier run")
    ap.add_argument("--skip-ingest", action="store_true", help="every form but the ingest part")
    ap.add_argument("--only-ingest", action="store_true",
                    help="only the ingest part (and pairs between the batch and the table), on the tables of an earlier run")
    ap.add_argument("--skip-pairs", action="store_true", help="in the ingest part, not the pairs between batch and table")
    ap.add_argument("--reuse", action="store_true", help="keep the tables of an earlier run (same --rows)")
    args = ap.parse_args()
    conn = psycopg.connect(DSN, autocommit=True)
    if args.only_copy:
        report = json.loads(Path(args.json).read_text()) if Path(args.json).exists() else {"settings": vars(args), "tables": {}}
        report["copy"] = copy_load(conn, args)
        save(report, args.json)
        print_markdown(report)
        return
    layouts = {"forms4": 3, "forms8": 7}
    if args.only_ingest:
        build_tables(conn, layouts, args.rows, reuse=True)
        report = json.loads(Path(args.json).read_text()) if Path(args.json).exists() else {"settings": vars(args), "tables": {}}
        report["settings"].update(vars(args))
        report["settings"].update({k: conn.execute(f"SHOW {k}").fetchone()[0]
                                   for k in ("server_version", "shared_buffers", "work_mem")})
        report["ingest"] = {table: ingest(conn, table, args) for table in layouts}
        save(report, args.json)
        print_markdown(report)
        return
    build_tables(conn, layouts, args.rows, args.reuse)
    conn.execute("DROP TABLE IF EXISTS arrivals")
    conn.execute(f"CREATE TABLE arrivals AS SELECT row_number() OVER () AS g, fp FROM "
                 f"(SELECT fp FROM forms4 ORDER BY hashint8(id) LIMIT {args.arrivals}) s")
    conn.execute("ANALYZE arrivals")
    settings = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in ("server_version", "shared_buffers", "work_mem")}
    report = {"settings": {**settings, **vars(args)}, "tables": {}}
    for table in layouts:
        for k in (3, 7):
            cases = scripts(table, k, args.arrivals)
            # Plans and exactness first.
            plans = {name: plan_of(conn, sql.split("\n")[-2].replace(":q::int8", "'12345'::int8")
                                   .replace(":k", str(k)).replace(":start", "1"))
                     for name, sql in cases.items() if name not in ("join bitmap", "le generic")}
            brute = conn.execute(f"SELECT count(*) FROM (SELECT fp FROM arrivals WHERE g <= 50) a JOIN {table} t "
                                 f"ON (t.fp <-> a.fp) + 0 <= {k}").fetchone()[0]
            got = conn.execute(f"SELECT count(*) FROM (SELECT fp FROM arrivals WHERE g <= 50) a JOIN {table} t "
                               f"ON t.fp <-> a.fp <= {k}").fetchone()[0]
            lat = {name: [] for name in cases}
            for r in range(args.runs):
                for name, sql in cases.items():
                    if name == "seq":
                        if r == 0:
                            lat[name] += pgbench(sql, DSN, transactions=args.seq_transactions)
                        continue
                    lat[name] += pgbench(sql, DSN, seconds=args.seconds, env_extra=ENV.get(name))
            out = {}
            for name, values in lat.items():
                s = summary(values)
                if name in PER_ROW:
                    s = {**s, "p50_ms_per_outer_row": s["p50_ms"] / 100}
                out[name] = s
            report["tables"][f"{table} k={k}"] = {"results": out, "plans": plans, "join_rows": got,
                                                  "join_rows_brute": brute}
            log(f"{table} k={k}: " + ", ".join(f"{n} {v['p50_ms']:.3f}" for n, v in out.items()))
    if not args.skip_ingest:
        report["ingest"] = {table: ingest(conn, table, args) for table in layouts}
    save(report, args.json)
    print_markdown(report)


def build_tables(conn, layouts, rows, reuse):
    """The planted tables, one per layout (table -> max_k); kept when `reuse` and of `rows` rows."""
    for table, max_k in layouts.items():
        n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] if reuse and conn.execute(
            f"SELECT to_regclass('{table}')").fetchone()[0] else 0
        if n != rows:
            log(f"building {table} ({rows} rows, max_k {max_k})")
            load_planted(conn, table, rows, 0.42, 7)
            conn.execute(f"SELECT simhash_create_index('{table}', 'fp', max_k => {max_k})")
            conn.execute(f"VACUUM ANALYZE {table}")


def ingest(conn, table, args):
    """Seconds for simhash_ingest and for a plain INSERT of the same batch, each rolled back."""
    import time
    conn.execute("DROP TABLE IF EXISTS batch")
    half = args.ingest_rows // 2
    conn.execute(f"""CREATE TABLE batch AS
        SELECT {args.rows} + 1 + g AS id,
               CASE WHEN g < {half}
                    THEN (t.fp::int8 # (1::int8 << (g % 64)) # (CASE WHEN g % 2 = 0 THEN 1::int8 << ((g + 7) % 64) ELSE 0 END))::simhash64
                    ELSE hashtextextended(g::text, 99)::simhash64 END AS fp
          FROM generate_series(0, {args.ingest_rows - 1}) g
          JOIN {table} t ON t.id = 1 + (g * 7919) % {args.rows}""")
    conn.execute("ANALYZE batch")
    out = {"simhash_ingest": [], "plain insert": [], "inserted": None}
    for _ in range(args.runs):
        for name in ("plain insert", "simhash_ingest"):
            conn.execute(f"VACUUM {table}")
            with conn.transaction(force_rollback=True):
                conn.execute("SET LOCAL client_min_messages = warning")
                t = time.perf_counter()
                if name == "plain insert":
                    conn.execute(f"INSERT INTO {table} (id, fp) SELECT id, fp FROM batch")
                else:
                    out["inserted"] = conn.execute(f"SELECT inserted FROM simhash_ingest('{table}', 'fp', 'batch')").fetchone()[0]
                out[name].append(time.perf_counter() - t)
    out["median_s"] = {n: statistics.median(out[n]) for n in ("simhash_ingest", "plain insert")}
    out["ratio"] = out["median_s"]["simhash_ingest"] / out["median_s"]["plain insert"]
    # The pairs between the batch and the table: simhash_pairs_between's hash joins against the
    # join that probes the table's block indexes once per batch row; the same count.
    if args.skip_pairs:
        log(f"ingest {table}: {out['median_s']}, ratio {out['ratio']:.2f}")
        return out
    lat = {"pairs_between": [], "join per row": []}
    counts = {}
    for _ in range(args.runs):
        for name in lat:
            t = time.perf_counter()
            if name == "pairs_between":
                counts[name] = conn.execute(
                    f"SELECT count(*) FROM simhash_pairs_between('batch', 'fp', '{table}', 'fp', 3, 'id', 'id')").fetchone()[0]
            else:
                counts[name] = conn.execute(
                    f"SELECT count(*) FROM batch b JOIN {table} t ON t.fp <-> b.fp <= 3").fetchone()[0]
            lat[name].append(time.perf_counter() - t)
    out["pairs_s"] = {n: statistics.median(v) for n, v in lat.items()}
    out["pairs_count"] = counts
    log(f"ingest {table}: {out['median_s']}, ratio {out['ratio']:.2f}")
    return out


def copy_load(conn, args):
    """Seconds to COPY the 4-block table's rows into a new table: plain then indexed, or indexed first."""
    import time
    out = {"copy then index": [], "copy into indexed": []}
    for _ in range(args.runs):
        for name in out:
            conn.execute("DROP TABLE IF EXISTS loaded")
            conn.execute("CREATE TABLE loaded (id int8 PRIMARY KEY, fp simhash64)")
            conn.execute("SET client_min_messages = warning")
            if name == "copy into indexed":
                conn.execute("SELECT simhash_create_index('loaded', 'fp')")
            t = time.perf_counter()
            with psycopg.connect(DSN, autocommit=True) as src, src.cursor().copy(
                    "COPY (SELECT id, fp FROM forms4) TO STDOUT (FORMAT binary)") as reader:
                with conn.cursor().copy("COPY loaded (id, fp) FROM STDIN (FORMAT binary)") as writer:
                    for chunk in reader:
                        writer.write(chunk)
            copied = time.perf_counter() - t
            if name == "copy then index":
                conn.execute("SELECT simhash_create_index('loaded', 'fp')")
            out[name].append({"copy_s": copied, "total_s": time.perf_counter() - t})
            log(f"{name}: {out[name][-1]}")
    conn.execute("DROP TABLE IF EXISTS loaded")
    return {n: {"copy_s": statistics.median(r["copy_s"] for r in v), "total_s": statistics.median(r["total_s"] for r in v)}
            for n, v in out.items()}


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, {s['rows']} rows, "
          f"{s['runs']} rounds of {s['seconds']} s, medians of p50 latency (ms)\n")
    names = ["near", "le", "lt", "hamming", "le generic", "seq", "join", "join bitmap", "join lateral"]
    print("| table, k | " + " | ".join(names) + " | join rows = brute force |")
    print("|---" * (len(names) + 2) + "|")
    for key, t in report["tables"].items():
        cells = []
        for n in names:
            r = t["results"][n]
            cells.append(f"{r['p50_ms_per_outer_row']:.3f}/row" if "p50_ms_per_outer_row" in r else f"{r['p50_ms']:.3f}")
        print(f"| {key} | " + " | ".join(cells) + f" | {t['join_rows'] == t['join_rows_brute']} ({t['join_rows']}) |")
    if "copy" in report:
        print("\nBulk load of 1M fingerprints (COPY, binary), medians (s):\n")
        print("| order | COPY | COPY + simhash_create_index |")
        print("|---|---|---|")
        for name, r in report["copy"].items():
            print(f"| {name} | {r['copy_s']:.2f} | {r['total_s']:.2f} |")
    if "ingest" in report:
        print(f"\nIngest of {s.get('ingest_rows')} rows (half near-copies), medians of {s['runs']} runs (s):\n")
        print("| table | plain INSERT ... SELECT | simhash_ingest | ratio | rows inserted |")
        print("|---|---|---|---|---|")
        for table, r in report["ingest"].items():
            m = r["median_s"]
            print(f"| {table} | {m['plain insert']:.2f} | {m['simhash_ingest']:.2f} | {r['ratio']:.2f}x | {r['inserted']} |")
        print("\nPairs within 3 bits between the batch and the table, medians (s):\n")
        print("| table | simhash_pairs_between | join probing per batch row | pairs (both) |")
        print("|---|---|---|---|")
        for table, r in report["ingest"].items():
            if "pairs_s" in r:
                p = r["pairs_s"]
                c = r["pairs_count"]
                print(f"| {table} | {p['pairs_between']:.2f} | {p['join per row']:.2f} | {c['pairs_between']} / {c['join per row']} |")


if __name__ == "__main__":
    main()
