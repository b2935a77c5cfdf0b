#!/usr/bin/env python3
"""Calls every function of simhash_pg, public and plumbing, with extreme arguments, as a role
without privileges, and fails on any server restart.

Any role may EXECUTE the extension's functions, plumbing included, so a call that ends its
backend with an abort (a Rust allocation that fails, a panic that cannot unwind) makes the
postmaster restart every session of the server: a denial of service any role can cause. This
test looks for such calls the way an attacker would: every function of the extension, found in
the catalog by its membership of the extension (pg_depend), called with each argument in turn
set to an extreme value (0, -1, 2^31-1, NULL, NaN, empty and huge arrays, arrays with other
lower bounds or two dimensions, 10^6 elements, texts of a megabyte, hostile options and
markup), then with random mixes of them. It runs the server under an address-space limit
(the caller sets it; .ci/test uses `ulimit -v`), so that an allocation sized by an argument
fails at once instead of swapping.

Fails when:
  - the server restarts (a lost connection, or the checkpointer's start time changes: a crashed
    backend makes the postmaster reinitialize without a new pg_postmaster_start_time());
  - a call with small inputs runs into the statement timeout twice (a loop set by an argument);
  - a call ends in SQLSTATE XX000 (an internal error, such as a Rust panic), which a caller's
    mistake must never give: every bad argument has its own SQLSTATE.
Large inputs may time out (the time is the caller's to limit); those are counted.

    every_function.py --dsn 'host=... port=... dbname=...' [--random-calls 4000] [--seconds 240]
                      [--timeout-ms 15000] [--seed 1] [--log F]

Needs psycopg 3. The DSN names a database with the extension's install script available; the
test creates the extension, the role simhash_fuzz and its tables there. Prints one line per
finding and ends with 'every_function: PASS' or 'every_function: FAIL (...)'.
"""

import argparse
import random
import sys
import time

import psycopg
from psycopg import sql

from server_epoch import server_epoch

ROLE = "simhash_fuzz"

# Values per argument type, as SQL expressions. The first is the usual value the other
# arguments take while one is extreme. Values marked BIG are slow by nature (a megabyte, 10^6
# elements): they are tried one argument at a time only, and may run into the timeout.
BIG = "big"
INTS = ["3", "0", "-1", "1", "2", "16", "17", "63", "64", "65", "1000", "2147483647", "-2147483648", "NULL"]
POOLS = {
    "integer": INTS,
    "smallint": ["3", "0", "-1", "32767", "-32768", "NULL"],
    "bigint": INTS + ["9223372036854775807", "-9223372036854775808"],
    "double precision": [
        "1000", "0", "-1", "1", "0.5", "1e-300", "1e12", "1e308", "-1e308",
        "'NaN'", "'Infinity'", "'-Infinity'", "NULL",
    ],
    "real": ["1000", "0", "-1", "'NaN'", "'Infinity'", "3e38", "NULL"],
    "boolean": ["true", "false", "NULL"],
    "text": [
        "'doc 7 about near duplicates'", "''", "' '", "NULL", "'fp'", "'id'", "'body'", "'auto'", "'sort'",
        "'compare'", "'fuzz.docs'", "'{}'", "'nonexistent'", "'\"; DROP TABLE fuzz.docs; --'",
        "repeat('数据库指纹', 400)", "E'\\u00e9t\\u00e9 caf\\u00e9'", "'a' || repeat(U&'\\FF9E', 5000)",
        ("repeat('数据库指纹', 20000)", BIG), ("'a' || repeat(U&'\\0F73', 3000000)", BIG),
        ("'a' || repeat(U&'\\0301', 3000000)", BIG),
        ("repeat('word ', 200000)", BIG), ("repeat(md5('x'), 30000)", BIG),
        ("repeat('<nav>', 50000) || repeat('<main>m</main>', 50000)", BIG),
        ("repeat('<div>', 100000)", BIG),
        ("(SELECT string_agg(md5(g::text), ' ') FROM generate_series(1, 30000) g)", BIG),
    ],
    "jsonb": [
        "'{}'", "'null'", "'[]'", "'7'", "NULL", "'{\"ngram\": 0}'", "'{\"ngram\": 9}'", "'{\"nope\": 1}'",
        "'{\"tokenizer\": \"chars\", \"ngram\": 8, \"weighting\": \"binary\"}'",
        "'{\"top_k\": 4294967295, \"tokenizer\": \"chars\", \"ngram\": 8}'", "'{\"top_k\": 1}'",
        "'{\"markup\": \"html-main\"}'", "'{\"markup\": \"html\"}'", "'{\"seed\": 18446744073709551615}'",
        "'{\"column\": \"body\"}'", "'{\"column\": \"nonexistent\"}'", "'{\"column\": \"body\", \"min_jaccard\": 2}'",
        "'{\"column\": \"body\", \"options\": {\"ngram\": 8}}'",
        "(repeat('[', 5000) || repeat(']', 5000))::jsonb",
    ],
    "simhash64": [
        "simhash('doc 7 about near duplicates')", "'0000000000000000'", "'ffffffffffffffff'", "'8000000000000000'", "NULL",
    ],
    "simhash64[]": [
        "simhash_set('doc 7 about near duplicates', 4)", "'{}'", "NULL", "'{NULL}'", "'{NULL,NULL,NULL,NULL}'",
        "ARRAY[simhash('a')]", "'[5:6]={0000000000000001,0000000000000002}'",
        "'{{0000000000000001,0000000000000002},{0000000000000003,0000000000000004}}'",
        "array_fill('0000000000000000'::simhash64, ARRAY[17])",
        ("array_fill('0000000000000000'::simhash64, ARRAY[1000000])", BIG),
        ("(SELECT array_agg(((g * 2654435761) # (g << 40))::simhash64) FROM generate_series(1, 1000000) g)", BIG),
    ],
    "bigint[]": [
        "'{1,2,3,4}'", "'{}'", "NULL", "'{NULL}'", "'[3:4]={1,2}'", "'{{1,2},{3,4}}'",
        ("(SELECT array_agg(g) FROM generate_series(1, 1000000) g)", BIG),
    ],
    "integer[]": [
        "'{1,2,3,4}'", "'{}'", "NULL", "'{NULL}'", "'{-1}'", "'{2147483647}'", "'[3:4]={1,2}'",
        ("(SELECT array_agg(1) FROM generate_series(1, 1000000) g)", BIG),
    ],
    "text[]": [
        "'{a,b}'", "'{}'", "NULL", "'{NULL}'", "'{fp,fp}'", "'[2:3]={a,b}'",
        ("(SELECT array_agg(g::text) FROM generate_series(1, 1000000) g)", BIG),
    ],
    "double precision[]": [
        "'{1,2}'", "'{}'", "NULL", "'{NULL}'", "'{NaN,Infinity}'", "'{1e308,1e308}'",
        ("(SELECT array_agg(1e308::float8) FROM generate_series(1, 1000000) g)", BIG),
    ],
    "regclass[]": [
        "ARRAY['fuzz.docs_pkey'::regclass]", "'{}'", "NULL", "'{NULL}'", "ARRAY['fuzz.docs'::regclass, 'fuzz.docs'::regclass]",
        "array_fill('fuzz.docs_pkey'::regclass, ARRAY[64])", "array_fill('fuzz.docs_pkey'::regclass, ARRAY[1025])",
        ("array_fill('fuzz.docs_pkey'::regclass, ARRAY[1000000])", BIG),
    ],
    "regclass": ["'fuzz.docs'", "'fuzz.sets'", "'fuzz.theirs'", "'pg_class'", "'fuzz.docs_pkey'", "NULL", "0"],
    "oid": ["'fuzz.docs'::regclass::oid", "0", "NULL", "4294967295"],
    "name": ["'fp'", "''", "NULL"],
    "cstring": ["'0123456789abcdef'", "''", "'zz'", "NULL", ("repeat('f', 1000000)", BIG)],
    "internal": ["NULL"],
    "anyelement": ["1", "NULL"],
    "anyarray": ["'{1}'::int[]", "NULL"],
    "regtype": ["'int8'", "NULL"],
    "timestamp with time zone": ["now()", "'-infinity'", "'infinity'", "NULL"],
    "anycompatible": ["1", "NULL"],
    "bytea": ["'\\x0102030405060708'", "'\\x'", "NULL"],
    "bit": ["B'1010'", "NULL"],
    "bit varying": ["B'1010'", "NULL"],
}

# How a connection that broke shows itself.
LOST = (psycopg.OperationalError, psycopg.InterfaceError)


def value(v):
    return v if isinstance(v, str) else v[0]


def is_big(v):
    return not isinstance(v, str)


def setup(admin):
    """The installed extension (whatever an earlier run left in this database) and the role."""
    with admin.cursor() as cur:
        cur.execute("DROP SCHEMA IF EXISTS fuzz CASCADE")
        cur.execute("DROP EXTENSION IF EXISTS simhash_pg CASCADE")
        cur.execute("CREATE EXTENSION simhash_pg")
        cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,))
        if not cur.fetchone():
            cur.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(ROLE)))
        return server_epoch(cur)


def reset_tables(admin):
    """The role's tables as new: it owns fuzz.docs and fuzz.sets (so the helpers that build
    indexes or ingest get past their privilege checks), not fuzz.theirs. Made again every few
    functions, so that what earlier calls built or loaded does not slow later ones."""
    with admin.cursor() as cur:
        cur.execute("DROP SCHEMA IF EXISTS fuzz CASCADE")
        cur.execute(sql.SQL("CREATE SCHEMA fuzz AUTHORIZATION {}").format(sql.Identifier(ROLE)))
        cur.execute("""CREATE TABLE fuzz.theirs (id int8 PRIMARY KEY, body text, fp simhash64)""")
        cur.execute("""INSERT INTO fuzz.theirs SELECT g, 'doc ' || g, simhash('doc ' || g) FROM generate_series(1, 50) g""")
        cur.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(ROLE)))
        cur.execute("""CREATE TABLE fuzz.docs (id int8 PRIMARY KEY, body text,
                        fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)""")
        cur.execute("""INSERT INTO fuzz.docs (id, body) SELECT g, 'doc ' || (g % 150) || ' about near duplicates'
                        FROM generate_series(1, 300) g""")
        cur.execute("""CREATE TABLE fuzz.sets (id int8 PRIMARY KEY, body text,
                        fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 4)) STORED)""")
        cur.execute("""INSERT INTO fuzz.sets (id, body) SELECT g, 'short ' || (g % 90) FROM generate_series(1, 200) g""")
        cur.execute("SELECT simhash_create_index('fuzz.docs', 'fp')")
        cur.execute("RESET ROLE")


def functions(conn):
    """Every function of the extension: (signature, call prefix, argument types, set-returning,
    kind, return type)."""
    with conn.cursor() as cur:
        cur.execute("""
            SELECT p.oid::regprocedure::text, quote_ident(n.nspname) || '.' || quote_ident(p.proname),
                   array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) t),
                   p.proretset, p.prokind, format_type(p.prorettype, NULL)
              FROM pg_proc p
              JOIN pg_namespace n ON n.oid = p.pronamespace
              JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
              JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'simhash_pg'
             ORDER BY 1""")
        return cur.fetchall()


def statement(fn, types, args, setof, kind):
    exprs = ", ".join(f"({value(a)})::{t}" for a, t in zip(args, types))
    if kind == "p":
        return f"CALL {fn}({exprs})"
    if setof:
        return f"SELECT count(*) FROM (SELECT {fn}({exprs})) s"
    return f"SELECT {fn}({exprs}) IS NULL"


def calls(rng, sig_types, budget_random):
    """The argument lists to try: the usual values, each argument in turn at each of its
    values, then random mixes of small values."""
    pools = [POOLS.get(t) for t in sig_types]
    if any(p is None for p in pools):
        return None
    usual = [p[0] for p in pools]
    out = [list(usual)]
    for i, pool in enumerate(pools):
        for v in pool[1:]:
            args = list(usual)
            args[i] = v
            out.append(args)
    small = [[v for v in p if not is_big(v)] for p in pools]
    for _ in range(budget_random if pools else 0):
        out.append([rng.choice(p) for p in small])
    return out


class Runner:
    def __init__(self, dsn, timeout_ms, log):
        self.dsn, self.timeout_ms, self.log = dsn, timeout_ms, log
        self.conn = None
        self.connect()

    def connect(self):
        for attempt in range(240):
            try:
                self.conn = psycopg.connect(self.dsn, user=ROLE, autocommit=True)
                with self.conn.cursor() as cur:
                    cur.execute(f"SET statement_timeout = {self.timeout_ms}")
                    cur.execute("SET client_min_messages = error")
                    cur.execute("SET search_path = public, fuzz")
                return
            except LOST:
                time.sleep(0.5)
        raise SystemExit("every_function: the server did not come back")

    def run(self, stmt):
        """'ok', ('error', sqlstate, message), 'timeout' or 'lost', with the seconds taken."""
        started = time.monotonic()
        try:
            with self.conn.cursor() as cur:
                cur.execute(stmt)
                cur.fetchall()
            outcome = "ok"
        except psycopg.errors.QueryCanceled:
            outcome = "timeout"
        except LOST as e:
            # psycopg raises SQLSTATE classes 53 and 54 (out of memory, program limit exceeded)
            # as OperationalError too: an ERROR the server sent on a connection that still
            # works is an error, not a lost connection.
            if getattr(e, "sqlstate", None) and not self.conn.broken:
                outcome = ("error", e.sqlstate, str(e).splitlines()[0] if str(e) else "")
            else:
                outcome = "lost"
        except psycopg.Error as e:
            outcome = ("error", e.sqlstate or "?", str(e).splitlines()[0] if str(e) else "")
        took = time.monotonic() - started
        if self.conn.broken or outcome == "lost":
            outcome = "lost"
            try:
                self.conn.close()
            except Exception:
                pass
            self.connect()
        if self.log:
            self.log.write(f"{took:8.3f}\t{outcome if isinstance(outcome, str) else outcome[1]}\t{stmt[:400]}\n")
        return outcome, took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True, help="libpq connection string of a superuser session")
    ap.add_argument("--random-calls", type=int, default=4000, help="random mixes after the sweep")
    ap.add_argument("--seconds", type=float, default=240, help="at most this long for the random mixes")
    ap.add_argument("--timeout-ms", type=int, default=15000, help="statement_timeout of each call")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", help="write every call, its outcome and time here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    log = open(args.log, "w") if args.log else None

    admin = psycopg.connect(args.dsn, autocommit=True)
    started_at = setup(admin)
    reset_tables(admin)
    fns = functions(admin)
    runner = Runner(args.dsn, args.timeout_ms, log)

    findings, skipped = [], []
    counts = {"calls": 0, "ok": 0, "errors": 0, "big timeouts": 0}
    states = {}
    plans = []
    for sig, fn, types, setof, kind, rettype in fns:
        # Trigger functions refuse a direct call, and arguments of type internal can only be
        # NULL from SQL: both are called anyway, for the error they must give.
        todo = calls(rng, types, 0)
        if todo is None:
            skipped.append(f"{sig} (argument types {', '.join(t for t in types if t not in POOLS)})")
            continue
        plans.append((sig, fn, types, setof, kind, todo))

    def one(fn, types, setof, kind, argv):
        stmt = statement(fn, types, argv, setof, kind)
        outcome, took = runner.run(stmt)
        if outcome == "timeout" and not any(is_big(a) for a in argv):
            # Small inputs that ran into the timeout: once more, so that a busy machine's
            # moment does not count; twice is a finding.
            outcome, took = runner.run(stmt)
        counts["calls"] += 1
        if outcome == "ok":
            counts["ok"] += 1
        elif outcome == "timeout":
            if any(is_big(a) for a in argv):
                counts["big timeouts"] += 1
            else:
                findings.append(f"TIMEOUT ({took:.1f} s on small inputs, twice): {stmt[:300]}")
        elif outcome == "lost":
            findings.append(f"RESTART (connection lost): {stmt[:300]}")
        else:
            _, state, message = outcome
            counts["errors"] += 1
            states[state] = states.get(state, 0) + 1
            if state == "XX000":
                findings.append(f"XX000 {message[:200]}: {stmt[:300]}")

    # The sweep: every function, each argument at each of its values.
    sweep_started = time.monotonic()
    for n, (sig, fn, types, setof, kind, todo) in enumerate(plans):
        if n % 16 == 15:
            reset_tables(admin)
        for argv in todo:
            one(fn, types, setof, kind, argv)
    sweep_took = time.monotonic() - sweep_started
    # Random mixes of small values: a fixed number (the seed decides which), within a time.
    deadline = time.monotonic() + args.seconds
    random_calls = 0
    while plans and random_calls < args.random_calls and time.monotonic() < deadline:
        if random_calls % 400 == 399:
            reset_tables(admin)
        sig, fn, types, setof, kind, _ = rng.choice(plans)
        for argv in (calls(rng, types, 8)[-8:] if types else [[]]):
            one(fn, types, setof, kind, argv)
            random_calls += 1

    try:
        if admin.broken:
            admin = psycopg.connect(args.dsn, autocommit=True)
        with admin.cursor() as cur:
            if server_epoch(cur) != started_at:
                findings.append("RESTART: the postmaster or its checkpointer started again during the run")
    except psycopg.Error as e:
        findings.append(f"RESTART: the server could not be asked at the end ({e})")

    print(f"every_function: {counts['calls']} calls of {len(plans)} functions as role {ROLE} "
          f"(sweep {sweep_took:.0f} s, {random_calls} random): {counts['ok']} returned, {counts['errors']} errors "
          f"({', '.join(f'{s} {n}' for s, n in sorted(states.items()))}), "
          f"{counts['big timeouts']} large inputs timed out")
    for s in skipped:
        print(f"  not called: {s}")
    for f in findings:
        print(f"  {f}")
    if findings:
        print(f"every_function: FAIL ({len(findings)} findings)")
        return 1
    print("every_function: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
