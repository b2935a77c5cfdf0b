"""What `simhash_create_index(tbl, 'fp', max_k => K)` builds, against every permuted block count.

One table per block count m (2..8 by default: `--blocks`), each a copy of the same planted rows
(`planted.load_planted`: random fingerprints, 1 % near-copies, int8 primary key), indexed with
`simhash_create_index(t, 'fp', blocks => m)` (permuted, the default form). For each k of `--ks`
(default 0..12), pgbench (prepared statements, one client, `--seconds` per run, `--runs`
interleaved rounds) times `simhash_near(fp, $1, k)` with a fresh random query per transaction on
every table, beside the primary-key floor `SELECT id, fp FROM t WHERE id = $1` on the same table.
The layout the function chooses for max_k = k at this size (`_simhash_layout_to_build`, the
function's own choice) is then read off the grid: its lookup against the best measured one, and
its index bytes against the smallest layout that is at least as fast. Exactness: 100 planted
queries per table and k against a sequential scan. Block-column candidates (`--columns`,
default 4 and 8: 8 is what 0.3.0 built for max_k = 7) are timed beside them. Then a join of
`--join-probes` random fingerprints at k = `--join-k` against each table (`--join-runs` runs,
median): the ETL form of a lookup. Prints Markdown; raw numbers in
bench/results/layout_choice.json. Run through bench/run_layout_choice.sh.
"""
import statistics
import time

import psycopg

from index_lookup import pgbench, planted_queries, record
from layouts import SCRIPTS, build
from pg import arguments, dsn, log, reprinted, save, server
from planted import load_planted

DSN = dsn("simhash_lookup")


def check_exact(conn, tables, queries, ks):
    """{m: mismatches} over every query and k, against one sequential scan per query."""
    any_table = next(iter(tables.values()))
    bad = {m: 0 for m in tables}
    for q in queries:
        brute = conn.execute(
            f"SELECT id, hamming_distance(fp, %s::int8::simhash64) FROM {any_table} "
            f"WHERE hamming_distance(fp, %s::int8::simhash64) + 0 <= {max(ks)}", (q, q)).fetchall()
        for m, table in tables.items():
            for k in ks:
                got = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM {table} WHERE simhash_near(fp, %s::int8::simhash64, {k})",
                                   (q,)).fetchone()[0] or []
                bad[m] += got != sorted(i for i, d in brute if d <= k)
    return bad


def time_join(conn, table, probes, k, runs):
    """Median seconds of one join of the `probes` table against `table` at k, and its pairs."""
    times, found = [], None
    for _ in range(runs):
        t = time.time()
        found = conn.execute(f"SELECT count(*) FROM {probes} p JOIN {table} t ON simhash_near(t.fp, p.fp, {k})").fetchone()[0]
        times.append(time.time() - t)
    return {"s": statistics.median(times), "pairs": found}


def main():
    ap = arguments("layout_choice.json", report=True, rows=[1_000_000], seconds=4, runs=2)
    ap.add_argument("--blocks", default="2,3,4,5,6,7,8", help="comma-separated permuted block counts")
    ap.add_argument("--ks", default=",".join(str(k) for k in range(13)), help="comma-separated k (= max_k)")
    ap.add_argument("--queries", type=int, default=100, help="planted queries for the exactness check")
    ap.add_argument("--columns", default="4,8", help="comma-separated block-column counts timed beside them ('' for none)")
    ap.add_argument("--join-probes", type=int, default=1000, help="fingerprints joined against each table")
    ap.add_argument("--join-k", type=int, default=7)
    ap.add_argument("--join-runs", type=int, default=3)
    args = ap.parse_args()
    if reprinted(args, print_markdown):
        return
    conn = psycopg.connect(DSN, autocommit=True)
    blocks = [int(b) for b in args.blocks.split(",")]
    columns = [int(b) for b in args.columns.split(",") if b.strip()]
    ks = [int(k) for k in args.ks.split(",")]
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "jit")}
    settings["simhash_pg"] = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'").fetchone()[0]
    report = {"settings": settings, "tables": []}
    for rows in args.rows:
        base = f"choice_{rows}"
        log(f"== {rows} rows")
        load_planted(conn, base, rows, 0.42, 7)
        tables, built = {}, {}
        for m in blocks:
            tables[m], built[m] = build(conn, base, rows, f"permuted m={m}")
            log(f"m={m}", built[m])
        for m in columns:
            tables[f"c{m}"], built[f"c{m}"] = build(conn, base, rows, f"columns m={m}")
            log(f"columns m={m}", built[f"c{m}"])
        conn.execute(f"DROP TABLE {base}")
        probes = f"{base}_probes"
        conn.execute(f"DROP TABLE IF EXISTS {probes}")
        conn.execute(f"CREATE TABLE {probes} AS SELECT ((floor(random() * 4294967296)::int8 << 32) "
                     f"| floor(random() * 4294967296)::int8)::simhash64 AS fp FROM generate_series(1, {args.join_probes})")
        conn.execute(f"ANALYZE {probes}")
        joins = {str(m): time_join(conn, t, probes, args.join_k, args.join_runs) for m, t in tables.items()}
        log("joins", joins)
        chosen = {k: conn.execute("SELECT blocks FROM _simhash_layout_to_build(%s, %s, true)", (k, float(rows))).fetchone()[0]
                  for k in ks}
        log("chosen", chosen)
        exact = check_exact(conn, tables, planted_queries(conn, tables[blocks[0]], rows, n=args.queries), ks)
        log("exactness", exact)
        runs = {}
        first = tables[blocks[0]]
        for r in range(args.runs):
            record(runs, r, "pk", pgbench(SCRIPTS["pk"].format(rows=rows, table=first), DSN, seconds=args.seconds))
            for k in ks:
                for m in tables:
                    lat = pgbench(SCRIPTS["near"].format(table=tables[m], k=k), DSN, seconds=args.seconds)
                    record(runs, r, f"m={m} k={k}", lat)
        report["tables"].append({"rows": rows, "blocks": blocks, "columns": columns, "ks": ks, "joins": joins, "join_k": args.join_k,
                                 "built": {str(m): b for m, b in built.items()},
                                 "chosen": {str(k): m for k, m in chosen.items()}, "exact": {str(m): v for m, v in exact.items()},
                                 "runs": runs})
        save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, simhash_pg {s['simhash_pg']}; pgbench -M prepared, 1 client; medians over rounds.\n")
    for t in report["tables"]:
        runs, blocks, columns = t["runs"], t["blocks"], t.get("columns", [])
        med = lambda name: statistics.median(r["p50_ms"] for r in runs[name])  # noqa: E731
        pk = med("pk")
        names = [str(m) for m in blocks] + [f"c{m}" for m in columns]
        label = {n: (f"m = {n}" if not n.startswith("c") else f"columns {n[1:]}") for n in names}
        bytes_of = {n: t["built"][n]["index_bytes_per_row"] for n in names}
        print(f"### {t['rows']:,} rows: p50 ms of `simhash_near(fp, $1, k)` by layout (m = permuted block count; "
              "chosen: what `max_k => k` builds)\n")
        print("| k | " + " | ".join(label[n] for n in names)
              + " | chosen m | chosen / best | bytes / smallest as fast | chosen / primary key | chosen at k = 3 / best at k = 3 |")
        print("|---:|" + "---:|" * len(names) + "---:|---:|---:|---:|---:|")
        at3 = {n: med(f"m={n} k=3") for n in names} if 3 in t["ks"] else {}
        worst = worst_bytes = 0.0
        for k in t["ks"]:
            p = {n: med(f"m={n} k={k}") for n in names}
            best = min(p.values())
            c = str(t["chosen"][str(k)])
            cells = " | ".join(f"**{p[n]:.3f}**" if n == c else f"{p[n]:.3f}" for n in names)
            if c in p:
                as_fast = [bytes_of[n] for n in names if p[n] <= p[c]]
                worst = max(worst, p[c] / best)
                worst_bytes = max(worst_bytes, bytes_of[c] / min(as_fast))
                k3 = f"{at3[c] / min(at3.values()):.2f}x" if at3 else ""
                print(f"| {k} | {cells} | {c} | {p[c] / best:.2f}x | {bytes_of[c] / min(as_fast):.2f}x | {p[c] / pk:.1f}x | {k3} |")
            else:
                print(f"| {k} | {cells} | {c} (not measured) | | | | |")
        print(f"\nPrimary key `id = $1`: p50 {pk:.3f} ms. The chosen layout is at most {worst:.2f}x the best measured "
              f"lookup, and at most {worst_bytes:.2f}x the bytes of the smallest layout as fast.\n")
        joins = t.get("joins", {})
        print(f"| layout | index bytes per row | build s | mismatches (all k) | join of probes at k = {t.get('join_k')} (s) | pairs |")
        print("|---|---:|---:|---:|---:|---:|")
        for n in names:
            b, j = t["built"][n], joins.get(n, {})
            js = f"{j['s']:.3f}" if j else ""
            print(f"| {label[n]} | {b['index_bytes_per_row']:.1f} | {b['build_s']:.1f} | {t['exact'][n]} | {js} | {j.get('pairs', '')} |")
        print()


if __name__ == "__main__":
    main()
