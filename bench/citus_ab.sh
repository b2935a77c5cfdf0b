#!/usr/bin/env bash
# Two or more builds of the extension timed side by side on one Citus cluster, as root (Debian 12,
# the local PostgreSQL 15 and Citus built by bench/run_citus.sh or .ci/vendor-extension): the
# A/B of a change to routed lookups (issue 67: the fail-closed checks).
#
#   bash bench/citus_ab.sh ROWS ROUNDS SECONDS PACKAGE...
#
# Each PACKAGE is what `cargo pgrx package --pg-config /usr/bin/pg_config` made of one checkout
# (its folder target/release/simhash_pg-pg15). A coordinator (port 9700) and two workers (9701,
# 9702) start as scratch clusters with shared_buffers = 2GB. Each build gets a database of its
# own, made with that build installed: ROWS random fingerprints in `routed (id int8 PRIMARY KEY,
# fp simhash64)`, distributed by id (32 shards), with simhash_create_index(..., routed => true).
# Then ROUNDS interleaved rounds: each build's simhash_pg.so installed in turn, the nodes
# restarted (Citus keeps its connections to the workers, whose backends keep the library they
# loaded), 5 s of warm-up, and pgbench -M prepared, one client, SECONDS each, through the
# coordinator, of the floor `SELECT fp FROM routed WHERE id = $1` and simhash_near at k = 3 and
# k = 7 with random query fingerprints. Prints "round build query p50_ms p95_ms" lines, then each
# build's medians over the rounds. The installed build is put back at the end.
# Example (BENCHMARKS.md, "With the fail-closed checks"):
#   git worktree add /work/ab_old 0484dc8 && (cd /work/ab_old && cargo pgrx package --pg-config /usr/bin/pg_config)
#   cargo pgrx package --pg-config /usr/bin/pg_config
#   bash bench/citus_ab.sh 10000000 5 10 /work/ab_old/target/release/simhash_pg-pg15 target/release/simhash_pg-pg15
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
rows=$1 rounds=$2 seconds=$3
shift 3
[ $# -ge 2 ] || { echo "usage: bash bench/citus_ab.sh ROWS ROUNDS SECONDS PACKAGE PACKAGE..." >&2; exit 2; }
packages=()
for p in "$@"; do
    p=$(cd "$p" && pwd)
    [ -f "$p/usr/lib/postgresql/15/lib/simhash_pg.so" ] || { echo "$p: no usr/lib/postgresql/15/lib/simhash_pg.so" >&2; exit 2; }
    packages+=("$p")
done
PG_BIN=/usr/lib/postgresql/15/bin WORK=/tmp/simhash_pg-bench LOGS=$ROOT/target/bench-logs
mkdir -p "$LOGS"
install -d -o postgres -g postgres "$WORK"
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
lib=$(pg_config --pkglibdir)/simhash_pg.so share=$(pg_config --sharedir)/extension
saved=$(mktemp -d)
cp "$lib" "$saved/" && cp "$share"/simhash_pg* "$saved/"
# shellcheck source=bench/citus_nodes.sh
source bench/citus_nodes.sh
restore() {
    stop_all
    install -m 755 "$saved/simhash_pg.so" "$lib"
    rm -f "$share"/simhash_pg*
    cp "$saved"/simhash_pg--* "$saved"/simhash_pg.control "$share/"
    rm -rf "$saved"
}
trap restore EXIT
# install N: build N's library and scripts (a new file for the library: a backend that has the
# old one mapped keeps it).
install_build() {
    local p=${packages[$1]}
    install -m 755 "$p/usr/lib/postgresql/15/lib/simhash_pg.so" "$lib"
    rm -f "$share"/simhash_pg*
    cp "$p"/usr/share/postgresql/15/extension/simhash_pg* "$share/"
}
start_nodes
coordinator() { scratch_psql citus_bench_coordinator 9700 "$@"; }
for i in "${!packages[@]}"; do
    db=simhash_ab_$i
    install_build "$i"
    make_citus_db "$db"
    start=$(date +%s)
    coordinator -d "$db" <<SQL >/dev/null
CREATE TABLE routed (id int8 PRIMARY KEY, fp simhash64 NOT NULL);
SELECT create_distributed_table('routed', 'id', shard_count => 32);
SELECT setseed(0.42);
INSERT INTO routed SELECT g, (((random() * 4294967295)::int8 << 32) | (random() * 4294967295)::int8)::simhash64
  FROM generate_series(1, $rows) g;
SET client_min_messages = warning;
SELECT simhash_create_index('routed', 'fp', routed => true);
VACUUM ANALYZE routed;
VACUUM ANALYZE routed_fp_routes;
SQL
    echo "build $i: ${packages[$i]} (commit $(git -C "${packages[$i]}" rev-parse --short HEAD 2>/dev/null || echo unknown)):" \
         "$rows rows loaded and indexed in $(( $(date +%s) - start )) s, $(coordinator -d "$db" -Atc "SELECT blocks FROM _simhash_routed_layout('routed')") blocks," \
         "plan: $(coordinator -d "$db" -Atc "EXPLAIN (COSTS OFF) SELECT id FROM routed WHERE simhash_near(fp, '0123456789abcdef', 3)" | grep -q _simhash_routed_lookup && echo through the routes || echo NOT through the routes)"
done
dir=$(mktemp -d)
printf '\\set id random(1, %s)\nSELECT fp FROM routed WHERE id = :id;\n' "$rows" > "$dir/floor.sql"
for k in 3 7; do
    printf '\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\nSELECT id FROM routed WHERE simhash_near(fp, :q::int8::simhash64, %s);\n' "$k" > "$dir/near$k.sql"
done
chmod 777 "$dir" && chmod a+r "$dir"/*.sql
results=$dir/results
: > "$results"
for round in $(seq "$rounds"); do
    for i in "${!packages[@]}"; do
        stop_all
        install_build "$i"
        for node in "${NODES[@]}"; do
            runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$WORK/${node%%:*}/data" -l "$WORK/${node%%:*}/server.log" -w start >/dev/null
        done
        for query in floor near3 near7; do
            runuser -u postgres -- pgbench -n -M prepared -h 127.0.0.1 -p 9700 -T 5 -f "$dir/$query.sql" "simhash_ab_$i" >/dev/null 2>&1
            rm -f "$dir"/log*
            (cd "$dir" && runuser -u postgres -- pgbench -n -M prepared -h 127.0.0.1 -p 9700 -T "$seconds" -l --log-prefix="$dir/log" \
                 -f "$dir/$query.sql" "simhash_ab_$i" >/dev/null 2>&1)
            line="$round $i $query $(cat "$dir"/log* | awk '{print $3 / 1000}' | sort -n | awk '{v[NR] = $1} END {printf "%.3f %.3f", v[int((NR + 1) / 2)], v[int(NR * 0.95 + 0.5)]}')"
            echo "$line" | tee -a "$results"
        done
    done
done
echo
echo "medians over $rounds rounds (p50 ms): build query p50"
for i in "${!packages[@]}"; do
    for query in floor near3 near7; do
        printf '%s %s %s\n' "$i" "$query" "$(awk -v b="$i" -v q="$query" '$2 == b && $3 == q {print $4}' "$results" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
    done
done
rm -rf "$dir"
