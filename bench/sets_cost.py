"""What a set of b fingerprints per text costs (simhash_set): index bytes per row, lookup
latency and all-pairs time, for b = 1, 2, 4, 8, side by side with the primary-key floor.

Data: short synthetic titles, eight pseudo-words of 2-5 hex characters (about 30 characters,
`title_of` below), 1 % of them copies of an earlier title with one character changed. One table
per b: `fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, b, OPTIONS)) STORED`, then
`simhash_create_index(t, 'fps')` (4 covering blocks per fingerprint: k <= 3 by equality, up to
k = 7 by radius-1 probes). With pgbench (prepared statements, one client, interleaved rounds):

  pk          SELECT fps FROM t WHERE id = $1                     (the floor)
  near k      SELECT id FROM t WHERE simhash_near_any(fps, (SELECT fps FROM t WHERE id = $1), k)
              for k = 3, 5, 7: the query is a stored row's set, so every lookup finds itself

and simhash_pairs(t, 'fps', k, 'id') at k = 3 and 6 on the first --pairs-rows rows. Exactness:
for 10 rows, the lookup equals brute force over the elements. Prints Markdown; raw numbers go
to bench/results/sets_cost.json. Usage: bench/.venv/bin/python bench/sets_cost.py [--rows N]
"""
import statistics
import time

import psycopg

from index_lookup import pgbench, summary
from pg import arguments, dsn, log, save

DSN = dsn("simhash_sets")
OPTIONS = '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}'


def build(conn, b, rows, reuse):
    table = f"titles_b{b}"
    load_s = index_s = None
    if reuse and conn.execute(f"SELECT to_regclass('{table}') IS NOT NULL").fetchone()[0]:
        return table, sizes(conn, table, rows, load_s, index_s)
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"""CREATE TABLE {table} (id int8 PRIMARY KEY, title text NOT NULL,
                     fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, {b}, '{OPTIONS}')) STORED)""")
    t = time.time()
    conn.execute(f"""INSERT INTO {table} (id, title)
                     SELECT g, CASE WHEN g % 100 = 0 THEN overlay(title_of(g - 50) PLACING 'z' FROM 3 FOR 1)
                                    ELSE title_of(g) END
                       FROM generate_series(1, {rows}) g""")
    load_s = time.time() - t
    conn.execute(f"VACUUM ANALYZE {table}")
    t = time.time()
    conn.execute(f"SELECT simhash_create_index('{table}', 'fps')")
    index_s = time.time() - t
    conn.execute(f"VACUUM ANALYZE {table}")
    return table, sizes(conn, table, rows, load_s, index_s)


def sizes(conn, table, rows, load_s, index_s):
    heap, blocks, pk = conn.execute(
        f"""SELECT pg_table_size('{table}'),
                   (SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i
                     WHERE i.indrelid = '{table}'::regclass AND NOT i.indisprimary),
                   (SELECT pg_relation_size(i.indexrelid) FROM pg_index i
                     WHERE i.indrelid = '{table}'::regclass AND i.indisprimary)""").fetchone()
    return {"load_s": load_s, "index_s": index_s, "heap_bytes_per_row": heap / rows,
                   "block_index_bytes_per_row": float(blocks) / rows, "pk_bytes_per_row": pk / rows}


def exact(conn, table):
    bad = conn.execute(f"""
        SELECT count(*) FROM (SELECT id, fps FROM {table} ORDER BY id LIMIT 10) q,
          LATERAL (SELECT array_agg(t.id ORDER BY t.id) AS got FROM {table} t WHERE simhash_near_any(t.fps, q.fps, 7)) g,
          LATERAL (SELECT array_agg(t.id ORDER BY t.id) AS want FROM {table} t
                    WHERE (SELECT min(hamming_distance(a, b)) FROM unnest(t.fps, q.fps) u(a, b)) <= 7) w
         WHERE got IS DISTINCT FROM want""").fetchone()[0]
    return bad


def main():
    ap = arguments("sets_cost.json", rows=1_000_000, seconds=10, runs=3)
    ap.add_argument("--pairs-rows", type=int, default=200_000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--pairs-runs", type=int, default=1)
    ap.add_argument("--reuse", action="store_true", help="keep tables of an earlier run (same --rows)")
    args = ap.parse_args()
    conn = psycopg.connect(DSN, autocommit=True)
    conn.execute("""CREATE OR REPLACE FUNCTION title_of(g int) RETURNS text LANGUAGE sql IMMUTABLE
                    AS $$ SELECT string_agg(substr(md5(g || ':' || w), 1, 2 + w % 4), ' ' ORDER BY w)
                            FROM generate_series(1, 8) w $$""")
    report = {"rows": args.rows, "options": OPTIONS, "tables": {}, "lookups": {}, "pairs": {},
              "server": conn.execute("SHOW server_version").fetchone()[0]}
    tables = {}
    for b in args.sizes:
        log(f"b = {b}: load and index {args.rows} rows")
        table, info = build(conn, b, args.rows, args.reuse)
        info["mismatches_of_10_lookups_at_k7"] = exact(conn, table)
        tables[b] = table
        report["tables"][b] = info
    scripts = {"pk": "\\set id random(1, {rows})\nSELECT fps FROM {table} WHERE id = :id;\n"}
    for k in (3, 5, 7):
        scripts[f"near{k}"] = ("\\set id random(1, {rows})\nSELECT id FROM {table} "
                               "WHERE simhash_near_any(fps, (SELECT s.fps FROM {table} s WHERE s.id = :id), " + str(k) + ");\n")
    lat = {(b, name): [] for b in args.sizes for name in scripts}
    for r in range(args.runs):
        for b in args.sizes:
            for name, script in scripts.items():
                log(f"round {r + 1}: b = {b}, {name}")
                lat[(b, name)] += pgbench(script.format(rows=args.rows, table=tables[b]), DSN, seconds=args.seconds)
    for (b, name), v in lat.items():
        report["lookups"].setdefault(b, {})[name] = summary(v)
    for b in args.sizes:
        conn.execute(f"DROP TABLE IF EXISTS pairs_b{b}")
        conn.execute(f"CREATE TABLE pairs_b{b} AS SELECT id, title FROM {tables[b]} WHERE id <= {args.pairs_rows}")
        conn.execute(f"ALTER TABLE pairs_b{b} ADD COLUMN fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, {b}, '{OPTIONS}')) STORED")
        conn.execute(f"VACUUM ANALYZE pairs_b{b}")
        for k in (3, 6):
            log(f"pairs: b = {b}, k = {k}")
            times, count = [], None
            for _ in range(args.pairs_runs):
                t = time.time()
                count = conn.execute(f"SELECT count(*) FROM simhash_pairs('pairs_b{b}', 'fps', {k}, 'id')").fetchone()[0]
                times.append(time.time() - t)
            report["pairs"].setdefault(b, {})[k] = {"median_s": statistics.median(times), "runs_s": times, "pairs": count}
    save(report, args.json)
    print_markdown(report, args)


def print_markdown(r, args):
    print(f"{r['rows']:,} short titles per table (PostgreSQL {r['server']}), options {r['options']}; "
          f"pgbench -M prepared, 1 client, {args.runs} rounds of {args.seconds} s, medians of per-round p50\n")
    print("| b | block indexes (B/row) | heap (B/row) | near3 p50 ms | near5 p50 ms | near7 p50 ms | pk p50 ms | near7 / pk | "
          f"pairs k=3 at {args.pairs_rows:,} rows (s) | pairs k=6 (s) | exact (k=7, 10 lookups vs brute force) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for b, t in r["tables"].items():
        lk = r["lookups"][b]
        pr = r["pairs"][b]
        print(f"| {b} | {t['block_index_bytes_per_row']:.0f} | {t['heap_bytes_per_row']:.0f} | "
              f"{lk['near3']['p50_ms']:.3f} | {lk['near5']['p50_ms']:.3f} | {lk['near7']['p50_ms']:.3f} | "
              f"{lk['pk']['p50_ms']:.3f} | {lk['near7']['p50_ms'] / lk['pk']['p50_ms']:.1f}x | "
              f"{pr[3]['median_s']:.1f} ({pr[3]['pairs']:,} pairs) | {pr[6]['median_s']:.1f} ({pr[6]['pairs']:,}) | "
              f"{t['mismatches_of_10_lookups_at_k7']} mismatches |")


if __name__ == "__main__":
    main()
