#!/usr/bin/env bash
# pg_upgrade from PostgreSQL 15 to 17 with simhash_pg data: a scratch 15 cluster holding a table
# with a generated fingerprint and covering block indexes, one with plain (expression-free,
# non-covering) block indexes, a partitioned table with block indexes on each partition, and the
# extension created at 0.1.0 and updated; the answers (lookups, pairs, clusters, the plans) are
# recorded, the cluster upgraded to 17 with pg_upgrade (--check first), and everything compared.
# simhash_pg must be built and installed for 17 first, which this script does (.ci/pg-major
# fetches 17 once; the build takes about 5 minutes on 2 cores the first time).
# Prints one line per check and a verdict: PASS or FAIL.
#
#   bash tests/reliability/pg_upgrade.sh [ROWS]     # default 50000
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$PATH"
ROWS=${1:-50000}
WORK=/var/tmp/simhash_pg_upgrade
LOGS=$WORK/logs
OLD_BIN=/usr/lib/postgresql/15/bin
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
# shellcheck source=tests/reliability/common.sh
source tests/reliability/common.sh
rm -rf "$WORK"
install -d -o postgres -g postgres "$WORK" "$LOGS"

NEW_CONFIG=$(bash .ci/pg-major 17)
NEW_BIN=$("$NEW_CONFIG" --bindir)
echo "build and install simhash_pg for $("$NEW_CONFIG" --version)"
cargo pgrx init --pg15 /usr/bin/pg_config --pg17 "$NEW_CONFIG" >/dev/null
cargo pgrx install --pg-config "$NEW_CONFIG" >"$LOGS/install-17.log" 2>&1 || { tail -20 "$LOGS/install-17.log"; exit 1; }
install_released_scripts "$NEW_CONFIG"
install_released_scripts /usr/bin/pg_config
trap 'scratch_stop old "$OLD_BIN"; scratch_stop new "$NEW_BIN"' EXIT

echo "PostgreSQL 15: simhash_pg 0.1.0 updated to the current version, $ROWS rows per table"
scratch_start old "$OLD_BIN" 5415
old() { scratch_psql old 5415 -At -d docs "$@"; }
runuser -u postgres -- "$OLD_BIN/createdb" -h "$WORK/old" -p 5415 docs
old -c "CREATE EXTENSION simhash_pg VERSION '0.1.0'" -c "CREATE EXTENSION amcheck"
old >/dev/null \
    -c "CREATE TABLE docs (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
    -c "INSERT INTO docs (id, body) SELECT g, format('item %s about %s and %s', g / 2, md5((g / 2)::text), md5((g % 89)::text))
          FROM generate_series(1, $ROWS) g" \
    -c "SELECT simhash_create_index('docs', 'fp')" \
    -c "ALTER EXTENSION simhash_pg UPDATE" \
    -c "CREATE TABLE plain (id int8 PRIMARY KEY, fp simhash64)" \
    -c "INSERT INTO plain SELECT g, hashint8extended(g / 3, 7)::simhash64 FROM generate_series(1, $ROWS) g" \
    -c "SELECT simhash_create_index('plain', 'fp', 7, covering => false)" \
    -c "CREATE TABLE parts (id int8, fp simhash64, PRIMARY KEY (id)) PARTITION BY RANGE (id)" \
    -c "CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO ($ROWS / 2)" \
    -c "CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM ($ROWS / 2) TO (MAXVALUE)" \
    -c "INSERT INTO parts SELECT g, (hashint8extended(g / 2, 9) # (g % 4))::simhash64 FROM generate_series(1, $ROWS) g" \
    -c "SELECT simhash_create_index('parts', 'fp')" \
    -c "VACUUM ANALYZE"
check "extension version after the update on 15" 0.3.0 "$(old -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'")"

# The answers, as checksums, and the plans.
answers() {
    local run=$1 t
    for t in docs plain parts; do
        "$run" -c "SELECT '$t lookups ' || md5(string_agg(q.id || ':' || x.id, ',' ORDER BY q.id, x.id))
                     FROM (SELECT id, (fp::int8 # (id % 4))::simhash64 AS fp FROM $t WHERE id % 97 = 0) q
                     JOIN LATERAL (SELECT id FROM $t d WHERE simhash_near(d.fp, q.fp, 3)) x ON true"
        "$run" -c "SELECT '$t pairs ' || count(*) || ' ' || md5(string_agg(a || '-' || b, ',' ORDER BY a, b))
                     FROM simhash_pairs('$t', 'fp', 3, 'id', NULL::int8)"
        "$run" -c "SELECT '$t clusters ' || count(*) || ' ' || md5(string_agg(key || '-' || group_key, ',' ORDER BY key))
                     FROM simhash_chained_groups('$t', 'fp', 3, 'id', NULL::int8)"
        "$run" -c "SET enable_seqscan = off" -c "EXPLAIN (COSTS OFF) SELECT id FROM $t WHERE simhash_near(fp, '0123456789abcdef', 3)" \
            | grep -oE '_simhash_index_probe|Index (Only )?Scan using [a-z0-9_]+|Bitmap Index Scan on [a-z0-9_]+' \
            | sort | uniq -c | sed "s/^ */$t plan /"
    done
}
answers old > "$WORK/before.txt"
check "answers recorded on 15" 0 "$(grep -c '^$' "$WORK/before.txt" || true)"
scratch_stop old "$OLD_BIN"

echo "PostgreSQL 17: pg_upgrade --check, then pg_upgrade"
scratch_start new "$NEW_BIN" 5417
scratch_stop new "$NEW_BIN"
upgrade() {
    (cd "$WORK" && runuser -u postgres -- "$NEW_BIN/pg_upgrade" -b "$OLD_BIN" -B "$NEW_BIN" \
        -d "$WORK/old/data" -D "$WORK/new/data" -p 5415 -P 5417 -U postgres "$@")
}
if upgrade --check >"$LOGS/pg_upgrade-check.log" 2>&1; then check "pg_upgrade --check" passed passed
else tail -20 "$LOGS/pg_upgrade-check.log"; check "pg_upgrade --check" passed failed; fi
if ! upgrade >"$LOGS/pg_upgrade.log" 2>&1; then
    cause=$(grep -h -m1 'error: ' "$WORK"/new/data/pg_upgrade_output.d/*/log/pg_upgrade_dump_*.log 2>/dev/null || tail -1 "$LOGS/pg_upgrade.log")
    echo "  pg_upgrade failed: $cause"
    # The control: the same upgrade of a cluster holding one table of one int column, without
    # simhash_pg. If it fails too, the two servers cannot be upgraded between, whatever the data.
    scratch_start ctl_old "$OLD_BIN" 5416
    runuser -u postgres -- "$OLD_BIN/createdb" -h "$WORK/ctl_old" -p 5416 plain
    scratch_psql ctl_old 5416 -d plain -c "CREATE TABLE t (x int)" -c "INSERT INTO t VALUES (1)"
    scratch_stop ctl_old "$OLD_BIN"
    scratch_start ctl_new "$NEW_BIN" 5418
    scratch_stop ctl_new "$NEW_BIN"
    if (cd "$WORK" && runuser -u postgres -- "$NEW_BIN/pg_upgrade" -b "$OLD_BIN" -B "$NEW_BIN" -d "$WORK/ctl_old/data" \
            -D "$WORK/ctl_new/data" -p 5416 -P 5418 -U postgres >"$LOGS/control.log" 2>&1); then
        check "pg_upgrade" done failed
        echo "pg_upgrade: FAIL (the control without simhash_pg upgraded)"
        exit 1
    fi
    echo "  the control (one int column, no simhash_pg) fails the same way: $(grep -h -m1 'error: ' \
        "$WORK"/ctl_new/data/pg_upgrade_output.d/*/log/pg_upgrade_dump_*.log 2>/dev/null || echo see "$LOGS/control.log")"
    echo "pg_upgrade: BLOCKED (these PostgreSQL 15 and 17 builds cannot be upgraded between, with or without simhash_pg)"
    exit 2
fi
check "pg_upgrade" done done

runuser -u postgres -- "$NEW_BIN/pg_ctl" -D "$WORK/new/data" -l "$WORK/new/server.log" -w start >/dev/null
new() { scratch_psql new 5417 -At -d docs "$@"; }
check "extension version on 17" 0.3.0 "$(new -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'")"
new -c "ALTER EXTENSION simhash_pg UPDATE" -c "ALTER EXTENSION amcheck UPDATE" -c "VACUUM ANALYZE" >/dev/null
answers new > "$WORK/after.txt"
check "lookups, pairs, clusters and plans equal before and after" "$(wc -l < "$WORK/before.txt") lines, same" \
    "$(wc -l < "$WORK/after.txt") lines, $(cmp -s "$WORK/before.txt" "$WORK/after.txt" && echo same || echo different)"
cmp -s "$WORK/before.txt" "$WORK/after.txt" || diff "$WORK/before.txt" "$WORK/after.txt" || true
check "amcheck on every B-tree index" ok "$(new -c "SELECT CASE WHEN count(bt_index_check(i.indexrelid, true)) > 0 THEN 'ok' END
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE a.amname = 'btree' AND n.nspname = 'public' AND c.relkind = 'i'")"
check "block columns with an index, per table" "docs 4, parts 4, parts_1 4, parts_2 4, plain 8" \
    "$(new -c "SELECT string_agg(t || ' ' || n, ', ' ORDER BY t) FROM (SELECT c.relname AS t, count(*) AS n
                  FROM pg_class c, simhash_block_columns(c.oid) b
                 WHERE c.relname IN ('docs', 'plain', 'parts', 'parts_1', 'parts_2') AND b.index IS NOT NULL GROUP BY 1) s")"

verdict "pg_upgrade"
