#!/usr/bin/env python3
"""Peak backend memory and time of the text functions on long texts, per option set.

Each case runs in a new connection (so that its peak is its own): the backend's VmHWM (peak
resident memory, /proc/<pid>/status) is read before and after one call on a text stored in
table `texts` (made by bench/run_text_memory.sh), and the call is timed; ROUNDS rounds, median
time and largest growth. Run as root (it reads the backend's /proc entry), against the server
the DSN names. Prints Markdown rows: build, case, text, MB of text, peak growth in MB, seconds.

    text_memory.py --dsn 'host=... port=... dbname=...' --label BUILD [--rounds 3]
"""
import argparse
import statistics
import time

import psycopg

CASES = [
    ("simhash, default options", "simhash(t)"),
    ("simhash, binary", """simhash(t, '{"weighting": "binary"}')"""),
    ("simhash, top_k 100", """simhash(t, '{"top_k": 100}')"""),
    ("simhash, chars 8-grams, binary", """simhash(t, '{"tokenizer": "chars", "ngram": 8, "weighting": "binary"}')"""),
    ("simhash, chars 8-grams, top_k 100", """simhash(t, '{"tokenizer": "chars", "ngram": 8, "top_k": 100}')"""),
    ("simhash_set of 4, binary", """simhash_set(t, 4, '{"weighting": "binary"}')"""),
    ("simhash_jaccard, word 3-shingles", """simhash_jaccard(t, t, '{"ngram": 3}')"""),
    ("simhash_feature_set, default options", "cardinality(simhash_feature_set(t))"),
]


def peak_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with psycopg.connect(args.dsn, autocommit=True) as c:
        texts = c.execute("SELECT id, name, octet_length(t) FROM texts ORDER BY id").fetchall()
    for case, expr in CASES:
        for tid, name, size in texts:
            secs, grown, outcome = [], [], "ok"
            for _ in range(args.rounds):
                with psycopg.connect(args.dsn, autocommit=True) as c:
                    pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
                    c.execute("SET statement_timeout = '600s'")
                    before = peak_kb(pid)
                    started = time.monotonic()
                    try:
                        c.execute(f"SELECT {expr} FROM texts WHERE id = %s", (tid,)).fetchall()
                    except psycopg.Error as e:
                        outcome = f"{e.sqlstate}"
                    secs.append(time.monotonic() - started)
                    grown.append(peak_kb(pid) - before)
            print(f"| {args.label} | {case} | {name} | {size / 1e6:.1f} | {max(grown) / 1024:.0f} | "
                  f"{statistics.median(secs):.2f} | {outcome} |", flush=True)


if __name__ == "__main__":
    main()
