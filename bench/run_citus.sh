#!/usr/bin/env bash
# Reruns the Citus benchmark of BENCHMARKS.md on this machine, as root (Debian 12): the release
# build installed into the local PostgreSQL 15, Citus 13.2.2 built from ../shared/vendor, a
# coordinator (port 9700) and two workers (9701, 9702) as scratch clusters on 127.0.0.1 with
# shared_buffers = 2GB each, then bench/citus_lookup.py (arguments go to it; default 1M rows), or
# with a first argument `routed`, bench/citus_routed.py (routed lookups against the fan-out and
# one node; default 10M rows, about 45 minutes). The clusters stop when it ends. About 15 minutes
# at 1M rows.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash .ci/setup
export PATH="$HOME/.cargo/bin:$PATH"
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/pip install -q -r bench/requirements.txt
cargo pgrx install --release --pg-config /usr/bin/pg_config >/dev/null
bash .ci/vendor-extension citus /usr/bin/pg_config

WORK=/tmp/simhash_pg-bench LOGS=$ROOT/target/bench-logs PG_BIN=/usr/lib/postgresql/15/bin
mkdir -p "$LOGS"
install -d -o postgres -g postgres "$WORK"
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
NODES=(citus_bench_coordinator:9700 citus_bench_worker1:9701 citus_bench_worker2:9702)
stop_all() {
    for node in "${NODES[@]}"; do scratch_stop "${node%%:*}" "$PG_BIN"; done
}
trap stop_all EXIT
for node in "${NODES[@]}"; do
    name=${node%%:*} port=${node##*:}
    scratch_start "$name" "$PG_BIN" "$port" "shared_preload_libraries = 'citus'" \
        "listen_addresses = '127.0.0.1'" "citus.node_conninfo = 'sslmode=disable'" \
        "shared_buffers = '2GB'" "max_wal_size = '4GB'" "checkpoint_timeout = '30min'"
    scratch_psql "$name" "$port" -d postgres -c "CREATE DATABASE simhash_citus_bench" >/dev/null
    scratch_psql "$name" "$port" -d simhash_citus_bench -c 'CREATE EXTENSION citus' -c 'CREATE EXTENSION simhash_pg' >/dev/null
done
scratch_psql citus_bench_coordinator 9700 -d simhash_citus_bench \
    -c "SELECT citus_set_coordinator_host('127.0.0.1', 9700)" \
    -c "SELECT citus_add_node('127.0.0.1', 9701)" -c "SELECT citus_add_node('127.0.0.1', 9702)" >/dev/null
SCRIPT=citus_lookup.py
if [ "${1:-}" = routed ]; then
    SCRIPT=citus_routed.py
    shift
fi
cd bench && .venv/bin/python "$SCRIPT" "$@"
