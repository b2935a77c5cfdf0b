"""Detection quality of simhash(text) against ClickHouse and Python simhash, on real text with
planted near-copies. Usage: bench/.venv/bin/python bench/text_quality.py [--n 1000] [--k 3 6]

For each language: n distinct real documents; for each edit rate (1, 3, 10, 30 % of tokens) one
near-copy of each document (bench/corpora.py: insert, delete, substitute, swap sentences; seed
42). Recall: share of (document, its copy) pairs within k bits. False positives: share of pairs of
distinct documents within k bits; pairs that really are near-duplicates in the corpus (token
4-shingle Jaccard >= 0.3) are left out of that count.
"""
import argparse
import json
import random
import sys

import numpy as np

from corpora import plant, render, sample, shingles
from peers import CLICKHOUSE, clickhouse, python_simhash
from pg import connect, simhash_many

RATES = [0.01, 0.03, 0.10, 0.30]
OURS = {
    "simhash_pg default (words, 1-gram, tfidf)": "{}",
    "simhash_pg words, 1-gram, tf": '{"weighting": "tf"}',
    "simhash_pg words, 1-gram, tfidf, top 20": '{"top_k": 20}',
    "simhash_pg words, 2-gram, tf": '{"ngram": 2, "weighting": "tf"}',
    "simhash_pg words, 2-gram, tfidf": '{"ngram": 2}',
    "simhash_pg words, 3-gram, tf": '{"ngram": 3, "weighting": "tf"}',
    "simhash_pg words, 3-gram, binary": '{"ngram": 3, "weighting": "binary"}',
    "simhash_pg jieba tokenizer, 1-gram, tfidf": '{"tokenizer": "jieba"}',
    "simhash_pg chars, 3-gram, tf": '{"tokenizer": "chars", "ngram": 3, "weighting": "tf"}',
    "simhash_pg chars, 4-gram, tf": '{"tokenizer": "chars", "ngram": 4, "weighting": "tf"}',
}
PEERS = ["ClickHouse " + f for f in CLICKHOUSE] + ["Python simhash (leonsim)"]


def popcount(x):
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)


def fingerprints(method, texts, conn):
    if method in OURS:
        return simhash_many(conn, texts, OURS[method])
    if method.startswith("ClickHouse "):
        return clickhouse(method.split()[1], texts)
    return python_simhash(texts)


def evaluate(lang, n, min_tokens, ks, conn, log):
    docs, vocab = sample(lang, n, min_tokens)
    rng = random.Random(42)
    copies = {r: [plant(d, r, lang, rng, vocab) for d in docs] for r in RATES}
    originals = [render(d, lang) for d in docs]
    i, j = np.triu_indices(len(docs), k=1)
    results, dists = {}, {}
    for method in list(OURS) + PEERS:
        o = np.array(fingerprints(method, originals, conn), dtype=np.uint64)
        rec = {}
        for r in RATES:
            c = np.array(fingerprints(method, [render(d, lang) for d in copies[r]], conn), dtype=np.uint64)
            rec[r] = popcount(o ^ c)
        dists[method] = (rec, popcount(o[i] ^ o[j]))
        log(f"  {lang} {method}: done")
    # Pairs of originals that really are near-duplicates: close under some method and similar.
    close = np.zeros(len(i), dtype=bool)
    for _, pair_d in dists.values():
        close |= pair_d <= max(ks) + 4
    sh = [shingles(d) for d in docs]
    true_dup = np.zeros(len(i), dtype=bool)
    for p in np.nonzero(close)[0]:
        a, b = sh[i[p]], sh[j[p]]
        true_dup[p] = len(a & b) / len(a | b) >= 0.3
    distinct = ~true_dup
    for method, (rec, pair_d) in dists.items():
        results[method] = {
            str(k): {
                "recall": {str(r): float((rec[r] <= k).mean()) for r in RATES},
                "false_positive_rate": float((pair_d[distinct] <= k).mean()),
            }
            for k in range(0, 21)
        }
    meta = {"docs": len(docs), "distinct_pairs": int(distinct.sum()), "excluded_true_duplicate_pairs": int(true_dup.sum()),
            "mean_tokens": float(np.mean([len(d) for d in docs])), "mean_chars": float(np.mean([len(t) for t in originals]))}
    return results, meta


def table(results, k):
    lines = [
        f"| method | recall 1 % | recall 3 % | recall 10 % | recall 30 % | false positives |",
        "|---|---|---|---|---|---|",
    ]
    for method, by_k in results.items():
        r = by_k[str(k)]
        rec = " | ".join(f"{100 * r['recall'][str(x)]:.1f} %" for x in RATES)
        lines.append(f"| {method} | {rec} | {100 * r['false_positive_rate']:.3f} % |")
    return "\n".join(lines)


def budget_table(results, budget):
    """Each method at its largest k whose false-positive rate stays within budget: the fair
    comparison when fingerprints spread differently (ClickHouse's use 32-bit hashes)."""
    lines = [
        "| method | k | recall 1 % | recall 3 % | recall 10 % | recall 30 % | false positives |",
        "|---|---|---|---|---|---|---|",
    ]
    for method, by_k in results.items():
        ok = [k for k in range(0, 21) if by_k[str(k)]["false_positive_rate"] <= budget]
        if not ok:
            lines.append(f"| {method} | none | | | | | |")
            continue
        k = max(ok)
        r = by_k[str(k)]
        rec = " | ".join(f"{100 * r['recall'][str(x)]:.1f} %" for x in RATES)
        lines.append(f"| {method} | {k} | {rec} | {100 * r['false_positive_rate']:.3f} % |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--k", type=int, nargs="+", default=[3, 6])
    ap.add_argument("--budget", type=float, default=0.0001, help="false-positive budget for the fair table")
    ap.add_argument("--json", default=None, help="write all numbers (k = 0..20) here")
    args = ap.parse_args()
    conn = connect()
    log = lambda m: print(m, file=sys.stderr, flush=True)
    out = {}
    for lang, min_tokens in [("en", 50), ("zh", 30)]:
        results, meta = evaluate(lang, args.n, min_tokens, args.k, conn, log)
        out[lang] = {"meta": meta, "results": results}
        name = "English (SpamAssassin bodies)" if lang == "en" else "Chinese (People's Daily 1998)"
        print(f"\n### {name}: {meta['docs']} documents, {meta['mean_tokens']:.0f} tokens and "
              f"{meta['mean_chars']:.0f} characters on average; {meta['distinct_pairs']} distinct pairs "
              f"({meta['excluded_true_duplicate_pairs']} real near-duplicate pairs left out)")
        for k in args.k:
            print(f"\nk = {k}\n")
            print(table(results, k))
        print(f"\nEach method at its largest k (0..20) with false positives <= {100 * args.budget:g} %\n")
        print(budget_table(results, args.budget))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
