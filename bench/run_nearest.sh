#!/usr/bin/env bash
# Reruns the nearest-first benchmark of BENCHMARKS.md (bench/nearest_order.py) on this machine,
# as root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers = 8GB,
# the tables of bench/query_forms.py in database ${SIMHASH_BENCH_DB:-simhash_forms} (built when
# missing or of another size), then the Markdown table; raw numbers in
# bench/results/nearest_order.json. Arguments go to the script (--rows 10000000 for the 10M run,
# best in its own database: SIMHASH_BENCH_DB=simhash_forms10m). About 10 minutes at 1M rows.
set -euo pipefail
cd "$(dirname "$0")/.."
db=${SIMHASH_BENCH_DB:-simhash_forms}
export SIMHASH_BENCH_DB=$db
bash bench/prepare.sh
if ! psql -X -d "$db" -c 'SELECT 1' >/dev/null 2>&1; then
    bash bench/make_db.sh "$db"
fi
mkdir -p bench/results
cd bench && .venv/bin/python nearest_order.py --reuse "$@"
