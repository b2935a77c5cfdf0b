#!/usr/bin/env bash
# Crash: kill -9 the backend running simhash_create_index on a large table (once while block
# columns are being added, once while block expression indexes are built), and the backend
# running a bulk insert into a table with block indexes. After each crash the server recovers
# by itself; then: the table holds exactly its committed rows, bt_index_check (heapallindexed)
# passes on every B-tree index of it, the killed helper re-runs to the end, and lookups through
# the block indexes equal brute force. Prints one line per check and PASS or FAIL.
#
#   bash tests/reliability/crash.sh [ROWS]      # default 2000000
set -euo pipefail
cd "$(dirname "$0")"
source ./common.sh
ROWS=${1:-2000000}

# Runs SQL in the background under application_name 'crash_victim', waits until the backend is
# at the wanted point (a phase of pg_stat_progress_create_index, or running for AFTER seconds),
# and kills it with SIGKILL; then waits for crash recovery.
kill_during() {
    local sql=$1 phase=$2 after=${3:-2} pid= i
    runuser -u postgres -- env PGAPPNAME=crash_victim psql -X -q -d "$DB" -c "$sql" >/dev/null 2>&1 &
    local client=$!
    for i in $(seq 1 600); do
        if [ -n "$phase" ]; then
            pid=$(q "$DB" -c "SELECT a.pid FROM pg_stat_activity a JOIN pg_stat_progress_create_index p USING (pid)
                               WHERE a.application_name = 'crash_victim' AND p.phase LIKE '$phase%'") || true
        else
            pid=$(q "$DB" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'crash_victim'
                               AND state = 'active' AND now() - query_start > interval '$after s'") || true
        fi
        [ -n "$pid" ] && break
        sleep 0.1
    done
    if [ -z "$pid" ]; then echo "  FAIL the victim never reached '$phase'"; failures=$((failures + 1)); wait "$client" || true; return; fi
    echo "  kill -9 backend $pid ($(q "$DB" -c "SELECT coalesce((SELECT phase FROM pg_stat_progress_create_index WHERE pid = $pid), 'running ' || round(extract(epoch FROM now() - query_start))::text || ' s') FROM pg_stat_activity WHERE pid = $pid"))"
    kill -9 "$pid"
    wait "$client" || true
    local t0; t0=$(now)
    wait_ready
    echo "  server back in $(secs "$t0" "$(now)") s"
}

ensure_db
echo "== 1. simhash_create_index on $ROWS rows, killed while adding block columns (table rewrite)"
q "$DB" -c "DROP TABLE IF EXISTS crash_fps" \
        -c "CREATE TABLE crash_fps (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO crash_fps SELECT g, hashint8extended(g, 1)::simhash64 FROM generate_series(1, $ROWS) g" \
        -c "CHECKPOINT"
kill_during "SELECT simhash_create_index('crash_fps', 'fp', permuted => false)" "" 0.5
check "rows" "$ROWS" "$(q "$DB" -c 'SELECT count(*) FROM crash_fps')"
check "columns (no half-added block column)" "2" "$(q "$DB" -c "SELECT count(*) FROM pg_attribute WHERE attrelid = 'crash_fps'::regclass AND attnum > 0 AND NOT attisdropped")"
check "amcheck" "ok 1 indexes" "$(check_indexes crash_fps)"
q "$DB" -c "SET client_min_messages = warning" -c "SELECT simhash_create_index('crash_fps', 'fp', permuted => false)" >/dev/null
check "re-run: block indexes" "4" "$(q "$DB" -c "SELECT count(*) FROM simhash_block_columns('crash_fps') WHERE index IS NOT NULL")"
check "amcheck after re-run" "ok 5 indexes" "$(check_indexes crash_fps)"
check "exact" "mismatches 0" "$(check_exact crash_fps 200 3 | grep -oE 'mismatches [0-9]+')"

echo "== 2. simhash_create_index on a generated fingerprint, killed while building a block expression index"
q "$DB" -c "DROP TABLE IF EXISTS crash_docs" \
        -c "CREATE TABLE crash_docs (id int8 PRIMARY KEY, body text, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO crash_docs (id, body) SELECT g, 'entry ' || g || ' of ledger ' || (g % 97) FROM generate_series(1, $((ROWS / 2))) g" \
        -c "CHECKPOINT"
kill_during "SELECT simhash_create_index('crash_docs', 'fp')" "building index"
check "rows" "$((ROWS / 2))" "$(q "$DB" -c 'SELECT count(*) FROM crash_docs')"
check "indexes (no half-built block index)" "1" "$(q "$DB" -c "SELECT count(*) FROM pg_index WHERE indrelid = 'crash_docs'::regclass")"
check "amcheck" "ok 1 indexes" "$(check_indexes crash_docs)"
q "$DB" -c "SET client_min_messages = warning" -c "SELECT simhash_create_index('crash_docs', 'fp')" >/dev/null
check "re-run: block indexes" "4" "$(q "$DB" -c "SELECT count(*) FROM simhash_block_columns('crash_docs') WHERE index IS NOT NULL")"
check "amcheck after re-run" "ok 5 indexes" "$(check_indexes crash_docs)"
check "exact" "mismatches 0" "$(check_exact crash_docs 200 3 | grep -oE 'mismatches [0-9]+')"

echo "== 3. bulk insert into a table with block indexes, killed midway; a committed insert before it survives"
q "$DB" -c "INSERT INTO crash_fps SELECT g, hashint8extended(g, 1)::simhash64 FROM generate_series($ROWS + 1, $ROWS + 1000) g"
kill_during "INSERT INTO crash_fps SELECT g, hashint8extended(g, 1)::simhash64 FROM generate_series($ROWS + 1001, 3 * $ROWS) g" ""
check "rows (committed ones only)" "$((ROWS + 1000))" "$(q "$DB" -c 'SELECT count(*) FROM crash_fps')"
check "amcheck" "ok 5 indexes" "$(check_indexes crash_fps)"
check "committed rows found through the indexes" "1000" "$(q "$DB" -c "SELECT count(*) FROM crash_fps c WHERE c.id > $ROWS AND EXISTS (SELECT 1 FROM crash_fps t WHERE simhash_near(t.fp, c.fp, 0) AND t.id = c.id)")"
q "$DB" -c "INSERT INTO crash_fps SELECT g, hashint8extended(g, 1)::simhash64 FROM generate_series($ROWS + 1001, $ROWS + 200000) g"
check "bulk insert again" "$((ROWS + 200000))" "$(q "$DB" -c 'SELECT count(*) FROM crash_fps')"
check "amcheck after" "ok 5 indexes" "$(check_indexes crash_fps)"
check "exact" "mismatches 0" "$(check_exact crash_fps 200 3 | grep -oE 'mismatches [0-9]+')"

q "$DB" -c "DROP TABLE crash_fps, crash_docs"
if [ "$failures" -eq 0 ]; then echo "PASS"; else echo "FAIL ($failures checks)"; exit 1; fi
