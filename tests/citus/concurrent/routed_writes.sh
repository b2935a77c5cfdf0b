#!/usr/bin/env bash
# Routed lookups under concurrent writes (docs/citus.md, "Routed lookups"), on the Citus cluster
# of stage 7: usage routed_writes.sh PG_BIN SOCKET_DIR PORT DB. Four clients for 15 s each insert
# rows through the view and at once look up the row each inserted, through the routes (k = 0,
# by fingerprint): every row committed before its lookup started must be found (a miss divides
# by zero, which aborts the client and fails pgbench). Two more clients look up rows loaded
# before. Afterwards every row has its four routes and lookups equal brute force on a copy.
set -euo pipefail
PG_BIN=$1 HOST=$2 PORT=$3 DB=$4
psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PORT" -d "$DB" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

psql <<'SQL'
DROP TABLE IF EXISTS conc_routed CASCADE;
DROP TABLE IF EXISTS conc_routed_fp_routes;
CREATE TABLE conc_routed (id int8 PRIMARY KEY, fp simhash64);
SELECT create_distributed_table('conc_routed', 'id', shard_count => 8);
INSERT INTO conc_routed SELECT g, hashint8extended(g, 7)::simhash64 FROM generate_series(1, 20000) g;
SET client_min_messages = warning;
SELECT simhash_create_index('conc_routed', 'fp', routed => true);
SQL

cat >"$tmp/writer.sql" <<'EOF2'
\set id random(1000000, 9000000000000000)
INSERT INTO conc_routed_inserts (id, fp) VALUES (:id, hashint8extended(:id, 7)::simhash64);
SELECT count(*) AS found FROM conc_routed WHERE simhash_near(fp, hashint8extended(:id, 7)::simhash64, 0) AND id = :id \gset
\if :found = 0
SELECT 1 / 0 AS missed_a_committed_row;
\endif
EOF2
cat >"$tmp/reader.sql" <<'EOF2'
\set id random(1, 20000)
SELECT count(*) AS found FROM conc_routed WHERE simhash_near(fp, hashint8extended(:id, 7)::simhash64, 3) AND id = :id \gset
\if :found = 0
SELECT 1 / 0 AS missed_a_loaded_row;
\endif
EOF2
"$PG_BIN/pgbench" -n -M prepared -c 4 -j 2 -T 15 -h "$HOST" -p "$PORT" -f "$tmp/writer.sql" "$DB" >"$tmp/writers.log" 2>&1 &
writers=$!
"$PG_BIN/pgbench" -n -M prepared -c 2 -j 1 -T 15 -h "$HOST" -p "$PORT" -f "$tmp/reader.sql" "$DB" >"$tmp/readers.log" 2>&1 &
readers=$!
status=0
wait "$writers" || { echo "writers failed:"; cat "$tmp/writers.log"; status=1; }
wait "$readers" || { echo "readers failed:"; cat "$tmp/readers.log"; status=1; }
grep -h "number of transactions actually processed\|number of failed" "$tmp/writers.log" "$tmp/readers.log" || true

psql -At <<'SQL' >"$tmp/check.out"
CREATE TEMP TABLE copy_rows AS SELECT id, fp FROM conc_routed;
CREATE TEMP TABLE copy_routes AS SELECT key, fp FROM conc_routed_fp_routes;
SELECT 'rows without their 4 routes: ' || count(*) FROM copy_rows d
 WHERE (SELECT count(*) FROM copy_routes r WHERE r.key = d.id AND r.fp = d.fp) <> 4;
CREATE FUNCTION pg_temp.unlike_brute_force() RETURNS int8 LANGUAGE plpgsql AS $f$
DECLARE
    q record;
    got int8[];
    bad int8 := 0;
BEGIN
    FOR q IN SELECT id, fp FROM copy_rows ORDER BY id DESC LIMIT 50 LOOP
        EXECUTE format('SELECT array_agg(id ORDER BY id) FROM conc_routed WHERE simhash_near(fp, %L, 3)', q.fp) INTO got;
        IF got IS DISTINCT FROM (SELECT array_agg(c.id ORDER BY c.id) FROM copy_rows c WHERE hamming_distance(c.fp, q.fp) + 0 <= 3) THEN
            bad := bad + 1;
        END IF;
    END LOOP;
    RETURN bad;
END
$f$;
SELECT 'lookups unlike brute force: ' || pg_temp.unlike_brute_force();
SET client_min_messages = warning;
SELECT simhash_drop_index('conc_routed', 'fp');
DROP TABLE conc_routed;
SQL
cat "$tmp/check.out"
grep -q "rows without their 4 routes: 0" "$tmp/check.out" || status=1
grep -q "lookups unlike brute force: 0" "$tmp/check.out" || status=1
exit $status
