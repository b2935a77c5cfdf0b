"""simhash_pg on a Citus cluster against the same rows on one node, side by side.

One machine: a coordinator and two workers (bench/run_citus.sh starts them). The same
fingerprints (bench/planted.py: random 64-bit values, 1 % near-copies) go into a local table on
the coordinator (`single`, one node) and into a table distributed by id over the two workers
(`dist`, 32 shards); `simhash_create_index` (4 covering blocks) on both. Then, through the
coordinator, pgbench with prepared statements, one client, interleaved rounds:

  pk       SELECT ... WHERE id = $1                (router query on dist: the floor)
  near3    WHERE simhash_near(fp, $1, 3)           (multi-shard on dist: every shard probes)
  near7    WHERE simhash_near(fp, $1, 7)

and the time of simhash_pairs / simhash_chained_groups (k = 3, key column id) on both, on dist once
with the joins on the coordinator and once on the workers (simhash_pg.citus_pairs), with the
steps of the workers' run (its DEBUG messages: repartition, ANALYZE, join). Where a
distributed lookup's time goes: the coordinator's planning time, the whole execution, and the
slowest task's own execution time (EXPLAIN ANALYZE with citus.explain_all_tasks). Exactness of
near3 / near7 on dist is checked against the sequential scan of single on planted queries.
Prints Markdown; raw numbers go to bench/results/citus_lookup.json.
"""
import re
import statistics
import time

import psycopg

from index_lookup import SCRIPTS, pgbench, planted_queries, summary
from pg import arguments, log, save
from planted import load_planted



def timed(conn, sql, runs):
    """Median and all wall times (s) of `sql` over `runs` runs."""
    times = []
    for _ in range(runs):
        t = time.time()
        conn.execute(sql).fetchall()
        times.append(time.time() - t)
    return {"median_s": statistics.median(times), "runs_s": times}


def where_time_goes(conn, q, k):
    """Coordinator planning and execution time of one distributed lookup, and its slowest task."""
    conn.execute("SET citus.explain_all_tasks = on")
    lines = [r[0] for r in conn.execute(
        f"EXPLAIN (ANALYZE, TIMING) SELECT id FROM dist WHERE simhash_near(fp, ({q})::int8::simhash64, {k})")]
    conn.execute("RESET citus.explain_all_tasks")
    text = "\n".join(lines)
    planning = [float(x) for x in re.findall(r"^\s*Planning Time: ([0-9.]+) ms", text, re.M)]
    execution = [float(x) for x in re.findall(r"^\s*Execution Time: ([0-9.]+) ms", text, re.M)]
    # The first Planning/Execution pair is the coordinator's (it comes last in the text); the
    # others belong to the tasks.
    return {
        "coordinator_planning_ms": planning[-1] if planning else None,
        "coordinator_execution_ms": execution[-1] if execution else None,
        "tasks": len(execution) - 1,
        "slowest_task_execution_ms": max(execution[:-1]) if len(execution) > 1 else None,
        "median_task_execution_ms": statistics.median(execution[:-1]) if len(execution) > 1 else None,
        "median_task_planning_ms": statistics.median(planning[:-1]) if len(planning) > 1 else None,
    }


def main():
    ap = arguments("citus_lookup.json", rows=1_000_000, seconds=10, runs=3)
    ap.add_argument("--dsn", default="host=127.0.0.1 port=9700 dbname=simhash_citus_bench user=postgres")
    ap.add_argument("--skip-lookups", action="store_true", help="all pairs only")
    args = ap.parse_args()
    conn = psycopg.connect(args.dsn, autocommit=True)
    report = {"rows": args.rows, "settings": {
        s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "citus.shard_count")}}
    report["settings"]["citus"] = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()[0]
    report["settings"]["workers"] = conn.execute("SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0").fetchone()[0]

    log(f"loading {args.rows} rows into single and dist")
    load_planted(conn, "single", args.rows, 0.42, 7)
    conn.execute("DROP TABLE IF EXISTS dist")
    conn.execute("CREATE TABLE dist (id int8 PRIMARY KEY, fp simhash64 NOT NULL)")
    conn.execute("SELECT create_distributed_table('dist', 'id')")
    t = time.time()
    conn.execute("INSERT INTO dist SELECT * FROM single")
    report["dist_load_s"] = time.time() - t
    for table in ("single", "dist"):
        t = time.time()
        conn.execute(f"SELECT simhash_create_index('{table}', 'fp')")
        report[f"{table}_index_build_s"] = time.time() - t
        conn.execute(f"VACUUM ANALYZE {table}")

    # Exact on dist: the same rows as the sequential scan of single, on planted queries.
    queries = planted_queries(conn, "single", args.rows, n=50)
    wrong = 0
    for q in queries:
        for k in (3, 7):
            got = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM dist WHERE simhash_near(fp, ({q})::int8::simhash64, {k})").fetchone()[0]
            want = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM single WHERE hamming_distance(fp, ({q})::int8::simhash64) <= {k}").fetchone()[0]
            wrong += got != want
    report["exact"] = {"queries": len(queries) * 2, "mismatches": wrong}
    log(f"exactness on dist: {wrong} mismatches in {len(queries) * 2} lookups")

    if not args.skip_lookups:
        methods = [(name, table) for name in ("pk", "near3", "near7") for table in ("single", "dist")]
        lat = {f"{n} {t}": [] for n, t in methods}
        pg = args.dsn
        for r in range(args.runs):
            for name, table in methods:
                log(f"round {r + 1}: {name} on {table}")
                lat[f"{name} {table}"] += pgbench(SCRIPTS[name].format(rows=args.rows, table=table), pg, seconds=args.seconds)
        report["lookups"] = {m: summary(v) for m, v in lat.items()}
        report["where_time_goes"] = {f"k={k}": where_time_goes(conn, queries[0], k) for k in (3, 7)}

    report["etl"] = {}
    for fn in ("simhash_pairs", "simhash_chained_groups"):
        for table, place in (("single", None), ("dist", "coordinator"), ("dist", "workers")):
            name = f"{fn} {table}" + (f" ({place})" if place else "")
            log(name)
            conn.execute(f"SET simhash_pg.citus_pairs = {place or 'auto'}")
            report["etl"][name] = timed(conn, f"SELECT count(*) FROM {fn}('{table}', 'fp', 3, 'id', NULL::int8)", args.runs)
    # The steps of one run on the workers, from its DEBUG messages.
    steps = []
    conn.add_notice_handler(lambda d: steps.append(d.message_primary))
    conn.execute("SET simhash_pg.citus_pairs = workers")
    conn.execute("SET client_min_messages = debug1")
    conn.execute("SELECT count(*) FROM simhash_pairs('dist', 'fp', 3, 'id', NULL::int8)").fetchall()
    conn.execute("RESET client_min_messages")
    conn.execute("RESET simhash_pg.citus_pairs")
    report["etl"]["steps on the workers"] = [m for m in steps if m.startswith("simhash_pairs:")]
    # What simhash_pairs does first on a Citus table: every (id, fp) into an intermediate result.
    report["etl"]["read (id, fp) of dist to the coordinator"] = timed(
        conn, "WITH s AS MATERIALIZED (SELECT id, fp FROM dist) SELECT count(*) FROM s", args.runs)

    save(report, args.json)
    print_markdown(report)


def print_markdown(r):
    s = r["settings"]
    print(f"{r['rows']:,} rows; PostgreSQL {s['server_version']}, Citus {s['citus']}, {s['workers']} workers, "
          f"{s['citus.shard_count']} shards, shared_buffers {s['shared_buffers']} per node; "
          f"exact on dist: {r['exact']['mismatches']} mismatches in {r['exact']['queries']} lookups\n")
    if "lookups" in r:
        print("| lookup | one node p50 / p95 (ms) | Citus p50 / p95 (ms) | Citus / one node (p50) |")
        print("|---|---|---|---|")
        for name in ("pk", "near3", "near7"):
            a, b = r["lookups"][f"{name} single"], r["lookups"][f"{name} dist"]
            print(f"| {name} | {a['p50_ms']:.3f} / {a['p95_ms']:.3f} | {b['p50_ms']:.3f} / {b['p95_ms']:.3f} | "
                  f"{b['p50_ms'] / a['p50_ms']:.1f}x |")
        print()
        print("| where a Citus lookup's time goes | k = 3 | k = 7 |")
        print("|---|---|---|")
        w3, w7 = r["where_time_goes"]["k=3"], r["where_time_goes"]["k=7"]
        for key, label in (("coordinator_planning_ms", "coordinator planning (ms)"),
                           ("coordinator_execution_ms", "coordinator execution, all tasks (ms)"),
                           ("median_task_planning_ms", "one task's planning on its shard, median (ms)"),
                           ("median_task_execution_ms", "one task's execution on its shard, median (ms)"),
                           ("slowest_task_execution_ms", "slowest task (ms)"), ("tasks", "tasks")):
            print(f"| {label} | {round(w3[key], 3)} | {round(w7[key], 3)} |")
        print()
    e = r["etl"]
    print("| all pairs, k = 3 (s, median; runs) | one node | Citus, joined on the coordinator | Citus, joined on the workers |")
    print("|---|---|---|---|")
    for fn in ("simhash_pairs", "simhash_chained_groups"):
        cells = [e[f"{fn} {n}"] for n in ("single", "dist (coordinator)", "dist (workers)")]
        print(f"| {fn} | " + " | ".join(
            f"{c['median_s']:.2f} ({', '.join(f'{x:.1f}' for x in c['runs_s'])})" for c in cells) + " |")
    print("\nsteps of one run on the workers:\n")
    for m in e["steps on the workers"]:
        print(f"- {m}")
    print(f"\nreading (id, fp) of dist to the coordinator: {r['etl']['read (id, fp) of dist to the coordinator']['median_s']:.2f} s; "
          f"index build: one node {r['single_index_build_s']:.1f} s, Citus {r['dist_index_build_s']:.1f} s")


if __name__ == "__main__":
    main()
