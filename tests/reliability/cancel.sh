#!/usr/bin/env bash
# Cancel: how promptly pg_cancel_backend stops each long-running function. Each statement runs
# in the background for DELAY seconds, is cancelled, and the time from the cancel to the
# backend's answer is printed with the error it gave. Passes when every statement was still
# running at the cancel, stopped with 'canceling statement due to user request', and answered
# within LIMIT seconds.
#
#   bash tests/reliability/cancel.sh [ROWS] [DELAY] [LIMIT]      # default 2000000 1 1
set -euo pipefail
cd "$(dirname "$0")"
source ./common.sh
ROWS=${1:-2000000}
DELAY=${2:-1}
LIMIT=${3:-1}
failures=0

ensure_db
echo "== tables of $ROWS fingerprints, $((ROWS / 2)) short texts and one of 310 MB"
q "$DB" -c "DROP TABLE IF EXISTS cancel_fps, cancel_docs, cancel_target, cancel_text, cancel_edges" \
        -c "CREATE TABLE cancel_fps (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO cancel_fps SELECT g, hashint8extended(g, 3)::simhash64 FROM generate_series(1, $ROWS) g" \
        -c "CREATE TABLE cancel_docs (id int8 PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO cancel_docs (id, body) SELECT g, 'note ' || g || ' in file ' || (g % 89) FROM generate_series(1, $((ROWS / 2))) g" \
        -c "CREATE TABLE cancel_target (LIKE cancel_docs INCLUDING GENERATED)" \
        -c "CREATE TABLE cancel_text AS SELECT repeat('数据库系统 database 中文 ', 10000000) AS body" \
        -c "CREATE TABLE cancel_edges AS SELECT ARRAY(SELECT (g % 3000000)::text FROM generate_series(1, 4000000) g) AS a,
                                                ARRAY(SELECT ((g * 7) % 3000000)::text FROM generate_series(1, 4000000) g) AS b" \
        -c "VACUUM ANALYZE cancel_fps, cancel_docs"

printf '%-44s %9s %10s  %s\n' statement "ran (s)" "stop (s)" answer
run_case() {
    local name=$1 sql=$2 out pid= t0 t1 i
    out=$(mktemp); chmod 666 "$out"
    runuser -u postgres -- env PGAPPNAME=cancel_victim PGOPTIONS='-c client_min_messages=warning' \
        psql -X -q -At -d "$DB" -c "$sql" >"$out" 2>&1 &
    local client=$! started; started=$(now)
    sleep "$DELAY"
    pid=$(q "$DB" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'cancel_victim' AND state = 'active' AND backend_type = 'client backend'")
    if [ -z "$pid" ]; then
        wait "$client" || true
        printf '%-44s %9s %10s  %s\n' "$name" "-" "-" "FAIL: finished before the cancel"
        failures=$((failures + 1)); rm -f "$out"; return
    fi
    t0=$(now)
    q "$DB" -c "SELECT pg_cancel_backend($pid)" >/dev/null
    wait "$client" || true
    t1=$(now)
    local answer; answer=$(grep -m1 ERROR "$out" || echo "no error: $(head -c 60 "$out")")
    local stop; stop=$(secs "$t0" "$t1")
    local verdict=""
    if [[ $answer != *"canceling statement due to user request"* ]] || awk -v s="$stop" -v l="$LIMIT" 'BEGIN { exit !(s > l) }'; then
        verdict="FAIL: "; failures=$((failures + 1))
    fi
    printf '%-44s %9s %10s  %s%s\n' "$name" "$(secs "$started" "$t0")" "$stop" "$verdict" "${answer#ERROR:  }"
    rm -f "$out"
}

# The huge text comes from a table: repeat() itself does not check for interrupts.
run_case "simhash() on a 310 MB text" "SELECT simhash(body) FROM cancel_text"
run_case "simhash_features() on a 310 MB text" "SELECT count(*) FROM cancel_text, simhash_features(body)"
run_case "simhash() over $((ROWS / 2)) rows" "SELECT count(DISTINCT simhash(repeat(body || ' ', 20))) FROM cancel_docs"
run_case "simhash_create_index (block columns)" "SELECT simhash_create_index('cancel_fps', 'fp', permuted => false)"
run_case "simhash_create_index (expression indexes)" "SELECT simhash_create_index('cancel_docs', 'fp')"
run_case "simhash_pairs k=3" "SELECT count(*) FROM simhash_pairs('cancel_fps', 'fp', 3)"
run_case "simhash_chained_groups k=3" "SELECT count(*) FROM simhash_chained_groups('cancel_fps', 'fp', 3)"
run_case "simhash_ingest" "SELECT * FROM simhash_ingest('cancel_target', 'fp', 'cancel_docs')"
run_case "simhash_nearest (no indexes)" "SELECT count(*) FROM generate_series(1, 50) g, simhash_nearest('cancel_fps', 'fp', hashint8extended(g, 5)::simhash64, 1000)"
run_case "_simhash_components of 4M edges" "SELECT count(*) FROM cancel_edges, _simhash_components(a, b)"
run_case "seq scan simhash_near, no indexes" "SELECT count(*) FROM cancel_fps a, cancel_fps b WHERE a.id < 3000 AND simhash_near(a.fp, b.fp, 3)"

q "$DB" -c "DROP TABLE cancel_fps, cancel_docs, cancel_target, cancel_text, cancel_edges"
if [ "$failures" -eq 0 ]; then echo "PASS"; else echo "FAIL ($failures)"; exit 1; fi
