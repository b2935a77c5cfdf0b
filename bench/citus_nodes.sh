# The Citus cluster of the Citus benchmarks (bench/run_citus.sh, bench/citus_ab.sh), sourced
# after .ci/lib.sh with WORK, LOGS and PG_BIN set: a coordinator (port 9700) and two workers
# (9701, 9702) as scratch clusters on 127.0.0.1, shared_buffers = 2GB each.
NODES=(citus_bench_coordinator:9700 citus_bench_worker1:9701 citus_bench_worker2:9702)

# stop_all: stops every node that runs.
stop_all() {
    for node in "${NODES[@]}"; do scratch_stop "${node%%:*}" "$PG_BIN"; done
}

# start_nodes: makes and starts every node afresh.
start_nodes() {
    for node in "${NODES[@]}"; do
        scratch_start "${node%%:*}" "$PG_BIN" "${node##*:}" "shared_preload_libraries = 'citus'" \
            "listen_addresses = '127.0.0.1'" "citus.node_conninfo = 'sslmode=disable'" \
            "shared_buffers = '2GB'" "max_wal_size = '4GB'" "checkpoint_timeout = '30min'"
    done
}

# make_citus_db DB: database DB on every node with citus and simhash_pg (the one installed now),
# the workers added to the coordinator's metadata.
make_citus_db() {
    for node in "${NODES[@]}"; do
        scratch_psql "${node%%:*}" "${node##*:}" -d postgres -c "CREATE DATABASE $1" >/dev/null
        scratch_psql "${node%%:*}" "${node##*:}" -d "$1" -c 'CREATE EXTENSION citus' -c 'CREATE EXTENSION simhash_pg' >/dev/null
    done
    scratch_psql citus_bench_coordinator 9700 -d "$1" \
        -c "SELECT citus_set_coordinator_host('127.0.0.1', 9700)" \
        -c "SELECT citus_add_node('127.0.0.1', 9701)" -c "SELECT citus_add_node('127.0.0.1', 9702)" >/dev/null
}
