"""Detection quality on real revisions: documents as Debian shipped them in three releases
(bullseye, bookworm, trixie), each edited by its authors between releases (issue 54).

Data (fetched here with apt-get into bench/data/revisions/, never committed; the package and
version of each release are recorded in the JSON):
  English pages     postgresql-doc-13/15/17 (HTML, one page a document), python3.9/3.11/3.13-doc
                    (the reStructuredText sources Sphinx ships in _sources), python-django-doc
                    2.2/3.2/4.2 (HTML), debian-reference-en (HTML, one section a document)
  Chinese pages     debian-reference-zh-cn (one section a document), debian-handbook zh-CN
                    (10 and 11: one page a document), debian-faq-zh-cn (one section a document)
  Descriptions      Debian's package descriptions (Translation-en, Translation-zh_CN of main):
                    the one-line synopsis (short texts) and the long description (medium)
Licences: PostgreSQL (PostgreSQL licence), Python (PSF), Django (BSD), Debian Reference and the
FAQ (GPL-2+), the Debian Administrator's Handbook (GPL-2+ / CC-BY-SA 3.0), descriptions (each
package's own; quoted as metadata).

Ground truth, as in the issue: a document present in two releases and changed between them is a
positive (all three pairs of releases); its band is the Jaccard similarity of the two versions'
shingles (word 3-shingles for English, character 3-shingles for Chinese). Every pair of
different documents of the same collection from two releases is a negative, except pairs whose
Jaccard is 0.5 or more (different documents that are near-copies, such as the descriptions of
libfoo1 and libfoo-dev; counted and reported, not scored). Big collections are sampled (seeded).
A pair's length class is its shorter text's: English short up to 30 words, medium up to 200,
long above; Chinese short up to 80 characters, medium up to 500, long above.

Fingerprints come from the server: simhash(text, options) for pages, simhash_set(text, 8,
options) for descriptions (b = 1, 4, 8 are its first elements; the set distance is the smallest
distance of same-position elements, as simhash_set_distance). "With the check" keeps a pair
within k only when simhash_jaccard(a, b, '{"ngram": 2}') >= 0.45, the check the docs advise for
pages and mail.

Usage: bench/.venv/bin/python bench/revisions.py [--json bench/results/revisions.json]
       [--report]  (prints Markdown; raw numbers in the JSON)
"""
import argparse
import gzip
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import unicodedata
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pg  # noqa: E402
from corpora import jaccard  # noqa: E402
from distances import min_distances  # noqa: E402

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "revisions"
SUITES = ("bullseye", "bookworm", "trixie")
KS = list(range(0, 13))
BUDGETS = (1e-4, 1e-5)  # false-positive rates: 0.01 % and 0.001 %
NEGATIVE_JACCARD = 0.5
CHECK = ('{"ngram": 2}', 0.45)
SEED = 54

# The option sets the docs name (README, docs/text.md) and the neighbours they were chosen among.
OPTIONS = {
    "default": "{}",
    "tf": '{"weighting": "tf"}',
    "binary": '{"weighting": "binary"}',
    "ngram 2": '{"ngram": 2}',
    "ngram 2, tf": '{"ngram": 2, "weighting": "tf"}',
    "ngram 3, tf": '{"ngram": 3, "weighting": "tf"}',
    "chars 2, tf": '{"tokenizer": "chars", "ngram": 2, "weighting": "tf"}',
    "chars 3": '{"tokenizer": "chars", "ngram": 3}',
    "chars 3, tf": '{"tokenizer": "chars", "ngram": 3, "weighting": "tf"}',
    "chars 4": '{"tokenizer": "chars", "ngram": 4}',
}

# name: (language, kind, {suite: apt package}, how documents are read)
COLLECTIONS = {
    "postgresql": ("en", "pages", {"bullseye": "postgresql-doc-13", "bookworm": "postgresql-doc-15", "trixie": "postgresql-doc-17"}, "pg-html"),
    "python": ("en", "pages", {"bullseye": "python3.9-doc", "bookworm": "python3.11-doc", "trixie": "python3.13-doc"}, "sphinx-sources"),
    "django": ("en", "pages", {s: "python-django-doc" for s in SUITES}, "django-html"),
    "debian-reference": ("en", "pages", {s: "debian-reference-en" for s in SUITES}, "docbook-sections"),
    "debian-reference-zh": ("zh", "pages", {s: "debian-reference-zh-cn" for s in SUITES}, "docbook-sections"),
    "debian-handbook-zh": ("zh", "pages", {"bullseye": "debian-handbook", "bookworm": "debian-handbook"}, "handbook-zh"),
    "debian-faq-zh": ("zh", "pages", {s: "debian-faq-zh-cn" for s in SUITES}, "docbook-sections"),
    "descriptions": ("en", "descriptions", {}, "Translation-en"),
    "descriptions-zh": ("zh", "descriptions", {}, "Translation-zh_CN"),
}


# ---------------------------------------------------------------------------------- fetching

def apt_options():
    lists = DATA / "apt" / "lists"
    (lists / "partial").mkdir(parents=True, exist_ok=True)
    (DATA / "apt" / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    sources = DATA / "apt" / "sources.list"
    sources.write_text("".join(
        f"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian {s} main\n"
        for s in SUITES))
    return ["-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Cache={DATA / 'apt' / 'cache'}",
            "-o", "Dir::State::status=/var/lib/dpkg/status", "-o", "APT::Sandbox::User=root",
            "-o", "Acquire::Languages=en,zh_CN"]


def fetch():
    """Every package of every collection, each suite's version, unpacked under DATA/<pkg>/<suite>
    (idempotent: what is there is kept). Returns {collection: {suite: version}}."""
    opts = apt_options()
    lists = DATA / "apt" / "lists"
    if not any(lists.glob("*Translation-zh*")):
        subprocess.run(["apt-get", *opts, "-q", "update"], check=True, stdout=subprocess.DEVNULL)
    versions = {}
    for name, (_, _, packages, _) in COLLECTIONS.items():
        for suite, package in packages.items():
            root = DATA / package / suite
            if not (root / ".version").exists():
                with tempfile.TemporaryDirectory() as tmp:
                    subprocess.run(["apt-get", *opts, "-q", "download", f"{package}/{suite}"], cwd=tmp, check=True,
                                   stdout=subprocess.DEVNULL)
                    deb = next(Path(tmp).glob("*.deb"))
                    root.mkdir(parents=True, exist_ok=True)
                    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
                    version = subprocess.run(["dpkg-deb", "-f", str(deb), "Version"], capture_output=True, text=True,
                                             check=True).stdout.strip()
                    (root / ".version").write_text(version)
            versions.setdefault(name, {})[suite] = f"{package} {(root / '.version').read_text()}"
    for suite in SUITES:
        for lang in ("en", "zh%5fCN"):
            files = list(lists.glob(f"*_dists_{suite}_main_i18n_Translation-{lang}*"))
            versions.setdefault("descriptions" if lang == "en" else "descriptions-zh", {})[suite] = files[0].name if files else None
    return versions


# ---------------------------------------------------------------------------------- reading

BLOCK = {"p", "div", "br", "li", "ul", "ol", "dl", "dt", "dd", "pre", "table", "tr", "td", "th", "h1", "h2", "h3",
         "h4", "h5", "h6", "section", "blockquote", "tbody", "thead"}
HIDDEN = {"script", "style", "head", "title"}


class Sections(HTMLParser):
    """An HTML page's visible text, cut at headings h1..`split` into (heading, text) sections;
    elements whose class or id is in `skip` are left out, and when `keep` names an id, only what
    is inside that element is read."""

    def __init__(self, split=0, skip=(), keep=None):
        super().__init__(convert_charrefs=True)
        self.split, self.skip, self.keep = split, set(skip), keep
        self.stack = []  # (tag, hidden)
        self.inside = keep is None
        self.keep_depth = None
        self.sections = [["", [], None]]
        self.heading = None

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "meta", "link", "hr", "input", "a") and tag != "a":
            if tag == "br":
                self.text("\n")
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split()) | {a.get("id") or ""}
        hidden = tag in HIDDEN or bool(classes & self.skip) or bool(self.stack and self.stack[-1][1])
        if self.keep and a.get("id") == self.keep and self.keep_depth is None:
            self.keep_depth = len(self.stack)
            self.inside = True
        self.stack.append((tag, hidden))
        if tag in BLOCK:
            self.text("\n")
        if not hidden and self.inside and re.fullmatch(r"h[1-6]", tag) and int(tag[1]) <= self.split:
            self.sections.append(["", [], a.get("id")])
            self.heading = len(self.stack)
        elif self.heading is not None and a.get("id") and not self.sections[-1][2]:
            # DocBook names a section by an anchor in its heading, the same in every
            # translation and release, where the heading's words change.
            self.sections[-1][2] = a["id"]

    def handle_endtag(self, tag):
        if not any(t == tag for t, _ in self.stack):
            return
        while self.stack:
            t, _ = self.stack.pop()
            if self.heading is not None and len(self.stack) < self.heading:
                self.heading = None
            if self.keep_depth is not None and len(self.stack) <= self.keep_depth:
                self.inside = False
                self.keep_depth = -1  # read once
            if t == tag:
                break
        if tag in BLOCK:
            self.text("\n")

    def text(self, data):
        if self.inside and not (self.stack and self.stack[-1][1]):
            self.sections[-1][1].append(data)
            if self.heading is not None:
                self.sections[-1][0] += data

    def handle_data(self, data):
        self.text(data)

    def result(self):
        out = []
        for heading, parts, anchor in self.sections:
            body = re.sub(r"[ \t\r\f\v]+", " ", "".join(parts))
            body = re.sub(r"\s*\n\s*", "\n", body).strip()
            out.append((anchor or normalise_heading(heading), body))
        return out


def normalise_heading(h):
    """A section's name without its number (numbers shift when sections are added)."""
    h = unicodedata.normalize("NFKC", h).strip().lower()
    h = re.sub(r"^(chapter|appendix|part)?\s*[0-9a-z]?[0-9.]*\s*", "", h) if re.match(r"^(chapter|appendix|part)?\s*[0-9a-z]?[0-9.]+\s", h) else h
    return re.sub(r"\s+", " ", h).strip(" ¶#")


def read_html(path, **kw):
    p = Sections(**kw)
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    p.close()
    return p.result()


def documents(name, suite):
    """{document id: text} of one collection in one release."""
    lang, kind, packages, how = COLLECTIONS[name]
    if kind == "descriptions":
        return descriptions(how, suite)
    root = DATA / packages[suite] / suite
    docs = {}
    if how == "pg-html":
        for path in sorted(root.glob("usr/share/doc/postgresql-doc-*/html/*.html")):
            docs[path.name] = "\n".join(t for _, t in read_html(path, skip={"navheader", "navfooter"}))
    elif how == "sphinx-sources":
        base = next(root.glob("usr/share/doc/python3.*/html/_sources"))
        for path in sorted(base.rglob("*.txt")):
            rel = str(path.relative_to(base))
            if not rel.startswith("whatsnew/") and not rel.startswith("c-api/"):
                docs[rel] = path.read_text(encoding="utf-8", errors="replace")
    elif how == "django-html":
        base = root / "usr/share/doc/python-django-doc/html"
        for path in sorted(base.rglob("*.html")):
            rel = str(path.relative_to(base))
            if rel.startswith(("releases/", "_modules/", "genindex", "search", "py-modindex")):
                continue
            docs[rel] = "\n".join(t for _, t in read_html(path, keep="yui-main", skip={"nav"}))
    elif how == "docbook-sections":
        for path in sorted(root.glob("usr/share/**/*.html")):
            if path.name.startswith("index") or "/images/" in str(path):
                continue
            chapter = re.sub(r"\.(en|zh-cn|zh_CN)\.html$|\.html$", "", path.name)
            for heading, text in read_html(path, split=3, skip={"navheader", "navfooter", "toc"}):
                if heading:
                    docs[f"{chapter}#{heading}"] = docs.get(f"{chapter}#{heading}", "") + text
    elif how == "handbook-zh":
        base = root / "usr/share/doc/debian-handbook/html/zh-CN"
        for path in sorted(base.glob("*.html")):
            if path.name != "index.html":
                docs[path.name] = "\n".join(t for _, t in read_html(path, skip={"banner", "docnav", "navheader", "toc"}))
    return docs


def descriptions(how, suite):
    """{package: (synopsis, long description)} of Debian main in `suite`."""
    lists = DATA / "apt" / "lists"
    lang = "en" if how.endswith("-en") else "zh%5fCN"
    path = next(lists.glob(f"*_dists_{suite}_main_i18n_Translation-{lang}*"))
    raw = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", str(path)], capture_output=True, check=True).stdout
    out = {}
    for stanza in raw.decode("utf-8", errors="replace").split("\n\n"):
        fields, key = {}, None
        for line in stanza.split("\n"):
            if line.startswith(" ") and key:
                fields[key].append(line[1:])
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = [value.strip()]
        desc = next((v for k, v in fields.items() if k.startswith("Description-") and k != "Description-md5"), None)
        package = fields.get("Package", [None])[0]
        if desc and package and package not in out:
            body = "\n".join("" if l.strip() == "." else l for l in desc[1:]).strip()
            out[package] = (desc[0], body)
    return out


# ---------------------------------------------------------------------------------- ground truth

WORD = re.compile(r"\w+")


def shingles(text, lang):
    if lang == "zh":
        s = [c for c in unicodedata.normalize("NFKC", text).lower() if c.isalnum()]
        return frozenset(hash("".join(s[i:i + 3])) for i in range(max(1, len(s) - 2)))
    w = WORD.findall(text.lower())
    return frozenset(hash((w[i], w[i + 1], w[i + 2]) if i + 2 < len(w) else tuple(w[i:])) for i in range(max(1, len(w) - 2)))


def length(text, lang):
    if lang == "zh":
        return sum(1 for c in text if c.isalnum())
    return len(WORD.findall(text))


LIMITS = {"en": (30, 200), "zh": (80, 500)}


def length_class(n, lang):
    short, medium = LIMITS[lang]
    return "short" if n <= short else "medium" if n <= medium else "long"


BANDS = ((0.9, 1.01, ">= 0.9"), (0.8, 0.9, "0.8-0.9"), (0.6, 0.8, "0.6-0.8"), (0.0, 0.6, "< 0.6"))


def band(j):
    return next(label for lo, hi, label in BANDS if lo <= j < hi)


CLASS_NAMES = ("short", "medium", "long")


def corpus(name, args, rng):
    """Texts (deduplicated) and the pairs of one collection, by text index: positives as a list
    of (a, b, band, class, unit) and negatives as arrays a, b, class (an index into CLASS_NAMES),
    key_a, key_b (indexes into `keys`, the (unit, suite, document) of each side)."""
    lang, kind, _, _ = COLLECTIONS[name]
    if kind == "descriptions":
        by_suite = {s: documents(name, s) for s in SUITES}
        pools = {which: {s: {p: v[part] for p, v in d.items() if v[part]} for s, d in by_suite.items()}
                 for which, part in (("synopsis", 0), ("description", 1))}
    else:
        pools = {"page": {s: documents(name, s) for s in COLLECTIONS[name][2]}}
    texts, index, lengths = [], {}, []

    def text_id(t):
        if t not in index:
            index[t] = len(texts)
            texts.append(t)
            lengths.append(length(t, lang))
        return index[t]

    keys, shingle, doc_ids = [], [], {}
    positives, sizes = [], {}
    neg = {"a": [], "b": [], "ka": [], "kb": []}
    min_len = 3 if kind == "descriptions" else (100 if lang == "en" else 200)
    for which, by_suite in pools.items():
        suites = [s for s in SUITES if s in by_suite]
        keep = {s: {d: t for d, t in by_suite[s].items() if length(t, lang) >= min_len} for s in suites}
        common = sorted(set.union(*(set(v) for v in keep.values())))
        if len(common) > args.sample:
            common = sorted(rng.sample(common, args.sample))
        sizes[which] = {s: sum(1 for d in common if d in keep[s]) for s in suites}
        key_of = {}
        for s in suites:
            for d in common:
                if d in keep[s]:
                    key_of[(s, d)] = len(keys)
                    keys.append((which, s, d, text_id(keep[s][d])))
                    shingle.append(shingles(keep[s][d], lang))
        for s1, s2 in combinations(suites, 2):
            ds1 = [d for d in common if d in keep[s1]]
            ds2 = [d for d in common if d in keep[s2]]
            for d in ds1:
                if d in keep[s2] and keep[s1][d] != keep[s2][d]:
                    k1, k2 = key_of[(s1, d)], key_of[(s2, d)]
                    j = jaccard(shingle[k1], shingle[k2])
                    a, b = keys[k1][3], keys[k2][3]
                    cls = length_class(min(lengths[a], lengths[b]), lang)
                    positives.append((a, b, band(j), cls, which))
            # Negatives: every pair of different documents, or a seeded sample of them.
            k1s = np.array([key_of[(s1, d)] for d in ds1], dtype=np.int64)
            k2s = np.array([key_of[(s2, d)] for d in ds2], dtype=np.int64)
            if len(k1s) * len(k2s) <= args.negatives:
                ka, kb = (x.ravel() for x in np.meshgrid(k1s, k2s, indexing="ij"))
            else:
                g = np.random.default_rng(rng.randrange(1 << 32))
                ka = k1s[g.integers(0, len(k1s), args.negatives)]
                kb = k2s[g.integers(0, len(k2s), args.negatives)]
            docs = np.array([doc_ids.setdefault(k[2], len(doc_ids)) for k in keys], dtype=np.int64)
            different = docs[ka] != docs[kb]
            neg["ka"].append(ka[different])
            neg["kb"].append(kb[different])
    text_of = np.array([k[3] for k in keys], dtype=np.int64)
    ka = np.concatenate(neg["ka"]) if neg["ka"] else np.zeros(0, dtype=np.int64)
    kb = np.concatenate(neg["kb"]) if neg["kb"] else np.zeros(0, dtype=np.int64)
    a, b = text_of[ka], text_of[kb]
    identical = int(np.sum(a == b))
    keepn = a != b
    ka, kb, a, b = ka[keepn], kb[keepn], a[keepn], b[keepn]
    lens = np.array(lengths, dtype=np.int64)
    shorter = np.minimum(lens[a], lens[b])
    short, medium = LIMITS[lang]
    cls = np.where(shorter <= short, 0, np.where(shorter <= medium, 1, 2))
    negatives = {"a": a, "b": b, "class": cls, "ka": ka, "kb": kb}
    return texts, positives, negatives, identical, sizes, shingle, keys


def screen_negatives(negatives, shingle, candidates):
    """The negatives among `candidates` (the ones some option set puts within the largest k)
    whose two texts are near-copies (Jaccard >= NEGATIVE_JACCARD): different documents that
    are not negatives. The rest are far apart by every fingerprint and stay."""
    return [i for i in candidates
            if jaccard(shingle[negatives["ka"][i]], shingle[negatives["kb"][i]]) >= NEGATIVE_JACCARD]


# ---------------------------------------------------------------------------------- fingerprints

def fingerprints(conn, texts, options, b):
    """An array (texts x b) of the server's fingerprints."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS rev_texts (n int PRIMARY KEY, t text)")
    if conn.execute("SELECT count(*) FROM rev_texts").fetchone()[0] != len(texts):
        conn.execute("TRUNCATE rev_texts")
        with conn.cursor().copy("COPY rev_texts (n, t) FROM STDIN") as copy:
            for n, t in enumerate(texts):
                copy.write_row((n, t))
    if b == 1:
        rows = conn.execute("SELECT ARRAY[simhash(t, %s::jsonb)::int8] FROM rev_texts ORDER BY n", (options,)).fetchall()
    else:
        rows = conn.execute("SELECT simhash_set(t, %s, %s::jsonb)::int8[] FROM rev_texts ORDER BY n", (b, options)).fetchall()
    return np.array([r[0] for r in rows], dtype=np.int64).view(np.uint64)


def checked(conn, texts, pairs):
    """Whether each (a, b) pair of text indexes passes the check, simhash_jaccard(a, b, CHECK
    options) >= CHECK threshold: the same Jaccard of the server's feature sets
    (simhash_feature_set), each text's set fetched once."""
    if not pairs:
        return {}
    wanted = sorted({x for p in pairs for x in p})
    rows = conn.execute("SELECT n, simhash_feature_set(t, %s::jsonb) FROM rev_texts WHERE n = ANY(%s)",
                        (CHECK[0], wanted)).fetchall()
    sets = {n: frozenset(f) for n, f in rows}
    return {(a, b): jaccard(sets[a], sets[b]) >= CHECK[1] for a, b in pairs}


# ---------------------------------------------------------------------------------- scoring

def evaluate(conn, name, args, rng):
    t0 = time.time()
    lang, kind, _, _ = COLLECTIONS[name]
    texts, positives, negatives, identical, sizes, shingle, keys = corpus(name, args, rng)
    pg.log(f"{name}: {len(texts)} texts, {len(positives)} positives, {len(negatives['a'])} negatives ({time.time() - t0:.0f} s)")
    bs = [1, 4, 8] if kind == "descriptions" else [1]
    pa = np.array([p[0] for p in positives], dtype=np.int64)
    pb = np.array([p[1] for p in positives], dtype=np.int64)
    na, nb = negatives["a"], negatives["b"]
    dist = {}
    for label, options in OPTIONS.items():
        t1 = time.time()
        fp = fingerprints(conn, texts, options, max(bs))
        dist[label] = (min_distances(fp, pa, pb, bs), min_distances(fp, na, nb, bs))
        pg.log(f"  {label}: {time.time() - t1:.1f} s")
    # Negatives within the largest k by any option set: screened for near-copies, checked.
    kmax = max(KS)
    near = np.zeros(len(na), dtype=bool)
    for _, nd in dist.values():
        for d in nd.values():
            near |= d <= kmax
    candidates = np.flatnonzero(near)
    dropped = screen_negatives(negatives, shingle, candidates)
    keep = np.ones(len(na), dtype=bool)
    keep[dropped] = False
    pairs = {(int(na[i]), int(nb[i])) for i in candidates if keep[i]} | {(int(a), int(b)) for a, b in zip(pa, pb)}
    ok = checked(conn, texts, sorted(pairs))
    pos_ok = np.array([ok.get((int(a), int(b)), False) for a, b in zip(pa, pb)], dtype=bool)
    neg_ok = np.zeros(len(na), dtype=bool)
    for i in candidates:
        neg_ok[i] = ok.get((int(na[i]), int(nb[i])), False)
    pos_class = np.array([p[3] for p in positives])
    pos_band = np.array([p[2] for p in positives])
    result = {"texts": len(texts), "sizes": sizes, "identical_negatives": identical, "near_copy_negatives": len(dropped),
              "candidates": int(len(candidates)), "classes": {}}
    for ci, cls in enumerate(CLASS_NAMES):
        pm = pos_class == cls
        nm = (negatives["class"] == ci) & keep
        if not pm.any() and not nm.any():
            continue
        entry = {"positives": {label: int(np.sum(pm & (pos_band == label))) for _, _, label in BANDS},
                 "negatives": int(np.sum(nm)), "scores": {}}
        for label in OPTIONS:
            pd, nd = dist[label]
            for b in bs:
                for check in (False, True):
                    rows = []
                    for k in KS:
                        pin = (pd[b] <= k) & pm
                        nin = (nd[b] <= k) & nm
                        if check:
                            pin &= pos_ok
                            nin &= neg_ok
                        rows.append({"k": k, "fp": int(np.sum(nin)),
                                     "recall": {bl: int(np.sum(pin & (pos_band == bl))) for _, _, bl in BANDS}})
                    entry["scores"][f"{label}|{b}|{int(check)}"] = rows
        result["classes"][cls] = entry
    if kind == "pages":
        result["k_report"] = k_report(conn, keys, positives)
    pg.log(f"  done in {time.time() - t0:.0f} s")
    return result


K_REPORT_KS = (3, 5, 7, 10)


def k_report(conn, keys, positives):
    """simhash_k_report on the collection's newest release alone, with the recommended options
    for pages ({"weighting": "tf"}), every row sampled, and the >= 0.9 positives as the known
    copies: what a user who ran it on these pages would have read."""
    options = OPTIONS[RECOMMENDED[("en", "long")][0]]
    newest = max((k[1] for k in keys), key=SUITES.index)
    ids = sorted({k[3] for k in keys if k[1] == newest})
    conn.execute("DROP TABLE IF EXISTS rev_one, rev_copies")
    conn.execute("CREATE TABLE rev_one AS SELECT simhash(t, %s::jsonb) AS fp FROM rev_texts WHERE n = ANY(%s)", (options, ids))
    conn.execute("ANALYZE rev_one")
    pairs = [(a, b) for a, b, band_label, _, _ in positives if band_label == ">= 0.9"]
    conn.execute("CREATE TABLE rev_copies AS SELECT simhash(x.t, %s::jsonb) AS a, simhash(y.t, %s::jsonb) AS b "
                 "FROM unnest(%s::int[], %s::int[]) AS p(a, b) JOIN rev_texts x ON x.n = p.a JOIN rev_texts y ON y.n = p.b",
                 (options, options, [a for a, _ in pairs], [b for _, b in pairs]))
    rows = conn.execute("SELECT k, random_pairs_within, matches_per_lookup, copies_within "
                        "FROM simhash_k_report('rev_one', 'fp', 100000, 'rev_copies')").fetchall()
    conn.execute("DROP TABLE rev_one, rev_copies")
    return {"release": newest, "rows": len(ids), "copies": len(pairs),
            "by_k": {str(k): {"random_pairs_within": r, "matches_per_lookup": m, "copies_within": c} for k, r, m, c in rows}}


# What the README recommends for each kind of text (language, length class): option set, b, k,
# and k with the check. Derived from this benchmark (BENCHMARKS.md, *Real revisions*).
RECOMMENDED = {
    ("en", "short"): ("chars 3", 4, 7, 10),
    ("zh", "short"): ("chars 2, tf", 4, 7, 10),
    ("en", "medium"): ("tf", 1, 7, 10),
    ("en", "long"): ("tf", 1, 7, 10),
    ("zh", "medium"): ("tf", 1, 7, 10),
    ("zh", "long"): ("tf", 1, 7, 10),
}
# What the README recommended before this benchmark (tuned on synthetic edits).
BEFORE = {
    ("en", "short"): ("default", 8, 10),
    ("zh", "short"): ("chars 2, tf", 4, 7),
    ("en", "medium"): ("default", 1, 5),
    ("en", "long"): ("ngram 2, tf", 1, 5),
    ("zh", "medium"): ("default", 1, 8),
    ("zh", "long"): ("default", 1, 4),
}
BAND_LABELS = [label for _, _, label in BANDS[:3]]
MIN_NEGATIVES = 1000  # a collection's class with fewer negatives cannot bound 0.01 %


def kinds(report):
    """{(language, class): [(collection, entry)]} over the report's collections."""
    out = {}
    for name, res in report["collections"].items():
        for cls, entry in res["classes"].items():
            out.setdefault((COLLECTIONS[name][0], cls), []).append((name, entry))
    return {k: out[k] for k in sorted(out, key=lambda k: (k[0], CLASS_NAMES.index(k[1])))}


def safe_k(items, key, budget):
    """The largest k whose false positives stay within `budget` on every collection of `items`
    with enough negatives to say so; None when even k = 0 does not."""
    best = None
    for k in KS:
        if all(e["scores"][key][k]["fp"] <= budget * e["negatives"] for _, e in items if e["negatives"] >= MIN_NEGATIVES):
            best = k
    return best


def pooled(items, key, k):
    """Recall of each band at k over every collection of `items` together, and the smallest of
    the >= 0.9 band's over collections with 10 pairs or more in it."""
    found = {bl: sum(e["scores"][key][k]["recall"][bl] for _, e in items) for bl in BAND_LABELS}
    total = {bl: sum(e["positives"][bl] for _, e in items) for bl in BAND_LABELS}
    shares = [e["scores"][key][k]["recall"][">= 0.9"] / e["positives"][">= 0.9"] for _, e in items if e["positives"][">= 0.9"] >= 10]
    return {bl: (found[bl] / total[bl] if total[bl] else None) for bl in BAND_LABELS}, (min(shares) if shares else None)


def max_fp(items, key, k):
    rates = [e["scores"][key][k]["fp"] / e["negatives"] for _, e in items if e["negatives"] >= MIN_NEGATIVES]
    return max(rates) if rates else None


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def print_tables(report):
    print(f"{report['server']}; run {report['when']}.\n")
    print("| collection | language | releases (package version) | documents a release | positives >= 0.9 / 0.8-0.9 / 0.6-0.8 / < 0.6 | negatives | near-copy negatives left out |")
    print("|---|---|---|---|---|---:|---:|")
    for name, res in report["collections"].items():
        pos = {bl: sum(e["positives"][bl] for e in res["classes"].values()) for _, _, bl in BANDS}
        neg = sum(e["negatives"] for e in res["classes"].values())
        sizes = "; ".join(f"{unit}: " + " / ".join(str(n) for n in by.values()) for unit, by in res["sizes"].items())
        versions = ", ".join(v.split(" ", 1)[-1] if "Translation" not in v else s for s, v in report["versions"][name].items() if v)
        print(f"| {name} | {COLLECTIONS[name][0]} | {versions} | {sizes} | " + " / ".join(str(pos[bl]) for _, _, bl in BANDS) +
              f" | {neg:,} | {res['near_copy_negatives']:,} |")
    print()
    for (lang, cls), items in kinds(report).items():
        names = ", ".join(f"{n} ({e['positives']['>= 0.9']})" for n, e in items)
        bs = sorted({int(key.split("|")[1]) for key in items[0][1]["scores"]})
        print(f"#### {lang} {cls}: {names}\n")
        print("| options | b | check | k at <= 0.01 % | >= 0.9 | 0.8-0.9 | 0.6-0.8 | smallest >= 0.9 of a collection | k at <= 0.001 % | >= 0.9 |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for label in OPTIONS:
            for b in bs:
                for check in (0, 1):
                    # The check's rows for the recommended setting only: it removes false
                    # positives alike for every option set.
                    if check and RECOMMENDED.get((lang, cls), ())[:2] != (label, b):
                        continue
                    key = f"{label}|{b}|{check}"
                    k1, k2 = safe_k(items, key, BUDGETS[0]), safe_k(items, key, BUDGETS[1])
                    r1, m1 = pooled(items, key, k1) if k1 is not None else ({bl: None for bl in BAND_LABELS}, None)
                    r2, _ = pooled(items, key, k2) if k2 is not None else ({bl: None for bl in BAND_LABELS}, None)
                    mark = "**" if RECOMMENDED.get((lang, cls), ())[:2] == (label, b) else ""
                    print(f"| {mark}{label}{mark} | {b} | {'yes' if check else ''} | {fmt(k1, 0)} | {fmt(r1['>= 0.9'])} | "
                          f"{fmt(r1['0.8-0.9'])} | {fmt(r1['0.6-0.8'])} | {fmt(m1)} | {fmt(k2, 0)} | {fmt(r2['>= 0.9'])} |")
        print()
    print("#### The settings the README gave before, and now (all collections of a kind together)\n")
    print("| texts | before | >= 0.9 | 0.8-0.9 | 0.6-0.8 | false positives (worst collection) | now | >= 0.9 | 0.8-0.9 | "
          "0.6-0.8 | false positives (worst collection) | now, with the check | >= 0.9 | 0.8-0.9 | 0.6-0.8 | false positives |")
    print("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    for (lang, cls), items in kinds(report).items():
        cells = [f"{lang} {cls}"]
        old_label, old_b, old_k = BEFORE[(lang, cls)]
        label, b, k, check_k = RECOMMENDED[(lang, cls)]
        for lb, bb, kk, check in ((old_label, old_b, old_k, 0), (label, b, k, 0), (label, b, check_k, 1)):
            key = f"{lb}|{bb}|{check}"
            r, _ = pooled(items, key, kk)
            cells.append(f"{lb}, b = {bb}, k = {kk}")
            cells += [fmt(r[bl]) for bl in BAND_LABELS]
            worst = max_fp(items, key, kk)
            cells.append("-" if worst is None else f"{worst:.4%}")
        print("| " + " | ".join(cells) + " |")
    print()
    print("#### simhash_k_report on each collection's newest release\n")
    print("`simhash_k_report(pages, 'fp', 100000, copies)` on a table of the newest release's pages (fingerprints with the "
          "recommended `{\"weighting\": \"tf\"}`, every row sampled) and a table of its >= 0.9 positives: the share of "
          "random pairs it reports within k, against the false positives the benchmark counted among its negatives "
          "(pairs across releases), and the copies it reports found.\n")
    print("| collection | rows | " + " | ".join(f"k = {k}: random pairs within (benchmark's false positives)" for k in K_REPORT_KS)
          + " | copies found at k = 7 (benchmark) |")
    print("|---|---:|" + "---:|" * (len(K_REPORT_KS) + 1))
    for name, res in report["collections"].items():
        rep = res.get("k_report")
        if not rep:
            continue
        cells = []
        key = f"{RECOMMENDED[('en', 'long')][0]}|1|0"
        for k in K_REPORT_KS:
            fp = sum(e["scores"][key][k]["fp"] for e in res["classes"].values())
            neg = sum(e["negatives"] for e in res["classes"].values())
            cells.append(f"{rep['by_k'][str(k)]['random_pairs_within']:.4%} ({fp / neg:.4%})")
        found = sum(e["scores"][key][7]["recall"][">= 0.9"] for e in res["classes"].values())
        total = sum(e["positives"][">= 0.9"] for e in res["classes"].values())
        print(f"| {name} | {rep['rows']:,} | " + " | ".join(cells) + f" | {rep['by_k']['7']['copies_within']:.3f} ({found / total:.3f}) |")
    print()
    print("#### The recommended settings against the best measured, each collection alone\n")
    print("Best: the highest recall of the >= 0.9 band over every option set, b and k <= 12 whose false positives on "
          "that collection stay within 0.01 % (without the check). Recommended: the README's setting at its k.\n")
    print("| collection | class | pairs >= 0.9 | recommended | its recall (0.8-0.9, 0.6-0.8) | its false positives | best | best setting | gap |")
    print("|---|---|---:|---|---|---:|---:|---|---:|")
    for (lang, cls), items in kinds(report).items():
        label, b, k, _ = RECOMMENDED[(lang, cls)]
        key = f"{label}|{b}|0"
        for name, e in items:
            n = e["positives"][">= 0.9"]
            if not n or e["negatives"] < MIN_NEGATIVES:
                continue
            row = e["scores"][key][k]
            mine = row["recall"][">= 0.9"] / n
            others = [(row2["recall"][">= 0.9"] / n, row2["k"], key2)
                      for key2, rows in e["scores"].items() if key2.endswith("|0")
                      for row2 in rows if row2["fp"] <= BUDGETS[0] * e["negatives"]]
            # Among equals, the recommended setting, then the smallest k.
            best = max(others, key=lambda t: (t[0], t[2] == key and t[1] == k, -t[1]))
            lo = ", ".join(fmt(row["recall"][bl] / e["positives"][bl] if e["positives"][bl] else None) for bl in BAND_LABELS[1:])
            opt, bb, _ = best[2].split("|")
            print(f"| {name} | {cls} | {n} | {label}, b = {b}, k = {k} | {mine:.3f} ({lo}) | {row['fp'] / e['negatives']:.4%} | "
                  f"{best[0]:.3f} | {opt}, b = {bb}, k = {best[1]} | {best[0] - mine:.3f} |")
    print()


def main():
    ap = pg.arguments("revisions.json", report=True)
    ap.add_argument("--collections", default=",".join(COLLECTIONS))
    ap.add_argument("--sample", type=int, default=20000, help="documents a collection keeps at most (seeded)")
    ap.add_argument("--negatives", type=int, default=3_000_000, help="negatives a pair of releases keeps at most")
    args = ap.parse_args()
    if pg.reprinted(args, print_tables):
        return
    versions = fetch()
    conn = pg.connect()
    settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name IN ('server_version')").fetchall())
    settings["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
    report = {"server": pg.server(settings), "when": time.strftime("%Y-%m-%d"), "versions": versions,
              "options": OPTIONS, "check": CHECK, "collections": {}}
    for name in args.collections.split(","):
        rng = random.Random(SEED)
        report["collections"][name] = evaluate(conn, name, args, rng)
        conn.execute("DROP TABLE IF EXISTS rev_texts")
        pg.save(report, args.json)
    print_tables(report)


if __name__ == "__main__":
    main()
