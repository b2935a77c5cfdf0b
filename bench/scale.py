"""How lookup cost grows with the table (issue 53): 1M, 10M and 100M rows, one table per size.

Each size is one table `scale_<rows>` (`planted.load_planted`: random fingerprints, 1 % near-copies
of earlier rows, int8 primary key), kept between runs (`--reload` makes it again). On it, each
layout of `--blocks` (permuted block counts) is built in turn by `simhash_create_index(t, 'fp',
blocks => m)`, which drops the one before: only one layout is on disk at a time, as a user has it,
so the numbers say what that layout costs alone, its indexes warm or not as the memory allows (the
report gives the bytes beside shared_buffers). Per layout: build seconds and index bytes per row;
then `--runs` rounds, each timing the primary-key floor `SELECT id, fp FROM t WHERE id = $1` and
`simhash_near(fp, $1, k)` for each k of `--ks` back to back (pgbench -M prepared, one client,
`--seconds` a run, a fresh random query a transaction), after a warm-up run of each. The ratio of
a round is its lookup over its own floor; the report gives medians over the rounds, and the pages
each transaction read from outside shared buffers (`pg_statio_user_tables`: the cache state).
`--pin both` times every run twice, as it comes and with pgbench and its backend on one CPU
(`pg.one_cpu`: the round trip of a cross-CPU wake-up on this virtual machine varies by 3x between
runs); `--prewarm` reads the table, its primary key and the layout into shared buffers first;
`--reuse` times the layout the table has when it is the one asked, without building it again. The layout
the model builds (`_simhash_layout_to_build(k, rows, true)`) and what it predicts (descents,
entries) sit beside the measured ones. Exactness: `--queries` planted queries at the largest k,
against one sequential scan each, for every layout.

Prints Markdown; raw numbers in bench/results/scale.json (after each layout, so a run that stops
keeps what it has). Run through bench/run_scale.sh.
"""
import statistics
import time

import psycopg

from index_lookup import pgbench, planted_queries, record
from layouts import SCRIPTS
from pg import arguments, dsn, log, one_cpu, reprinted, save, server
from planted import load_planted

DSN = dsn("simhash_scale")


def ensure_table(conn, rows, reload):
    """scale_<rows>, loaded once (seconds to load and index the key, or None when kept)."""
    table = f"scale_{rows}"
    have = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]
    if have and not reload and conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0] == rows:
        return table, None
    log(f"loading {rows:,} rows into {table}")
    t = time.time()
    conn.execute("SET maintenance_work_mem = '2GB'")
    load_planted(conn, table, rows, 0.42, 7)
    conn.execute(f"VACUUM (ANALYZE, FREEZE) {table}")
    return table, time.time() - t


def brute(conn, table, queries, k):
    """{query: [(id, distance)]} of the rows within k bits, one sequential scan each."""
    return {q: conn.execute(f"SELECT id, hamming_distance(fp, %s::int8::simhash64) FROM {table} "
                            f"WHERE hamming_distance(fp, %s::int8::simhash64) + 0 <= {k}", (q, q)).fetchall()
            for q in queries}


def mismatches(conn, table, truth, ks):
    """(query, k) pairs whose lookup differs from the sequential scan's answer."""
    bad = 0
    for q, within in truth.items():
        for k in ks:
            got = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM {table} WHERE simhash_near(fp, %s::int8::simhash64, {k})",
                               (q,)).fetchone()[0] or []
            bad += got != sorted(i for i, d in within if d <= k)
    return bad


def family(m):
    """(blocks, key_blocks) of a layout named `MxC` (the family of keys of C of M blocks), or None
    for a block count."""
    if "x" not in m:
        return None
    blocks, keys = m.split("x")
    return int(blocks), int(keys)


def built_already(conn, table, m):
    """Whether `table`'s only layout on fp is m (for --reuse)."""
    rows = conn.execute("SELECT blocks, key_blocks, permuted, complete FROM simhash_index_report(%s::regclass) "
                        "WHERE column_name = 'fp'", (table,)).fetchall()
    want = family(m) or (int(m), 1)
    return len(rows) == 1 and (rows[0][0], rows[0][1]) == want and rows[0][2] and rows[0][3]


def build(conn, table, rows, m, reuse=False):
    """Layout m on `table`, alone (a call with blocks => m keeps other layouts, so they are
    dropped first): seconds and index bytes per row. `MxC` is a family of keys of C of M blocks
    (`key_blocks => C`), alone too. With `reuse`, a table that has layout m already keeps it
    (build seconds None)."""
    if reuse and built_already(conn, table, m):
        log(f"{table} has layout {m}: kept")
        return sizes(conn, table, rows, None)
    conn.execute("SET maintenance_work_mem = '2GB'")
    conn.execute("SET client_min_messages = warning")
    conn.execute(f"SELECT simhash_drop_index('{table}', 'fp')")
    t = time.time()
    if family(m):
        blocks, keys = family(m)
        conn.execute(f"SELECT simhash_create_index('{table}', 'fp', blocks => {blocks}, key_blocks => {keys})")
    else:
        conn.execute(f"SELECT simhash_create_index('{table}', 'fp', blocks => {m})")
    build_s = time.time() - t
    conn.execute(f"ANALYZE {table}")
    return sizes(conn, table, rows, build_s)


def sizes(conn, table, rows, build_s):
    """A layout's build seconds and index bytes (all indexes but the primary key), per row too."""
    index_bytes = conn.execute(
        f"SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = '{table}'::regclass AND NOT indisprimary"
    ).fetchone()[0]
    return {"build_s": build_s, "index_bytes": int(index_bytes), "index_bytes_per_row": int(index_bytes) / rows}


def pages_read(conn, table):
    """Pages of `table` and its indexes read from outside shared buffers so far. (Pages the leaf
    map pins through ReadRecentBuffer count neither as read nor as hit, so hits are not used.)"""
    conn.execute("SELECT pg_stat_clear_snapshot()")
    return conn.execute("SELECT coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0) FROM pg_statio_user_tables "
                        "WHERE relid = %s::regclass", (table,)).fetchone()[0]


def timed(conn, table, script, seconds, env_extra=None):
    """One pgbench run's latencies, and the pages each of its transactions read from outside
    shared buffers."""
    before = pages_read(conn, table)
    lat = pgbench(script, DSN, seconds=seconds, env_extra=env_extra)
    time.sleep(0.5)  # pgbench's backend sends its statistics as it exits
    return lat, (pages_read(conn, table) - before) / max(1, len(lat))


def prewarm(conn, table):
    """Reads `table`, its primary key and every index of it into shared buffers; the bytes read
    and shared_buffers' bytes."""
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    rels = [table] + [r[0] for r in conn.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s::regclass",
                                                 (table,))]
    for rel in rels:
        conn.execute("SELECT pg_prewarm(%s::regclass)", (rel,))
    total = sum(conn.execute("SELECT pg_relation_size(%s::regclass)", (rel,)).fetchone()[0] for rel in rels)
    pool = conn.execute("SELECT setting::int8 * 8192 FROM pg_settings WHERE name = 'shared_buffers'").fetchone()[0]
    log(f"prewarmed {total / 2**30:.2f} GB into {pool / 2**30:.2f} GB of shared buffers")
    return {"bytes": total, "shared_buffers_bytes": pool}


def model(conn, k, rows):
    """What `simhash_create_index(t, 'fp', max_k => k)` builds at `rows` rows, and its modelled cost."""
    r = conn.execute("SELECT blocks, descents, entries FROM _simhash_layout_to_build(%s, %s, true)", (k, float(rows))).fetchone()
    return {"blocks": r[0], "descents": r[1], "entries": r[2]}


def main():
    ap = arguments("scale.json", report=True, rows=[1_000_000, 10_000_000, 100_000_000], seconds=5, runs=3)
    ap.add_argument("--blocks", default="2,3,4,5", help="comma-separated permuted block counts, and families of "
                    "keys of several blocks as MxC (keys of C of M blocks: 5x2 is ten indexes)")
    ap.add_argument("--ks", default="0,3,5,7", help="comma-separated k")
    ap.add_argument("--queries", type=int, default=20, help="planted queries for the exactness check, per size")
    ap.add_argument("--reload", action="store_true", help="load the tables again even when they are there")
    ap.add_argument("--windows", default="", help="comma-separated windows (blocks per probed key) also timed on each "
                    "layout with more blocks, through simhash_pg.probe_window (the default runs let each lookup choose)")
    ap.add_argument("--pin", choices=("off", "on", "both"), default="off", help="pgbench and its backend on one CPU "
                    "(--cpu): off, on, or both (each run twice; 'one CPU' rows)")
    ap.add_argument("--cpu", type=int, default=0, help="the CPU of --pin")
    ap.add_argument("--prewarm", action="store_true", help="read the table, its primary key and the layout into "
                    "shared buffers (pg_prewarm) before the rounds")
    ap.add_argument("--reuse", action="store_true", help="keep a layout the table has already (no drop, no build)")
    ap.add_argument("--ingest", type=int, default=0, help="also time simhash_ingest of this many rows (half near-copies "
                    "of rows of the table, half new) into each layout at k = 3, against a plain INSERT of the same rows, "
                    "each rolled back (bench/query_forms.py's ingest)")
    args = ap.parse_args()
    if reprinted(args, print_markdown):
        return
    conn = psycopg.connect(DSN, autocommit=True)
    blocks = [b.strip() for b in args.blocks.split(",") if b.strip()]
    ks = [int(k) for k in args.ks.split(",")]
    windows = [int(w) for w in args.windows.split(",") if w.strip()]
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "jit")}
    settings["simhash_pg"] = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'").fetchone()[0]
    settings["memory_gb"] = round(int(open("/proc/meminfo").read().split()[1]) / 2**20, 1)
    report = {"settings": settings, "seconds": args.seconds, "tables": []}
    for rows in args.rows:
        table, load_s = ensure_table(conn, rows, args.reload)
        entry = {"rows": rows, "load_s": load_s, "ks": ks, "blocks": blocks, "layouts": {},
                 "heap_bytes": conn.execute(f"SELECT pg_table_size('{table}')").fetchone()[0],
                 "pk_bytes": conn.execute(f"SELECT pg_relation_size('{table}_pkey')").fetchone()[0],
                 "chosen": {str(k): model(conn, k, rows) for k in ks}}
        report["tables"].append(entry)
        log(f"== {rows:,} rows; the model builds", entry["chosen"])
        queries = planted_queries(conn, table, rows, n=args.queries)
        truth = brute(conn, table, queries, max(ks))
        for m in blocks:
            log(f"-- {rows:,} rows, m = {m}")
            built = build(conn, table, rows, m, args.reuse)
            log(built)
            built["mismatches"] = mismatches(conn, table, truth, ks)
            if args.prewarm:
                built["prewarmed"] = prewarm(conn, table)
            runs = {}
            for name, script in [("pk", SCRIPTS["pk"].format(rows=rows, table=table))] + \
                    [(f"k={k}", SCRIPTS["near"].format(table=table, k=k)) for k in ks]:
                pgbench(script, DSN, seconds=max(2, args.seconds // 2))  # warm-up
            forced = [w for w in windows if not family(m) and w < int(m)]
            pins = {"off": [None], "on": [args.cpu], "both": [None, args.cpu]}[args.pin]

            def run(r, name, script, env_extra=None):
                for cpu in pins:
                    with one_cpu(conn, cpu):
                        lat, reads = timed(conn, table, script, args.seconds, env_extra)
                    label = name if cpu is None else f"{name} one CPU"
                    record(runs, r, label, lat)
                    runs[label][-1]["pages_read"] = reads

            for r in range(args.runs):
                run(r, "pk", SCRIPTS["pk"].format(rows=rows, table=table))
                for k in ks:
                    run(r, f"k={k}", SCRIPTS["near"].format(table=table, k=k))
                    for w in forced:
                        run(r, f"k={k} w={w}", SCRIPTS["near"].format(table=table, k=k),
                            {"PGOPTIONS": f"-c simhash_pg.probe_window={w}"})
            if args.ingest:
                from argparse import Namespace
                from query_forms import ingest
                built["ingest"] = ingest(conn, table, Namespace(ingest_rows=args.ingest, rows=rows, runs=args.runs,
                                                                skip_pairs=True))
            built["windows"] = forced
            built["runs"] = runs
            if family(m):
                built["model"] = {str(k): dict(zip(("descents", "entries"), conn.execute(
                    "SELECT descents, entries FROM _simhash_keyed_to_build(%s, %s, %s, %s)", (k, float(rows)) + family(m)).fetchone()
                    or (None, None))) for k in ks}
            else:
                built["model"] = {str(k): dict(zip(("descents", "entries"), conn.execute(
                    "SELECT descents, entries FROM _simhash_layout_to_build(%s, %s, true, %s)", (k, float(rows), int(m))).fetchone()))
                    for k in ks}
            entry["layouts"][str(m)] = built
            save(report, args.json)
    print_markdown(report)


def ratios(lookups, floors):
    """The lookup over the floor, round by round, by p50 and by mean: medians over the rounds. (At
    100M rows the floor's p50 flips between a page in shared buffers and one in the OS cache, as
    the heap and indexes outgrow shared_buffers; the mean weighs both.)"""
    p50 = statistics.median(a["p50_ms"] / b["p50_ms"] for a, b in zip(lookups, floors))
    mean = statistics.median(b["qps"] / a["qps"] for a, b in zip(lookups, floors))
    return f"{p50:.1f}x / {mean:.1f}x"


def reads(runs):
    """"; N pages read": the median over rounds of the pages a transaction read from outside shared
    buffers, when recorded."""
    if not all("pages_read" in r for r in runs):
        return ""
    return f"; {statistics.median(r['pages_read'] for r in runs):.1f} pages read"


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, {s.get('memory_gb', '?')} GB of memory, simhash_pg {s['simhash_pg']}; pgbench -M prepared, "
          f"1 client, {report.get('seconds')} s a run; medians over rounds. 'one CPU': pgbench and its backend pinned "
          f"to one CPU; 'pages read': per transaction, from outside shared buffers.\n")
    for t in report["tables"]:
        rows, ks = t["rows"], t["ks"]
        names = [str(m) for m in t["blocks"] if str(m) in t["layouts"]]
        if not names:
            continue
        gb = lambda b: b / 2**30  # noqa: E731
        print(f"### {rows:,} rows: heap {gb(t['heap_bytes']):.2f} GB, primary key {gb(t['pk_bytes']):.2f} GB\n")
        print("| permuted m (MxC: keys of C of M blocks) | index GB | bytes / row | build s | mismatches | primary key ms | "
              + " | ".join(f"k = {k}: p50 ms (x floor by p50 / mean)" for k in ks) + " |")
        print("|---:|---:|---:|---:|---:|---:|" + "---:|" * len(ks))
        for n in names:
            lay = t["layouts"][n]
            runs = lay["runs"]
            for cpu in ("", " one CPU"):
                if f"pk{cpu}" not in runs:
                    continue
                floor = runs[f"pk{cpu}"]
                pk = statistics.median(r["p50_ms"] for r in floor)
                cells = []
                for k in ks:
                    ms = statistics.median(r["p50_ms"] for r in runs[f"k={k}{cpu}"])
                    chosen = str(t["chosen"][str(k)]["blocks"]) == n
                    cell = f"{ms:.3f} ({ratios(runs[f'k={k}{cpu}'], floor)}{reads(runs[f'k={k}{cpu}'])})"
                    cells.append(f"**{cell}**" if chosen else cell)
                build_s = "kept" if lay["build_s"] is None else f"{lay['build_s']:.0f}"
                warm = ", prewarmed" if lay.get("prewarmed") else ""
                print(f"| {n}{cpu}{warm} | {gb(lay['index_bytes']):.2f} | {lay['index_bytes_per_row']:.1f} | {build_s} | "
                      f"{lay['mismatches']} | {pk:.3f}{reads(floor)} | " + " | ".join(cells) + " |")
        for n in names:
            lay = t["layouts"][n]
            for w in lay.get("windows", []):
                runs = lay["runs"]
                cells = []
                for k in ks:
                    ms = statistics.median(r["p50_ms"] for r in runs[f"k={k} w={w}"])
                    cells.append(f"{ms:.3f} ({ratios(runs[f'k={k} w={w}'], runs['pk'])})")
                print(f"| {n}, window {w} | | | | | | " + " | ".join(cells) + " |")
        print("\nBold: the layout `simhash_create_index(t, 'fp', max_k => k)` builds at this size. "
              "The model's cost of each (B-tree descents, index entries read):\n")
        print("| permuted m | " + " | ".join(f"k = {k}" for k in ks) + " |")
        print("|---:|" + "---|" * len(ks))
        for n in names:
            mod = t["layouts"][n].get("model", {})
            cells = [f"{mod[str(k)]['descents']:,} / {mod[str(k)]['entries']:,.0f}"
                     if mod.get(str(k), {}).get("descents") is not None else "-" for k in ks]
            print(f"| {n} | " + " | ".join(cells) + " |")
        print()
        ingests = [(n, t["layouts"][n]["ingest"]) for n in names if t["layouts"][n].get("ingest")]
        if ingests:
            print("`simhash_ingest` at k = 3 against a plain `INSERT ... SELECT` of the same batch (half near-copies), "
                  "each rolled back, medians (s):\n")
            print("| permuted m | plain INSERT s | simhash_ingest s | ratio | rows inserted |")
            print("|---:|---:|---:|---:|---:|")
            for n, ing in ingests:
                med = ing["median_s"]
                print(f"| {n} | {med['plain insert']:.2f} | {med['simhash_ingest']:.2f} | {ing['ratio']:.2f}x | "
                      f"{ing['inserted']:,} |")
            print()


if __name__ == "__main__":
    main()
