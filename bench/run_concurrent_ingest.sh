#!/usr/bin/env bash
# Reruns the concurrent-ingest benchmark of BENCHMARKS.md (bench/concurrent_ingest.py) on this
# machine, as root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers
# = 8GB, a database simhash_concurrent, then the Markdown table; raw numbers in
# bench/results/concurrent_ingest.json. Arguments go to the script (default 10M rows, batches
# of 100,000, 1, 2, 4 and 8 writers, 2 rounds). About 25 minutes at 10M rows.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_concurrent
mkdir -p bench/results
cd bench && .venv/bin/python concurrent_ingest.py --dbname simhash_concurrent "$@"
