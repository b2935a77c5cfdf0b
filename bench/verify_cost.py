"""What the exact check costs in all pairs at 1M rows: simhash_pairs(..., k) against the same
call with verify (the exact check), side by side in one session.

Data: 1M English texts of four lines each (about 300 characters), the lines drawn at random
(seeded) from the SpamAssassin e-mail bodies fetched by bench/fetch_data.sh, so that texts are
distinct but share their vocabulary; then --copies near-copies of random texts with one word
replaced, each a true pair within a few bits. Fingerprints are `simhash(body)` (the default
pipeline) in a generated column.

Usage: bench/.venv/bin/python bench/verify_cost.py [--rows 1000000] [--copies 50000] [--k 3]
       [--runs 3] [--min-jaccard 0.5] [--lines prose|all] [--reuse]
Prints Markdown; raw numbers in bench/results/verify_cost_{prose,all}.json.
"""
import argparse
import json
import random
import re
import statistics
import time
from pathlib import Path

import corpora
from pg import connect

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


PROSE = re.compile(r"^[^<>&=@]*$")


def lines(kind):
    """Distinct lines of 40-200 characters from the e-mail bodies, in file order: every such
    line ("all", markup and quoted-printable included), or ("prose") lines of at least six
    words without markup, entity or header characters."""
    seen, out = set(), []
    for path in sorted(Path(corpora.DATA, "spam-assassin").glob("*/*.txt")):
        raw = path.read_bytes().decode("utf-8", errors="replace")
        body = raw.split("\n\n", 1)[1] if "\n\n" in raw else raw
        for line in body.splitlines():
            line = " ".join(line.split())
            if kind == "prose" and not (PROSE.match(line) and sum(w.isalpha() for w in line.split()) >= 6):
                continue
            if 40 <= len(line) <= 200 and line not in seen:
                seen.add(line)
                out.append(line)
    return out


def build(conn, args):
    rng = random.Random(args.seed)
    pool = lines(args.lines)
    conn.execute("DROP TABLE IF EXISTS texts")
    conn.execute("CREATE TABLE texts (id int8 PRIMARY KEY, body text NOT NULL, "
                 "fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)")
    bodies = []
    with conn.cursor().copy("COPY texts (id, body) FROM STDIN") as copy:
        for i in range(1, args.rows - args.copies + 1):
            body = " ".join(rng.choice(pool) for _ in range(4))
            if len(bodies) < 200_000:
                bodies.append(body)
            copy.write_row((i, body))
        for j in range(args.copies):
            words = rng.choice(bodies).split(" ")
            words[rng.randrange(len(words))] = rng.choice(pool).split(" ")[0]
            copy.write_row((args.rows - args.copies + 1 + j, " ".join(words)))
    conn.execute("VACUUM ANALYZE texts")
    return len(pool)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--copies", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--min-jaccard", type=float, default=0.5)
    ap.add_argument("--lines", choices=("prose", "all"), default="prose")
    ap.add_argument("--reuse", action="store_true", help="keep the table of an earlier run")
    args = ap.parse_args()
    conn = connect("simhash_verify")
    conn.execute("SET work_mem = '256MB'")
    conn.execute("SET client_min_messages = warning")
    t = time.perf_counter()
    pool = None
    if not (args.reuse and conn.execute("SELECT to_regclass('texts') IS NOT NULL").fetchone()[0]):
        pool = build(conn, args)
    load_s = time.perf_counter() - t
    rows, chars = conn.execute("SELECT count(*), avg(length(body)) FROM texts").fetchone()
    plain = f"SELECT count(*) FROM simhash_pairs('texts', 'fp', {args.k}, 'id')"
    checked = (f"SELECT count(*) FROM simhash_pairs('texts', 'fp', {args.k}, 'id', "
               f"verify => '{{\"column\": \"body\", \"min_jaccard\": {args.min_jaccard}, \"options\": {{\"ngram\": 3}}}}')")
    times = {"plain": [], "checked": []}
    counts = {}
    for run in range(args.runs):
        # Alternate the order so that neither always runs on a warmer cache.
        order = ("plain", "checked") if run % 2 == 0 else ("checked", "plain")
        for name in order:
            t = time.perf_counter()
            counts[name] = conn.execute(plain if name == "plain" else checked).fetchone()[0]
            times[name].append(time.perf_counter() - t)
            print(f"run {run + 1} {name}: {counts[name]} pairs, {times[name][-1]:.2f} s", flush=True)
    med = {name: statistics.median(v) for name, v in times.items()}
    report = {
        "settings": {**vars(args), "rows": rows, "avg_chars": float(chars), "line_pool": pool, "load_s": load_s,
                     "server_version": conn.execute("SHOW server_version").fetchone()[0]},
        "times": times, "medians": med, "pairs": counts,
        "ratio": med["checked"] / med["plain"],
        "check_ms_per_candidate": 1000 * (med["checked"] - med["plain"]) / max(1, counts["plain"]),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"verify_cost_{args.lines}.json").write_text(json.dumps(report, indent=1))
    print(f"\n{rows} rows, {float(chars):.0f} characters on average, k = {args.k}, "
          f"min_jaccard {args.min_jaccard} on word 3-shingles; medians of {args.runs} alternated runs\n")
    print("| call | pairs | seconds (median) | runs |")
    print("|---|---|---|---|")
    for name in ("plain", "checked"):
        print(f"| {name} | {counts[name]:,} | {med[name]:.2f} | {', '.join(f'{x:.2f}' for x in times[name])} |")
    print(f"\nthe check adds {100 * (report['ratio'] - 1):.1f} % "
          f"({report['check_ms_per_candidate'] * 1000:.1f} µs per candidate pair)")


if __name__ == "__main__":
    main()
