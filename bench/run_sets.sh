#!/usr/bin/env bash
# Reruns the cost table of sets of fingerprints (simhash_set) in BENCHMARKS.md on this machine,
# as root (Debian 12): the release build in the local PostgreSQL 15 (bench/prepare.sh), a fresh
# database simhash_sets, then bench/sets_cost.py (arguments go to it; default 1M titles per
# table, b = 1, 2, 4, 8). About 20 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_sets
mkdir -p bench/results
cd bench && .venv/bin/python sets_cost.py "$@"
