"""Loads the benchmark corpora fetched by bench/fetch_data.sh and plants near-copies.

English: SpamAssassin e-mail bodies (text after the first blank line), tokens split on white space.
Chinese: People's Daily 1998 paragraphs, tokens = the corpus's own (gold) segmentation, so that
edits do not favour any segmenter; the raw text is the tokens joined without spaces.
"""
import glob
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")


def english_docs():
    """Every e-mail body as a list of tokens (white-space split), in file order."""
    docs = []
    for path in sorted(glob.glob(os.path.join(DATA, "spam-assassin", "*", "*.txt"))):
        with open(path, "rb") as f:
            raw = f.read().decode("utf-8", errors="replace")
        body = raw.split("\n\n", 1)[1] if "\n\n" in raw else raw
        docs.append(body.split())
    return docs


_TAG = re.compile(r"/[A-Za-z]+\]?[a-z]*$")


def chinese_docs():
    """Every People's Daily paragraph as its list of gold tokens."""
    docs = []
    with open(os.path.join(DATA, "199801.txt"), encoding="utf-8") as f:
        for line in f:
            tokens = []
            for item in line.split():
                word = _TAG.sub("", item).lstrip("[")
                if word:
                    tokens.append(word)
            if tokens:
                docs.append(tokens)
    return docs


def render(tokens, lang):
    return (" " if lang == "en" else "").join(tokens)


_SENTENCE_END = {"en": re.compile(r"[.!?]$"), "zh": re.compile(r"^[。！？]$")}


def sentences(tokens, lang):
    out, cur = [], []
    for t in tokens:
        cur.append(t)
        if _SENTENCE_END[lang].search(t):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def plant(tokens, rate, lang, rng, vocab):
    """A near-copy: round(rate * len) edits (at least one), each an insertion, deletion or
    substitution of a token (30 % each) or a swap of two adjacent sentences (10 %)."""
    tokens = list(tokens)
    edits = max(1, round(rate * len(tokens)))
    for _ in range(edits):
        op = rng.random()
        if op < 0.1:
            sents = sentences(tokens, lang)
            if len(sents) >= 2:
                i = rng.randrange(len(sents) - 1)
                sents[i], sents[i + 1] = sents[i + 1], sents[i]
                tokens = [t for s in sents for t in s]
                continue
            op = 0.5  # one sentence only: substitute instead
        pos = rng.randrange(len(tokens))
        if op < 0.4:
            tokens.insert(pos, rng.choice(vocab))
        elif op < 0.7 and len(tokens) > 1:
            del tokens[pos]
        else:
            tokens[pos] = rng.choice(vocab)
    return tokens


def sample(lang, n, min_tokens, seed=42):
    """n distinct documents of at least min_tokens tokens, and a vocabulary sample."""
    docs = english_docs() if lang == "en" else chinese_docs()
    rng = random.Random(seed)
    seen, pool = set(), []
    for d in docs:
        text = render(d, lang)
        if len(d) >= min_tokens and text not in seen:
            seen.add(text)
            pool.append(d)
    rng.shuffle(pool)
    vocab = [t for d in pool[: 5 * n] for t in d]
    return pool[:n], vocab


def shingles(tokens, n=4):
    """The distinct n-token shingles of a token list (one shingle for shorter lists)."""
    return {tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1))}


def jaccard(a, b):
    """|A & B| / |A | B| of two sets (1 for two empty ones), intersecting from the smaller."""
    if not a and not b:
        return 1.0
    common = len(a & b) if len(a) <= len(b) else len(b & a)
    return common / (len(a) + len(b) - common)
