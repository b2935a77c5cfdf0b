# Stage "assert-enabled PostgreSQL 15" of .ci/test (sourced by it; uses its ROOT, WORK, LOGS and
# the helpers of .ci/lib.sh and .ci/test).
#
# PostgreSQL built with --enable-cassert checks, as it runs, many of the rules the server's
# internals set for their callers (list and node types, locks held, memory contexts, buffer
# pins); a release build lets a breach pass silently. .ci/pg-cassert builds it from Debian's
# source once per machine. simhash_pg is built against it in a target folder and pgrx
# configuration of its own (so the usual build is not thrown away), then the pgrx tests, the SQL
# regression tests, the concurrency tests and every function with extreme arguments
# (tests/hostile) run on it. Any assertion failure (it aborts the
# server, and "TRAP:" in the server log names it) fails the stage.

stage_cassert() {
    local pg_config bindir pgxs status=0 dir=$WORK/cassert port=5483 traps
    if ! pg_config=$(bash .ci/pg-cassert 2>"$LOGS/pg-cassert.log"); then
        tail -20 "$LOGS/pg-cassert.log"
        fail_one "cassert: PostgreSQL build"
        return
    fi
    echo "assert-enabled server: $("$pg_config" --version), $(grep -c 'define USE_ASSERT_CHECKING 1' \
        "$("$pg_config" --includedir-server)/pg_config.h") USE_ASSERT_CHECKING"
    bindir=$("$pg_config" --bindir)
    pgxs=$(dirname "$("$pg_config" --pgxs)")/../test
    # A pgrx configuration and target folder of its own: the usual build stays as it is.
    export PGRX_HOME=${SIMHASH_CASSERT_PGRX_HOME:-/opt/simhash_pg/pgrx-cassert} CARGO_TARGET_DIR=$ROOT/target/cassert
    mkdir -p "$PGRX_HOME"
    grep -qs "pg15 = \"$pg_config\"" "$PGRX_HOME/config.toml" || cargo pgrx init --pg15 "$pg_config" >/dev/null
    install -d -o postgres -g postgres "$WORK/pgrx-cassert"
    unlink_installed_library "$pg_config"
    cargo pgrx test pg15 --runas postgres --pgdata "$WORK/pgrx-cassert" 2>&1 | tee "$LOGS/cassert-pgrx.log" || status=$?
    count_cargo "$LOGS/cassert-pgrx.log" "$status"
    status=0
    unlink_installed_library "$pg_config"
    cargo pgrx install --pg-config "$pg_config" >"$LOGS/cassert-install.log" 2>&1 || status=$?
    unset PGRX_HOME CARGO_TARGET_DIR
    if [ "$status" -ne 0 ]; then
        tail -20 "$LOGS/cassert-install.log"
        fail_one "cassert: install"
        return
    fi
    install_released_scripts "$pg_config"
    if ! scratch_start cassert "$bindir" "$port"; then
        fail_one "cassert: server start"
        return
    fi
    run_suite cassert_regress pg_regress "$pgxs/regress/pg_regress" "$bindir" --host="$dir" --port="$port" \
        --dbname=simhash_pg_regress "$REGRESS_EXTENSION" || true
    run_suite cassert_isolation isolation "$pgxs/isolation/pg_isolation_regress" "$bindir" --host="$dir" \
        --port="$port" --dbname=simhash_pg_isolation --load-extension=simhash_pg || true
    scratch_stop cassert "$bindir"
    # Every function with extreme arguments, on the assert-enabled server too, and generated
    # query shapes (another seed than stage 3's).
    SIMHASH_HOSTILE_SECONDS=30 hostile_calls cassert_hostile "$bindir" 5478
    SIMHASH_SHAPES_SEED=8 query_shapes cassert_shapes "$bindir" 5492 "${SIMHASH_CASSERT_SHAPES_CASES:-1500}"
    # A failed assertion aborts the server, which fails tests; the log says which one.
    traps=$(cat "$dir/server.log" "$WORK/cassert_hostile/server.log" "$WORK/cassert_shapes/server.log" 2>/dev/null | grep -c '^TRAP:' || true)
    echo "assertion failures in the server log: $traps"
    if [ "$traps" -ne 0 ]; then
        cat "$dir/server.log" "$WORK/cassert_hostile/server.log" "$WORK/cassert_shapes/server.log" 2>/dev/null | grep -A3 '^TRAP:' | head -20
        fail_one "cassert: assertion failures"
    fi
}
