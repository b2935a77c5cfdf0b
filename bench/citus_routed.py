"""Routed lookups on a Citus cluster (issue 42) against today's fan-out and one node, side by side.

One machine: a coordinator and two workers (bench/run_citus.sh routed starts them). The same
fingerprints (bench/planted.py: random 64-bit values, 1 % near-copies) go into:

  single   a local table on the coordinator, simhash_create_index (the chooser's layout)
  dist     distributed by id (32 shards), simhash_create_index: each shard probes its own
           block indexes, so a lookup asks every shard (the fan-out)
  routed   distributed by id (32 shards), simhash_create_index(..., routed => true): the routes
           in a table of their own sharded by block value; a lookup asks the shards of its
           probes, then the rows' shards by key

Through the coordinator, pgbench -M prepared, one client, interleaved rounds: the floor
`SELECT fp FROM t WHERE id = $1` on each table, and `simhash_near(fp, $1, k)` for k = 3 and 7
with random query fingerprints. Then: tasks and shards per lookup (citus.log_remote_commands,
planted and random queries), exactness against brute force on single (planted queries), the
write cost per row (one-row INSERT by pgbench; COPY and simhash_ingest of a batch), bytes, and
the build times. Prints Markdown; raw numbers go to bench/results/citus_routed.json.

With --writes: after the load and the indexes, only writes (one-row statements by pgbench,
batches of --write-rows rows by one statement each) on the routed table itself and through its
view, against one node and the fan-out, and whether every row still has its routes after them
(bench/results/citus_routed_writes.json).
"""
import io
import random
import re
import statistics
import time

import psycopg

from index_lookup import pgbench, planted_queries, summary
from pg import arguments, log, save
from planted import load_planted

TABLES = ("single", "dist", "routed")
FLOOR = "\\set id random(1, {rows})\nSELECT fp FROM {table} WHERE id = :id;\n"
NEAR = ("\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
        "SELECT id FROM {table} WHERE simhash_near(fp, :q::int8::simhash64, {k});\n")
# One new row per transaction, ids far above the loaded ones (a clash is one in billions).
INSERT = ("\\set id random(4000000000, 9000000000000000000)\n\\set hi random(0, 4294967295)\n"
          "\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
          "INSERT INTO {target} (id, fp) VALUES (:id, :q::int8::simhash64);\n")


def remote_commands(conn, sql):
    """The commands Citus sends to the workers for `sql`: (tasks, distinct shards)."""
    sent = []
    handler = lambda d: sent.append(d.message_primary)  # noqa: E731
    conn.add_notice_handler(handler)
    conn.execute("SET citus.log_remote_commands = on")
    conn.execute("SET client_min_messages = log")
    conn.execute(sql).fetchall()
    conn.execute("RESET client_min_messages")
    conn.execute("RESET citus.log_remote_commands")
    conn.remove_notice_handler(handler)
    tasks = [m for m in sent if m.startswith("issuing SELECT")]
    shards = {s for m in tasks for s in re.findall(r"\b(?:routed|routed_fp_routes|dist)_(\d{6,})\b", m)}
    return len(tasks), len(shards)


def timed(conn, sql, runs):
    times = []
    for _ in range(runs):
        t = time.time()
        conn.execute(sql)
        times.append(time.time() - t)
    return statistics.median(times), times


# What one task costs on a worker, run there directly (pgbench against worker 1, on one shard it
# holds): the inputs of the throughput model in BENCHMARKS.md.
TASKS = {
    "router task (by id)": "\\set id random(1, {rows})\nSELECT fp FROM {dist} WHERE id = :id;\n",
    "fan-out task, k = 3": NEAR.replace("{table}", "{dist}").replace("{k}", "3"),
    "fan-out task, k = 7": NEAR.replace("{table}", "{dist}").replace("{k}", "7"),
    "route task, k = 3": NEAR.split("SELECT")[0] + "SELECT r.key FROM {routes} r WHERE r.route = ANY (_simhash_route_probes(:q::int8::simhash64, 3, {m}, 1, 2147483647)) "
                         "AND NOT (hamming_distance(r.fp, :q::int8::simhash64) > 3);\n",
    "route task, k = 7": NEAR.split("SELECT")[0] + "SELECT r.key FROM {routes} r WHERE r.route = ANY (_simhash_route_probes(:q::int8::simhash64, 7, {m}, 1, 2147483647)) "
                         "AND NOT (hamming_distance(r.fp, :q::int8::simhash64) > 7);\n",
}


def task_costs(args, conn):
    """p50 of one task of each kind on worker 1 (port 9701), the shards it holds, interleaved."""
    worker = args.dsn.replace("port=9700", "port=9701")
    shard = lambda t: conn.execute(  # noqa: E731
        "SELECT s.logicalrelid::text || '_' || s.shardid FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid) "
        f"WHERE s.logicalrelid = '{t}'::regclass AND p.nodeport = 9701 ORDER BY s.shardid LIMIT 1").fetchone()[0]
    names = {"dist": shard("dist"), "routes": shard("routed_fp_routes"),
             "m": conn.execute("SELECT blocks FROM _simhash_routed_layout('routed')").fetchone()[0]}
    lat = {k: [] for k in TASKS}
    for r in range(args.runs):
        for name, script in TASKS.items():
            log(f"round {r + 1}: {name}")
            lat[name] += pgbench(script.format(rows=args.rows, **names), worker, seconds=args.seconds)
    return {"shards": names, "p50_ms": {k: summary(v)["p50_ms"] for k, v in lat.items()}}


def lookup_shape(k, m, rows):
    """Probes and expected index entries of a lookup within k on m blocks of `rows` random
    fingerprints (the pigeonhole probes of src/core/probe.rs: radius k // m for the first
    k % m + 1 blocks, one less for the others)."""
    from math import comb
    widths = [64 // m + (1 if i < 64 % m else 0) for i in range(m)]
    probes = entries = 0
    for i, w in enumerate(widths):
        r = k // m if i <= k % m else k // m - 1
        if r < 0:
            continue
        ball = sum(comb(w, j) for j in range(r + 1))
        probes += ball
        entries += ball * rows / 2 ** w
    return probes, entries


def throughput_model(r, rows=1e9, workers=32, cores=8, k=3):
    from math import comb
    """Lookups per second of a cluster of `workers` nodes of `cores` cores each, every node
    coordinating (Citus lets clients connect to any node), from the costs measured here:
    worker CPU per lookup = tasks x the task's fixed cost + entries read x the cost of one entry;
    coordinator CPU per lookup = what a lookup costs the coordinator here beyond its tasks."""
    t = r["task_costs"]["p50_ms"]
    L = r["lookups"]
    # Measured inputs (ms): a fan-out task (index probe on a 312,000-row shard, few entries), a
    # route task at k = 3 and k = 7, the floor's router task; the entries each route task read.
    m_here = r["routed_blocks"]
    _, e3 = lookup_shape(3, m_here, r["rows"])
    _, e7 = lookup_shape(7, m_here, r["rows"])
    route_shards = 2  # one per worker here; each route task read about half of the probes' entries
    entry = (t["route task, k = 7"] - t["route task, k = 3"]) / ((e7 - e3) / route_shards)
    route_fixed = t["route task, k = 3"] - e3 / route_shards * entry
    fan_fixed = t["fan-out task, k = 3"]
    coord_floor = L["floor dist"]["p50_ms"] - t["router task (by id)"]
    coord_fan_task = (L["near3 dist"]["p50_ms"] - coord_floor - 16 * fan_fixed) / 32
    coord_routed = L["near3 routed"]["p50_ms"] - t["route task, k = 3"]
    inputs = {"entry_us": entry * 1000, "route_task_fixed_ms": route_fixed, "fanout_task_ms": fan_fixed,
              "coordinator_floor_ms": coord_floor, "coordinator_per_fanout_task_ms": coord_fan_task,
              "coordinator_routed_ms": coord_routed}
    out = []
    for label, m, shards, routed in (("fan-out, 32 shards, 4 blocks per shard", 4, 32, False),
                                     ("fan-out, 128 shards, 4 blocks per shard", 4, 128, False),
                                     ("fan-out, 32 shards, 3 blocks per shard", 3, 32, False),
                                     ("routed, 4 blocks", 4, workers, True),
                                     ("routed, 3 blocks", 3, workers, True),
                                     ("routed, 2 blocks", 2, workers, True),
                                     ("routed, keys of 3 of 6 blocks (not built)", 6, workers, True)):
        if m == 6:
            # Manku et al.'s tables at k = 3: a key of each 3 of 6 blocks (about 32 bits), probed
            # exactly: C(6, 3) = 20 routes, each about rows / 2^32 entries.
            probes, entries = comb(6, 3), comb(6, 3) * rows / 2 ** 32
        else:
            probes, entries = lookup_shape(k, m, rows)
        if routed:
            tasks = shards * (1 - (1 - 1 / shards) ** probes)  # distinct shards of routes asked
            worker = tasks * route_fixed + entries * entry
            coordinator = coord_routed + max(0.0, tasks - 2) * coord_fan_task
        else:
            tasks = shards
            worker = shards * (fan_fixed + probes * 0.002) + entries * entry  # 2 us a descent
            coordinator = coord_floor + shards * coord_fan_task
        per_s = workers * cores * 1000 / (worker + coordinator)
        out.append({"layout": label, "tasks": tasks, "entries": entries, "worker_ms": worker,
                    "coordinator_ms": coordinator, "lookups_per_s": per_s})
    return {"rows": rows, "workers": workers, "cores": cores, "k": k, "inputs": inputs, "layouts": out}


def main():
    ap = arguments("citus_routed.json", rows=10_000_000, seconds=10, runs=3)
    ap.add_argument("--dsn", default="host=127.0.0.1 port=9700 dbname=simhash_citus_bench user=postgres")
    ap.add_argument("--write-rows", type=int, default=10_000, help="rows per COPY batch")
    ap.add_argument("--ingest-rows", type=int, default=1_000, help="rows per simhash_ingest batch")
    ap.add_argument("--tasks-only", action="store_true",
                    help="only the per-task costs on worker 1, on the tables a run left (added to --json)")
    ap.add_argument("--writes", action="store_true",
                    help="load and index, then only writes: one-row and batch INSERT, UPDATE and DELETE, COPY, on the "
                         "routed table itself and through its view, against one node and the fan-out (to citus_routed_writes.json)")
    ap.add_argument("--bulk", type=int, default=0,
                    help="load and index, then only bulk writes of this many rows by one statement each: COPY, UPDATE of "
                         "fp and DELETE, on the routed table against the fan-out (to citus_routed_bulk.json; issue 52)")
    ap.add_argument("--lookups", action="store_true",
                    help="load and index, then only the exactness check and the pgbench lookups against the floor "
                         "(to citus_routed_lookups.json)")
    ap.add_argument("--pairs", action="store_true",
                    help="load and index, then only all pairs at k = 3: through the routes, joined on the workers, "
                         "on the coordinator and on one node (to citus_routed_pairs.json)")
    args = ap.parse_args()
    conn = psycopg.connect(args.dsn, autocommit=True)
    if args.tasks_only:
        import json
        from pathlib import Path
        report = json.loads(Path(args.json).read_text())
        report["task_costs"] = task_costs(args, conn)
        save(report, args.json)
        print_markdown(report)
        return
    rows = args.rows
    report = {"rows": rows, "settings": {
        s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "citus.shard_count")}}
    report["settings"]["citus"] = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()[0]
    report["settings"]["workers"] = conn.execute(
        "SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0").fetchone()[0]

    log(f"loading {rows} rows into single, dist and routed")
    t = time.time()
    load_planted(conn, "single", rows, 0.42, 7)
    report["single_load_s"] = time.time() - t
    for table in ("dist", "routed"):
        conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        conn.execute(f"CREATE TABLE {table} (id int8 PRIMARY KEY, fp simhash64 NOT NULL)")
        conn.execute(f"SELECT create_distributed_table('{table}', 'id', shard_count => 32)")
        t = time.time()
        conn.execute(f"INSERT INTO {table} SELECT * FROM single")
        report[f"{table}_load_s"] = time.time() - t
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    for table, call in (("single", "simhash_create_index('single', 'fp')"),
                        ("dist", "simhash_create_index('dist', 'fp')"),
                        ("routed", "simhash_create_index('routed', 'fp', routed => true)")):
        log(f"indexing {table}")
        t = time.time()
        conn.execute(f"SELECT {call}")
        report[f"{table}_index_build_s"] = time.time() - t
    report["index_notices"] = [n for n in notices if n.startswith("simhash_create_index")]
    for table in ("single", "dist", "routed", "routed_fp_routes"):
        conn.execute(f"VACUUM ANALYZE {table}")
    m = conn.execute("SELECT blocks FROM _simhash_routed_layout('routed')").fetchone()[0]
    report["routed_blocks"] = m
    if args.writes:
        writes_only(args, conn, report)
        return
    if args.bulk:
        bulk_writes(args, conn, report)
        return
    if args.pairs:
        pairs = {}
        for r in range(args.runs):
            for label, table, place in (("one node", "single", "auto"), ("Citus, joined on the workers", "dist", "workers"),
                                        ("Citus, joined on the coordinator", "dist", "coordinator"),
                                        ("Citus, through the routes", "routed", "auto")):
                log(f"round {r + 1}: pairs, {label}")
                conn.execute(f"SET simhash_pg.citus_pairs = {place}")
                t = time.time()
                n = conn.execute(f"SELECT count(*) FROM simhash_pairs('{table}', 'fp', 3, 'id', NULL::int8)").fetchone()[0]
                pairs.setdefault(label, []).append(time.time() - t)
                pairs.setdefault(label + " pairs", n)
        conn.execute("RESET simhash_pg.citus_pairs")
        report["pairs_k3_s"] = pairs
        save(report, args.json.replace("citus_routed.json", "citus_routed_pairs.json"))
        print(f"{rows:,} rows, all pairs at k = 3 (s, median; runs):\n")
        print("| where | pairs | seconds |\n|---|---|---|")
        for label, v in pairs.items():
            if not label.endswith(" pairs"):
                print(f"| {label} | {pairs[label + ' pairs']:,} | {statistics.median(v):.2f} ({', '.join(f'{x:.1f}' for x in v)}) |")
        return

    if args.lookups:
        lookups_only(args, conn, report)
        return

    log("bytes")
    size = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
    report["bytes"] = {
        "single table": size("SELECT pg_table_size('single')"),
        "single block indexes": size("SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = 'single'::regclass AND indexrelid <> 'single_pkey'::regclass"),
        "dist table": size("SELECT citus_table_size('dist')"),
        "dist block indexes": size("SELECT sum(result::int8) FROM run_command_on_shards('dist', "
                                   "$$SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index WHERE indrelid = '%s'::regclass AND NOT indisprimary$$)"),
        "routed table": size("SELECT citus_table_size('routed')"),
        "routes (table and index)": size("SELECT citus_total_relation_size('routed_fp_routes')"),
    }

    log("exactness")
    queries = exactness(conn, rows, report)

    log("tasks per lookup")
    rng = random.Random(7)
    report["tasks"] = {}
    for kind, qs in (("planted", queries[:20]), ("random", [str(rng.getrandbits(64) - (1 << 63)) for _ in range(20)])):
        for k in (3, 7):
            for table in ("dist", "routed"):
                counts = [remote_commands(conn, f"SELECT id FROM {table} WHERE simhash_near(fp, ({q})::int8::simhash64, {k})") for q in qs]
                report["tasks"][f"{table} k={k} {kind}"] = {
                    "tasks_median": statistics.median(c[0] for c in counts), "tasks_max": max(c[0] for c in counts),
                    "shards_median": statistics.median(c[1] for c in counts), "shards_max": max(c[1] for c in counts)}

    log("lookups")
    lookups(args, conn, report, rows)
    save(report, args.json)

    log("writes")
    writes = {}
    targets = {"single": "single", "dist": "dist", "routed": "routed_inserts"}
    ins = {t: [] for t in TABLES}
    for r in range(args.runs):
        for table in TABLES:
            ins[table] += pgbench(INSERT.format(target=targets[table]), args.dsn, seconds=args.seconds)
    writes["insert one row"] = {t: summary(v) for t, v in ins.items()}
    base = 3_000_000_000
    copy = {t: [] for t in TABLES}
    for r in range(args.runs):
        for i, table in enumerate(TABLES):
            first = base + (r * len(TABLES) + i) * args.write_rows
            data = "".join(f"{first + j}\t{rng.getrandbits(64):016x}\n" for j in range(args.write_rows))
            t = time.time()
            with conn.cursor().copy(f"COPY {targets[table]} (id, fp) FROM STDIN") as cp:
                cp.write(data)
            copy[table].append((time.time() - t) / args.write_rows * 1000)
    writes["COPY, ms per row"] = {t: {"median": statistics.median(v), "runs": v} for t, v in copy.items()}
    ingest = {t: [] for t in TABLES}
    for r in range(args.runs):
        for i, table in enumerate(TABLES):
            first = base // 2 + (r * len(TABLES) + i) * args.ingest_rows
            conn.execute("DROP TABLE IF EXISTS staged")
            conn.execute("CREATE TABLE staged (id int8, fp simhash64)")
            data = "".join(f"{first + j}\t{rng.getrandbits(64):016x}\n" for j in range(args.ingest_rows))
            with conn.cursor().copy("COPY staged (id, fp) FROM STDIN") as cp:
                cp.write(data)
            t = time.time()
            conn.execute(f"SELECT * FROM simhash_ingest('{table}', 'fp', 'staged', 3)").fetchall()
            ingest[table].append((time.time() - t) / args.ingest_rows * 1000)
    writes["simhash_ingest k = 3, ms per row"] = {t: {"median": statistics.median(v), "runs": v} for t, v in ingest.items()}
    report["writes"] = writes
    save(report, args.json)
    log("task costs")
    report["task_costs"] = task_costs(args, conn)
    save(report, args.json)
    print_markdown(report)


def exactness(conn, rows, report):
    """Planted queries at k = 3 and 7 on routed against brute force on single."""
    queries = planted_queries(conn, "single", rows, n=50)
    wrong = 0
    for q in queries:
        for k in (3, 7):
            got = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM routed WHERE simhash_near(fp, ({q})::int8::simhash64, {k})").fetchone()[0]
            want = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM single WHERE hamming_distance(fp, ({q})::int8::simhash64) <= {k}").fetchone()[0]
            wrong += got != want
    report["exact"] = {"lookups": len(queries) * 2, "mismatches": wrong}
    log(f"exactness on routed: {wrong} mismatches in {len(queries) * 2} lookups")
    return queries


def lookups(args, conn, report, rows):
    """pgbench -M prepared, interleaved rounds: the floor and k = 3 and 7 on every table."""
    methods = [("floor", t, None) for t in TABLES] + [(f"near{k}", t, k) for k in (3, 7) for t in TABLES]
    lat = {f"{n} {t}": [] for n, t, _ in methods}
    for r in range(args.runs):
        for name, table, k in methods:
            log(f"round {r + 1}: {name} on {table}")
            script = FLOOR.format(rows=rows, table=table) if k is None else NEAR.format(table=table, k=k)
            lat[f"{name} {table}"] += pgbench(script, args.dsn, seconds=args.seconds)
    report["lookups"] = {m: summary(v) for m, v in lat.items()}


def lookups_only(args, conn, report):
    """--lookups: the lookup table of BENCHMARKS.md alone (issue 67: the routed lookup's checks
    that the routes are complete, made per plan, against the 0.71 ms before them)."""
    exactness(conn, args.rows, report)
    lookups(args, conn, report, args.rows)
    save(report, args.json.replace("citus_routed.json", "citus_routed_lookups.json"))
    p50 = lambda m: report["lookups"][m]["p50_ms"]  # noqa: E731
    print(f"{args.rows:,} rows, p50 / p95 (ms), {args.runs} rounds of {args.seconds} s:\n")
    print("| | " + " | ".join(TABLES) + " | routed / single | routed / dist |\n|---|" + "---|" * (len(TABLES) + 2))
    for name in ("floor", "near3", "near7"):
        cells = [f"{report['lookups'][f'{name} {t}']['p50_ms']:.3f} / {report['lookups'][f'{name} {t}']['p95_ms']:.3f}" for t in TABLES]
        print(f"| {name} | " + " | ".join(cells)
              + f" | {p50(f'{name} routed') / p50(f'{name} single'):.1f}x | {p50(f'{name} routed') / p50(f'{name} dist'):.2f}x |")


# Writes on the routed table itself (its statements' changes move into the routes at their end)
# and through its view (row by row), against one node and the fan-out table: one-row statements
# by pgbench, batches by one statement each.
ONE_ROW = {
    "INSERT": INSERT,
    "UPDATE fp": "\\set id random(1, {rows})\nUPDATE {target} SET fp = (fp::int8 # 1)::simhash64 WHERE id = :id;\n",
    "UPDATE other column": "\\set id random(1, {rows})\nUPDATE {target} SET note = 'x' WHERE id = :id;\n",
    "DELETE": "\\set id random(1, {rows})\nDELETE FROM {target} WHERE id = :id;\n",
}
WRITE_TARGETS = (("one node", "single"), ("Citus", "dist"), ("routed, the table", "routed"), ("routed, the view", "routed_inserts"))


def writes_only(args, conn, report):
    rows = args.rows
    rng = random.Random(11)
    for table in TABLES:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS note text")
    # The writers load simhash_pg before their first statement (docs/citus.md, "Routed lookups").
    env = {"PGOPTIONS": "-c session_preload_libraries=simhash_pg"}
    one = {}
    for r in range(args.runs):
        for kind, script in ONE_ROW.items():
            for label, target in WRITE_TARGETS:
                if target == "routed_inserts" and kind != "INSERT":
                    continue  # Citus refuses UPDATE and DELETE on a view
                log(f"round {r + 1}: one-row {kind} on {label}")
                one.setdefault(kind, {}).setdefault(label, []).extend(
                    pgbench(script.format(rows=rows, target=target), args.dsn, seconds=args.seconds, env_extra=env))
    report["one_row_ms"] = {k: {t: summary(v) for t, v in d.items()} for k, d in one.items()}
    batch = {}
    n = args.write_rows
    base = 5_000_000_000
    for r in range(args.runs):
        for i, (label, target) in enumerate(WRITE_TARGETS):
            count = n if target != "routed_inserts" else max(n // 10, 1)  # the view goes row by row
            first = base + (r * len(WRITE_TARGETS) + i) * n
            steps = [("INSERT ... SELECT", f"INSERT INTO {target} (id, fp) SELECT g, hashint8extended(g, 11)::simhash64 "
                                           f"FROM generate_series({first}, {first + count - 1}) g")]
            if target != "routed_inserts":
                steps += [("UPDATE fp", f"UPDATE {target} SET fp = (fp::int8 # 2)::simhash64 WHERE id BETWEEN {first} AND {first + count - 1}"),
                          ("DELETE", f"DELETE FROM {target} WHERE id BETWEEN {first} AND {first + count - 1}")]
            for kind, sql in steps:
                log(f"round {r + 1}: {count} rows, {kind} on {label}")
                with psycopg.connect(args.dsn, autocommit=True, options="-c session_preload_libraries=simhash_pg") as c:
                    t = time.time()
                    c.execute(sql)
                    batch.setdefault(kind, {}).setdefault(label, []).append((time.time() - t) / count * 1000)
            copy_first = base * 2 + (r * len(WRITE_TARGETS) + i) * n
            data = "".join(f"{copy_first + j}\t{rng.getrandbits(64):016x}\n" for j in range(count))
            with psycopg.connect(args.dsn, autocommit=True, options="-c session_preload_libraries=simhash_pg") as c:
                t = time.time()
                with c.cursor().copy(f"COPY {target} (id, fp) FROM STDIN") as cp:
                    cp.write(data)
                batch.setdefault("COPY", {}).setdefault(label, []).append((time.time() - t) / count * 1000)
    report["batch_ms_per_row"] = {k: {t: {"median": statistics.median(v), "runs": v} for t, v in d.items()} for k, d in batch.items()}
    report["exact_after_writes"] = exact_check(conn, rows)
    save(report, args.json.replace("citus_routed.json", "citus_routed_writes.json"))
    labels = [label for label, _ in WRITE_TARGETS]
    print(f"{rows:,} rows, {args.write_rows:,}-row batches ({max(args.write_rows // 10, 1):,} through the view); "
          f"routed layout of {report['routed_blocks']} blocks; {args.runs} interleaved rounds\n")
    print("| one-row statement (p50 / mean ms) | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels))
    for kind, d in report["one_row_ms"].items():
        print(f"| {kind} | " + " | ".join(f"{d[l]['p50_ms']:.3f} / {1000 / d[l]['qps']:.3f}" if l in d else "-" for l in labels) + " |")
    print("\n| batch, ms per row (median) | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels))
    for kind, d in report["batch_ms_per_row"].items():
        print(f"| {kind} | " + " | ".join(f"{d[l]['median']:.4f}" if l in d else "-" for l in labels) + " |")
    e = report["exact_after_writes"]
    print(f"\nafter the writes: {e['rows_without_routes']} rows without their routes, {e['routes_without_rows']} routes "
          f"without their row, {e['changes_left']} changes left")


def bulk_writes(args, conn, report):
    """Statements of args.bulk rows each, as an ETL job writes: COPY of new rows, an UPDATE of their
    fingerprints, a DELETE of them; ms per row, on the fan-out table and the routed one, then
    whether every row still has its routes."""
    n = args.bulk
    rng = random.Random(17)
    env = "-c session_preload_libraries=simhash_pg"
    res = {}
    for r in range(args.runs):
        for table in ("dist", "routed"):
            first = 7_000_000_000 + (r * 2 + (table == "routed")) * n
            data = "".join(f"{first + j}\t{rng.getrandbits(64):016x}\n" for j in range(n))
            with psycopg.connect(args.dsn, autocommit=True, options=env) as c:
                log(f"round {r + 1}: COPY of {n} rows into {table}")
                t = time.time()
                with c.cursor().copy(f"COPY {table} (id, fp) FROM STDIN") as cp:
                    cp.write(data)
                res.setdefault("COPY", {}).setdefault(table, []).append((time.time() - t) / n * 1000)
                for kind, sql in (("UPDATE fp", f"UPDATE {table} SET fp = (fp::int8 # 2)::simhash64 WHERE id BETWEEN {first} AND {first + n - 1}"),
                                  ("DELETE", f"DELETE FROM {table} WHERE id BETWEEN {first} AND {first + n - 1}")):
                    log(f"round {r + 1}: {kind} of {n} rows of {table}")
                    t = time.time()
                    c.execute(sql)
                    res.setdefault(kind, {}).setdefault(table, []).append((time.time() - t) / n * 1000)
    report["bulk_rows"] = n
    report["bulk_ms_per_row"] = {k: {t: {"median": statistics.median(v), "runs": v} for t, v in d.items()} for k, d in res.items()}
    report["exact_after_writes"] = exact_check(conn, args.rows)
    save(report, args.json.replace("citus_routed.json", "citus_routed_bulk.json"))
    print(f"{args.rows:,} rows, statements of {n:,} rows; routed layout of {report['routed_blocks']} blocks; {args.runs} round(s)\n")
    print("| statement of {:,} rows, ms per row | Citus, every shard | Citus, routed |\n|---|---|---|".format(n))
    for kind, d in report["bulk_ms_per_row"].items():
        print(f"| {kind} | {d['dist']['median']:.4f} | {d['routed']['median']:.4f} |")
    e = report["exact_after_writes"]
    print(f"\nafter the writes: {e['rows_without_routes']} rows without their routes, {e['routes_without_rows']} routes "
          f"without their row, {e['changes_left']} changes left")


def exact_check(conn, rows):
    """Every row of routed has its routes and every route its row, after the writes."""
    m = conn.execute("SELECT blocks FROM _simhash_routed_layout('routed')").fetchone()[0]
    conn.execute("DROP TABLE IF EXISTS pg_temp.rows_copy, pg_temp.routes_copy")
    conn.execute("CREATE TEMP TABLE rows_copy AS SELECT id, fp FROM routed")
    conn.execute("CREATE TEMP TABLE routes_copy AS SELECT key, fp, count(*) AS n FROM routed_fp_routes GROUP BY key, fp")
    conn.execute("ANALYZE rows_copy, routes_copy")
    missing = conn.execute(f"SELECT count(*) FROM rows_copy d LEFT JOIN routes_copy r ON r.key = d.id AND r.fp = d.fp "
                           f"WHERE r.n IS DISTINCT FROM {m}").fetchone()[0]
    stale = conn.execute("SELECT count(*) FROM routes_copy r WHERE NOT EXISTS "
                         "(SELECT FROM rows_copy d WHERE d.id = r.key AND d.fp = r.fp)").fetchone()[0]
    left = conn.execute("SELECT count(*) FROM routed_fp_changes").fetchone()[0]
    return {"rows_without_routes": missing, "routes_without_rows": stale, "changes_left": left}


def print_markdown(r):
    s = r["settings"]
    L = r["lookups"]
    print(f"{r['rows']:,} rows; PostgreSQL {s['server_version']}, Citus {s['citus']}, {s['workers']} workers, "
          f"32 shards per table, shared_buffers {s['shared_buffers']} per node; routed layout of {r['routed_blocks']} blocks; "
          f"exact on routed: {r['exact']['mismatches']} mismatches in {r['exact']['lookups']} lookups\n")
    print("| lookup (p50 / p95 ms) | one node | Citus fan-out | Citus routed | routed / one node (p50) | routed / fan-out (p50) |")
    print("|---|---|---|---|---|---|")
    for name in ("floor", "near3", "near7"):
        a, b, c = (L[f"{name} {t}"] for t in TABLES)
        print(f"| {name} | {a['p50_ms']:.3f} / {a['p95_ms']:.3f} | {b['p50_ms']:.3f} / {b['p95_ms']:.3f} | "
              f"{c['p50_ms']:.3f} / {c['p95_ms']:.3f} | {c['p50_ms'] / a['p50_ms']:.1f}x | {c['p50_ms'] / b['p50_ms']:.2f}x |")
    print("\n| tasks / shards per lookup (median, max) | fan-out | routed |")
    print("|---|---|---|")
    for k in (3, 7):
        for kind in ("planted", "random"):
            d, rt = r["tasks"][f"dist k={k} {kind}"], r["tasks"][f"routed k={k} {kind}"]
            print(f"| k = {k}, {kind} queries | {d['tasks_median']}, {d['tasks_max']} / {d['shards_median']}, {d['shards_max']} | "
                  f"{rt['tasks_median']}, {rt['tasks_max']} / {rt['shards_median']}, {rt['shards_max']} |")
    w = r["writes"]
    print("\n| write cost per row (ms) | one node | Citus fan-out | Citus routed |")
    print("|---|---|---|---|")
    print("| INSERT one row (p50) | " + " | ".join(f"{w['insert one row'][t]['p50_ms']:.3f}" for t in TABLES) + " |")
    for key in ("COPY, ms per row", "simhash_ingest k = 3, ms per row"):
        print(f"| {key.split(',')[0]} (median) | " + " | ".join(f"{w[key][t]['median']:.4f}" for t in TABLES) + " |")
    print("\n| bytes | |\n|---|---|")
    for key, v in r["bytes"].items():
        print(f"| {key} | {v / 1e6:,.0f} MB |")
    if "task_costs" in r:
        print("\n| one task on a worker (p50 ms, run there directly) | |\n|---|---|")
        for key, v in r["task_costs"]["p50_ms"].items():
            print(f"| {key} | {v:.3f} |")
    if "task_costs" in r:
        for rows in (1e7, 1e9):
            mdl = throughput_model(r, rows=rows)
            print(f"\nmodel: {rows:,.0f} rows on {mdl['workers']} workers of {mdl['cores']} cores, k = {mdl['k']}, every node "
                  "coordinating; inputs " + ", ".join(f"{k} {v:.4f}" for k, v in mdl["inputs"].items()) + "\n")
            print("| layout | tasks | entries read | worker ms | coordinator ms | lookups/s |\n|---|---|---|---|---|---|")
            for x in mdl["layouts"]:
                print(f"| {x['layout']} | {x['tasks']:.1f} | {x['entries']:,.0f} | {x['worker_ms']:.2f} | "
                      f"{x['coordinator_ms']:.2f} | {x['lookups_per_s']:,.0f} |")
    print("\nbuild (s): " + ", ".join(f"{t} load {r[f'{t}_load_s']:.0f}, index {r[f'{t}_index_build_s']:.0f}" for t in TABLES))


if __name__ == "__main__":
    main()
