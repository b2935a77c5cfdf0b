#!/usr/bin/env bash
# Backup and point-in-time recovery: a scratch cluster archiving its WAL, a base backup
# (pg_basebackup), then a bulk load in committed batches through simhash_ingest while a second
# table's block layout is being built (simhash_create_index, one long transaction). The backup
# is recovered to a time between two batches, during that build. Checks on the recovered
# database: exactly the batches committed before the target time; lookups through the block
# indexes equal brute force; amcheck clean; the build in progress at the target time left
# nothing (no block columns, no index) and runs again to the end.
# Prints one line per check and a verdict: PASS or FAIL.
#
#   bash tests/reliability/pitr.sh [ROWS] [BATCHES]     # default 100000 rows, 10 batches of 5000
set -euo pipefail
cd "$(dirname "$0")"
source ./common.sh
ROWS=${1:-100000}
BATCHES=${2:-10}
DIR=/var/tmp/simhash_pitr
SOCK=$DIR/socket
PORT=5496
on() { runuser -u postgres -- env PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$PORT" -d docs "$@"; }
stop() { # stop DATADIR
    if [ -f "$1/postmaster.pid" ]; then runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$1" -m fast stop >/dev/null 2>&1 || true; fi
}
trap 'stop "$DIR/primary"; stop "$DIR/restored"' EXIT
start() { runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$1" -l "$1.log" -w -t 300 start >/dev/null; }

stop "$DIR/primary"; stop "$DIR/restored"
rm -rf "$DIR"
install -d -o postgres -g postgres "$DIR" "$SOCK" "$DIR/archive"
runuser -u postgres -- "$PG_BIN/initdb" -D "$DIR/primary" -A trust >/dev/null
cat >> "$DIR/primary/postgresql.conf" <<EOF
port = $PORT
listen_addresses = ''
unix_socket_directories = '$SOCK'
archive_mode = on
archive_command = 'cp %p $DIR/archive/%f'
shared_buffers = 256MB
EOF
start "$DIR/primary"
runuser -u postgres -- "$PG_BIN/createdb" -h "$SOCK" -p "$PORT" docs
on -c 'CREATE EXTENSION simhash_pg' -c 'CREATE EXTENSION amcheck'
on >/dev/null -c "CREATE TABLE docs (id int8 PRIMARY KEY, fp simhash64)" \
   -c "INSERT INTO docs SELECT g, hashint8extended(g, 3)::simhash64 FROM generate_series(1, $ROWS) g" \
   -c "SELECT simhash_create_index('docs', 'fp')" \
   -c "CREATE TABLE other (id int8 PRIMARY KEY, fp simhash64)" \
   -c "INSERT INTO other SELECT g, hashint8extended(g, 4)::simhash64 FROM generate_series(1, 3 * $ROWS) g"
runuser -u postgres -- "$PG_BIN/pg_basebackup" -h "$SOCK" -p "$PORT" -D "$DIR/base" -X none -c fast
echo "base backup taken; $BATCHES batches of 5000 rows, half of them near-copies, through simhash_ingest"

# The second table's block layout, built in one long transaction spanning the target time.
runuser -u postgres -- psql -X -q -h "$SOCK" -p "$PORT" -d docs \
    -c "BEGIN; SELECT simhash_create_index('other', 'fp', 7); SELECT pg_sleep(30); COMMIT;" >/dev/null 2>&1 &
build=$!
target="" expected=""
for b in $(seq 1 "$BATCHES"); do
    on -c "DROP TABLE IF EXISTS staging" \
       -c "CREATE TABLE staging AS
           SELECT 1000000 * $b + g AS id,
                  CASE WHEN g % 2 = 0 THEN (hashint8extended(g * $b % $ROWS + 1, 3) # 3)::simhash64
                       ELSE hashint8extended(1000000 * $b + g, 5)::simhash64 END AS fp
             FROM generate_series(1, 5000) g" \
       -c "SELECT * FROM simhash_ingest('docs', 'fp', 'staging')" >/dev/null
    if [ "$b" -eq $((BATCHES / 2)) ]; then
        sleep 1
        target=$(on -c "SELECT clock_timestamp()")
        expected=$(on -c "SELECT count(*) || ' rows, ' || count(DISTINCT id / 1000000) - 1 || ' batches' FROM docs")
        sleep 1
    fi
done
wait "$build" || true
on -c "SELECT pg_switch_wal()" >/dev/null
check "the build committed on the primary" t "$(on -c "SELECT count(*) > 0 FROM simhash_block_columns('other')")"
stop "$DIR/primary"
echo "recovering to $target (after batch $((BATCHES / 2)), during the build)"

cp -a "$DIR/base" "$DIR/restored"
cat >> "$DIR/restored/postgresql.conf" <<EOF
restore_command = 'cp $DIR/archive/%f %p'
recovery_target_time = '$target'
recovery_target_action = 'promote'
archive_mode = off
EOF
touch "$DIR/restored/recovery.signal"
chown -R postgres:postgres "$DIR/restored"
start "$DIR/restored"
for i in $(seq 1 300); do
    [ "$(on -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ] && break
    sleep 0.2
done
check "recovered and promoted" f "$(on -c 'SELECT pg_is_in_recovery()')"
check "rows and batches at the target time" "$expected" \
    "$(on -c "SELECT count(*) || ' rows, ' || count(DISTINCT id / 1000000) - 1 || ' batches' FROM docs")"
check "lookups equal brute force" "queries 200, mismatches 0" "$(on -c "
    WITH qs AS (SELECT (fp::int8 # (id % 8))::simhash64 AS fp FROM docs WHERE id % greatest(1, $ROWS / 200) = 0 LIMIT 200),
         a AS (SELECT ARRAY(SELECT ctid FROM docs t WHERE simhash_near(t.fp, qs.fp, 3) ORDER BY ctid) AS by_index,
                      ARRAY(SELECT ctid FROM docs t WHERE hamming_distance(t.fp, qs.fp) + 0 <= 3 ORDER BY ctid) AS brute
                 FROM qs)
    SELECT format('queries %s, mismatches %s', count(*), count(*) FILTER (WHERE by_index <> brute)) FROM a")"
check "no pair through an ingested row (the ingest rule holds)" 0 "$(on -c "
    SELECT count(*) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8) p WHERE p.a >= 1000000 OR p.b >= 1000000")"
check "amcheck on docs" "ok 5 indexes" "$(on -c "$(amcheck_sql docs)")"
check "no half-built layout on other (block columns, indexes)" "0 0" \
    "$(on -c "SELECT (SELECT count(*) FROM simhash_block_columns('other')) || ' ' || (SELECT count(*) FROM pg_index WHERE indrelid = 'other'::regclass AND NOT indisprimary)")"
on >/dev/null -c "SELECT simhash_create_index('other', 'fp', 7)"
check "the build runs again to the end" 8 "$(on -c "SELECT count(*) FROM simhash_block_columns('other') WHERE index IS NOT NULL")"

verdict "pitr"
