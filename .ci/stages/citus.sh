# Stage "Citus cluster" of .ci/test (sourced by it; uses its ROOT, WORK, LOGS, PG_BIN,
# PGXS_TESTS and the helpers of .ci/lib.sh). Needs the extension installed by the SQL regression
# stage, and Citus 13.2.2 (.ci/vendor-extension, once per machine; skipped offline without its source).
#
# A Citus cluster on this machine: a coordinator and two workers, scratch PostgreSQL 15 servers
# on 127.0.0.1, plus a third worker that the suite adds itself to move shards onto. The Citus
# suite (tests/citus) runs on the coordinator: every lookup form, pairs, groups, nearest rows and
# ingest on distributed, reference and distributed-by-fingerprint tables, and routed layouts,
# each checked against brute force on a local copy of the same rows; then routed lookups under
# concurrent writers and readers (tests/citus/concurrent). The clusters stop however the stage
# ends.

CITUS_NODES=(citus_coordinator:5484 citus_worker1:5485 citus_worker2:5486 citus_worker3:5487)
CITUS_DB=simhash_citus

citus_stop_all() {
    local node
    for node in "${CITUS_NODES[@]}"; do
        scratch_stop "${node%%:*}" "$PG_BIN"
    done
}

citus_start_all() {
    local node name port
    for node in "${CITUS_NODES[@]}"; do
        name=${node%%:*} port=${node##*:}
        # Nodes reach each other over TCP on 127.0.0.1 (trust: throwaway clusters), without SSL.
        # wal_level logical: Citus moves shards by logical replication in its default mode.
        scratch_start "$name" "$PG_BIN" "$port" "shared_preload_libraries = 'citus'" \
            "listen_addresses = '127.0.0.1'" "citus.node_conninfo = 'sslmode=disable'" \
            "max_connections = 200" "wal_level = logical" || return 1
        scratch_psql "$name" "$port" -d postgres -c "CREATE DATABASE $CITUS_DB" >/dev/null || return 1
        scratch_psql "$name" "$port" -d "$CITUS_DB" -c 'CREATE EXTENSION citus' >/dev/null || return 1
    done
    # Workers 1 and 2 now; the suite adds worker 3 and moves shards onto it. (The nodes are
    # CITUS_NODES': bench/citus_invariant.sh runs a cluster of its own beside this one.)
    local coordinator=${CITUS_NODES[0]%%:*} port=${CITUS_NODES[0]##*:}
    scratch_psql "$coordinator" "$port" -d "$CITUS_DB" \
        -c "SELECT citus_set_coordinator_host('127.0.0.1', $port)" \
        -c "SELECT citus_add_node('127.0.0.1', ${CITUS_NODES[1]##*:})" \
        -c "SELECT citus_add_node('127.0.0.1', ${CITUS_NODES[2]##*:})" >/dev/null
}

# citus_invariant STEPS [SEED [SECONDS]]: tests/citus/invariant.py on the running cluster: STEPS generated
# writes, DDL and faults, each followed by lookups through the routed layout against every shard's
# own scan (docs/citus.md, "Fail closed"), stopping after SECONDS when given (psycopg_venv).
citus_invariant() {
    local venv=$WORK/venv-hostile coordinator=${CITUS_NODES[0]##*:} worker=${CITUS_NODES[1]##*:}
    psycopg_venv || return 1
    "$venv/bin/python" "$ROOT/tests/citus/invariant.py" \
        --coordinator "host=127.0.0.1 port=$coordinator dbname=$CITUS_DB user=postgres" \
        --worker "host=127.0.0.1 port=$worker dbname=$CITUS_DB user=postgres" \
        --steps "$1" --seed "${2:-1}" --seconds "${3:-0}" --log "$LOGS/citus_invariant-steps.log" 2>&1 | tee "$LOGS/citus_invariant.log"
    grep -q '^invariant: PASS' "$LOGS/citus_invariant.log"
}

routed_concurrent() {
    runuser -u postgres -- "$ROOT/tests/citus/concurrent/routed_writes.sh" "$PG_BIN" 127.0.0.1 5484 "$CITUS_DB" \
        >"$LOGS/citus_routed_concurrent.log" 2>&1 || { tail -30 "$LOGS/citus_routed_concurrent.log"; return 1; }
    tail -3 "$LOGS/citus_routed_concurrent.log"
}

stage_citus() {
    vendor_build citus "Citus cluster" || return
    # Stopped however the stage ends: at its end, or when the test command exits or is stopped.
    trap citus_stop_all EXIT
    if citus_start_all; then
        echo "Citus cluster: $(scratch_psql citus_coordinator 5484 -d "$CITUS_DB" -Atc \
            "SELECT string_agg(nodename || ':' || nodeport, ', ' ORDER BY nodeport) FROM pg_dist_node")"
        run_suite citus citus "$PGXS_TESTS/regress/pg_regress" "$PG_BIN" --host=127.0.0.1 --port=5484 \
            --use-existing --dbname="$CITUS_DB" || true
        echo "routed lookups under concurrent writes (tests/citus/concurrent/routed_writes.sh)"
        count_check routed_concurrent
        echo "the routed layout's invariant under generated writes, DDL and faults (tests/citus/invariant.py)"
        count_check citus_invariant "${SIMHASH_INVARIANT_STEPS:-600}"

    else
        echo "the Citus cluster did not start: see $LOGS/citus_*-initdb.log and $WORK/citus_*/server.log"
        fail_one "citus: cluster start"
    fi
    citus_stop_all
    trap - EXIT
}
