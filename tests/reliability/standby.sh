#!/usr/bin/env bash
# Hot standby: a streaming replica of the local cluster (pg_basebackup, its own port and socket
# directory), while the primary inserts, updates and deletes rows of a block-indexed table under
# pgbench (8 clients). Checks:
#   - during the load, on the standby: lookups through the block indexes equal brute force in
#     the same statement (the same snapshot), while page splits and deletions are replayed under
#     the leaf-page probe; a query cancelled by a recovery conflict is counted, never a wrong row;
#   - after catch-up: lookups, simhash_pairs and simhash_chained_groups on the standby equal the
#     primary's, and amcheck (bt_index_check, on the standby) is clean on every block index;
#   - the helpers that write refuse on the standby with SQLSTATE 25006 (read-only transaction):
#     simhash_ingest, simhash_create_index, simhash_drop_index.
# Prints one line per check and a verdict: PASS or FAIL.
#
#   bash tests/reliability/standby.sh [ROWS] [SECONDS]     # default 200000 rows, 60 s of load
set -euo pipefail
cd "$(dirname "$0")"
source ./common.sh
ROWS=${1:-200000}
SECONDS_OF_LOAD=${2:-60}
PORT=5499
DIR=/var/tmp/simhash_standby
SOCK=$DIR/socket
DB=simhash_standby
# psql on the standby: s SQL...
s() { runuser -u postgres -- env PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -d "$DB" "$@"; }
stop_standby() {
    if [ -f "$DIR/data/postmaster.pid" ]; then
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    fi
}
trap stop_standby EXIT

# The primary's table: random fingerprints and 5 % near-copies, covering 4-block indexes.
echo "primary: $ROWS rows"
runuser -u postgres -- dropdb --if-exists "$DB" 2>/dev/null
runuser -u postgres -- createdb "$DB"
q "$DB" -c 'CREATE EXTENSION simhash_pg' -c 'CREATE EXTENSION amcheck'
q "$DB" >/dev/null -c "CREATE TABLE docs (id int8 PRIMARY KEY, fp simhash64, note text)" \
        -c "INSERT INTO docs SELECT g, CASE WHEN g % 20 = 0 THEN (hashint8extended(g / 20, 1) # (1::int8 << (g % 64)::int4))::simhash64
                                             ELSE hashint8extended(g, 1)::simhash64 END, 'r' || g
              FROM generate_series(1, $ROWS) g" \
        -c "SELECT simhash_create_index('docs', 'fp')" -c "VACUUM ANALYZE docs" \
        -c "CREATE TABLE staging (id int8, fp simhash64, note text)" \
        -c "INSERT INTO staging SELECT -g, hashint8extended(g, 1)::simhash64, 'new' FROM generate_series(1, 10) g"

# The standby: a base backup streaming from the primary's socket. Debian keeps the primary's
# configuration outside its data directory, so the standby gets its own.
stop_standby
rm -rf "$DIR"
install -d -o postgres -g postgres "$DIR" "$SOCK"
runuser -u postgres -- "$PG_BIN/pg_basebackup" -D "$DIR/data" -X stream -R -c fast -d "host=/var/run/postgresql"
cat > "$DIR/data/postgresql.conf" <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$SOCK'
hot_standby = on
shared_buffers = 256MB
max_standby_streaming_delay = 30s
EOF
printf 'local all all trust\nlocal replication all trust\n' > "$DIR/data/pg_hba.conf"
: > "$DIR/data/pg_ident.conf"
chown postgres:postgres "$DIR/data/postgresql.conf" "$DIR/data/pg_hba.conf" "$DIR/data/pg_ident.conf"
# The base backup carries the primary's ALTER SYSTEM settings (shared_buffers = 8GB, say).
rm -f "$DIR/data/postgresql.auto.conf.bak"
sed -i '/^shared_buffers/d' "$DIR/data/postgresql.auto.conf"
runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/data" -l "$DIR/standby.log" -w start >/dev/null
check "standby in recovery" t "$(s -c 'SELECT pg_is_in_recovery()')"

# Waits until the standby has replayed everything the primary wrote so far.
catch_up() {
    local target i
    target=$(q "$DB" -c 'SELECT pg_current_wal_lsn()')
    for i in $(seq 1 600); do
        if [ "$(s -c "SELECT pg_last_wal_replay_lsn() >= '$target'::pg_lsn" 2>/dev/null)" = t ]; then return 0; fi
        sleep 0.2
    done
    echo "standby did not catch up" >&2
    return 1
}
catch_up

# The load: inserts of near-copies (page splits in the block indexes), updates of fingerprints,
# deletes (then vacuum on the primary, whose cleanup records conflict with standby queries).
cat > "$DIR/load.sql" <<'EOF'
\set id random(1, 100000000)
\set victim random(1, 1000000)
BEGIN;
INSERT INTO docs VALUES (:id + 10000000, (SELECT (fp::int8 # 7)::simhash64 FROM docs WHERE id = :victim % 200000 + 1), 'load')
  ON CONFLICT (id) DO NOTHING;
UPDATE docs SET fp = (fp::int8 # (1::int8 << (:id % 64)))::simhash64 WHERE id = :victim % 200000 + 1;
DELETE FROM docs WHERE id = :victim % 200000 + 100001;
COMMIT;
EOF
chown postgres:postgres "$DIR/load.sql"
echo "load: pgbench, 8 clients, $SECONDS_OF_LOAD s; lookups against brute force on the standby meanwhile"
runuser -u postgres -- "$PG_BIN/pgbench" -n -c 8 -j 2 -T "$SECONDS_OF_LOAD" -f "$DIR/load.sql" "$DB" > "$DIR/pgbench.log" 2>&1 &
load=$!
(
    end=$(( $(date +%s) + SECONDS_OF_LOAD ))
    while [ "$(date +%s)" -lt "$end" ]; do
        q "$DB" -c 'VACUUM docs' >/dev/null 2>&1 || true
        sleep 5
    done
) &
vacuums=$!
rounds=0 mismatches=0 conflicts=0
while kill -0 "$load" 2>/dev/null; do
    # 50 queries drawn from the standby's own rows, half moved a few bits; index and brute force
    # in one statement, so both see the same snapshot.
    out=$(s -c "SET max_parallel_workers_per_gather = 0" -c "
        WITH qs AS (SELECT CASE WHEN g % 2 = 0 THEN fp ELSE (fp::int8 # (1::int8 << (g % 61)::int4))::simhash64 END AS fp
                      FROM (SELECT fp, row_number() OVER () AS g FROM docs TABLESAMPLE SYSTEM (0.5) WHERE fp IS NOT NULL LIMIT 50) x),
             a AS (SELECT ARRAY(SELECT ctid FROM docs t WHERE simhash_near(t.fp, qs.fp, 3) ORDER BY ctid) AS by_index,
                          ARRAY(SELECT ctid FROM docs t WHERE hamming_distance(t.fp, qs.fp) + 0 <= 3 ORDER BY ctid) AS brute
                     FROM qs)
        SELECT count(*) FILTER (WHERE by_index <> brute) FROM a" 2>&1) || true
    rounds=$((rounds + 1))
    if [[ "$out" =~ ^[0-9]+$ ]]; then
        mismatches=$((mismatches + out))
    elif [[ "$out" == *"conflict with recovery"* ]]; then
        conflicts=$((conflicts + 1))
    else
        echo "  unexpected: $out"
        failures=$((failures + 1))
    fi
done
wait "$load" || true
wait "$vacuums" || true
check "pgbench failed transactions" 0 "$(grep -oP 'number of failed transactions: \K[0-9]+' "$DIR/pgbench.log" || echo '?')"
check "lookups during replay: mismatches in $rounds rounds of 50 ($conflicts cancelled by recovery conflicts)" 0 "$mismatches"

catch_up
# The same answers on both sides: 500 lookups, all pairs, the clusters (as one checksum each).
lookups="SELECT md5(string_agg(q.n || ':' || t.id, ',' ORDER BY q.n, t.id))
           FROM (SELECT n, (hashint8extended(n, 1) # (n % 8))::simhash64 AS fp FROM generate_series(1, 500) n) q
           JOIN LATERAL (SELECT id FROM docs d WHERE simhash_near(d.fp, q.fp, 3)) t ON true"
pairs="SELECT count(*) || ' ' || md5(string_agg(a || '-' || b, ',' ORDER BY a, b)) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8)"
clusters="SELECT count(*) || ' ' || md5(string_agg(key || '-' || group_key, ',' ORDER BY key)) FROM simhash_chained_groups('docs', 'fp', 3, 'id', NULL::int8)"
for what in lookups pairs clusters; do
    check "$what equal on primary and standby" "$(q "$DB" -c "${!what}")" "$(s -c "${!what}")"
done
check "lookups use the block indexes on the standby" 1 \
    "$(s -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3)" | grep -c '_simhash_index_probe')"
check "amcheck on the standby" "ok 5 indexes" \
    "$(s -c "$(amcheck_sql docs)")"

# Writing helpers on the standby: a read-only ERROR, nothing else.
s -c "SELECT 1" >/dev/null
for call in "SELECT * FROM simhash_ingest('docs', 'fp', 'staging', 3)" \
            "SELECT simhash_create_index('docs', 'fp', 7)" \
            "SELECT simhash_drop_index('docs', 'fp')"; do
    error=$(runuser -u postgres -- psql -X -q -At -h "$SOCK" -p "$PORT" -d "$DB" -v VERBOSITY=verbose -c "$call" 2>&1 \
            | grep -m1 '^ERROR:' || true)
    check "${call%%(*} refused on the standby" 25006 "$(grep -oP '^ERROR:  \K[0-9A-Z]{5}' <<<"$error" || true)"
    echo "       ${error#ERROR:  }"
done

verdict "standby"
