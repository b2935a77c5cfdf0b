"""How well simhash_chained_groups groups real near-copies: English e-mail (SpamAssassin) and Chinese
news (People's Daily 1998), with planted near-copies. Usage (after bench/fetch_data.sh, with the
release build installed): bench/.venv/bin/python bench/etl_quality.py [--n 2000] [--k 3 6 8]

For each language: n distinct real documents (bench/corpora.py, seed 7); for each, two
near-copies, one with 3 % and one with 10 % of its tokens edited (insert, delete, substitute, swap
sentences). Each document and its copies form a planted group of 3. All 3n texts go into one
table with `fp simhash64 GENERATED ALWAYS AS (simhash(body))`, and simhash_chained_groups groups them.

Scored over pairs of rows, twice: for simhash_pairs a pair is predicted when the two rows are
within k bits, for simhash_chained_groups when both land in one cluster (so chains count: a within k of
b, b within k of c); a pair is true when both rows come from one planted group. Recall: true pairs predicted / true pairs. Precision: true pairs
predicted / pairs predicted, where predicted pairs of different groups whose source documents
really are near-duplicates in the corpus (token 4-shingle Jaccard >= 0.3: spam campaigns, reposted
news) are left out, since a dedup tool is right to group them. Raw numbers go to
bench/results/etl_quality.json.
"""
import argparse
import json
import random
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path

from corpora import jaccard, plant, render, sample, shingles
from pg import connect

HERE = Path(__file__).resolve().parent
RATES = (0.03, 0.10)


def evaluate(conn, lang, n, min_tokens, ks):
    docs, vocab = sample(lang, n, min_tokens, seed=7)
    rng = random.Random(7)
    rows = []  # (id, group, text)
    for g, d in enumerate(docs):
        rows.append((len(rows) + 1, g, render(d, lang)))
        for rate in RATES:
            rows.append((len(rows) + 1, g, render(plant(d, rate, lang, rng, vocab), lang)))
    group_of = {i: g for i, g, _ in rows}
    conn.execute("DROP TABLE IF EXISTS quality_docs")
    conn.execute("CREATE TABLE quality_docs (id int8 PRIMARY KEY, grp int4, body text NOT NULL, "
                 "fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)")
    with conn.cursor().copy("COPY quality_docs (id, grp, body) FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)
    conn.execute("ANALYZE quality_docs")
    sh = [shingles(d) for d in docs]
    true_pairs = len(docs) * 3  # C(3, 2) per group
    out = {"documents": len(docs), "rows": len(rows), "true_pairs": true_pairs, "k": {}}
    def score(pairs):
        hit = predicted = excused = 0
        for a, b in pairs:
            ga, gb = group_of[a], group_of[b]
            if ga == gb:
                hit += 1
                predicted += 1
            elif jaccard(sh[ga], sh[gb]) >= 0.3:
                excused += 1
            else:
                predicted += 1
        return {"recall": hit / true_pairs, "precision": hit / predicted if predicted else 1.0, "real_duplicate_pairs": excused}

    for k in ks:
        direct = [(int(a), int(b)) for a, b in conn.execute(f"SELECT a, b FROM simhash_pairs('quality_docs', 'fp', {k}, 'id')")]
        members = defaultdict(list)
        for key, cluster in conn.execute(f"SELECT key, group_key FROM simhash_chained_groups('quality_docs', 'fp', {k}, 'id')"):
            members[cluster].append(int(key))
        grouped = [p for ids in members.values() for p in combinations(ids, 2)]
        biggest = max((len(v) for v in members.values()), default=0)
        out["k"][k] = {"pairs": score(direct), "clusters": score(grouped), "cluster_count": len(members),
                       "largest_cluster": biggest}
        print(lang, k, out["k"][k], file=sys.stderr, flush=True)
    conn.execute("DROP TABLE quality_docs")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--k", type=int, nargs="+", default=[3, 6, 8])
    ap.add_argument("--json", default=str(HERE / "results" / "etl_quality.json"))
    args = ap.parse_args()
    conn = connect()
    results = {"en": evaluate(conn, "en", args.n, 50, args.k), "zh": evaluate(conn, "zh", args.n, 30, args.k)}
    Path(args.json).parent.mkdir(exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"{args.n} documents per language, each with copies at {', '.join(f'{r:.0%}' for r in RATES)} of tokens "
          "edited (groups of 3).\n")
    print("| language | k | `simhash_pairs` recall | `simhash_pairs` precision | `simhash_chained_groups` recall "
          "| `simhash_chained_groups` precision | clusters | largest | real duplicates left out (clusters) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for lang, name in (("en", "English (SpamAssassin)"), ("zh", "Chinese (People's Daily)")):
        for k, r in results[lang]["k"].items():
            p, c = r["pairs"], r["clusters"]
            print(f"| {name} | {k} | {p['recall'] * 100:.1f} % | {p['precision'] * 100:.1f} % | {c['recall'] * 100:.1f} % | "
                  f"{c['precision'] * 100:.1f} % | {r['cluster_count']:,} | {r['largest_cluster']} | {c['real_duplicate_pairs']:,} |")


if __name__ == "__main__":
    main()
