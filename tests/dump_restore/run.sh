#!/usr/bin/env bash
# pg_dump / pg_restore of a database with simhash64 columns, block columns and their indexes:
# builds one (setup.sql), dumps it in the custom format, restores it into a fresh database with
# --exit-on-error, and runs queries.sql on both. Passes when the restore raised no error, the
# two outputs are equal, and the restored plans use the block indexes. Run as the postgres user
# against the local server, with the extension installed. Prints PASS or FAIL and the diff.
set -euo pipefail
cd "$(dirname "$0")"
OUT=${1:-${TMPDIR:-/tmp}/simhash_pg-dump}
SRC=simhash_dump_src
DST=simhash_dump_dst
mkdir -p "$OUT"
psql_run() { psql -X -q -v ON_ERROR_STOP=1 -d "$1" -f "$2"; }

dropdb --if-exists "$SRC" 2>/dev/null
dropdb --if-exists "$DST" 2>/dev/null
createdb "$SRC"
psql_run "$SRC" setup.sql >"$OUT/setup.out" 2>&1 || { echo "FAIL: setup.sql"; tail -5 "$OUT/setup.out"; exit 1; }
pg_dump -Fc -d "$SRC" -f "$OUT/dump.pgc"
createdb "$DST"
if ! pg_restore --exit-on-error -d "$DST" "$OUT/dump.pgc" >"$OUT/restore.log" 2>&1; then
    echo "FAIL: pg_restore"; cat "$OUT/restore.log"; exit 1
fi
psql_run "$SRC" queries.sql >"$OUT/original.out" 2>&1 || { echo "FAIL: queries.sql on the original"; tail -5 "$OUT/original.out"; exit 1; }
psql_run "$DST" queries.sql >"$OUT/restored.out" 2>&1 || { echo "FAIL: queries.sql on the restored copy"; tail -5 "$OUT/restored.out"; exit 1; }
status=0
if ! diff -u "$OUT/original.out" "$OUT/restored.out"; then
    echo "FAIL: the restored database answers differently"; status=1
fi
for plan in '_simhash_index_probe' 'Bitmap Index Scan on fps_plain_fp_block0of4_idx' 'Tid Scan on parted_low'; do
    if ! grep -q "$plan" "$OUT/restored.out"; then
        echo "FAIL: no '$plan' in the restored plans"; status=1
    fi
done
bad='^ +[0-9]+ \| f +\||ERROR'  # a 'same_as_brute_force' of false, or an error
if grep -qE "$bad" "$OUT/restored.out"; then
    echo "FAIL: a brute-force check failed or a query raised an error"; grep -nE "$bad" "$OUT/restored.out"; status=1
fi
dropdb "$DST"
dropdb "$SRC"
[ "$status" -eq 0 ] && echo "PASS: dump and restore ($(grep -c . "$OUT/restored.out") lines of answers equal)"
exit $status
