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
# shellcheck source=bench/citus_nodes.sh
source bench/citus_nodes.sh
trap stop_all EXIT
start_nodes
make_citus_db simhash_citus_bench
SCRIPT=citus_lookup.py
if [ "${1:-}" = routed ]; then
    SCRIPT=citus_routed.py
    shift
fi
cd bench && .venv/bin/python "$SCRIPT" "$@"
