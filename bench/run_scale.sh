#!/usr/bin/env bash
# Reruns "How lookups grow with the table" of BENCHMARKS.md (issue 53) on this machine, as root
# (Debian 12): the release build in the local PostgreSQL 15 (shared_buffers = 8GB,
# bench/prepare.sh), then bench/scale.py (arguments go to it; default 1M, 10M and 100M rows,
# permuted m = 2..5, k = 0, 3, 5, 7, three rounds of 5 s). The tables stay in database
# simhash_scale for the next run (about 12 GB at 100M rows); loading 100M rows takes about
# 15 minutes, each layout's build a few minutes more.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
# The database and its tables are kept between runs (SCALE_FRESH=1 makes them anew): loading is
# the slow part, and a new build of the library is what each new pgbench connection loads.
if [ -n "${SCALE_FRESH:-}" ] || ! runuser -u postgres -- psql -XAtc "SELECT 1 FROM pg_database WHERE datname = 'simhash_scale'" | grep -q 1; then
    bash bench/make_db.sh simhash_scale
fi
mkdir -p bench/results
cd bench && .venv/bin/python scale.py "$@"
