#!/usr/bin/env bash
# Reruns the nearest-first benchmark of BENCHMARKS.md (bench/nearest_order.py) on this machine,
# as root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers = 8GB,
# the tables of bench/query_forms.py in database simhash_forms (built when missing or of
# another size), then the Markdown table; raw numbers in bench/results/nearest_order.json.
# Arguments go to the script. About 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
if ! psql -X -d simhash_forms -c 'SELECT 1' >/dev/null 2>&1; then
    bash bench/make_db.sh simhash_forms
fi
mkdir -p bench/results
cd bench && .venv/bin/python nearest_order.py --reuse "$@"
