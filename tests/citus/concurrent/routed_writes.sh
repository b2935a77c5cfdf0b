#!/usr/bin/env bash
# Routed lookups under concurrent writes (docs/citus.md, "Routed lookups"), on the Citus cluster
# of stage 7: usage routed_writes.sh PG_BIN SOCKET_DIR PORT DB. For 15 s: two clients insert rows
# through the view, two insert them into the table itself, two change the fingerprints of rows
# of their own (UPDATE on the table), and each at once looks up the row it wrote, through the
# routes (k = 0, by fingerprint): every row committed before its lookup started must be found (a
# miss divides by zero, which aborts the client and fails pgbench). Two more clients look up rows
# loaded before. Afterwards every row has its four routes, no route names a row that is not
# there, and lookups equal brute force on a copy.
set -euo pipefail
PG_BIN=$1 HOST=$2 PORT=$3 DB=$4
psql() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PORT" -d "$DB" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Writes on the table itself need simhash_pg loaded before the session's first statement
# (docs/citus.md): the clusters here preload Citus only, so the clients ask for it.
export PGOPTIONS="${PGOPTIONS:-} -c session_preload_libraries=simhash_pg"

psql <<'SQL'
DROP TABLE IF EXISTS conc_routed CASCADE;
DROP TABLE IF EXISTS conc_routed_fp_routes, conc_routed_fp_changes;
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
cat >"$tmp/direct.sql" <<'EOF2'
\set id random(1000000, 9000000000000000)
INSERT INTO conc_routed (id, fp) VALUES (:id, hashint8extended(:id, 7)::simhash64);
SELECT count(*) AS found FROM conc_routed WHERE simhash_near(fp, hashint8extended(:id, 7)::simhash64, 0) AND id = :id \gset
\if :found = 0
SELECT 1 / 0 AS missed_a_committed_row;
\endif
EOF2
# Each updater changes rows of its own (10001 + 2000 * client_id onwards), so that the fingerprint it
# looks up is the row's last.
cat >"$tmp/updater.sql" <<'EOF2'
\set id 10001 + 2000 * :client_id + random(0, 1999)
\set salt random(1, 1000000000)
UPDATE conc_routed SET fp = hashint8extended(:id, :salt)::simhash64 WHERE id = :id;
SELECT count(*) AS found FROM conc_routed WHERE simhash_near(fp, hashint8extended(:id, :salt)::simhash64, 0) AND id = :id \gset
\if :found = 0
SELECT 1 / 0 AS missed_an_updated_row;
\endif
EOF2
cat >"$tmp/reader.sql" <<'EOF2'
\set id random(1, 10000)
SELECT count(*) AS found FROM conc_routed WHERE simhash_near(fp, hashint8extended(:id, 7)::simhash64, 3) AND id = :id \gset
\if :found = 0
SELECT 1 / 0 AS missed_a_loaded_row;
\endif
EOF2
"$PG_BIN/pgbench" -n -M prepared -c 2 -j 1 -T 15 -h "$HOST" -p "$PORT" -f "$tmp/writer.sql" "$DB" >"$tmp/writers.log" 2>&1 &
writers=$!
"$PG_BIN/pgbench" -n -M prepared -c 2 -j 1 -T 15 -h "$HOST" -p "$PORT" -f "$tmp/direct.sql" "$DB" >"$tmp/direct.log" 2>&1 &
direct=$!
"$PG_BIN/pgbench" -n -M prepared -c 2 -j 1 -T 15 -h "$HOST" -p "$PORT" -f "$tmp/updater.sql" "$DB" >"$tmp/updaters.log" 2>&1 &
updaters=$!
"$PG_BIN/pgbench" -n -M prepared -c 2 -j 1 -T 15 -h "$HOST" -p "$PORT" -f "$tmp/reader.sql" "$DB" >"$tmp/readers.log" 2>&1 &
readers=$!
status=0
wait "$writers" || { echo "writers failed:"; cat "$tmp/writers.log"; status=1; }
wait "$direct" || { echo "direct writers failed:"; cat "$tmp/direct.log"; status=1; }
wait "$updaters" || { echo "updaters failed:"; cat "$tmp/updaters.log"; status=1; }
wait "$readers" || { echo "readers failed:"; cat "$tmp/readers.log"; status=1; }
for log in writers direct updaters readers; do
    echo "$log: $(grep -h "number of transactions actually processed" "$tmp/$log.log" || true)"
done

psql -At <<'SQL' >"$tmp/check.out"
CREATE TEMP TABLE copy_rows AS SELECT id, fp FROM conc_routed;
CREATE TEMP TABLE copy_routes AS SELECT key, fp FROM conc_routed_fp_routes;
SELECT 'rows without their 4 routes: ' || count(*) FROM copy_rows d
 WHERE (SELECT count(*) FROM copy_routes r WHERE r.key = d.id AND r.fp = d.fp) <> 4;
SELECT 'routes without their row: ' || count(*) FROM copy_routes r
 WHERE NOT EXISTS (SELECT FROM copy_rows d WHERE d.id = r.key AND d.fp = r.fp);
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
grep -q "routes without their row: 0" "$tmp/check.out" || status=1
grep -q "lookups unlike brute force: 0" "$tmp/check.out" || status=1
exit $status
