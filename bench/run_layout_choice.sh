#!/usr/bin/env bash
# Reruns "What simhash_create_index chooses" of BENCHMARKS.md on this machine, as root (Debian
# 12): the release build in the local PostgreSQL 15 (shared_buffers = 8GB, bench/prepare.sh).
# Arguments go to bench/layout_choice.py (default: 1M rows, permuted m = 2..8, k = 0..12, two
# rounds of 4 s runs: about 20 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_lookup
mkdir -p bench/results
cd bench && .venv/bin/python layout_choice.py "$@"
