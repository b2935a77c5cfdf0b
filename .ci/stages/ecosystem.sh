# Stage "beside other extensions" of .ci/test (sourced by it; uses its ROOT, WORK, LOGS, PG_BIN,
# PGXS_TESTS and the helpers of .ci/lib.sh). Needs the extension installed by the SQL
# regression stage.
#
# Two scratch PostgreSQL 15 servers, each preloading simhash_pg beside the libraries our users
# preload, in both orders (Citus must come first when it is there):
#   A: citus, pg_stat_statements, auto_explain, simhash_pg. The whole SQL regression suite with
#      pgvector created before simhash_pg in the same schema (public), then the ecosystem suite.
#   B: simhash_pg, auto_explain, pg_stat_statements. The whole SQL regression suite with
#      look-alikes of every function in our schema and after it on the search_path
#      (tests/ecosystem/decoys.sql), then the ecosystem suite (look-alikes ahead of ours).
# Both regression runs must give exactly the plain run's expected output. auto_explain logs
# every plan, nested statements included, with ANALYZE, to the server log.

ECOSYSTEM_PRELOAD_A="citus,pg_stat_statements,auto_explain,simhash_pg"
ECOSYSTEM_PRELOAD_B="simhash_pg,auto_explain,pg_stat_statements"

stage_ecosystem() {
    local regress=$PGXS_TESTS/regress/pg_regress settings name port db server_a=1
    # Server A needs pgvector and Citus; server B runs without them.
    for name in pgvector citus; do
        vendor_build "$name" "beside other extensions, server A" || { server_a=0; break; }
    done
    settings=(
        "auto_explain.log_min_duration = 0"
        "auto_explain.log_analyze = on"
        "auto_explain.log_timing = off"
        "auto_explain.log_nested_statements = on"
        "pg_stat_statements.track = all"
    )

    name=ecosystem_a port=5481
    if [ "$server_a" = 0 ]; then
        :
    elif scratch_start "$name" "$PG_BIN" "$port" "shared_preload_libraries = '$ECOSYSTEM_PRELOAD_A'" "${settings[@]}"; then
        echo "server A preloads: $(scratch_psql "$name" "$port" -d postgres -Atc 'SHOW shared_preload_libraries')"
        run_suite regress_beside_pgvector pg_regress "$regress" "$PG_BIN" --host="$WORK/$name" --port="$port" \
            --dbname=simhash_pg_regress --load-extension=vector "$REGRESS_EXTENSION" || true
        run_suite ecosystem_suite_a ecosystem "$regress" "$PG_BIN" --host="$WORK/$name" --port="$port" \
            --dbname=simhash_ecosystem || true
        scratch_stop "$name" "$PG_BIN"
    else
        fail_one "ecosystem: cluster a"
    fi

    name=ecosystem_b port=5482 db=simhash_pg_regress_decoys
    if scratch_start "$name" "$PG_BIN" "$port" "shared_preload_libraries = '$ECOSYSTEM_PRELOAD_B'" "${settings[@]}"; then
        echo "server B preloads: $(scratch_psql "$name" "$port" -d postgres -Atc 'SHOW shared_preload_libraries')"
        # pg_regress --use-existing: the database is made here, with the decoys in it, and the
        # extension is created after them, in a session with the database's search_path.
        regress_database "$name" "$port" "$db"
        if ! { scratch_psql "$name" "$port" -d "$db" -c 'CREATE EXTENSION simhash_pg' -f - \
                -c 'DROP EXTENSION simhash_pg' \
                -c "ALTER DATABASE $db SET search_path = \"\$user\", public, decoy_last" \
                <"$ROOT/tests/ecosystem/decoys.sql" \
                && scratch_psql "$name" "$port" -d "$db" -c 'CREATE EXTENSION simhash_pg'; } >"$LOGS/decoys.log" 2>&1; then
            cat "$LOGS/decoys.log"
            fail_one "ecosystem: decoys"
        fi
        { grep -A2 decoys "$LOGS/decoys.log" || true; } | tail -1 | sed 's/^ */look-alike functions: /'
        run_suite regress_with_lookalikes pg_regress "$regress" "$PG_BIN" --host="$WORK/$name" --port="$port" \
            --use-existing --dbname="$db" || true
        run_suite ecosystem_suite_b ecosystem "$regress" "$PG_BIN" --host="$WORK/$name" --port="$port" \
            --dbname=simhash_ecosystem || true
        scratch_stop "$name" "$PG_BIN"
    else
        fail_one "ecosystem: cluster b"
    fi
}
