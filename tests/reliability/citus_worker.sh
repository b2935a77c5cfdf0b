#!/usr/bin/env bash
# A Citus worker dying: the cluster of the test command's Citus stage (a coordinator and two
# workers on 127.0.0.1, .ci/stages/citus.sh), a distributed table with block indexes, and
# kill -9 of a worker's postmaster during a multi-shard lookup, simhash_pairs joined on the
# workers, and simhash_ingest into the distributed table. Each must end in an ERROR, never a
# partial answer returned as success, and the ingest must leave the table as it was. After the
# worker restarts, lookups and pairs equal brute force on a local copy.
# Needs the extension installed and Citus built (as the test command's stage 7 does).
# Prints one line per check and a verdict: PASS or FAIL.
#
#   bash tests/reliability/citus_worker.sh [ROWS]     # default 200000 (fewer: see the lookup below)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
ROWS=${1:-200000}
WORK=/var/tmp/simhash_citus_worker
LOGS=$WORK/logs
PG_BIN=/usr/lib/postgresql/15/bin
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
# shellcheck source=tests/reliability/common.sh
source tests/reliability/common.sh
# shellcheck source=.ci/stages/citus.sh
source .ci/stages/citus.sh
CITUS_NODES=(citus_coordinator:5484 citus_worker1:5485 citus_worker2:5486)
rm -rf "$WORK"
install -d -o postgres -g postgres "$WORK" "$LOGS"
bash .ci/vendor-extension citus /usr/bin/pg_config >"$LOGS/vendor-citus.log" 2>&1 || { tail -5 "$LOGS/vendor-citus.log"; exit 1; }
trap citus_stop_all EXIT
citus_start_all
c() { scratch_psql citus_coordinator 5484 -At -d "$CITUS_DB" "$@"; }
c -c "CREATE EXTENSION simhash_pg" >/dev/null
c >/dev/null -c "CREATE TABLE local_docs (id int8 PRIMARY KEY, fp simhash64)" \
    -c "INSERT INTO local_docs SELECT g, CASE WHEN g % 10 = 0 THEN (hashint8extended(g / 10, 2) # 1)::simhash64
                                           ELSE hashint8extended(g, 2)::simhash64 END FROM generate_series(1, $ROWS) g" \
    -c "CREATE TABLE docs (id int8 PRIMARY KEY, fp simhash64)" \
    -c "SELECT create_distributed_table('docs', 'id')" \
    -c "INSERT INTO docs SELECT * FROM local_docs" \
    -c "SELECT simhash_create_index('docs', 'fp')" \
    -c "CREATE TABLE staging (id int8 PRIMARY KEY, fp simhash64)" \
    -c "INSERT INTO staging SELECT 10000000 + g, hashint8extended(-g, 2)::simhash64 FROM generate_series(1, 20000) g"
echo "Citus cluster: $(c -c "SELECT string_agg(nodename || ':' || nodeport, ', ' ORDER BY nodeport) FROM pg_dist_node")," \
     "$ROWS rows in $(c -c "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'docs'::regclass") shards"

# Runs SQL on the coordinator in the background, kills worker 1's postmaster (SIGKILL) after
# AFTER seconds, and prints how the statement ended: its SQLSTATE, or "success: <output>".
# Then restarts the worker.
kill_during() {
    local sql=$1 after=$2 out pid
    runuser -u postgres -- psql -X -q -At -h "$WORK/citus_coordinator" -p 5484 -d "$CITUS_DB" -v VERBOSITY=verbose \
        -v ON_ERROR_STOP=1 -c "$sql" >"$WORK/out.txt" 2>&1 &
    pid=$!
    sleep "$after"
    kill -9 "$(head -1 "$WORK/citus_worker1/data/postmaster.pid")"
    wait "$pid" && out="success: $(tr '\n' ' ' <"$WORK/out.txt")" || out=$(grep -m1 -oP '^ERROR:  \K[0-9A-Z]{5}: .{0,80}' "$WORK/out.txt" || head -c 200 "$WORK/out.txt")
    # The worker comes back (after crash recovery), once the killed postmaster's children have
    # noticed its death and left its shared memory.
    local i
    for i in $(seq 1 60); do
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$WORK/citus_worker1/data" -l "$WORK/citus_worker1/server.log" -w start \
            >/dev/null 2>&1 && break
        sleep 1
    done
    echo "$out"
}
ends_in_error() { [[ "$1" != success:* ]] && echo error || echo "$1"; }

# A multi-shard lookup made slow by a sleep per row it returns (k = 40: whole block indexes
# read); with fewer than the default ROWS it may end before the kill.
r=$(kill_during "SELECT count(*) FROM docs WHERE simhash_near(fp, '0123456789abcdef', 40) AND pg_sleep(0.0001) IS NOT NULL" 3)
echo "       lookup: $r"
check "multi-shard lookup, worker killed" error "$(ends_in_error "$r")"
# All pairs joined on the workers.
r=$(kill_during "SET simhash_pg.citus_pairs = workers; SELECT count(*) FROM simhash_pairs('docs', 'fp', 6, 'id')" 3)
echo "       pairs: $r"
check "simhash_pairs on the workers, worker killed" error "$(ends_in_error "$r")"
before=$(c -c "SELECT count(*) FROM docs")
r=$(kill_during "SELECT * FROM simhash_ingest('docs', 'fp', 'staging', 3)" 2)
echo "       ingest: $r"
check "simhash_ingest, worker killed" error "$(ends_in_error "$r")"
c -c "SELECT recover_prepared_transactions()" >/dev/null
check "rows of docs after the failed ingest" "$before" "$(c -c "SELECT count(*) FROM docs")"
check "intermediate tables left (coordinator, worker 1, worker 2)" "0 0 0" "$(for n in citus_coordinator:5484 citus_worker1:5485 citus_worker2:5486; do
    scratch_psql "${n%%:*}" "${n##*:}" -At -d "$CITUS_DB" -c "SELECT count(*) FROM pg_class WHERE relname LIKE '\\_simhash\\_pairs\\_%'"; done | paste -sd ' ')"

# After the restart: the answers equal brute force on the local copy.
check "lookups equal the local copy" "queries 100, mismatches 0" "$(c -c "
    CREATE TEMP TABLE qs AS SELECT id, (fp::int8 # (id % 8))::simhash64 AS fp FROM local_docs WHERE id % greatest(1, $ROWS / 100) = 0 LIMIT 100;
    SELECT 1;" -c "
    DO \$\$ DECLARE q record; bad int := 0; n int := 0; got int8[]; want int8[]; BEGIN
      FOR q IN SELECT * FROM qs LOOP
        SELECT array_agg(id ORDER BY id) INTO got FROM docs WHERE simhash_near(fp, q.fp, 3);
        SELECT array_agg(id ORDER BY id) INTO want FROM local_docs WHERE hamming_distance(fp, q.fp) + 0 <= 3;
        n := n + 1; IF got IS DISTINCT FROM want THEN bad := bad + 1; END IF;
      END LOOP;
      RAISE NOTICE 'queries %, mismatches %', n, bad; END \$\$" 2>&1 | grep -oP 'queries [0-9]+, mismatches [0-9]+')"
check "pairs equal the local copy" t "$(c -c "SET simhash_pg.citus_pairs = workers" -c "SET client_min_messages = warning" -c "
    SELECT (SELECT array_agg((a, b) ORDER BY a, b) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8))
         = (SELECT array_agg((a, b) ORDER BY a, b) FROM simhash_pairs('local_docs', 'fp', 3, 'id', NULL::int8))")"

verdict "citus worker"
