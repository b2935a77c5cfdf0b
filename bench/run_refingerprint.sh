#!/usr/bin/env bash
# Reruns the re-fingerprinting benchmark of BENCHMARKS.md (bench/refingerprint.py) on this
# machine, as root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers
# = 8GB, a database simhash_refingerprint, then the Markdown table; raw numbers in
# bench/results/refingerprint.json. Arguments go to the script (default 10M rows).
# About 30 minutes at 10M rows.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_refingerprint
mkdir -p bench/results
cd bench && .venv/bin/python refingerprint.py --dbname simhash_refingerprint "$@"
