"""Block-index layouts side by side: bytes per row and lookup latency at equal rows.

Three tables hold the same fingerprints (`planted.load_planted`: random, 1 % near-copies, int8
primary key), each indexed one way:

  columns     simhash_create_index(tbl, 'fp', blocks => 4, permuted => false): four generated block columns, covering B-tree
              indexes (block) INCLUDE (fp) (the 0.2.0 layout)
  permuted    simhash_create_index(tbl, 'fp', permuted => true): four B-trees on
              _simhash_permute(fp, i, 4), no columns
  permuted m=3, m=2   the same with blocks => 3 or 2: fewer, smaller indexes; k = 3 then
              probes each block within 1 bit (22 or 33 ranges per block instead of one);
              --layouts picks others (permuted m=5, m=8, ...: more, narrower blocks)
  ... via view  the columns and permuted tables read through a view owned by another role, so
              the lookup takes the BitmapOr form (block columns' equality, or the key ranges of
              the permuted indexes) instead of the probe
  bk-tree     the SP-GiST BK-tree of pg-spgist_hamming (bktree_ops on fp::int8), the other exact
              radius index for PostgreSQL; only when the `bktree` extension is installed
              (built from https://github.com/fake-name/pg-spgist_hamming, see BENCHMARKS.md)

Then pgbench (prepared statements, one client, `--seconds` per run, `--runs` interleaved rounds)
times the primary-key floor `SELECT id, fp FROM t WHERE id = $1` and `simhash_near(fp, $1, k)`
(k = 3, 7) on each layout with a fresh random query per transaction (`fp::int8 <@ (q, k)` on the
BK-tree). Exactness: 200 planted queries per layout and k against a sequential scan. Prints
Markdown; raw numbers in bench/results/layouts.json.
"""
import statistics
import time

import psycopg

from index_lookup import pgbench, planted_queries, record
from pg import arguments, dsn, log, plan_of, reprinted, save, server
from planted import load_planted

DSN = dsn("simhash_lookup")

QUERY = "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
SCRIPTS = {
    "pk": "\\set id random(1, {rows})\nSELECT id, fp FROM {table} WHERE id = :id;\n",
    "near": QUERY + "SELECT id FROM {table} WHERE simhash_near(fp, :q::int8::simhash64, {k});\n",
    "bk": QUERY + "SELECT id FROM {table} WHERE fp::int8 <@ (:q::int8, {k})::bktree_area;\n",
}


def build(conn, base, rows, layout):
    """The table of `layout` (a copy of `base`'s rows), its build time and index bytes per row."""
    table = f"{base}_{layout.replace('-', '').replace(' ', '').replace('=', '')}"
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id int8 PRIMARY KEY, fp simhash64 NOT NULL)")
    conn.execute(f"INSERT INTO {table} SELECT id, fp FROM {base} ORDER BY id")
    conn.execute(f"VACUUM ANALYZE {table}")
    before = conn.execute(f"SELECT pg_table_size('{table}')").fetchone()[0]
    conn.execute("SET maintenance_work_mem = '1GB'")
    t = time.time()
    if layout.startswith("columns"):
        blocks = int(layout.split("m=")[1]) if "m=" in layout else 4
        conn.execute(f"SELECT simhash_create_index('{table}', 'fp', blocks => {blocks}, permuted => false)")
    elif layout.startswith("permuted"):
        blocks = int(layout.split("m=")[1]) if "m=" in layout else 4
        conn.execute(f"SELECT simhash_create_index('{table}', 'fp', blocks => {blocks}, permuted => true)")
    else:
        conn.execute(f"CREATE INDEX {table}_bk ON {table} USING spgist ((fp::int8) bktree_ops)")
    build_s = time.time() - t
    conn.execute(f"VACUUM ANALYZE {table}")
    after = conn.execute(f"SELECT pg_table_size('{table}')").fetchone()[0]
    index_bytes = conn.execute(
        f"SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = '{table}'::regclass AND NOT indisprimary"
    ).fetchone()[0]
    return table, {
        "build_s": build_s,
        "column_bytes_per_row": (after - before) / rows,
        "index_bytes_per_row": int(index_bytes) / rows,
    }


def through_view(conn, table):
    """A view of `table` owned by another role (simhash_bench_viewer), so that a lookup through it
    runs with the owner's rights: the probe may not, and the planner takes the BitmapOr form (on
    block columns, or on the key ranges of permuted indexes)."""
    conn.execute("""DO $$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'simhash_bench_viewer') THEN
            CREATE ROLE simhash_bench_viewer;
        END IF; END $$""")
    view = f"{table}_v"
    conn.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT id, fp FROM {table}")
    conn.execute(f"GRANT SELECT ON {table} TO simhash_bench_viewer")
    conn.execute(f"ALTER VIEW {view} OWNER TO simhash_bench_viewer")
    return view


def check_exact(conn, table, layout, queries, ks=(3, 7)):
    """{k: (queries, mismatches, rows found)} against a sequential scan."""
    out = {}
    for q in queries:
        brute = conn.execute(
            f"SELECT id, hamming_distance(fp, %s::int8::simhash64) FROM {table} "
            f"WHERE hamming_distance(fp, %s::int8::simhash64) + 0 <= {max(ks)}", (q, q)).fetchall()
        for k in ks:
            where = (f"fp::int8 <@ (%s::int8, {k})::bktree_area" if layout == "bk-tree"
                     else f"simhash_near(fp, %s::int8::simhash64, {k})")
            got = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM {table} WHERE {where}", (q,)).fetchone()[0] or []
            want = sorted(i for i, d in brute if d <= k)
            n, bad, found = out.get(k, (0, 0, 0))
            out[k] = (n + 1, bad + (got != want), found + len(got))
    return out


def main():
    ap = arguments("layouts.json", report=True, rows=[1_000_000, 10_000_000], seconds=10, runs=3)
    ap.add_argument("--no-bktree", action="store_true")
    ap.add_argument("--no-views", action="store_true", help="leave out the lookups through a view (the BitmapOr form)")
    ap.add_argument("--layouts", default="columns,permuted,permuted m=3,permuted m=2",
                    help="comma-separated layouts beside the BK-tree: columns, permuted, permuted m=N (columns is always built: "
                         "it names the planted queries)")
    args = ap.parse_args()
    if reprinted(args, print_markdown):
        return
    conn = psycopg.connect(DSN, autocommit=True)
    layouts = ["columns"] + [l.strip() for l in args.layouts.split(",") if l.strip() and l.strip() != "columns"]
    if not args.no_bktree:
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'bktree'").fetchone():
            conn.execute("CREATE EXTENSION IF NOT EXISTS bktree")
            layouts.append("bk-tree")
        else:
            log("bktree extension not installed: the BK-tree is left out")
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "jit")}
    settings["simhash_pg"] = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'").fetchone()[0]
    report = {"settings": settings, "tables": []}
    for rows in args.rows:
        base = f"layouts_{rows}"
        log(f"== {rows} rows")
        load_planted(conn, base, rows, 0.42, 7)
        tables, built, exact = {}, {}, {}
        for layout in layouts:
            tables[layout], built[layout] = build(conn, base, rows, layout)
            log(layout, built[layout])
        conn.execute(f"DROP TABLE {base}")
        plans = {}
        if not args.no_views:
            for layout in ("columns", "permuted"):
                name = f"{layout} via view"
                tables[name], built[name] = through_view(conn, tables[layout]), built[layout]
                plans[name] = plan_of(conn, f"SELECT id FROM {tables[name]} WHERE simhash_near(fp, '0123456789abcdef', 3)")
                log(name, plans[name].splitlines()[0])
        layouts_here = list(tables)
        queries = planted_queries(conn, tables["columns"], rows)
        for layout in layouts_here:
            exact[layout] = check_exact(conn, tables[layout], layout, queries)
            log(layout, "exactness", exact[layout])
        runs = {}
        for r in range(args.runs):
            for name, layout, k in [("pk", "columns", 0)] + [(f"{l} k={k}", l, k) for k in (3, 7) for l in layouts_here]:
                script = SCRIPTS["pk" if name == "pk" else "bk" if layout == "bk-tree" else "near"]
                lat = pgbench(script.format(rows=rows, table=tables[layout], k=k), DSN, seconds=args.seconds)
                record(runs, r, name, lat)
        report["tables"].append({"rows": rows, "built": built, "exact": exact, "runs": runs, "plans": plans})
        save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, simhash_pg "
          f"{s['simhash_pg']}; pgbench -M prepared, 1 client; medians over rounds.\n")
    for t in report["tables"]:
        runs = t["runs"]
        med = lambda name, key: statistics.median(r[key] for r in runs[name])  # noqa: E731
        pk = med("pk", "p50_ms")
        print(f"### {t['rows']:,} rows\n")
        print("| layout | index + column bytes/row | build s | k = 3 p50 ms | / primary key | k = 7 p50 ms | / primary key | exact (k = 3, 7) |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for layout, b in t["built"].items():
            ex = {int(k): v for k, v in t["exact"][layout].items()}
            p3, p7 = med(f"{layout} k=3", "p50_ms"), med(f"{layout} k=7", "p50_ms")
            total = b["index_bytes_per_row"] + b["column_bytes_per_row"]
            print(f"| {layout} | {b['index_bytes_per_row']:.1f} + {b['column_bytes_per_row']:.1f} = {total:.1f} | {b['build_s']:.0f} | "
                  f"{p3:.3f} | {p3 / pk:.2f}x | {p7:.3f} | {p7 / pk:.2f}x | "
                  f"{ex[3][1]} / {ex[7][1]} mismatches in {ex[3][0]} queries |")
        print(f"\nPrimary key `id = $1`: p50 {pk:.3f} ms.\n")
        for name, plan in t.get("plans", {}).items():
            print(f"Plan of `simhash_near(fp, q, 3)` {name}: {plan.splitlines()[0].strip()}, "
                  f"{', '.join(l.strip() for l in plan.splitlines() if 'Index Scan' in l)}.\n")


if __name__ == "__main__":
    main()
