"""All near pairs in PostgreSQL (simhash_pairs, simhash_chained_groups) against seomoz's find_all.

For each size: random unique 64-bit fingerprints, 1 % of the rows replaced by near-copies of
earlier rows (1..3 random bit flips; exact duplicates removed, so a pair of rows is a pair of
distinct values and both tools can be compared value for value), an int8 primary key. Then, in
the same session, interleaved over --runs rounds:

  simhash_pairs('t', 'fp', 3, 'id')      wall time (CREATE TEMP TABLE AS), temp bytes spilled
  simhash_chained_groups('t', 'fp', 3, 'id')   wall time
  seomoz find_all(hashes, blocks, 3)     wall time and peak RSS of a fresh process holding only
                                         the hashes (simhash-pybind, C++), in bench/.venv-seomoz
  brute force self-join                  only at --brute-max-rows (a nested loop: quadratic)

The pair sets are compared as sets of (smaller fp, larger fp). Prints Markdown; raw numbers go
to bench/results/etl_pairs.json.
"""
import json
import statistics
import subprocess
import threading
import time
from pathlib import Path

import psycopg

from pg import RESULTS, arguments, dsn, log, reprinted, save, server
from planted import load_planted

DSN = dsn("simhash_etl")
HERE = Path(__file__).resolve().parent
SEOMOZ_PY = HERE / ".venv-seomoz" / "bin" / "python"

# Runs in the seomoz venv: reads unsigned hashes (one per line) from a file, times find_all.
SEOMOZ_CHILD = r"""
import json, resource, sys, time, simhash
hashes = [int(x) for x in open(sys.argv[1])]
blocks, k = int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()
pairs = simhash.find_all(hashes, blocks, k)
elapsed = time.perf_counter() - t
with open(sys.argv[4], "w") as out:
    for a, b in pairs:
        out.write(f"{min(a, b)} {max(a, b)}\n")
print(json.dumps({"seconds": elapsed, "pairs": len(pairs),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def build_table(conn, table, rows):
    t = time.time()
    load_planted(conn, table, rows, 0.17, 3)
    conn.execute(f"DELETE FROM {table} a USING {table} b WHERE a.fp = b.fp AND a.id > b.id")
    conn.execute(f"VACUUM ANALYZE {table}")
    n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    return {"rows": n, "load_s": time.time() - t}


def temp_bytes(conn):
    return conn.execute("SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()").fetchone()[0]


def rss_anon_mb(pid):
    """The private memory of a process now (RssAnon), in MB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_pairs(conn, table):
    conn.execute("DROP TABLE IF EXISTS pg_temp.p")
    before = temp_bytes(conn)
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    peak, done = [rss_anon_mb(pid)], threading.Event()

    def sample():
        while not done.wait(0.1):
            peak.append(rss_anon_mb(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    t = time.perf_counter()
    conn.execute(f"CREATE TEMP TABLE p AS SELECT * FROM simhash_pairs('{table}', 'fp', 3, 'id')")
    elapsed = time.perf_counter() - t
    done.set()
    sampler.join()
    time.sleep(0.6)  # the statistics collector reports temp files with a delay
    n = conn.execute("SELECT count(*) FROM pg_temp.p").fetchone()[0]
    return {"seconds": elapsed, "pairs": n, "temp_mb": (temp_bytes(conn) - before) / 2**20,
            "backend_peak_rss_anon_mb": max(peak)}


def pg_pair_set(conn, table):
    rows = conn.execute(
        f"""SELECT least(x.fp::int8, y.fp::int8), greatest(x.fp::int8, y.fp::int8)
              FROM pg_temp.p JOIN {table} x ON x.id = p.a::int8 JOIN {table} y ON y.id = p.b::int8"""
    ).fetchall()
    # Unsigned, as seomoz prints them; order within a pair by the unsigned value.
    out = set()
    for a, b in rows:
        a, b = a % 2**64, b % 2**64
        out.add((min(a, b), max(a, b)))
    return out


def run_clusters(conn, table):
    t = time.perf_counter()
    n = conn.execute(f"SELECT count(*) FROM simhash_chained_groups('{table}', 'fp', 3, 'id')").fetchone()[0]
    return {"seconds": time.perf_counter() - t, "rows_in_groups": n}


def run_seomoz(hash_file, blocks, pair_file):
    out = subprocess.run([str(SEOMOZ_PY), "-c", SEOMOZ_CHILD, str(hash_file), str(blocks), "3", str(pair_file)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def run_brute(conn, table):
    t = time.perf_counter()
    n = conn.execute(
        f"SELECT count(*) FROM {table} x JOIN {table} y ON x.id < y.id AND hamming_distance(x.fp, y.fp) + 0 <= 3"
    ).fetchone()[0]
    return {"seconds": time.perf_counter() - t, "pairs": n}


def main():
    ap = arguments("etl_pairs.json", report=True, rows=[100_000, 1_000_000, 10_000_000], runs=3)
    ap.add_argument("--work-mem", default="256MB")
    ap.add_argument("--maintenance-work-mem", default="2GB",
                    help="simhash_pairs reads a table that fits it into memory (10M rows take about 1.2 GB)")
    ap.add_argument("--seomoz-blocks", type=int, default=6, help="find_all's number of blocks (> k)")
    ap.add_argument("--brute-max-rows", type=int, default=100_000)
    ap.add_argument("--seomoz-runs", type=int, default=None,
                    help="rounds of seomoz per size (default --runs; its first checks the pair set)")
    ap.add_argument("--pairs-method", default="auto",
                    help="simhash_pg.pairs_method for simhash_pairs: auto, joins, sort (arrays) or scan (row by row)")
    ap.add_argument("--no-groups", action="store_true", help="skip simhash_chained_groups")
    args = ap.parse_args()
    if reprinted(args, print_markdown):
        return
    conn = psycopg.connect(DSN, autocommit=True)
    conn.execute(f"SET work_mem = '{args.work_mem}'")
    conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
    conn.execute("SELECT set_config('simhash_pg.pairs_method', %s, false)", (args.pairs_method,))
    settings = {s: conn.execute(f"SHOW {s}").fetchone()[0]
                for s in ("server_version", "shared_buffers", "work_mem", "maintenance_work_mem", "hash_mem_multiplier",
                          "max_parallel_workers_per_gather", "simhash_pg.pairs_method")}
    seomoz_version = subprocess.run([str(SEOMOZ_PY), "-m", "pip", "show", "simhash-pybind"], capture_output=True,
                                    text=True).stdout.split("Version: ")[1].split()[0]
    report = {"settings": settings, "seomoz": {"version": seomoz_version, "blocks": args.seomoz_blocks}, "tables": []}
    for rows in args.rows:
        table = f"etl_{rows}"
        log(f"== {rows} rows")
        built = build_table(conn, table, rows)
        hash_file = RESULTS / f"{table}.hashes"
        with hash_file.open("w") as f:
            for (h,) in conn.execute(f"SELECT fp::int8 FROM {table}"):
                f.write(f"{h % 2**64}\n")
        runs = {"pairs": [], "clusters": [], "seomoz": []}
        same = None
        for r in range(args.runs):
            runs["pairs"].append(run_pairs(conn, table))
            log(r, "pairs", runs["pairs"][-1])
            pair_file = RESULTS / f"{table}.seomoz-pairs"
            if r < (args.runs if args.seomoz_runs is None else args.seomoz_runs):
                runs["seomoz"].append(run_seomoz(hash_file, args.seomoz_blocks, pair_file))
                log(r, "seomoz", runs["seomoz"][-1])
            if same is None:
                ours = pg_pair_set(conn, table)
                theirs = {tuple(int(v) for v in line.split()) for line in pair_file.read_text().splitlines()}
                same = {"ours": len(ours), "seomoz": len(theirs), "only_ours": len(ours - theirs),
                        "only_seomoz": len(theirs - ours)}
                log("pair sets", same)
            if not args.no_groups:
                runs["clusters"].append(run_clusters(conn, table))
                log(r, "clusters", runs["clusters"][-1])
        brute = run_brute(conn, table) if rows <= args.brute_max_rows else None
        if brute:
            log("brute force", brute)
        hash_file.unlink()
        report["tables"].append({"build": built, "runs": runs, "compare": same, "brute": brute})
        save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, work_mem {s['work_mem']}, pairs_method {s.get('simhash_pg.pairs_method', 'auto')}, "
          f"maintenance_work_mem {s.get('maintenance_work_mem', 'default')}, "
          f"hash_mem_multiplier {s['hash_mem_multiplier']}, max_parallel_workers_per_gather "
          f"{s['max_parallel_workers_per_gather']}; seomoz simhash-pybind {report['seomoz']['version']}, "
          f"find_all(hashes, {report['seomoz']['blocks']}, 3); medians over rounds.\n")
    print("| rows | pairs (k ≤ 3) | `simhash_pairs` s | temp spill MB | `simhash_chained_groups` s | seomoz `find_all` s "
          "| backend peak RssAnon MB | seomoz peak RSS MB | ours / seomoz | same pair set | brute-force self-join s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for t in report["tables"]:
        r = t["runs"]
        ours = statistics.median(x["seconds"] for x in r["pairs"])
        theirs = statistics.median(x["seconds"] for x in r["seomoz"])
        spill = statistics.median(x["temp_mb"] for x in r["pairs"])
        clusters = statistics.median(x["seconds"] for x in r["clusters"]) if r["clusters"] else float("nan")
        rss = statistics.median(x["peak_rss_mb"] for x in r["seomoz"])
        ours_rss = statistics.median(x.get("backend_peak_rss_anon_mb", float("nan")) for x in r["pairs"])
        c = t["compare"]
        same = "yes" if c["only_ours"] == 0 and c["only_seomoz"] == 0 else f"no ({c['only_ours']} only ours, {c['only_seomoz']} only seomoz)"
        brute = f"{t['brute']['seconds']:.0f} ({t['brute']['pairs']:,} pairs)" if t["brute"] else "-"
        print(f"| {t['build']['rows']:,} | {r['pairs'][0]['pairs']:,} | {ours:.2f} | {spill:.0f} | {clusters:.2f} | "
              f"{theirs:.2f} | {ours_rss:.0f} | {rss:.0f} | {ours / theirs:.2f}x | {same} | {brute} |")


if __name__ == "__main__":
    main()
