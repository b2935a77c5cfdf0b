"""Single-core throughput of fingerprinting text, side by side in one run:
  - simhash_pg inside PostgreSQL: SELECT count(simhash(body)) FROM t (no parallel workers);
  - the same pipeline outside PostgreSQL (src/core/examples/throughput.rs), and bare jieba-rs
    segmentation of the same texts (the yardstick of the Chinese target);
  - ClickHouse (chdb, max_threads = 1): wordShingleSimHashUTF8, ngramSimHashUTF8;
  - Python simhash (leonsim): Simhash(text).value.
Usage: bench/.venv/bin/python bench/text_throughput.py [--runs 5]
Needs the release build installed (bench/run_text.sh does it) and target/release/examples/throughput.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import time

from chdb import session
from simhash import Simhash

from corpora import DATA, HERE, chinese_docs
from pg import connect

ROOT = os.path.dirname(HERE)
OURS = {"default": "{}", "words, 2-gram, tf": '{"ngram": 2, "weighting": "tf"}', "chars, 3-gram, tf": '{"tokenizer": "chars", "ngram": 3, "weighting": "tf"}'}


def corpora():
    en = []
    for p in sorted(glob.glob(os.path.join(DATA, "spam-assassin", "*", "*.txt"))):
        raw = open(p, "rb").read().decode("utf-8", "replace")
        en.append(raw.split("\n\n", 1)[1] if "\n\n" in raw else raw)
    zh = ["".join(d) for d in chinese_docs()]
    return {"en": en, "zh": zh}


def interleaved(methods, runs):
    """Median seconds of each method, run in interleaved rounds after a warm-up round, so that a
    noisy machine slows all methods alike."""
    for fn in methods.values():
        fn()
    times = {name: [] for name in methods}
    for _ in range(runs):
        for name, fn in methods.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    texts = corpora()
    conn = connect()
    ch = session.Session()
    rows = []
    for lang, docs in texts.items():
        mb = sum(len(t.encode()) for t in docs) / 1e6
        path = os.path.join(DATA, f"{lang}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for t in docs:
                f.write(json.dumps({"t": t}, ensure_ascii=False) + "\n")
        conn.execute(f"DROP TABLE IF EXISTS tp_{lang}")
        conn.execute(f"CREATE TABLE tp_{lang} (body text)")
        with conn.cursor().copy(f"COPY tp_{lang} (body) FROM STDIN") as cp:
            for t in docs:
                cp.write_row((t,))
        conn.execute(f"VACUUM ANALYZE tp_{lang}")
        methods = {"PostgreSQL scan only: count(length(body))": lambda: conn.execute(f"SELECT count(length(body)) FROM tp_{lang}").fetchone()}
        for name, opts in OURS.items():
            q = f"SELECT count(simhash(body, '{opts}')) FROM tp_{lang}"
            methods[f"simhash_pg {name}, in PostgreSQL"] = lambda q=q: conn.execute(q).fetchone()
        ch.query(f"DROP TABLE IF EXISTS {lang}")
        ch.query(f"CREATE TABLE {lang} (t String) ENGINE = Memory")
        ch.query(f"INSERT INTO {lang} SELECT t FROM file('{path}', 'JSONEachRow', 't String')")
        for func in ["wordShingleSimHashUTF8", "ngramSimHashUTF8"]:
            q = f"SELECT sum({func}(t)) FROM {lang} SETTINGS max_threads = 1"
            methods[f"ClickHouse {func} (chdb, Memory table)"] = lambda q=q: ch.query(q, "CSV")
        res = interleaved(methods, args.runs)
        res["Python simhash (leonsim)"] = interleaved({"py": lambda: [Simhash(t).value for t in docs]}, max(1, args.runs // 3))["py"]
        exe = os.path.join(ROOT, "target", "release", "examples", "throughput")
        lines = os.path.join(DATA, f"{lang}.lines.jsonl")
        with open(lines, "w", encoding="utf-8") as f:
            for t in docs:
                f.write(json.dumps(t, ensure_ascii=False) + "\n")
        out = subprocess.run([exe, lines, "simhash,jieba", "{}", str(args.runs)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            mode, rest = line.split(":", 1)
            name = "simhash_pg default, core outside PostgreSQL" if mode == "simhash" else "jieba-rs cut (no HMM) of each whole text"
            res[name] = mb / float(rest.split()[0])
        rows.append((lang, mb, len(docs), res))
    for lang, mb, n, res in rows:
        name = "English (SpamAssassin bodies)" if lang == "en" else "Chinese (People's Daily 1998)"
        print(f"\n### {name}: {n} texts, {mb:.1f} MB\n")
        base = res["PostgreSQL scan only: count(length(body))"]
        print("| what | seconds (median) | MB/s per core | MB/s per core, scan time taken out |")
        print("|---|---|---|---|")
        for what, secs in res.items():
            own = f"{mb / (secs - base):.1f}" if "in PostgreSQL" in what and secs > base else ""
            print(f"| {what} | {secs:.3f} | {mb / secs:.1f} | {own} |")


if __name__ == "__main__":
    main()
