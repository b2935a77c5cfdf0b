#!/usr/bin/env bash
# The long run of the routed layout's invariant on Citus (tests/citus/invariant.py; stage 7 of the
# test command runs 600 steps): STEPS generated writes by every path, writes on a worker, DDL and
# faults, each followed by lookups through the routed layout against every shard's own scan, on a
# Citus cluster of its own (a coordinator and two workers of the local PostgreSQL 15 on ports
# 5594-5596, beside stage 7's). Prints the counts RELIABILITY.md records and ends with
# 'invariant: PASS' or 'invariant: FAIL'.
#
#   bash bench/citus_invariant.sh [STEPS=20000] [SEED=1] [SECONDS=0: no limit]
#
# Run as root with the build and Citus installed into the local server (bash .ci/test installs
# both; .ci/vendor-extension citus for Citus alone).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STEPS=${1:-20000}
SEED=${2:-1}
SECONDS_LIMIT=${3:-0}
PG_BIN=/usr/lib/postgresql/15/bin
WORK=${TMPDIR:-/tmp}/simhash_pg-bench
LOGS=$ROOT/bench/results
mkdir -p "$LOGS"
install -d -o postgres -g postgres "$WORK"
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
# shellcheck source=.ci/stages/citus.sh
source .ci/stages/citus.sh
CITUS_NODES=(inv_coordinator:5594 inv_worker1:5595 inv_worker2:5596)
CITUS_DB=simhash_invariant
trap citus_stop_all EXIT
started=$(date +%s)
citus_start_all
scratch_psql inv_coordinator 5594 -d "$CITUS_DB" -c 'CREATE EXTENSION simhash_pg' >/dev/null
status=0
citus_invariant "$STEPS" "$SEED" "$SECONDS_LIMIT" || status=$?
echo "server: $("$PG_BIN/postgres" --version), Citus $(scratch_psql inv_coordinator 5594 -d "$CITUS_DB" -Atc \
    "SELECT extversion FROM pg_extension WHERE extname = 'citus'"); build: $(git rev-parse --short HEAD); $(( $(date +%s) - started )) s"
exit "$status"
