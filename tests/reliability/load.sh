#!/usr/bin/env bash
# Load: pgbench, 8 clients for 5 minutes, prepared statements, mixing inserts of new
# fingerprints (random ones and near-copies of existing ones), updates that move a fingerprint
# to another block, and near lookups at k = 3 and k = 7, on a table of 1M rows with covering
# block indexes. Passes when pgbench reports no failed transaction and no aborted client, every
# block index passes amcheck (bt_index_check with heapallindexed), and afterwards the index
# answers equal brute force for 1000 queries at k = 3 and at k = 7.
#
#   bash tests/reliability/load.sh [SECONDS] [CLIENTS] [ROWS]     # default 300 8 1000000
set -euo pipefail
cd "$(dirname "$0")"
source ./common.sh
SECONDS_LOAD=${1:-300}
CLIENTS=${2:-8}
ROWS=${3:-1000000}
WORK=${TMPDIR:-/tmp}/simhash_pg-load
rm -rf "$WORK"; install -d -o postgres "$WORK"

ensure_db
echo "== table of $ROWS rows with covering block indexes (max_k 3, 4 blocks)"
q "$DB" -c "DROP TABLE IF EXISTS load_docs" \
        -c "CREATE TABLE load_docs (id bigserial PRIMARY KEY, fp simhash64, note text)" \
        -c "INSERT INTO load_docs (fp, note) SELECT hashint8extended(g, 42)::simhash64, 'seed' FROM generate_series(1, $ROWS) g" \
        -c "SET client_min_messages = warning" -c "SELECT simhash_create_index('load_docs', 'fp')" \
        -c "VACUUM ANALYZE load_docs"

# Weights: 40 % inserts (half near-copies), 10 % updates, 50 % lookups.
cat >"$WORK/insert.sql" <<'SQL'
\set r random(1, 1000000000)
INSERT INTO load_docs (fp, note) VALUES (hashint8extended(:r, 7)::simhash64, 'new');
SQL
cat >"$WORK/insert_near.sql" <<'SQL'
\set base random(1, 1000000)
\set bit random(0, 62)
INSERT INTO load_docs (fp, note)
SELECT (fp::int8 # (1::int8 << :bit))::simhash64, 'near' FROM load_docs WHERE id = :base;
SQL
cat >"$WORK/update.sql" <<'SQL'
\set id random(1, 1000000)
\set r random(1, 1000000000)
UPDATE load_docs SET fp = hashint8extended(:r, 9)::simhash64, note = 'moved' WHERE id = :id;
SQL
cat >"$WORK/near3.sql" <<'SQL'
\set id random(1, 1000000)
SELECT count(*) FROM load_docs WHERE simhash_near(fp, (SELECT fp FROM load_docs WHERE id = :id), 3);
SQL
cat >"$WORK/near7.sql" <<'SQL'
\set r random(1, 1000000)
SELECT count(*) FROM load_docs WHERE simhash_near(fp, hashint8extended(:r, 42)::simhash64, 7);
SQL
chown postgres "$WORK"/*.sql

echo "== pgbench: $CLIENTS clients, $SECONDS_LOAD s"
status=0
runuser -u postgres -- "$PG_BIN/pgbench" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_LOAD" -P 60 \
    -f "$WORK/insert.sql@20" -f "$WORK/insert_near.sql@20" -f "$WORK/update.sql@10" \
    -f "$WORK/near3.sql@35" -f "$WORK/near7.sql@15" "$DB" >"$WORK/pgbench.log" 2>&1 || status=$?
grep -E 'progress|number of (transactions|failed)|tps|latency average|aborted|ERROR' "$WORK/pgbench.log" | head -40
grep -E '^ *- [0-9]|SQL script [0-9]|weight' "$WORK/pgbench.log" | head -20
failed=$(grep -oE 'number of failed transactions: [0-9]+' "$WORK/pgbench.log" | head -1 | grep -oE '[0-9]+$' || echo 0)
echo "pgbench exit status $status, failed transactions $failed"

echo "== after the load"
q "$DB" -c "SELECT format('rows %s (seed %s, new %s, near %s, moved %s)', count(*), count(*) FILTER (WHERE note = 'seed'),
              count(*) FILTER (WHERE note = 'new'), count(*) FILTER (WHERE note = 'near'), count(*) FILTER (WHERE note = 'moved'))
              FROM load_docs"
amcheck=$(check_indexes load_docs) || amcheck="amcheck FAILED"
echo "amcheck: $amcheck"
exact3=$(check_exact load_docs 1000 3)
exact7=$(check_exact load_docs 1000 7)
echo "k=3: $exact3"
echo "k=7: $exact7"
if [ "$status" -eq 0 ] && [ "$failed" = 0 ] && [[ $amcheck == ok* ]] && [[ $exact3 == *"mismatches 0,"* ]] && [[ $exact7 == *"mismatches 0,"* ]]; then
    echo "PASS"
else
    echo "FAIL"; exit 1
fi
