#!/usr/bin/env bash
# Reruns the crawled-pages benchmark of BENCHMARKS.md (bench/html_quality.py) on this machine,
# as root (Debian 12): the HTML documentation pages from Debian's packages, the release build
# in the local PostgreSQL 15, a database simhash_html, then the Markdown tables; raw numbers in
# bench/results/html_quality.json. About 4 minutes with --runs 3. Extra arguments go to the
# script (e.g. --runs 1, --ks 3,8).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/fetch_data.sh
bash bench/make_db.sh simhash_html
mkdir -p bench/results
bench/.venv/bin/python bench/html_quality.py "$@"
