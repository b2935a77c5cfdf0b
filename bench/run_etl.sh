#!/usr/bin/env bash
# Reruns the all-pairs benchmark of BENCHMARKS.md (simhash_pairs and simhash_chained_groups against
# seomoz's find_all) on this machine, as root (Debian 12): installs the release build into the
# local PostgreSQL 15 (shared_buffers = 8GB, as bench/run_index.sh sets it), seomoz's
# simhash-pybind into its own venv (bench/.venv-seomoz: it clashes with the 'simhash' package of
# bench/.venv), and prints the Markdown table; then the cluster quality on real text with
# planted near-copies (bench/etl_quality.py, corpora fetched by bench/fetch_data.sh). Arguments
# go to bench/etl_pairs.py (default: 100k, 1M and 10M rows, brute force at 100k).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
[ -x bench/.venv-seomoz/bin/python ] || python3 -m venv bench/.venv-seomoz
bench/.venv-seomoz/bin/pip install -q -r bench/requirements-seomoz.txt
bash bench/fetch_data.sh
bash bench/make_db.sh simhash_etl
bash bench/make_db.sh simhash_bench
mkdir -p bench/results
echo "## All pairs"
(cd bench && .venv/bin/python etl_pairs.py "$@")
echo "## Cluster quality"
(cd bench && .venv/bin/python etl_quality.py --n 2000 --k 3 6 8)
