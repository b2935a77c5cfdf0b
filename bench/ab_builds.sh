#!/usr/bin/env bash
# Times builds of the extension side by side, as root, on the local PostgreSQL 15: each given
# simhash_pg.so is installed over the installed one in turn (a new file, so that a backend that
# has the old one mapped keeps it; each pgbench run is a new connection and loads the new), and
# pgbench -M prepared, one client, runs the primary-key lookup and simhash_near at each k of KS
# (default "3 7") on
# TABLE (id int8 PRIMARY KEY, fp simhash64, block-indexed; bench/planted.py makes such tables)
# for SECONDS each; ROUNDS interleaved rounds. Prints "round build query mean_ms" lines. The
# installed build is put back at the end; naming the installed file itself times it as it is.
# Example:
#   bash bench/ab_builds.sh simhash_lookup layouts_10000000_permuted 3 6 /tmp/old.so /tmp/new.so
set -euo pipefail
db=$1 table=$2 rounds=$3 seconds=$4
shift 4
lib=$(pg_config --pkglibdir)/simhash_pg.so
saved=$(mktemp)
cp "$lib" "$saved"
dir=$(mktemp -d)
trap 'install -m 755 "$saved" "$lib"; rm -f "$saved" "$dir"/*.sql; rmdir "$dir"' EXIT
rows=$(psql -X -Atc "SELECT max(id) FROM $table" "$db")
printf '\\set id random(1, %s)\nSELECT id, fp FROM %s WHERE id = :id;\n' "$rows" "$table" > "$dir/pk.sql"
ks=${KS:-3 7}
for k in $ks; do
    printf '\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\nSELECT id FROM %s WHERE simhash_near(fp, :q::int8::simhash64, %s);\n' "$table" "$k" > "$dir/near$k.sql"
done
for round in $(seq "$rounds"); do
    for build in "$@"; do
        [ "$build" -ef "$lib" ] || install -m 755 "$build" "$lib"
        for query in pk $(printf 'near%s ' $ks); do
            mean=$(pgbench -n -M prepared -T "$seconds" -f "$dir/$query.sql" "$db" 2>&1 | awk '/latency average/ {print $4}')
            echo "$round $(basename "$build") $query $mean"
        done
    done
done
