#!/usr/bin/env bash
# Reruns the online-build benchmark of BENCHMARKS.md (bench/online_build.py) on this machine, as
# root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers = 8GB, a
# database simhash_online, then the Markdown table; raw numbers in
# bench/results/online_build.json. Arguments go to the script (default 10M rows, 2 rounds).
# About 20 minutes at 10M rows.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_online
mkdir -p bench/results
cd bench && .venv/bin/python online_build.py --dbname simhash_online "$@"
