#!/usr/bin/env bash
# Reruns the concurrent-ingest benchmark of BENCHMARKS.md (bench/concurrent_ingest.py) on this
# machine, as root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers
# = 8GB, max_wal_size = 32GB (below), a database simhash_concurrent, then the Markdown table; raw numbers in
# bench/results/concurrent_ingest.json. Arguments go to the script (default 10M rows, batches
# of 100,000, 1, 2, 4 and 8 writers, 2 rounds). About 25 minutes at 10M rows.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_concurrent
mkdir -p bench/results
# WAL: each 100,000-row load into 10M rows with four block indexes dirties some 200,000 index
# pages; with the default max_wal_size (1GB) every load forces checkpoints and so writes a full
# page image of most of them (1.6 GB of WAL a load, measured), and the writers queue for the
# WAL. A server that takes bulk loads is set up with room between checkpoints; the run uses
# 32GB and 30min (WAL_DEFAULTS=1 keeps the server's own settings) and restores them after.
if [ "${WAL_DEFAULTS:-0}" != 1 ]; then
    runuser -u postgres -- psql -Xq -c "ALTER SYSTEM SET max_wal_size = '32GB'" \
        -c "ALTER SYSTEM SET checkpoint_timeout = '30min'" -c 'SELECT pg_reload_conf()' >/dev/null
    trap "runuser -u postgres -- psql -Xq -c 'ALTER SYSTEM RESET max_wal_size' -c 'ALTER SYSTEM RESET checkpoint_timeout' -c 'SELECT pg_reload_conf()' >/dev/null" EXIT
else
    runuser -u postgres -- psql -Xq -c 'ALTER SYSTEM RESET max_wal_size' -c 'ALTER SYSTEM RESET checkpoint_timeout' -c 'SELECT pg_reload_conf()' >/dev/null
fi
cd bench && .venv/bin/python concurrent_ingest.py --dbname simhash_concurrent "$@"
