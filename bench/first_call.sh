#!/usr/bin/env bash
# The cost of the first simhash() call in a new connection, as ETL jobs and web apps that open
# connections all the time pay it. For each case, RUNS new connections (default 15) each run the
# statement twice under psql's \timing; prints the median first and second call in ms, as a
# Markdown table. Cases: English and Chinese text, default options and words/TF, and a built-in
# function for the connection's own first-statement cost; on a server without and with
# shared_preload_libraries = 'simhash_pg'. Installs the release build into the local
# PostgreSQL 15 and uses two scratch clusters (ports 5497, 5498). Run as root after .ci/setup.
#   bash bench/first_call.sh            # about a minute
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${TMPDIR:-/tmp}/simhash_pg-bench
LOGS=$ROOT/bench/results
RUNS=${RUNS:-15}
PG_BIN=/usr/lib/postgresql/15/bin
export PATH="$HOME/.cargo/bin:$PATH"
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
mkdir -p "$LOGS"
install -d -o postgres -g postgres "$WORK"
cargo pgrx install --release --pg-config /usr/bin/pg_config >"$LOGS/first_call-install.log" 2>&1

CASES=(
    "built-in, for scale|SELECT length('hello world')"
    "English, default options|SELECT simhash('hello world')"
    "English, words and TF|SELECT simhash('hello world', '{\"tokenizer\": \"words\", \"weighting\": \"tf\"}')"
    "Chinese, default options|SELECT simhash('今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。')"
)

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# measure CLUSTER PORT SQL: "first second", the medians over RUNS new connections.
measure() {
    local name=$1 port=$2 sql=$3 i
    for i in $(seq "$RUNS"); do
        scratch_psql "$name" "$port" -d bench -c '\timing on' -c "$sql" -c "$sql" \
            | grep -o 'Time: [0-9.]*' | awk '{ print $2 }' | paste -sd' '
    done >"$WORK/times"
    echo "$(awk '{ print $1 }' "$WORK/times" | median) $(awk '{ print $2 }' "$WORK/times" | median)"
}

declare -A RESULT
for preload in no yes; do
    name=first_call_$preload port=$([ $preload = no ] && echo 5497 || echo 5498)
    settings=()
    [ $preload = yes ] && settings=("shared_preload_libraries = 'simhash_pg'")
    scratch_start "$name" "$PG_BIN" "$port" "${settings[@]}"
    scratch_psql "$name" "$port" -d postgres -c 'CREATE DATABASE bench'
    scratch_psql "$name" "$port" -d bench -c 'CREATE EXTENSION simhash_pg'
    for case in "${CASES[@]}"; do
        RESULT["$preload|${case%%|*}"]=$(measure "$name" "$port" "${case#*|}")
    done
    scratch_stop "$name" "$PG_BIN"
done

echo "| statement, in a new connection | first call (ms) | second call (ms) | first call, library preloaded (ms) | second call, preloaded (ms) |"
echo "|---|---|---|---|---|"
for case in "${CASES[@]}"; do
    read -r f s <<<"${RESULT["no|${case%%|*}"]}"
    read -r pf ps <<<"${RESULT["yes|${case%%|*}"]}"
    echo "| ${case%%|*} | $f | $s | $pf | $ps |"
done
echo
echo "medians of $RUNS connections each; $(nproc) cores; $("$PG_BIN/postgres" --version); simhash_pg $(git describe --always --dirty)"
