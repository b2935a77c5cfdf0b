# Shared by .ci/test and .ci/matrix (sourced, not run): progress messages, throwaway PostgreSQL
# clusters, and pg_regress-style suites with pass/fail counts. Callers set ROOT (the checkout),
# WORK (scratch folders the postgres user owns) and LOGS, and run as root.

passed=${passed:-0}
failed=${failed:-0}
# What failed, by name, for the summary line: CI shows only part of a long log.
failures=${failures:-}
note_failure() { failures="$failures${failures:+, }$*"; }
fail_one() { failed=$((failed + 1)); note_failure "$*"; }
# What did not run, and why, for the summary: only for want of other projects' sources offline.
skips=${skips:-}
skip_one() { skips="$skips${skips:+; }$*"; echo "skipped: $*"; }

# vendor_build NAME STAGE: builds and installs pgvector or citus (.ci/vendor-extension) into
# PostgreSQL 15. Returns 0 when it is there; otherwise counts a failure, or, when no source
# could be had (no ../shared/vendor, offline), a skip of STAGE, and returns 1.
vendor_build() {
    local name=$1 stage=$2 status=0
    bash .ci/vendor-extension "$name" /usr/bin/pg_config >"$LOGS/vendor-$name.log" 2>&1 || status=$?
    if [ "$status" -eq 0 ]; then
        tail -1 "$LOGS/vendor-$name.log"
        return 0
    fi
    if [ "$status" -eq 3 ]; then
        skip_one "$stage: $(tail -1 "$LOGS/vendor-$name.log")"
    else
        tail -20 "$LOGS/vendor-$name.log"
        fail_one "$stage: building $name"
    fi
    return 1
}

say() { printf '\n==> %s\n' "$*"; }

# Adds one check's outcome to the counts: pass when the command given succeeds.
count_check() {
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); note_failure "$*"; fi
}

# What pg_regress needs for the SQL regression suite (tests/pg_regress): the extension created
# in the database it makes. Each test is self-contained beyond that (helpers it includes).
REGRESS_EXTENSION=--load-extension=simhash_pg

# install_released_scripts PG_CONFIG: the install scripts of released versions (tests/upgrade),
# which the update test (upgrade.sql) creates the extension from, into that server.
install_released_scripts() {
    install -m 644 "$ROOT"/tests/upgrade/simhash_pg--*.sql "$("$1" --sharedir)/extension/"
}

# scratch_start NAME BINDIR PORT [SETTING...]: a new cluster of BINDIR's server in $WORK/NAME,
# run as postgres on PORT with its socket in $WORK/NAME (no TCP), each SETTING a
# postgresql.conf line. Any earlier cluster of that name is stopped and removed first.
scratch_start() {
    local name=$1 bindir=$2 port=$3 dir=$WORK/$1
    shift 3
    scratch_stop "$name" "$bindir"
    rm -rf "$dir"
    install -d -o postgres -g postgres "$dir"
    runuser -u postgres -- "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
        >"$LOGS/$name-initdb.log" 2>&1
    printf '%s\n' "port = $port" "listen_addresses = ''" "unix_socket_directories = '$dir'" "$@" \
        >>"$dir/data/postgresql.conf"
    # RUST_BACKTRACE in the environment would add Rust backtraces to the DETAIL of errors (the
    # library now keeps them out, issue 67; SCRATCH_ENV="RUST_BACKTRACE=1" tests that it does).
    # shellcheck disable=SC2086
    runuser -u postgres -- env -u RUST_BACKTRACE ${SCRATCH_ENV:-} "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start \
        >/dev/null || { tail -20 "$dir/server.log"; return 1; }
}

# scratch_stop NAME BINDIR: stops cluster NAME when it runs.
scratch_stop() {
    local dir=$WORK/$1
    if [ -f "$dir/data/postmaster.pid" ]; then
        runuser -u postgres -- "$2/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
}

# scratch_psql NAME PORT [psql args...]: psql as postgres on cluster NAME.
scratch_psql() {
    local dir=$WORK/$1 port=$2
    shift 2
    runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" "$@"
}

# run_suite LABEL SUITE RUNNER BINDIR [RUNNER OPTION...]: runs the pg_regress-style suite in
# tests/SUITE (sql/ or specs/, and expected/) as postgres in $WORK/LABEL with RUNNER (pg_regress
# or pg_isolation_regress) of the server in BINDIR, and adds its tests to the counts; prints the
# diffs of failures, keeps the log as $LOGS/LABEL.log. A suite's setup test, where it has one
# (Citus: the cluster; ecosystem: shared helpers), runs first, the rest in name order; tests run
# in the suite's scratch folder, from which they may include files under sql/. Returns non-zero
# when a test failed.
run_suite() {
    local label=$1 suite=$2 runner=$3 bindir=$4 dir=$WORK/$1 inputs=sql names=() total bad
    shift 4
    [ -d "$ROOT/tests/$suite/specs" ] && inputs=specs
    rm -rf "$dir"
    install -d -o postgres -g postgres "$dir"
    cp -r "$ROOT/tests/$suite/$inputs" "$ROOT/tests/$suite/expected" "$dir/"
    chown -R postgres:postgres "$dir"
    [ -f "$ROOT/tests/$suite/$inputs/setup.sql" ] && names+=(setup)
    for f in "$ROOT"/tests/"$suite"/"$inputs"/*.sql "$ROOT"/tests/"$suite"/"$inputs"/*.spec; do
        [ -f "$f" ] || continue
        f=$(basename "$f")
        f=${f%.*}
        [ "$f" = setup ] || names+=("$f")
    done
    (cd "$dir" && runuser -u postgres -- "$runner" --bindir="$bindir" --inputdir=. --outputdir=. \
        "$@" "${names[@]}") >"$LOGS/$label.log" 2>&1 || true
    tail -3 "$LOGS/$label.log"
    total=${#names[@]}
    if grep -qE 'All [0-9]+ tests passed' "$LOGS/$label.log"; then
        passed=$((passed + total))
        return 0
    fi
    bad=$(grep -oE '[0-9]+ of [0-9]+ tests failed' "$LOGS/$label.log" | awk '{print $1}')
    bad=${bad:-$total}
    passed=$((passed + total - bad)) failed=$((failed + bad))
    note_failure "$label: $(grep -E '^not ok|FAILED|failed \(' "$LOGS/$label.log" | grep -oE '[a-z_0-9]+ +[0-9]+ ms|[a-z_0-9]+ +\.\.\. FAILED' | awk '{print $1}' | tr '\n' ' ')"
    if [ -f "$dir/regression.diffs" ]; then
        cp "$dir/regression.diffs" "$LOGS/$label.diffs"
        head -c 20000 "$dir/regression.diffs"
    else
        tail -20 "$LOGS/$label.log"
    fi
    return 1
}

# regress_database NAME PORT DB: a fresh database DB on cluster NAME set up as pg_regress sets
# up its own (C messages and formats), for runs with --use-existing that need something in
# the database before the suite starts.
regress_database() {
    local name=$1 port=$2 db=$3 setting
    scratch_psql "$name" "$port" -d postgres -c "DROP DATABASE IF EXISTS \"$db\"" \
        -c "CREATE DATABASE \"$db\" TEMPLATE template0"
    for setting in "lc_messages TO 'C'" "lc_monetary TO 'C'" "lc_numeric TO 'C'" "lc_time TO 'C'" \
        "bytea_output TO 'hex'" "timezone_abbreviations TO 'Default'"; do
        scratch_psql "$name" "$port" -d postgres -c "ALTER DATABASE \"$db\" SET $setting"
    done
}

# unlink_installed_library PG_CONFIG: removes the installed simhash_pg.so before a new one is
# written. cargo pgrx install and test overwrite the file in place, which changes the pages of
# every running backend that has it mapped (a session of another database died with SIGSEGV
# and the server restarted, issue 51); once unlinked, those keep the old file, and the new one is
# a new file that new sessions load.
unlink_installed_library() {
    rm -f "$("$1" --pkglibdir)/simhash_pg.so"
}

# psycopg_venv: $WORK/venv-hostile, a venv of Debian's Python with psycopg, made once; for the
# Python test drivers (the hostile tests, the Citus invariant).
psycopg_venv() {
    local venv=$WORK/venv-hostile
    if ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    fi
    [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q 'psycopg[binary]==3.3.9'
}

# query_shapes NAME BINDIR PORT CASES [SECONDS]: generated queries run with and without the extension's
# planner rewrites as a role with SELECT only (tests/hostile/query_shapes.py), on a new cluster
# NAME of the server in BINDIR preloading the library, under the same 4 GB address-space limit;
# counts one check, which fails on any difference, XX000 or server restart (issue 63). The seed
# is fixed (SIMHASH_SHAPES_SEED, default 1), so a failure replays with --replay N.
query_shapes() {
    local name=$1 bindir=$2 port=$3 cases=$4 seconds=${5:-900} venv=$WORK/venv-hostile
    psycopg_venv || { fail_one "$name: installing psycopg"; return; }
    # With RUST_BACKTRACE set, as some servers run: no error may carry a Rust backtrace.
    if ! (ulimit -v 4194304 && SCRATCH_ENV="RUST_BACKTRACE=1" scratch_start "$name" "$bindir" "$port" "shared_preload_libraries = 'simhash_pg'"); then
        fail_one "$name: server start"
        return
    fi
    runuser -u postgres -- "$bindir/createdb" -h "$WORK/$name" -p "$port" simhash_shapes
    shapes() {
        "$venv/bin/python" tests/hostile/query_shapes.py --dsn "host=$WORK/$name port=$port dbname=simhash_shapes user=postgres" \
            --cases "$cases" --seed "${SIMHASH_SHAPES_SEED:-1}" --seconds "$seconds" --log "$LOGS/$name-cases.log" 2>&1 | tee "$LOGS/$name.log"
        grep -q '^query_shapes: PASS' "$LOGS/$name.log"
    }
    count_check shapes
    scratch_stop "$name" "$bindir"
}

# hostile_calls NAME BINDIR PORT: every function of the extension called with extreme arguments
# as a role without privileges (tests/hostile/every_function.py), on a new cluster NAME of the
# server in BINDIR preloading the library, under a 4 GB address-space limit (an allocation a
# caller sizes then fails at once instead of swapping); counts one check, which fails on any
# server restart, internal error or hang (issue 51). Needs psycopg: a venv of Debian's Python.
hostile_calls() {
    local name=$1 bindir=$2 port=$3 venv=$WORK/venv-hostile
    psycopg_venv || { fail_one "$name: installing psycopg"; return; }
    # The postmaster and every backend inherit the limit.
    if ! (ulimit -v 4194304 && scratch_start "$name" "$bindir" "$port" "shared_preload_libraries = 'simhash_pg'"); then
        fail_one "$name: server start"
        return
    fi
    runuser -u postgres -- "$bindir/createdb" -h "$WORK/$name" -p "$port" simhash_hostile
    every_function() {
        "$venv/bin/python" tests/hostile/every_function.py --dsn "host=$WORK/$name port=$port dbname=simhash_hostile user=postgres" \
            --seconds "${SIMHASH_HOSTILE_SECONDS:-60}" --log "$LOGS/$name-calls.log" 2>&1 | tee "$LOGS/$name.log" | grep -v '^  not called'
        grep -q '^every_function: PASS' "$LOGS/$name.log"
    }
    count_check every_function
    scratch_stop "$name" "$bindir"
}
