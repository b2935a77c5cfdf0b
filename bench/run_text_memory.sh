#!/usr/bin/env bash
# Peak memory and time of the text functions on long texts (bench/text_memory.py), for one or
# more builds of the extension side by side in the same session, as root after .ci/setup: each
# BUILD (a simhash_pg.so; default: the release build of this checkout) is installed in turn into
# the local PostgreSQL 15's library folder (a new file renamed over the old), and a scratch
# cluster on port 5496 without preloading loads it in each new connection. Texts: 3.3 MB and
# 9.9 MB of md5 hex words (a feature per character with chars 8-grams), 3.3 MB of English-like
# words. Prints Markdown rows for BENCHMARKS.md. The installed library is put back at the end.
#   bash bench/run_text_memory.sh [LABEL=/path/to/simhash_pg.so ...]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${TMPDIR:-/tmp}/simhash_pg-bench
LOGS=$ROOT/bench/results
PG_BIN=/usr/lib/postgresql/15/bin
export PATH="$HOME/.cargo/bin:$PATH"
# shellcheck source=.ci/lib.sh
source .ci/lib.sh
mkdir -p "$LOGS"
install -d -o postgres -g postgres "$WORK"
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/pip install -q -r bench/requirements.txt
lib=$(pg_config --pkglibdir)/simhash_pg.so
if [ $# -eq 0 ]; then
    cargo pgrx install --release --pg-config /usr/bin/pg_config >"$LOGS/text_memory-install.log" 2>&1
    set -- "this checkout=$lib"
fi
saved=$(mktemp)
cp "$lib" "$saved"
trap 'install -m 755 "$saved" "$lib.new" && mv "$lib.new" "$lib"; rm -f "$saved"' EXIT
scratch_start mem "$PG_BIN" 5496 >/dev/null
dsn="host=$WORK/mem port=5496 dbname=bench user=postgres"
scratch_psql mem 5496 -d postgres -c 'CREATE DATABASE bench'
scratch_psql mem 5496 -d bench -c 'CREATE EXTENSION simhash_pg' -c "
    CREATE TABLE texts (id int PRIMARY KEY, name text, t text);
    INSERT INTO texts SELECT 1, 'md5 words', string_agg(md5(g::text), ' ') FROM generate_series(1, 100000) g;
    INSERT INTO texts SELECT 2, 'md5 words', string_agg(md5(g::text), ' ') FROM generate_series(1, 300000) g;
    INSERT INTO texts SELECT 3, 'English-like words', string_agg(
        (ARRAY['the','near','copy','of','a','page','with','words','that','repeat','often','and','some','rare'])[1 + (g::int8 * 7919) % 14]
        || CASE WHEN g % 5 = 0 THEN (g % 20011)::text ELSE '' END, ' ') FROM generate_series(1, 550000) g;"
echo "| build | call | text | MB | peak growth (MB) | seconds | outcome |"
echo "|---|---|---|---|---|---|---|"
for build in "$@"; do
    label=${build%%=*} so=${build#*=}
    [ "$so" -ef "$lib" ] || { install -m 755 "$so" "$lib.new" && mv "$lib.new" "$lib"; }
    bench/.venv/bin/python bench/text_memory.py --dsn "$dsn" --label "$label" --rounds "${ROUNDS:-3}"
done
scratch_stop mem "$PG_BIN"
