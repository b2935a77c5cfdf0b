#!/usr/bin/env bash
# Reruns the guard's cost per row of BENCHMARKS.md (bench/guard_cost.py) on this machine, as root
# (Debian 12): the release build in the local PostgreSQL 15, a database simhash_guard_cost, then
# the Markdown table; raw numbers in bench/results/guard_cost.json. Arguments go to the script
# (default 1M rows, 15 s of one-row INSERTs and one 100,000-row INSERT per table and round, 3
# rounds). About 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_guard_cost
mkdir -p bench/results
cd bench && .venv/bin/python guard_cost.py --dbname simhash_guard_cost "$@"
