# Shared by the reliability scripts: run as root on the machine the test command set up (local
# PostgreSQL 15 cluster 'main', extension installed); they talk to it as the postgres user.
DB=${SIMHASH_RELIABILITY_DB:-simhash_reliability}
PG_BIN=/usr/lib/postgresql/15/bin

# psql as postgres, quiet, stopping at the first error: q DB SQL...
q() { local db=$1; shift; runuser -u postgres -- env PGOPTIONS='-c client_min_messages=warning' psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# Waits until the server accepts connections again (after a crash restart), up to 120 s.
wait_ready() {
    local i
    for i in $(seq 1 240); do
        runuser -u postgres -- "$PG_BIN/pg_isready" -q && q postgres -c 'SELECT 1' >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "server did not come back" >&2
    return 1
}

# The scratch database, with the extension and amcheck, made once.
ensure_db() {
    if ! q postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
        runuser -u postgres -- createdb "$DB"
    fi
    q "$DB" -c 'CREATE EXTENSION IF NOT EXISTS simhash_pg' -c 'CREATE EXTENSION IF NOT EXISTS amcheck'
    q "$DB" -c 'ALTER EXTENSION simhash_pg UPDATE' 2>/dev/null || true
}

# The query that runs bt_index_check with heapallindexed on every B-tree index of a table and
# says 'ok N indexes': for the scripts that run it on a server of their own.
amcheck_sql() {
    echo "SELECT 'ok ' || count(bt_index_check(i.indexrelid, true)) || ' indexes' FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
           WHERE i.indrelid = '$1'::regclass AND a.amname = 'btree'"
}

# The same on the scratch database of the local cluster.
check_indexes() {
    q "$DB" -c "$(amcheck_sql "$1")"
}

# One line per check, counted: check NAME EXPECTED ACTUAL.
failures=0
check() {
    if [ "$2" = "$3" ]; then echo "  ok   $1: $3"; else echo "  FAIL $1: expected '$2', got '$3'"; failures=$((failures + 1)); fi
}

# The last line: verdict NAME prints 'NAME: PASS', or 'NAME: FAIL (n)' and exits 1.
verdict() {
    if [ "$failures" -eq 0 ]; then echo "$1: PASS"; else echo "$1: FAIL ($failures)"; exit 1; fi
}

# Index answers against brute force for N queries drawn from the table (half of them moved a
# few bits): prints 'queries Q, mismatches M, rows R'.
check_exact() {
    local table=$1 n=$2 k=${3:-3}
    q "$DB" -c "SET max_parallel_workers_per_gather = 2" -c "
        WITH qs AS (
            SELECT CASE WHEN g % 2 = 0 THEN fp ELSE (fp::int8 # (1::int8 << (g % 61)::int4) # (1::int8 << ((g * 7) % 63)::int4))::simhash64 END AS fp
              FROM (SELECT fp, row_number() OVER () AS g FROM $table TABLESAMPLE SYSTEM (1) WHERE fp IS NOT NULL LIMIT $n) s),
        answers AS (
            SELECT ARRAY(SELECT ctid FROM $table t WHERE simhash_near(t.fp, qs.fp, $k) ORDER BY ctid) AS by_index,
                   ARRAY(SELECT ctid FROM $table t WHERE hamming_distance(t.fp, qs.fp) + 0 <= $k ORDER BY ctid) AS brute
              FROM qs)
        SELECT format('queries %s, mismatches %s, rows %s', count(*), count(*) FILTER (WHERE by_index <> brute),
                      sum(cardinality(brute))) FROM answers"
}
