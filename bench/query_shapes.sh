#!/usr/bin/env bash
# The long run of the query-shape fuzzer (tests/hostile/query_shapes.py; the test command runs a
# short one): CASES generated queries, each with and without the extension's planner rewrites,
# as a role with SELECT only, on a new cluster of the server in BINDIR (the local PostgreSQL 15
# by default; the assert-enabled one: BINDIR=$(dirname "$(bash .ci/pg-cassert)")) with the
# build installed there. Prints the fuzzer's counts, which RELIABILITY.md records, and ends with
# 'query_shapes: PASS' or 'query_shapes: FAIL (...)', each finding shrunk to a small query.
#
#   bash bench/query_shapes.sh [CASES=100000] [SEED=1] [BINDIR=/usr/lib/postgresql/15/bin]
#
# Two runs at once (one server each) need their own NAME and PORT: SIMHASH_SHAPES_NAME
# (bench_shapes) and SIMHASH_SHAPES_PORT (5493).
# Run as root after the build is installed into that server (cargo pgrx install --release).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CASES=${1:-100000}
SEED=${2:-1}
BINDIR=${3:-/usr/lib/postgresql/15/bin}
WORK=${TMPDIR:-/tmp}/simhash_pg-bench
LOGS=$ROOT/bench/results
mkdir -p "$LOGS"
install -d -o postgres -g postgres "$WORK"
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
# A failure prints itself and counts here.
passed=0 failed=0 failures='' skips=''
started=$(date +%s)
# A time budget far past what the cases need (about 10 ms a case here).
SIMHASH_SHAPES_SEED=$SEED query_shapes "${SIMHASH_SHAPES_NAME:-bench_shapes}" "$BINDIR" "${SIMHASH_SHAPES_PORT:-5493}" \
    "$CASES" $((CASES / 20 + 600))
echo "server: $("$BINDIR/postgres" --version); build: $(git rev-parse --short HEAD); $(( $(date +%s) - started )) s"
[ "$failed" -eq 0 ]
