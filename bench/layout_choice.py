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
queries per table and k against a sequential scan. Prints Markdown; raw numbers in
bench/results/layout_choice.json. Run through bench/run_layout_choice.sh.
"""
import statistics

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


def main():
    ap = arguments("layout_choice.json", report=True, rows=[1_000_000], seconds=4, runs=2)
    ap.add_argument("--blocks", default="2,3,4,5,6,7,8", help="comma-separated permuted block counts")
    ap.add_argument("--ks", default=",".join(str(k) for k in range(13)), help="comma-separated k (= max_k)")
    ap.add_argument("--queries", type=int, default=100, help="planted queries for the exactness check")
    args = ap.parse_args()
    if reprinted(args, print_markdown):
        return
    conn = psycopg.connect(DSN, autocommit=True)
    blocks = [int(b) for b in args.blocks.split(",")]
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
        conn.execute(f"DROP TABLE {base}")
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
                for m in blocks:
                    lat = pgbench(SCRIPTS["near"].format(table=tables[m], k=k), DSN, seconds=args.seconds)
                    record(runs, r, f"m={m} k={k}", lat)
        report["tables"].append({"rows": rows, "blocks": blocks, "ks": ks, "built": {str(m): b for m, b in built.items()},
                                 "chosen": {str(k): m for k, m in chosen.items()}, "exact": {str(m): v for m, v in exact.items()},
                                 "runs": runs})
        save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, simhash_pg {s['simhash_pg']}; pgbench -M prepared, 1 client; medians over rounds.\n")
    for t in report["tables"]:
        runs, blocks = t["runs"], t["blocks"]
        med = lambda name: statistics.median(r["p50_ms"] for r in runs[name])  # noqa: E731
        pk = med("pk")
        bytes_of = {m: t["built"][str(m)]["index_bytes_per_row"] for m in blocks}
        print(f"### {t['rows']:,} rows: p50 ms of `simhash_near(fp, $1, k)` by permuted block count\n")
        print("| k | " + " | ".join(f"m = {m}" for m in blocks) + " | chosen m | chosen / best | bytes / smallest as fast | chosen / primary key |")
        print("|---:|" + "---:|" * len(blocks) + "---:|---:|---:|---:|")
        worst = 0.0
        for k in t["ks"]:
            p = {m: med(f"m={m} k={k}") for m in blocks}
            best = min(p.values())
            c = t["chosen"][str(k)]
            cells = " | ".join(f"**{p[m]:.3f}**" if m == c else f"{p[m]:.3f}" for m in blocks)
            if c in p:
                as_fast = [bytes_of[m] for m in blocks if p[m] <= p[c]]
                worst = max(worst, p[c] / best)
                print(f"| {k} | {cells} | {c} | {p[c] / best:.2f}x | {bytes_of[c] / min(as_fast):.2f}x | {p[c] / pk:.1f}x |")
            else:
                print(f"| {k} | {cells} | {c} (not measured) | | | |")
        print(f"\nPrimary key `id = $1`: p50 {pk:.3f} ms. Chosen layout at most {worst:.2f}x the best measured lookup.\n")
        print("| m | index bytes per row | build s | mismatches (all k) |")
        print("|---:|---:|---:|---:|")
        for m in blocks:
            b = t["built"][str(m)]
            print(f"| {m} | {b['index_bytes_per_row']:.1f} | {b['build_s']:.1f} | {t['exact'][str(m)]} |")
        print()


if __name__ == "__main__":
    main()
