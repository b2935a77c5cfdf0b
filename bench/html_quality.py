"""Near-copies of crawled HTML pages and of e-mail: raw fingerprints against {"markup": "html"},
with and without the exact check (verify), through simhash_pairs, simhash_chained_groups and
simhash_representative_groups as a user runs them.

Data (bench/fetch_data.sh):
- pages: the HTML documentation of PostgreSQL 15 and Python 3.11 from their Debian packages,
  two sites whose every page carries its site's header, navigation and footer;
- mail: the SpamAssassin e-mail bodies (the text after the first blank line; plain text or
  HTML, with the mailing lists' and spam campaigns' templates and footers).
For 300 documents (seeded) two near-copies are planted by replacing 3 % and 10 % of the words of
the text (outside tags, scripts and styles) with words of other documents; true pairs are each
copy with its original and the two copies with each other (900). Every other pair within k is
counted false; the pairs among them whose two documents are near-copies in the corpus itself
(word 4-shingle Jaccard >= 0.3 of the words a reader sees, computed here in Python: tags, scripts,
styles and comments removed, an unclosed comment hiding the rest as in a browser, inline tags
joining the letters around them, entities decoded) are also reported apart, with the precision
they leave ("precision, corpus duplicates aside").
Reposts (pages only): 373 pages (seeded) whose content is re-wrapped in a page of the other site
(the Python docs' main div, the PostgreSQL docs' body between its navigation header and
footer); each original and its repost hold the same content under different templates.

Usage: bench/.venv/bin/python bench/html_quality.py [--corpus pages|mail] [--copies 300]
       [--seed 7] [--runs 3] [--ks 3,6,8] [--min-jaccard 0.3,0.5] [--fingerprints raw,markup,...]
       [--verify-ngram 3]
Groups: a group is pure when it holds one document and its copies only; recall is the share of
planted copies in their original's group.
Prints Markdown; raw numbers in bench/results/{html,mail}_quality.json.
"""
import argparse
import json
import random
import re
import statistics
import time
from html import unescape
from pathlib import Path

from corpora import jaccard, shingles
from pg import connect

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "html"
RESULTS = HERE / "results"
# Each fingerprint column: its expression, and the check's options (word 3-shingles of the
# visible text, of the main content for "main"). "markup-set4": four seeded fingerprints of the
# visible text (simhash_set), near when any same-position pair is.
FINGERPRINTS = {
    "raw": ("simhash(body)", '{"markup": "html", "ngram": 3}'),
    "markup": ("""simhash(body, '{"markup": "html"}')""", '{"markup": "html", "ngram": 3}'),
    "main": ("""simhash(body, '{"markup": "html-main"}')""", '{"markup": "html-main", "ngram": 3}'),
    "markup-set4": ("""simhash_set(body, 4, '{"markup": "html"}')""", '{"markup": "html", "ngram": 3}'),
}
# Text between tags, outside script and style (where planted edits go).
SEGMENT = re.compile(r"(<script\b.*?</script>|<style\b.*?</style>|<[^>]*>)|([^<]+)", re.S | re.I)
WORD = re.compile(r"[A-Za-z]{3,}")


def load_pages():
    pages = []
    for site in ("postgresql", "python"):
        for path in sorted((DATA / site).rglob("*.html")):
            if path.is_file():
                pages.append((site, path.read_text(errors="replace")))
    return pages


def load_mail():
    """Every SpamAssassin body (after the first blank line), by folder, in file order."""
    mails = []
    for path in sorted((HERE / "data" / "spam-assassin").glob("*/*.txt")):
        raw = path.read_bytes().decode("utf-8", errors="replace").replace("\x00", "")
        mails.append((path.parent.name, raw.split("\n\n", 1)[1] if "\n\n" in raw else raw))
    return mails


def load(corpus):
    return load_pages() if corpus == "pages" else load_mail()


# What the ground truth drops (scripts and styles, a break; comments, nothing: spam writes
# "Hum<!--x-->an" to read "Human"; an unclosed comment hides the rest of the document, as in a
# browser), where it breaks words (block elements) and what it joins (inline tags).
SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
BLOCK = re.compile(r"</?(?:address|article|aside|blockquote|body|br|dd|div|dl|dt|footer|form|h[1-6]|head|header|hr|"
                   r"html|li|main|nav|ol|option|p|pre|section|table|tbody|td|tfoot|th|thead|title|tr|ul)\b[^>]*>", re.I)
TAG = re.compile(r"<[^>]*>")


def visible_words(html):
    """The lower-cased words a reader sees: the ground truth's own reading, independent of the
    extension's."""
    text = TAG.sub("", BLOCK.sub(" ", COMMENT.sub("", SCRIPT.sub(" ", html))))
    return [w.lower() for w in WORD.findall(unescape(text))]


def plant(html, share, vocabulary, rng):
    """`html` with `share` of the words of its text (outside tags, scripts, styles) replaced."""
    parts = [(m.group(1), m.group(2)) for m in SEGMENT.finditer(html)]
    spots = [(i, w.start(), w.end()) for i, (tag, text) in enumerate(parts) if text for w in WORD.finditer(text)]
    chosen = sorted(rng.sample(spots, max(1, round(share * len(spots)))), reverse=True)
    texts = [text for _, text in parts]
    for i, start, end in chosen:
        texts[i] = texts[i][:start] + rng.choice(vocabulary) + texts[i][end:]
    return "".join(tag if tag else text for (tag, _), text in zip(parts, texts))


def build(conn, args):
    rng = random.Random(args.seed)
    pages = load(args.corpus)
    vocabulary = sorted({w for _, html in pages[::7] for w in WORD.findall(html)})
    originals = rng.sample(range(len(pages)), args.copies)
    rows = [(i + 1, site, html, None, None) for i, (site, html) in enumerate(pages)]
    n = len(rows)
    for j, o in enumerate(originals):
        for share in (0.03, 0.10):
            n += 1
            rows.append((n, pages[o][0], plant(pages[o][1], share, vocabulary, rng), o + 1, share))
    conn.execute(f"DROP TABLE IF EXISTS {args.corpus}")
    columns = ", ".join(f"{column(name)} {'simhash64[]' if 'set' in name else 'simhash64'} GENERATED ALWAYS AS ({expr}) STORED"
                        for name, (expr, _) in FINGERPRINTS.items() if name in args.fingerprints)
    conn.execute(f"CREATE TABLE {args.corpus} (id int8 PRIMARY KEY, site text, body text, original int8, share float8, {columns})")
    with conn.cursor().copy(f"COPY {args.corpus} (id, site, body, original, share) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    conn.execute(f"ANALYZE {args.corpus}")
    return len(pages)


def check_options(name, ngram):
    """The check's options for fingerprint `name`: its reading of the text, word `ngram`-shingles."""
    return FINGERPRINTS[name][1].replace('"ngram": 3', f'"ngram": {ngram}')


def checked_calls(table, name, k, thresholds, verify, select, label):
    """(label, SQL) of `SELECT select(table, column, k, 'id', <the check>)` at each threshold."""
    return [(label.format(threshold),
             f"SELECT {select}('{table}', '{column(name)}', {k}, 'id', "
             f"verify => '{{\"column\": \"body\", \"min_jaccard\": {threshold}, \"options\": {verify}}}')")
            for threshold in thresholds]


def column(name):
    return "fp_" + name.replace("-", "_")


def body_of(html):
    m = re.search(r"<body[^>]*>(.*)</body>", html, re.S | re.I)
    return m.group(1) if m else html


def div_span(html, opening):
    """(start, end) of the inside of the div that `opening` starts, divs counted to its end."""
    start = html.find(opening)
    if start < 0:
        return None
    inner = start + len(opening)
    depth, pos = 1, inner
    for m in re.finditer(r"<div\b|</div\s*>", html[inner:], re.I):
        depth += 1 if m.group(0).lower().startswith("<div") else -1
        if depth == 0:
            return inner, inner + m.start()
        pos = m.end()
    return inner, len(html)


PY_MAIN = '<div class="body" role="main">'


def content_of(site, html):
    """A page's own content as its site lays it out: the Python docs' main div, the PostgreSQL
    docs' body without its navigation header and footer."""
    if site == "python":
        span = div_span(html, PY_MAIN)
        return html[span[0]:span[1]] if span else body_of(html)
    body = body_of(html)
    body = re.sub(r'<div class="navheader">.*?</div>', "", body, count=1, flags=re.S)
    return re.sub(r'<div class="navfooter">.*?</div>', "", body, count=1, flags=re.S)


def repost(site, html, host_html):
    """`html`'s content re-wrapped in `host_html`, a page of the other site."""
    content = content_of(site, html)
    if site == "postgresql":  # into a Python page's main div
        span = div_span(host_html, PY_MAIN)
        return host_html[:span[0]] + content + host_html[span[1]:]
    body = body_of(host_html)  # into a PostgreSQL page, between its navigation header and footer
    header = re.search(r'<div class="navheader">.*?</div>', body, re.S)
    footer = re.search(r'<div class="navfooter">.*?</div>', body, re.S)
    inside = (header.group(0) if header else "") + content + (footer.group(0) if footer else "")
    return host_html.replace(body, inside, 1)


def reposts(conn, args):
    """The same content under the other site's template: distances per fingerprint."""
    rng = random.Random(args.seed + 1)
    pages = load_pages()
    by_site = {site: [h for s, h in pages if s == site and (site != "python" or PY_MAIN in h)] for site in ("postgresql", "python")}
    pairs = []
    for _ in range(args.reposts):
        site = rng.choice(("postgresql", "python"))
        other = "python" if site == "postgresql" else "postgresql"
        original = rng.choice(by_site[site])
        pairs.append((original, repost(site, original, rng.choice(by_site[other]))))
    out = []
    for name in args.fingerprints:
        expr = FINGERPRINTS[name][0]
        d = sorted(r[0] for r in conn.execute(
            f"SELECT {expr.replace('body', 'u.a')} <-> {expr.replace('body', 'u.b')} FROM unnest(%s::text[], %s::text[]) AS u(a, b)",
            ([a for a, _ in pairs], [b for _, b in pairs])).fetchall())
        q = lambda f: d[min(len(d) - 1, int(f * len(d)))]
        out.append({"fingerprint": name, "reposts": len(d), "median": statistics.median(d), "p10": q(0.1), "p90": q(0.9),
                    **{f"found_k{k}": sum(1 for x in d if x <= k) / len(d) for k in (3, 6, 8)}})
        r = out[-1]
        print(f"reposts {name}: median {r['median']} ({r['p10']}-{r['p90']}), found at k=3/6/8 "
              f"{r['found_k3']:.3f} / {r['found_k6']:.3f} / {r['found_k8']:.3f}", flush=True)
    return out


def truth(conn, table):
    """The planted pairs, smaller id first."""
    pairs = set()
    copies = conn.execute(f"SELECT id, original FROM {table} WHERE original IS NOT NULL").fetchall()
    by_original = {}
    for cid, o in copies:
        pairs.add((min(cid, o), max(cid, o)))
        by_original.setdefault(o, []).append(cid)
    for ids in by_original.values():
        for a in ids:
            for b in ids:
                if a < b:
                    pairs.add((a, b))
    return pairs


class CorpusDuplicates:
    """Whether a found pair that was not planted joins two documents that are near-copies in
    the corpus itself (word 4-shingle Jaccard >= 0.3 of their visible words)."""

    def __init__(self, conn, table):
        rows = conn.execute(f"SELECT id, coalesce(original, id), body FROM {table} WHERE original IS NULL").fetchall()
        self.family = dict(conn.execute(f"SELECT id, coalesce(original, id) FROM {table}").fetchall())
        self.body = {i: body for i, _, body in rows}
        self.sets = {}

    def shingles_of(self, doc):
        if doc not in self.sets:
            self.sets[doc] = shingles(visible_words(self.body[doc]))
        return self.sets[doc]

    def __call__(self, a, b):
        x, y = self.family[a], self.family[b]
        if x == y:
            return True
        return jaccard(self.shingles_of(x), self.shingles_of(y)) >= 0.3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", choices=("pages", "mail"), default="pages")
    ap.add_argument("--copies", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ks", default="3,6,8")
    ap.add_argument("--min-jaccard", default="0.3,0.5")
    ap.add_argument("--fingerprints", default=None, help="comma-separated, of " + ", ".join(FINGERPRINTS))
    ap.add_argument("--reposts", type=int, default=373)
    ap.add_argument("--verify-ngram", type=int, default=3, help="the check's word shingles (1 = words)")
    args = ap.parse_args()
    args.fingerprints = (args.fingerprints.split(",") if args.fingerprints
                         else [f for f in FINGERPRINTS if args.corpus == "pages" or f != "main"])
    table = args.corpus
    conn = connect("simhash_html")
    t = time.perf_counter()
    pages = build(conn, args)
    load_s = time.perf_counter() - t
    true_pairs = truth(conn, table)
    duplicate = CorpusDuplicates(conn, table)
    report = {"settings": {**vars(args), "documents": pages, "true_pairs": len(true_pairs), "load_s": load_s,
                           "server_version": conn.execute("SHOW server_version").fetchone()[0]},
              "results": []}
    if args.corpus == "pages":
        report["reposts"] = reposts(conn, args)
    thresholds = [float(x) for x in args.min_jaccard.split(",")]
    ks = [int(x) for x in args.ks.split(",")]
    for name in args.fingerprints:
        verify = check_options(name, args.verify_ngram)
        for k in ks:
            calls = [("", f"SELECT a::int8, b::int8 FROM simhash_pairs('{table}', '{column(name)}', {k}, 'id')")]
            calls += checked_calls(table, name, k, thresholds, verify, "a::int8, b::int8 FROM simhash_pairs",
                                   " + jaccard >= {}")
            for label, sql in calls:
                times = []
                for _ in range(args.runs):
                    t = time.perf_counter()
                    found = conn.execute(sql).fetchall()
                    times.append(time.perf_counter() - t)
                got = {(min(a, b), max(a, b)) for a, b in found}
                hits = len(got & true_pairs)
                false = got - true_pairs
                in_corpus = sum(1 for a, b in false if duplicate(a, b))
                report["results"].append({
                    "fingerprint": name + label, "k": k, "pairs": len(got), "true": hits, "false": len(false),
                    "corpus_duplicates": in_corpus, "precision": hits / len(got) if got else 1.0,
                    "precision_aside": hits / (len(got) - in_corpus) if len(got) > in_corpus else 1.0,
                    "recall": hits / len(true_pairs), "seconds": statistics.median(times)})
                r = report["results"][-1]
                print(f"{r['fingerprint']} k={k}: precision {r['precision']:.3f} ({r['precision_aside']:.3f} aside) "
                      f"recall {r['recall']:.3f} ({r['false']} false, {in_corpus} corpus duplicates) {r['seconds']:.2f} s",
                      flush=True)
    # Groups: simhash_chained_groups (components) against simhash_representative_groups (stars, verified).
    copies = conn.execute(f"SELECT id, original FROM {table} WHERE original IS NOT NULL").fetchall()
    family = {cid: o for cid, o in copies}
    report["groups"] = []
    for name in args.fingerprints:
        verify = check_options(name, args.verify_ngram)
        for k in ks:
            runs = [("clusters", f"SELECT key::int8, group_key::int8 FROM simhash_chained_groups('{table}', '{column(name)}', {k}, 'id')")]
            runs += checked_calls(table, name, k, thresholds, verify, "key::int8, representative::int8 FROM simhash_representative_groups",
                                  "groups, jaccard >= {}")
            for label, sql in runs:
                t = time.perf_counter()
                rows = dict(conn.execute(sql).fetchall())
                secs = time.perf_counter() - t
                groups = {}
                for node, head in rows.items():
                    groups.setdefault(head, set()).add(node)
                # A group is pure when all its rows are one document and its planted copies;
                # "aside": also when its documents are near-copies in the corpus itself.
                pure = sum(1 for members in groups.values() if len({family.get(m, m) for m in members}) == 1)
                pure_aside = sum(1 for members in groups.values()
                                 if all(duplicate(min(members), m) for m in members))
                found = sum(1 for cid, o in copies if cid in rows and o in rows and rows[cid] == rows[o])
                report["groups"].append({"fingerprint": name, "k": k, "method": label, "groups": len(groups),
                                         "precision": pure / len(groups) if groups else 1.0,
                                         "precision_aside": pure_aside / len(groups) if groups else 1.0,
                                         "recall": found / len(copies), "largest": max(map(len, groups.values()), default=0),
                                         "seconds": secs})
                g = report["groups"][-1]
                print(f"{name} k={k} {label}: {g['groups']} groups, {g['precision']:.3f} pure "
                      f"({g['precision_aside']:.3f} aside), recall {g['recall']:.3f}, largest {g['largest']}, {secs:.2f} s",
                      flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = ("html" if args.corpus == "pages" else "mail") + (f"_quality_ngram{args.verify_ngram}.json"
                                                           if args.verify_ngram != 3 else "_quality.json")
    (RESULTS / out).write_text(json.dumps(report, indent=1))
    print(f"\n{pages} documents + {2 * args.copies} planted copies, {len(true_pairs)} true pairs\n")
    print("| fingerprint | k | precision | precision, corpus duplicates aside | recall | false pairs | of which corpus duplicates | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for r in report["results"]:
        print(f"| {r['fingerprint']} | {r['k']} | {r['precision']:.3f} | {r['precision_aside']:.3f} | {r['recall']:.3f} | "
              f"{r['false']:,} | {r['corpus_duplicates']:,} | {r['seconds']:.2f} |")
    if "reposts" in report:
        print("\n| fingerprint | median distance, original vs repost (10th-90th pct.) | reposts found at k = 3 / 6 / 8 |")
        print("|---|---|---|")
        for r in report["reposts"]:
            print(f"| {r['fingerprint']} | {r['median']} ({r['p10']}-{r['p90']}) | "
                  f"{r['found_k3']:.3f} / {r['found_k6']:.3f} / {r['found_k8']:.3f} |")
    print("\n| fingerprint | k | grouping | groups | pure | pure, corpus duplicates aside | copies with their original | largest | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for g in report["groups"]:
        print(f"| {g['fingerprint']} | {g['k']} | {g['method']} | {g['groups']} | {g['precision']:.3f} | "
              f"{g['precision_aside']:.3f} | {g['recall']:.3f} | {g['largest']} | {g['seconds']:.2f} |")


if __name__ == "__main__":
    main()
