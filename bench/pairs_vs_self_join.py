"""simhash_pairs against the plain self-join a user would write, on the tables bench/html_quality.py
leaves in the database simhash_html (pages and mail): the issue's rule is that simhash_pairs is
never slower than comparing every pair, whatever the table's crowding.

For each table, fingerprint column and k: `SELECT count(*) FROM simhash_pairs(t, col, k, 'id')`
and the self-join returning the same rows, `SELECT a.id::text, b.id::text, distance FROM t a JOIN t b
ON a.id < b.id AND simhash_near[_any](a.col, b.col, k)` (counted, OFFSET 0 so that they are
computed), alternated, --runs times each, in one session; medians and the ratio. The counts must agree.

Usage: bench/.venv/bin/python bench/pairs_vs_self_join.py [--runs 3] [--cases pages:fp_markup_set4:10,...]
Prints Markdown; raw numbers in bench/results/pairs_vs_self_join.json.
"""
import argparse
import json
import statistics
import time
from pathlib import Path

from pg import connect

RESULTS = Path(__file__).resolve().parent / "results"
CASES = "pages:fp_raw:3,pages:fp_raw:8,pages:fp_markup_set4:10,mail:fp_markup:3,mail:fp_markup_set4:10"


def timed(conn, sql):
    t = time.perf_counter()
    n = conn.execute(sql).fetchone()[0]
    return n, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=CASES, help="table:column:k, comma-separated")
    args = ap.parse_args()
    conn = connect("simhash_html")
    out = []
    for case in args.cases.split(","):
        table, col, k = case.split(":")
        near, distance = ("simhash_near_any", "simhash_set_distance") if "set" in col else ("simhash_near", "hamming_distance")
        pairs_sql = f"SELECT count(*) FROM simhash_pairs('{table}', '{col}', {k}, 'id')"
        # The same rows as simhash_pairs (keys as text, the distance), computed (OFFSET 0).
        join_sql = (f"SELECT count(*) FROM (SELECT a.id::text, b.id::text, {distance}(a.{col}, b.{col}) FROM {table} a "
                    f"JOIN {table} b ON a.id < b.id AND {near}(a.{col}, b.{col}, {k}) OFFSET 0) q")
        rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        times = {"pairs": [], "self_join": []}
        counts = set()
        for _ in range(args.runs):
            for name, sql in (("pairs", pairs_sql), ("self_join", join_sql)):
                n, secs = timed(conn, sql)
                counts.add(n)
                times[name].append(secs)
        assert len(counts) == 1, f"{case}: different counts {counts}"
        p, j = statistics.median(times["pairs"]), statistics.median(times["self_join"])
        out.append({"table": table, "column": col, "k": int(k), "rows": rows, "pairs": counts.pop(),
                    "simhash_pairs_s": times["pairs"], "self_join_s": times["self_join"],
                    "median_pairs_s": p, "median_self_join_s": j, "ratio": p / j})
        print(f"{case}: simhash_pairs {p:.3f} s, self-join {j:.3f} s, {p / j:.2f}x", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pairs_vs_self_join.json").write_text(json.dumps(out, indent=1))
    print("\n| table | column | k | rows | pairs | simhash_pairs (s, median) | self-join (s, median) | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in out:
        print(f"| {r['table']} | `{r['column']}` | {r['k']} | {r['rows']:,} | {r['pairs']:,} | "
              f"{r['median_pairs_s']:.3f} | {r['median_self_join_s']:.3f} | {r['ratio']:.2f}x |")


if __name__ == "__main__":
    main()
