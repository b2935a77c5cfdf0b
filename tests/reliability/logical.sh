#!/usr/bin/env bash
# Logical replication: two scratch PostgreSQL 15 clusters on their own ports (a publisher with
# wal_level = logical, a subscriber), both with simhash_pg. The published table has a generated
# fingerprint column and generated, indexed block columns (simhash_create_index). PostgreSQL 15
# does not replicate generated columns: the subscriber's table declares the same expressions and
# computes its own. Checks:
#   - after the initial copy and after inserts, updates and deletes on the publisher, the
#     subscriber's fingerprints, lookups (through its own block indexes), pairs and clusters
#     equal the publisher's;
#   - a published plain simhash64 column, on a subscriber table that lacks it (a subscriber
#     without the extension cannot declare it): the apply worker stops with PostgreSQL's error
#     "is missing replicated column", in the subscriber's log, and nothing is applied.
# Prints one line per check and a verdict: PASS or FAIL.
#
#   bash tests/reliability/logical.sh [ROWS]     # default 20000
set -euo pipefail
cd "$(dirname "$0")"
source ./common.sh
ROWS=${1:-20000}
DIR=/var/tmp/simhash_logical
SOCK=$DIR/socket
PUB=5497
SUB=5498
# psql on one of the clusters: on PORT DB SQL...
on() { local port=$1 db=$2; shift 2; runuser -u postgres -- env PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -h "$SOCK" -p "$port" -d "$db" "$@"; }
stop_all() {
    local c
    for c in pub sub; do
        if [ -f "$DIR/$c/postmaster.pid" ]; then
            runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/$c" -m fast stop >/dev/null 2>&1 || true
        fi
    done
}
trap stop_all EXIT

stop_all
rm -rf "$DIR"
install -d -o postgres -g postgres "$DIR" "$SOCK"
for c in pub sub; do
    runuser -u postgres -- "$PG_BIN/initdb" -D "$DIR/$c" -A trust >/dev/null
    port=$([ "$c" = pub ] && echo "$PUB" || echo "$SUB")
    cat >> "$DIR/$c/postgresql.conf" <<EOF
port = $port
listen_addresses = ''
unix_socket_directories = '$SOCK'
wal_level = logical
shared_buffers = 256MB
EOF
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$DIR/$c" -l "$DIR/$c.log" -w start >/dev/null
    runuser -u postgres -- "$PG_BIN/createdb" -h "$SOCK" -p "$port" docs
    on "$port" docs -c 'CREATE EXTENSION simhash_pg'
done

# The same table on both sides: generated fingerprint, generated and indexed block columns.
table="CREATE TABLE docs (id int8 PRIMARY KEY, body text NOT NULL,
                         fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)"
for port in "$PUB" "$SUB"; do
    on "$port" docs -c "$table" -c "SELECT simhash_create_index('docs', 'fp')" >/dev/null
done
on "$PUB" docs -c "INSERT INTO docs (id, body)
                   SELECT g, format('item %s about %s and %s', g, md5((g / 3)::text), md5((g % 97)::text))
                     FROM generate_series(1, $ROWS) g" \
               -c "CREATE PUBLICATION docs_pub FOR TABLE docs"
on "$SUB" docs -c "CREATE SUBSCRIPTION docs_sub CONNECTION 'host=$SOCK port=$PUB dbname=docs' PUBLICATION docs_pub"

# Waits until the subscriber has applied everything the publisher wrote so far.
caught_up() {
    local target i
    target=$(on "$PUB" docs -c 'SELECT pg_current_wal_lsn()')
    for i in $(seq 1 600); do
        if [ "$(on "$SUB" docs -c "SELECT bool_and(srsubstate = 'r') FROM pg_subscription_rel")" = t ] &&
           [ "$(on "$SUB" docs -c "SELECT coalesce(bool_and(latest_end_lsn >= '$target'::pg_lsn), false) FROM pg_stat_subscription WHERE relid IS NULL")" = t ]; then
            return 0
        fi
        sleep 0.2
    done
    echo "subscriber did not catch up" >&2
    return 1
}

# The answers compared, as checksums: every fingerprint, 300 lookups, the pairs, the clusters.
fingerprints="SELECT count(*) || ' ' || md5(string_agg(id || ':' || fp, ',' ORDER BY id)) FROM docs"
lookups="SELECT md5(string_agg(q.id || ':' || t.id, ',' ORDER BY q.id, t.id))
           FROM (SELECT id, fp FROM docs WHERE id % 67 = 0) q
           JOIN LATERAL (SELECT id FROM docs d WHERE simhash_near(d.fp, q.fp, 3)) t ON true"
pairs="SELECT count(*) || ' ' || md5(string_agg(a || '-' || b, ',' ORDER BY a, b)) FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8)"
clusters="SELECT count(*) || ' ' || md5(string_agg(key || '-' || group_key, ',' ORDER BY key)) FROM simhash_chained_groups('docs', 'fp', 3, 'id', NULL::int8)"
compare() {
    local when=$1 what
    for what in fingerprints lookups pairs clusters; do
        check "$when: $what equal on publisher and subscriber" "$(on "$PUB" docs -c "${!what}")" "$(on "$SUB" docs -c "${!what}")"
    done
}
caught_up
compare "initial copy"
check "lookups use the subscriber's block indexes" 1 \
    "$(on "$SUB" docs -c "EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE simhash_near(fp, '0123456789abcdef', 3)" | grep -c '_simhash_index_probe')"

on "$PUB" docs -c "INSERT INTO docs (id, body) SELECT $ROWS + id, upper(body) || '!' FROM docs WHERE id % 50 = 0" \
               -c "UPDATE docs SET body = body || ' updated' WHERE id % 70 = 0" \
               -c "DELETE FROM docs WHERE id % 90 = 0"
caught_up
compare "after inserts, updates, deletes"
on "$SUB" docs -c "CREATE EXTENSION IF NOT EXISTS amcheck"
check "amcheck on the subscriber" "ok 5 indexes" \
    "$(on "$SUB" docs -c "$(amcheck_sql docs)")"

# A plain (not generated) simhash64 column, published to a table that lacks it.
on "$PUB" docs -c "CREATE TABLE plain_fp (id int8 PRIMARY KEY, fp simhash64)" \
               -c "INSERT INTO plain_fp SELECT g, hashint8extended(g, 1)::simhash64 FROM generate_series(1, 10) g" \
               -c "CREATE PUBLICATION plain_pub FOR TABLE plain_fp"
runuser -u postgres -- "$PG_BIN/createdb" -h "$SOCK" -p "$SUB" noext
on "$SUB" noext -c "CREATE TABLE plain_fp (id int8 PRIMARY KEY)" \
                -c "CREATE SUBSCRIPTION plain_sub CONNECTION 'host=$SOCK port=$PUB dbname=docs' PUBLICATION plain_pub"
error=""
for i in $(seq 1 100); do
    error=$(grep -m1 -o 'logical replication target relation "public.plain_fp" is missing replicated column: "fp"' "$DIR/sub.log" || true)
    [ -n "$error" ] && break
    sleep 0.2
done
check "subscriber without the column: the apply worker's error" \
    'logical replication target relation "public.plain_fp" is missing replicated column: "fp"' "$error"
check "subscriber without the column: rows applied" 0 "$(on "$SUB" noext -c 'SELECT count(*) FROM plain_fp')"
on "$SUB" noext -c "ALTER SUBSCRIPTION plain_sub DISABLE" -c "ALTER SUBSCRIPTION plain_sub SET (slot_name = NONE)" \
                -c "DROP SUBSCRIPTION plain_sub"
on "$PUB" docs -c "SELECT pg_drop_replication_slot('plain_sub')" >/dev/null

verdict "logical replication"
