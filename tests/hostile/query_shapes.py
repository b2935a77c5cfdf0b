#!/usr/bin/env python3
"""Generates queries from a grammar of shapes and runs each twice, as a role with only SELECT:
with the extension's planner rewrites (block-index lookups) and with them switched off
(simhash_pg.enable_index_lookups = off, every distance computed as written). Fails on any
difference, any XX000, any server restart, and on a statement that runs past the timeout with
the rewrites where it ends without them (on tables of a few hundred rows, a slowdown of 100x
or more). Errors a condition raises for the row it meets (k out of range) may come on one side
only, as the plan decides which rows meet which condition: those are counted.

Issue 63: the tests called functions with extreme arguments and put known spellings in known
contexts, but never combined a boundary k, an OR and an append relation, and that shape crashed
the planner. Here the shapes are drawn, not listed:
  - distance tests in every spelling (simhash_near either way round, <->, hamming_distance,
    < <= = >= and their mirrors, NOT (d > k), BETWEEN), k from {0, 1, max_k, max_k + 1, 7, 64,
    65, -1, NULL, an expression, a subquery, a parameter}, the query a literal, a scalar
    subquery, a parameter, NULL or another table's column;
  - nested in AND, OR, NOT, CASE, IS TRUE, coalesce, IN and EXISTS subqueries, with other
    conditions beside them (some indexed, some not);
  - in plain SELECTs, counts, target lists, subqueries in FROM, CTEs (materialized or not),
    UNION ALL (flattened into an append relation, and at the top), joins and LEFT JOINs on the
    distance, LATERAL, ORDER BY distance LIMIT, GROUP BY ... HAVING, prepared statements with
    custom and generic plans, inlined SQL functions and PL/pgSQL ones, cursors, a connection's
    first statement, plain EXPLAIN, row locks, and DML with RETURNING, MERGE and ON CONFLICT DO
    UPDATE (rolled back, by a role that may also write); some with parallel plans forced, some
    by a role granted only the columns (no ctid: the BitmapOr form instead of the probe);
  - over every kind of relation (plain, partitioned with a sub-partitioned partition and a
    default one, inheritance, views, a security-barrier view, a UNION ALL view, a view WITH
    CHECK OPTION whose own condition is a lookup, a materialized view (no layout), temp,
    unlogged, row-level security) and every layout (permuted blocks at max_k 3 and 7, covering
    block columns, plain block columns, a family of keys, sets, none).

Each case is drawn from its own seed (--seed and its number), so `--replay N` runs case N
alone. A failing case is shrunk (its conditions simplified, its shape and relation made plainer
while it still fails the same way) and printed as SQL to paste into the regression suite.

    query_shapes.py --dsn 'host=... port=... dbname=...' [--cases 3000] [--seconds 600]
                    [--seed 1] [--timeout-ms 10000] [--log F] [--replay N]

Needs psycopg 3 and a superuser's DSN: it creates the extension, the schema simhash_shapes,
its tables and the roles simhash_shapes_reader (SELECT only), simhash_shapes_columns (SELECT
on the columns only) and simhash_shapes_writer (also INSERT, UPDATE, DELETE, for the DML
shapes). Fails too when fewer than 15 % of the plans it explains read a layout (the rewrites
stopped happening, and the comparisons would test nothing). Ends with 'query_shapes: PASS' or
'query_shapes: FAIL (...)'.
"""

import argparse
import random
import re
import sys
import time

import psycopg
from psycopg import sql

from server_epoch import server_epoch

SCHEMA = "simhash_shapes"
READER = "simhash_shapes_reader"
COLUMNS = "simhash_shapes_columns"  # SELECT on the columns the shapes read, not on the tables
WRITER = "simhash_shapes_writer"
LOST = (psycopg.OperationalError, psycopg.InterfaceError)
# The error a condition raises for the row it is evaluated on (k out of 0..64, from a k that
# differs from row to row or a call the planner left as written): whether a plan meets it
# depends on which rows it evaluates which condition on.
ROW_ERROR = ("22023", "distance bound k must be between 0 and 64")
# A Rust backtrace's frames ("  12: pgrx::..."), which pgrx put in the DETAIL of every error that
# crossed one of the library's hooks when the server's environment set RUST_BACKTRACE (issue 67).
BACKTRACE = re.compile(r"^\s*\d+: \S+", re.M)

# The relations of fingerprints (id int8, grp int4, fp simhash64): name -> (how it is made, max_k
# of its layout). Every relation's ids are its own (a range each), so rows never tie on id.
TABLE_KINDS = {
    "plain_perm": ("table", "simhash_create_index('{t}', 'fp')"),
    "plain_perm7": ("table", "simhash_create_index('{t}', 'fp', max_k => 7)"),
    "plain_cov": ("table", "simhash_create_index('{t}', 'fp', permuted => false)"),
    "plain_gen": ("table", "simhash_create_index('{t}', 'fp', permuted => false, covering => false)"),
    "plain_fam": ("table", "simhash_create_index('{t}', 'fp', blocks => 5, key_blocks => 2)"),
    "plain_none": ("table", None),
    "unlogged_perm": ("unlogged", "simhash_create_index('{t}', 'fp')"),
    "rls_perm": ("rls", "simhash_create_index('{t}', 'fp')"),
    "part_perm": ("partitioned", "simhash_create_index('{t}', 'fp')"),
    "part_cov": ("partitioned", "simhash_create_index('{t}', 'fp', permuted => false)"),
    "inh_perm": ("inheritance", "simhash_create_index('{t}', 'fp')"),
}
VIEWS = {
    "v_perm": "SELECT id, grp, fp FROM {s}.plain_perm WHERE grp <> 5",
    "v_barrier": None,  # a security_barrier view over plain_cov, made below
    "v_union": "SELECT id, grp, fp FROM {s}.plain_perm UNION ALL SELECT id, grp, fp FROM {s}.part_perm",
    # A lookup in the view's own definition, and a check option that evaluates it on new rows.
    "v_check": "SELECT id, grp, fp FROM {s}.plain_perm7 WHERE simhash_near(fp, '{centre}', 12) WITH CHECK OPTION",
}
# A materialized view gets no layout (simhash_create_index takes tables): its lookups stay as
# written, which is what is checked.
MATVIEWS = {"mv_perm": "SELECT id, grp, fp FROM {s}.plain_perm7"}
TEMP = "tmp_perm"  # made in each session, from plain_none's rows, with its own layout
FP_RELATIONS = list(TABLE_KINDS) + list(VIEWS) + list(MATVIEWS) + [TEMP]
# Relations a DML statement may write.
WRITABLE = [r for r in TABLE_KINDS] + ["v_perm", "v_check", TEMP]
ROWS = 240  # per relation: small enough that a case runs in milliseconds with the rewrites off
SET_ROWS = 160

# The fingerprints: clusters around 40 centres, each row a centre with d bits flipped.
FLIPS = [0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 12, 20, 32]


def fp_hex(v):
    return f"{v & 0xFFFFFFFFFFFFFFFF:016x}"


def flip(rng, v, d):
    for b in rng.sample(range(64), d):
        v ^= 1 << b
    return v


class Data:
    """The rows every relation is filled from (the same for every run of one seed)."""

    def __init__(self, seed):
        rng = random.Random(f"data-{seed}")
        self.centres = [rng.getrandbits(64) for _ in range(40)]
        self.rows = {}
        for n, name in enumerate(TABLE_KINDS):
            rows = []
            for i in range(ROWS):
                rid = (n + 1) * 100000 + i
                if rng.random() < 0.04:
                    rows.append((rid, i % 9, None))
                else:
                    v = flip(rng, rng.choice(self.centres), rng.choice(FLIPS))
                    rows.append((rid, i % 9, fp_hex(v)))
            self.rows[name] = rows
        words = "near copy page news mail text crawl index block fingerprint shard table lookup".split()
        base = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) for _ in range(30)]
        self.texts = base
        self.sets = []
        for i in range(SET_ROWS):
            t = rng.choice(base).split()
            for _ in range(rng.choice([0, 0, 1, 2, 4])):
                t[rng.randrange(len(t))] = rng.choice(words)
            self.sets.append((900000 + i, i % 9, " ".join(t) if rng.random() > 0.04 else None))


def setup(admin, data):
    """The schema, its relations and layouts, and the two roles, made anew."""
    s = SCHEMA
    with admin.cursor() as cur:
        cur.execute("SET client_min_messages = warning")
        cur.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
        cur.execute("CREATE EXTENSION IF NOT EXISTS simhash_pg")
        for role in (READER, WRITER, COLUMNS):
            cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            if not cur.fetchone():
                cur.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        cur.execute(f"CREATE SCHEMA {s}")
        for name, (kind, layout) in TABLE_KINDS.items():
            t = f"{s}.{name}"
            cols = "id int8, grp int4, fp simhash64"
            if kind == "partitioned":
                cur.execute(f"CREATE TABLE {t} ({cols}, PRIMARY KEY (id)) PARTITION BY RANGE (id)")
                lo = data.rows[name][0][0]
                cur.execute(f"CREATE TABLE {t}_a PARTITION OF {t} FOR VALUES FROM ({lo}) TO ({lo + 80})")
                # A partition that is partitioned again, by hash, and a default partition.
                cur.execute(f"CREATE TABLE {t}_b PARTITION OF {t} FOR VALUES FROM ({lo + 80}) TO ({lo + 160}) PARTITION BY HASH (id)")
                cur.execute(f"CREATE TABLE {t}_b0 PARTITION OF {t}_b FOR VALUES WITH (MODULUS 2, REMAINDER 0)")
                cur.execute(f"CREATE TABLE {t}_b1 PARTITION OF {t}_b FOR VALUES WITH (MODULUS 2, REMAINDER 1)")
                cur.execute(f"CREATE TABLE {t}_d PARTITION OF {t} DEFAULT")
            elif kind == "inheritance":
                cur.execute(f"CREATE TABLE {t} ({cols}, PRIMARY KEY (id))")
                cur.execute(f"CREATE TABLE {t}_c1 (PRIMARY KEY (id)) INHERITS ({t})")
                cur.execute(f"CREATE TABLE {t}_c2 (PRIMARY KEY (id)) INHERITS ({t})")
            else:
                unlogged = "UNLOGGED " if kind == "unlogged" else ""
                cur.execute(f"CREATE {unlogged}TABLE {t} ({cols}, PRIMARY KEY (id))")
            cur.execute(f"CREATE INDEX ON {t} (grp)")
            rows = data.rows[name]
            if kind == "inheritance":
                thirds = [rows[0::3], rows[1::3], rows[2::3]]
                targets = [t, f"{t}_c1", f"{t}_c2"]
            else:
                thirds, targets = [rows], [t]
            for part, target in zip(thirds, targets):
                with cur.copy(f"COPY {target} (id, grp, fp) FROM STDIN") as copy:
                    for row in part:
                        copy.write_row(row)
            if layout:
                # An inheritance parent's layout is each member's own (indexes are not inherited).
                for target in targets:
                    cur.execute("SELECT " + layout.format(t=target))
            if kind == "rls":
                cur.execute(f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY")
                cur.execute(f"CREATE POLICY shown ON {t} USING (grp % 3 <> 0)")
        for name, body in VIEWS.items():
            if body is None:
                cur.execute(f"CREATE VIEW {s}.{name} WITH (security_barrier) AS SELECT id, grp, fp FROM {s}.plain_cov WHERE grp <> 4")
            else:
                cur.execute(f"CREATE VIEW {s}.{name} AS " + body.format(s=s, centre=fp_hex(data.centres[0])))
        for name, body in MATVIEWS.items():
            cur.execute(f"CREATE MATERIALIZED VIEW {s}.{name} AS " + body.format(s=s))
        # Sets: three fingerprints of each text, covering block indexes on every element.
        cur.execute(f"""CREATE TABLE {s}.sets_cov (id int8 PRIMARY KEY, grp int4, body text,
                        fps simhash64[] GENERATED ALWAYS AS (simhash_set(body, 3)) STORED)""")
        with cur.copy(f"COPY {s}.sets_cov (id, grp, body) FROM STDIN") as copy:
            for row in data.sets:
                copy.write_row(row)
        cur.execute(f"SELECT simhash_create_index('{s}.sets_cov', 'fps')")
        cur.execute(f"CREATE TABLE {s}.sets_none AS SELECT * FROM {s}.sets_cov")
        cur.execute(f"ANALYZE")
        cur.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}, {}, {}").format(
            sql.Identifier(s), sql.Identifier(READER), sql.Identifier(WRITER), sql.Identifier(COLUMNS)))
        cur.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}, {}").format(sql.Identifier(s), sql.Identifier(READER), sql.Identifier(WRITER)))
        # The column reader: SELECT on each relation's columns only (no ctid, so no probe).
        cur.execute("""SELECT c.oid::regclass::text, string_agg(quote_ident(a.attname), ', ')
                         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                        WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm')
                        GROUP BY c.oid""", (s,))
        for rel, cols in cur.fetchall():
            cur.execute(f"GRANT SELECT ({cols}) ON {rel} TO {COLUMNS}")
        cur.execute(sql.SQL("GRANT INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(sql.Identifier(s), sql.Identifier(WRITER)))
        # The layout indexes, to tell a plan that reads them.
        cur.execute(f"""SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                          JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = %s AND NOT i.indisprimary
                           AND pg_get_indexdef(i.indexrelid) NOT LIKE '%%(grp)'""", (s,))
        return {r[0] for r in cur.fetchall()}


# ---------------------------------------------------------------------------------------------
# The grammar. A condition is a tree of tuples, rendered for a relation alias; shrinking walks
# the same trees.


class Gen:
    def __init__(self, rng, data, is_set, param_ok):
        self.rng, self.data, self.is_set, self.param_ok = rng, data, is_set, param_ok

    def k(self, alias):
        r = self.rng
        choice = r.choice(["0", "0", "1", "2", "3", "3", "4", "7", "7", "8", "64", "65", "-1", "NULL",
                           "1 + 2", "(SELECT 3)", "$2" if self.param_ok else "3",
                           # a k that differs from row to row
                           f"{alias}.grp"])
        return choice

    def query(self, outer=None, alias=None):
        """The query side: a literal, a subquery, a parameter, NULL, an outer column or, now and
        then, the row's own fingerprint."""
        r = self.rng
        if alias and r.random() < 0.04:
            return f"{alias}.fps" if self.is_set else f"{alias}.fp"
        if self.is_set:
            options = [f"simhash_set('{r.choice(self.data.texts)}', 3)",
                       f"(SELECT fps FROM {SCHEMA}.sets_cov WHERE id = {900000 + r.randrange(SET_ROWS)})",
                       "NULL::simhash64[]"]
            if self.param_ok:
                options.append("$1")
            if outer:
                options += [f"{outer}.fps"] * 3
            return r.choice(options)
        centre = r.choice(self.data.centres)
        options = [f"'{fp_hex(centre)}'::simhash64", f"'{fp_hex(flip(r, centre, r.choice([1, 2, 3, 5])))}'::simhash64",
                   f"'{fp_hex(centre)}'", f"'{fp_hex(r.getrandbits(64))}'::simhash64",
                   f"(SELECT fp FROM {SCHEMA}.plain_none WHERE id = {600000 + r.randrange(ROWS)})",
                   "NULL::simhash64", f"('{fp_hex(centre)}'::simhash64)"]
        if self.param_ok:
            options += ["$1", "$1"]
        if outer:
            options += [f"{outer}.fp"] * 4
        return r.choice(options)

    def near(self, alias, outer=None):
        col = f"{alias}.fps" if self.is_set else f"{alias}.fp"
        return ("near", self.rng.randrange(12), col, self.query(outer, alias), self.k(alias))

    def atom(self, alias):
        r = self.rng
        col = f"{alias}.fps" if self.is_set else f"{alias}.fp"
        return ("atom", r.choice([f"{alias}.id % 7 = 3", f"{alias}.grp = {r.randrange(9)}", f"{alias}.grp < 4",
                                  f"{alias}.id = {r.choice([100001, 300010, 600005, 900003, 1000007])}",
                                  f"{col} IS NULL", f"{col} IS NOT NULL", "true", "false", "NULL::bool",
                                  f"{alias}.id > 0"]))

    def top(self, alias, outer=None):
        """A whole condition: mostly the shapes users write (one distance test, beside another
        condition, or one of two alternatives), sometimes a deep random tree."""
        r = self.rng
        x = r.random()
        if x < 0.35:
            return self.near(alias, outer)
        if x < 0.55:
            return ("and", self.near(alias, outer), self.atom(alias)) if r.random() < 0.5 else ("and", self.atom(alias), self.near(alias, outer))
        if x < 0.75:
            other = self.near(alias, outer) if r.random() < 0.4 else self.atom(alias)
            return ("or", self.near(alias, outer), other) if r.random() < 0.5 else ("or", other, self.near(alias, outer))
        return self.cond(alias, 0, outer)

    def cond(self, alias, depth=0, outer=None, near_ok=True):
        r = self.rng
        if depth >= 3 or r.random() < 0.35:
            return self.near(alias, outer) if near_ok and r.random() < 0.7 else self.atom(alias)
        op = r.choice(["and", "and", "or", "or", "or", "not", "case", "istrue", "coalesce", "in"])
        if op in ("and", "or"):
            return (op, self.cond(alias, depth + 1, outer), self.cond(alias, depth + 1, outer))
        if op == "case":
            return (op, self.cond(alias, depth + 1, outer), self.cond(alias, depth + 1, outer), self.cond(alias, depth + 1, outer))
        if op == "in":
            rel = r.choice(["plain_perm", "part_perm", "plain_cov", "v_union", "inh_perm"]) if not self.is_set else "sets_cov"
            return ("in", alias, rel, self.top("s"))
        return (op, self.cond(alias, depth + 1, outer))


def render_near(node):
    _, spelling, col, q, k = node
    distance = "simhash_set_distance" if col.endswith(".fps") else "hamming_distance"
    near = "simhash_near_any" if col.endswith(".fps") else "simhash_near"
    return [
        f"{near}({col}, {q}, {k})",
        f"{near}({q}, {col}, {k})",
        f"{col} <-> {q} <= {k}",
        f"{col} <-> {q} < {k}",
        f"{k} >= {col} <-> {q}",
        f"{q} <-> {col} <= {k}",
        f"{distance}({col}, {q}) <= {k}",
        f"{distance}({col}, {q}) < ({k}) + 1",
        f"({col} <-> {q}) = {k}",
        f"NOT ({col} <-> {q} > {k})",
        f"{col} <-> {q} BETWEEN 0 AND {k}",
        f"{k} > {col} <-> {q}",
    ][spelling]


def render(node):
    kind = node[0]
    if kind == "near":
        return render_near(node)
    if kind == "atom":
        return node[1]
    if kind in ("and", "or"):
        return f"({render(node[1])} {kind.upper()} {render(node[2])})"
    if kind == "not":
        return f"(NOT {render(node[1])})"
    if kind == "case":
        return f"(CASE WHEN {render(node[1])} THEN {render(node[2])} ELSE {render(node[3])} END)"
    if kind == "istrue":
        return f"(({render(node[1])}) IS TRUE)"
    if kind == "coalesce":
        return f"coalesce({render(node[1])}, false)"
    if kind == "in":
        _, alias, rel, sub = node
        return f"{alias}.id IN (SELECT s.id FROM {SCHEMA}.{rel} s WHERE {render(sub)})"
    raise ValueError(kind)


def simpler(node):
    """Conditions one step simpler than `node`, simplest first."""
    kind = node[0]
    if kind == "atom":
        if node[1] != "true":
            yield ("atom", "true")
        return
    if kind == "near":
        _, spelling, col, q, k = node
        if spelling != 0:
            yield ("near", 0, col, q, k)
        if not q.startswith("'"):
            yield ("near", spelling, col, "'0123456789abcdef'::simhash64" if not col.endswith("fps") else "simhash_set('near copy', 3)", k)
        if k not in ("0", "3"):
            yield ("near", spelling, col, q, "3")
            yield ("near", spelling, col, q, "0")
        return
    if kind in ("and", "or"):
        yield node[1]
        yield node[2]
        for s in simpler(node[1]):
            yield (kind, s, node[2])
        for s in simpler(node[2]):
            yield (kind, node[1], s)
        return
    if kind == "case":
        yield from node[1:]
        for i in (1, 2, 3):
            for s in simpler(node[i]):
                yield node[:i] + (s,) + node[i + 1:]
        return
    if kind == "in":
        yield ("atom", "true")
        for s in simpler(node[3]):
            yield node[:3] + (s,)
        return
    yield node[1]
    for s in simpler(node[1]):
        yield (kind, s)


# ---------------------------------------------------------------------------------------------
# Shapes: a case is a shape, its relations and its conditions; `sql()` gives the statements.


def rel_sql(rel):
    if rel == "union_from":
        return (f"(SELECT id, grp, fp FROM {SCHEMA}.plain_perm UNION ALL SELECT id, grp, fp FROM {SCHEMA}.part_cov "
                f"UNION ALL SELECT id, grp, fp FROM {SCHEMA}.inh_perm)")
    if rel == TEMP:
        return f"pg_temp.{TEMP}"
    return f"{SCHEMA}.{rel}"


class Case:
    def __init__(self, shape, rels, conds, extra):
        self.shape, self.rels, self.conds, self.extra = shape, rels, conds, extra

    def statements(self):
        """(setup statements, the statement whose rows are compared, cleanup statements,
        whether row order counts, whether it writes). Half the cases run with enable_seqscan off
        on both sides: on tables this small the planner would seldom take an index path."""
        setup, stmt, cleanup, ordered, writes = self.shape_statements()
        if self.extra.get("no_seqscan"):
            setup, cleanup = ["SET enable_seqscan = off"] + setup, cleanup + ["RESET enable_seqscan"]
        if self.extra.get("parallel"):
            knobs = ["parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size", "min_parallel_index_scan_size"]
            setup = [f"SET {knob} = 0" for knob in knobs] + ["SET max_parallel_workers_per_gather = 2"] + setup
            cleanup = cleanup + [f"RESET {knob}" for knob in knobs] + ["RESET max_parallel_workers_per_gather"]
        return setup, stmt, cleanup, ordered, writes

    def shape_statements(self):
        s, (a, b), c, x = self.shape, (self.rels + [None])[:2], [render(n) for n in self.conds], self.extra
        A, B = rel_sql(a), rel_sql(b) if b else None
        fp = "fps" if a.startswith("sets") else "fp"
        q = x.get("q", "NULL")
        if s in ("select", "fresh_session"):
            return [], f"SELECT r.id FROM {A} r WHERE {c[0]}", [], False, False
        if s == "count":
            return [], f"SELECT count(*) FROM {A} r WHERE {c[0]}", [], False, False
        if s == "target":
            return [], f"SELECT r.id, {c[1]} AS v FROM {A} r WHERE {c[0]}", [], False, False
        if s == "exists":
            return [], (f"SELECT r.id FROM {A} r WHERE r.id % 10 = 1 AND EXISTS "
                        f"(SELECT 1 FROM {B} s WHERE s.grp = r.grp AND {c[1]})"), [], False, False
        if s == "from_subquery":
            return [], f"SELECT t.id FROM (SELECT * FROM {A} r WHERE {c[0]}) t WHERE {c[1]}", [], False, False
        if s == "cte":
            m = x["materialized"]
            return [], f"WITH t AS {m}(SELECT * FROM {A} r WHERE {c[0]}) SELECT t.id FROM t WHERE {c[1]}", [], False, False
        if s == "union_top":
            return [], f"SELECT r.id FROM {A} r WHERE {c[0]} UNION ALL SELECT r.id FROM {B} r WHERE {c[1]}", [], False, False
        if s == "join":
            j = x["join"]
            return [], (f"SELECT a.id, r.id FROM {A} a {j} {B} r ON {c[0]} WHERE a.id % 12 = 5"), [], False, False
        if s == "lateral":
            return [], (f"SELECT a.id, l.id FROM {A} a CROSS JOIN LATERAL (SELECT r.id FROM {B} r WHERE {c[0]} "
                        f"ORDER BY r.{fp} <-> a.{fp}, r.id LIMIT 3) l WHERE a.id % 15 = 2"), [], False, False
        if s == "order":
            where = f" WHERE {c[0]}" if x["where"] else ""
            return [], (f"SELECT r.id, r.{fp} <-> {q} FROM {A} r{where} ORDER BY r.{fp} <-> {q}, r.id "
                        f"LIMIT {x['limit']}"), [], True, False
        if s == "having":
            return [], f"SELECT r.grp, count(*) FROM {A} r GROUP BY r.grp HAVING bool_or({c[0]})", [], False, False
        if s == "prepared":
            mode = x["mode"]
            return ([f"SET plan_cache_mode = {mode}",
                     f"PREPARE shape_stmt(simhash64{'[]' if fp == 'fps' else ''}, int4) AS SELECT r.id FROM {A} r WHERE {c[0]}"],
                    f"EXECUTE shape_stmt({x['q1']}, {x['k1']})",
                    ["DEALLOCATE shape_stmt", "RESET plan_cache_mode"], False, False)
        if s == "sql_function":
            # An inlinable SQL function: its body reaches the join tree only while the planner
            # simplifies the call (distance_bounds::relation_info marks it there).
            t = "simhash64[]" if fp == "fps" else "simhash64"
            return ([f"CREATE OR REPLACE FUNCTION pg_temp.shape_fn(simhash64{'[]' if fp == 'fps' else ''}, int4) RETURNS SETOF int8 "
                     f"LANGUAGE sql STABLE AS $f$ SELECT r.id FROM {A} r WHERE {c[0]} $f$"],
                    f"SELECT * FROM pg_temp.shape_fn({x['q1']}::{t}, {x['k1']})", [], False, False)
        if s == "merge":
            return (["BEGIN"], (f"MERGE INTO {A} t USING (SELECT id, fp FROM {B}) a ON t.id = a.id - {x['shift']} "
                                f"AND {c[0]} WHEN MATCHED THEN UPDATE SET grp = t.grp"), ["ROLLBACK"], False, True)
        if s == "explain":
            return [], f"EXPLAIN (COSTS OFF) SELECT r.id FROM {A} r WHERE {c[0]}", [], None, False
        if s == "delete":
            return ["BEGIN"], f"DELETE FROM {A} r WHERE {c[0]} RETURNING r.id", ["ROLLBACK"], False, True
        if s == "update":
            return ["BEGIN"], f"UPDATE {A} r SET grp = r.grp WHERE {c[0]} RETURNING r.id, {c[1]}", ["ROLLBACK"], False, True
        if s == "for_update":
            return ["BEGIN"], f"SELECT r.id FROM {A} r WHERE {c[0]} {x['lock']}", ["ROLLBACK"], False, True
        if s == "cursor":
            return (["BEGIN", f"DECLARE shape_cur {x['scroll']}CURSOR FOR SELECT r.id FROM {A} r WHERE {c[0]}"],
                    "FETCH ALL FROM shape_cur", ["CLOSE shape_cur", "ROLLBACK"], True, False)
        if s == "plpgsql":
            t = "simhash64[]" if fp == "fps" else "simhash64"
            return ([f"CREATE OR REPLACE FUNCTION pg_temp.shape_pl({t}, int4) RETURNS SETOF int8 LANGUAGE plpgsql AS "
                     f"$f$ BEGIN RETURN QUERY SELECT r.id FROM {A} r WHERE {c[0]}; END $f$"],
                    f"SELECT * FROM pg_temp.shape_pl({x['q1']}::{t}, {x['k1']})", [], False, False)
        if s == "on_conflict":
            # Rows of A with new ids, and every fifth row of B again: the conflicts, whose update
            # happens only where the condition on the existing row (t) and the new one holds.
            return (["BEGIN"], (f"INSERT INTO {B} AS t (id, grp, fp) SELECT r.id + 5000000, r.grp, r.fp FROM {A} r WHERE {c[0]} "
                                f"UNION ALL SELECT b.id, b.grp + 1, b.fp FROM {B} b WHERE b.id % 5 = 0 "
                                f"ON CONFLICT (id) DO UPDATE SET grp = excluded.grp WHERE {c[1]} RETURNING t.id, t.grp"),
                    ["ROLLBACK"], False, True)
        if s == "insert_select":
            return (["BEGIN"], f"INSERT INTO {B} (id, grp, fp) SELECT r.id + 5000000, r.grp, r.fp FROM {A} r WHERE {c[0]} RETURNING id",
                    ["ROLLBACK"], False, True)
        raise ValueError(s)


SHAPES = ["select"] * 6 + ["count"] * 2 + ["target", "exists", "from_subquery", "cte", "union_top", "join", "join",
                                             "lateral", "order", "order", "having", "prepared", "prepared", "explain",
                                             "delete", "update", "for_update", "insert_select",
                                             "sql_function", "sql_function", "fresh_session", "merge",
                                             "cursor", "plpgsql", "on_conflict"]
SET_SHAPES = ["select", "select", "count", "target", "from_subquery", "cte", "prepared", "explain", "delete", "update",
              "sql_function"]


def draw(seed, n, data):
    rng = random.Random(f"case-{seed}-{n}")
    if rng.random() < 0.12:
        shape = rng.choice(SET_SHAPES)
        rels = [rng.choice(["sets_cov", "sets_cov", "sets_none"])]
        is_set = True
    else:
        shape = rng.choice(SHAPES)
        is_set = False
        pool = FP_RELATIONS + ["union_from", "union_from"]
        if shape in ("delete", "update", "for_update"):
            pool = WRITABLE
        if shape == "on_conflict":
            pool = FP_RELATIONS + ["union_from"]
        if shape == "merge":
            pool = [r for r in TABLE_KINDS if r != "inh_perm"] + [TEMP]
        if shape == "fresh_session":
            pool = [r for r in pool if r != TEMP]  # a new session has no temp table
        rels = [rng.choice(pool)]
        if shape in ("exists", "union_top", "join", "lateral", "merge"):
            rels.append(rng.choice(FP_RELATIONS))
        if shape == "insert_select":
            rels.append(rng.choice(["plain_perm", "part_perm", "plain_cov", "inh_perm", "plain_fam"]))
        if shape == "on_conflict":
            rels.append(rng.choice([r for r in ("plain_perm", "part_perm", "plain_cov", "plain_fam", "rls_perm") if r != rels[0]]))
    g = Gen(rng, data, is_set, shape in ("prepared", "sql_function", "plpgsql"))
    extra = {"no_seqscan": rng.random() < 0.5}
    if shape in ("join", "lateral", "merge"):
        conds = [g.top("t" if shape == "merge" else "r", outer="a")]
        extra["shift"] = rng.choice([0, 0, 1, 100000, 200000])
        extra["join"] = rng.choice(["JOIN", "JOIN", "LEFT JOIN"])
    elif shape == "exists":
        conds = [("atom", "true"), g.top("s")]
    elif shape == "on_conflict":
        conds = [g.top("r"), g.top("t", outer="excluded")]
    else:
        conds = [g.top("r"), g.top("r" if shape in ("target", "update", "union_top") else "t")]
    if shape == "order":
        extra.update(q=g.query(), where=rng.random() < 0.5, limit=rng.choice([1, 3, 10]))
    if shape == "cte":
        extra["materialized"] = rng.choice(["", "MATERIALIZED ", "NOT MATERIALIZED "])
    if shape == "for_update":
        extra["lock"] = rng.choice(["FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"])
    if shape == "cursor":
        extra["scroll"] = rng.choice(["", "SCROLL ", "NO SCROLL "])
    # Parallel plans now and then (workers run the rewritten conditions too).
    extra["parallel"] = rng.random() < 0.08
    # A role granted only the columns (no ctid, so no probe) for some reads.
    extra["columns"] = shape not in ("delete", "update", "for_update", "insert_select", "merge", "on_conflict") and rng.random() < 0.15
    if shape in ("prepared", "sql_function", "plpgsql"):
        extra["mode"] = rng.choice(["force_generic_plan", "force_custom_plan", "auto"])
        # EXECUTE takes no subquery: a literal, or NULL.
        if is_set:
            extra["q1"] = rng.choice([f"simhash_set('{rng.choice(data.texts)}', 3)", "NULL"])
        else:
            extra["q1"] = rng.choice([f"'{fp_hex(flip(rng, rng.choice(data.centres), rng.choice([0, 1, 3, 6])))}'", "NULL"])
        extra["k1"] = rng.choice(["0", "1", "3", "4", "7", "64", "65", "NULL"])
    return Case(shape, rels, conds, extra)


# ---------------------------------------------------------------------------------------------
# Running.


class Session:
    """One connection as `role`, with the rewrites on or off."""

    # Every long-lived session: a backend that crashes takes all of them down.
    everyone = []

    def __init__(self, dsn, role, lookups, timeout_ms, fresh=False):
        self.dsn, self.role, self.lookups, self.timeout_ms, self.fresh = dsn, role, lookups, timeout_ms, fresh
        self.connect()
        if not fresh:
            Session.everyone.append(self)

    @classmethod
    def reconnect_all(cls):
        """After a restart: every session again, so that the next case does not meet a
        connection the restart closed (and take it for a restart of its own)."""
        for s in cls.everyone:
            try:
                s.conn.close()
            except Exception:
                pass
            s.connect()

    def connect(self):
        for _ in range(240):
            try:
                self.conn = psycopg.connect(self.dsn, user=self.role, autocommit=True)
                with self.conn.cursor() as cur:
                    cur.execute(f"SET statement_timeout = {self.timeout_ms}")
                    cur.execute("SET client_min_messages = error")
                    # Not what is under test, and enable_seqscan = off (half the cases) puts every
                    # plan's cost past JIT's thresholds: seconds of compiling each large condition.
                    cur.execute("SET jit = off")
                    cur.execute("SET search_path = public")
                    if self.fresh:
                        return  # nothing loads the library before the statement under test
                    cur.execute("SELECT simhash('load the library') IS NULL")
                    cur.execute(f"SET simhash_pg.enable_index_lookups = {'on' if self.lookups else 'off'}")
                    cur.execute(f"CREATE TEMP TABLE {TEMP} AS SELECT * FROM {SCHEMA}.plain_none")
                    cur.execute(f"ALTER TABLE {TEMP} ADD PRIMARY KEY (id)")
                    cur.execute(f"SELECT simhash_create_index('pg_temp.{TEMP}', 'fp')")
                    cur.execute(f"ANALYZE pg_temp.{TEMP}")
                return
            except LOST:
                time.sleep(0.5)
        raise SystemExit("query_shapes: the server did not come back")

    def run(self, setup, stmt, cleanup):
        """('rows', rows) or ('error', sqlstate, message) or ('timeout',) or ('lost',)."""
        try:
            with self.conn.cursor() as cur:
                try:
                    for s in setup:
                        cur.execute(s)
                    cur.execute(stmt)
                    out = ("rows", cur.fetchall() if cur.description else [("rowcount", cur.rowcount)])
                except psycopg.errors.QueryCanceled:
                    out = ("timeout",)
                except psycopg.Error as e:
                    if self.conn.broken:
                        raise
                    out = ("error", e.sqlstate or "?", (str(e).splitlines() or [""])[0], e.diag.message_detail or "")
                if self.conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                    cur.execute("ROLLBACK")
                for s in cleanup:
                    try:
                        cur.execute(s)
                    except psycopg.Error:
                        if self.conn.broken:
                            raise
            return out
        except LOST:
            if not self.conn.broken:
                raise
            try:
                self.conn.close()
            except Exception:
                pass
            self.connect()
            return ("lost",)


def normal(out, ordered):
    if out[0] != "rows" or ordered:
        return out[:2]
    return ("rows", sorted(out[1], key=repr))


def verdict(case, on, off):
    """None when the two runs agree, else what is wrong."""
    setup_, stmt, cleanup, ordered, _ = case.statements()
    if case.shape == "fresh_session":
        # The first statement of a new connection, which loads the library while it is planned
        # (the planner hook then runs only for later statements).
        fresh = Session(on.dsn, on.role, True, on.timeout_ms, fresh=True)
        try:
            a = fresh.run(setup_, stmt, cleanup)
        finally:
            fresh.conn.close()
    else:
        a = on.run(setup_, stmt, cleanup)
    b = off.run(setup_, stmt, cleanup) if a[0] != "lost" else ("lost",)
    for out, side in ((a, "with the rewrites"), (b, "without them")):
        if out[0] == "lost":
            Session.reconnect_all()
            return f"RESTART (connection lost {side})"
        if out[0] == "error" and out[1] == "XX000":
            return f"XX000 {side}: {out[2][:200]}"
        if out[0] == "error" and BACKTRACE.search(out[3]):
            return f"BACKTRACE in the DETAIL of an error {side} (the server runs with RUST_BACKTRACE=1): {out[2][:200]}"
    if a[0] == "timeout" or b[0] == "timeout":
        # A plan the rewrites made that runs past the timeout where the query as written ends is
        # a slowdown to find (on tables this small, a bug); the other way round is what they are for.
        if a[0] == "timeout" and b[0] != "timeout":
            return "SLOW: past the statement timeout with the rewrites, not without them"
        return None if a[0] == b[0] else ("timeout", a[0], b[0])
    if ordered is None:  # EXPLAIN: the plans differ by design
        return None if a[0] == b[0] else f"DIFFERENT outcome: {a[:2]} against {b[:2]}"
    if a[0] == "error" or b[0] == "error":
        if a[:2] == b[:2]:
            return ("same error",)
        # An error that a call raises for the row it is evaluated on (k out of range, a subquery
        # of two rows) comes or not with the plan: SQL leaves the order of evaluation, and so which
        # rows meet which condition, to the planner. Counted, not a finding.
        if all(o[0] != "error" or (o[1], o[2][:len(ROW_ERROR[1])]) == ROW_ERROR for o in (a, b)):
            return ("evaluation order", a[0], b[0])
        return f"DIFFERENT: {a[:3]} against {b[:3]}"
    na, nb = normal(a, ordered), normal(b, ordered)
    if na != nb:
        return f"DIFFERENT rows: {len(a[1])} with the rewrites, {len(b[1])} without"
    return None


def shrink(case, on, off, kind):
    """A smaller case that still fails in the same way (the first word of its verdict)."""

    budget = [150]  # verdicts: a slow or crashing case costs seconds each

    def fails(c):
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        v = verdict(c, on, off)
        return isinstance(v, str) and v.split()[0].rstrip(":") == kind

    changed = True
    while changed:
        changed = False
        # A plainer shape, then plainer relations, then simpler conditions.
        if case.shape not in ("select",) and case.shape not in ("join", "lateral", "exists"):
            c = Case("select", case.rels[:1], [case.conds[0]], dict(case.extra))
            if fails(c):
                case, changed = c, True
                continue
        for i, rel in enumerate(case.rels):
            # Toward the plainest relations only (so the search ends): plain_perm, then part_perm.
            for plain in ("plain_perm", "part_perm")[: (0 if rel == "plain_perm" else 1 if rel == "part_perm" else 2)]:
                if not rel.startswith("sets"):
                    rels = list(case.rels)
                    rels[i] = plain
                    c = Case(case.shape, rels, case.conds, case.extra)
                    if fails(c):
                        case, changed = c, True
                        break
            if changed:
                break
        if changed:
            continue
        for i, cond in enumerate(case.conds):
            for s in simpler(cond):
                conds = list(case.conds)
                conds[i] = s
                c = Case(case.shape, case.rels, conds, case.extra)
                if fails(c):
                    case, changed = c, True
                    break
            if changed:
                break
    return case


def plan_reads_layout(session, case, layout_indexes):
    setup_, stmt, cleanup, _, writes = case.statements()
    if writes or case.shape in ("prepared", "explain"):
        return None
    out = session.run(setup_, "EXPLAIN (COSTS OFF) " + stmt, cleanup)
    if out[0] != "rows":
        return None
    text = "\n".join(r[0] for r in out[1])
    return any(name in text for name in layout_indexes) or "_simhash_index_probe" in text or "Custom Scan" in text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True, help="libpq connection string of a superuser session")
    ap.add_argument("--cases", type=int, default=3000)
    ap.add_argument("--seconds", type=float, default=600, help="stop drawing cases after this long")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout-ms", type=int, default=10000)
    ap.add_argument("--log", help="write every case's SQL and outcome here")
    ap.add_argument("--replay", type=int, help="run only case N of the seed, and print it")
    ap.add_argument("--explain-every", type=int, default=10, help="EXPLAIN one case in this many, to count plans that read a layout")
    args = ap.parse_args()
    log = open(args.log, "w", buffering=1) if args.log else None

    data = Data(args.seed)
    admin = psycopg.connect(args.dsn, autocommit=True)
    layout_indexes = setup(admin, data)
    with admin.cursor() as cur:
        epoch = server_epoch(cur)
    readers = (Session(args.dsn, READER, True, args.timeout_ms), Session(args.dsn, READER, False, args.timeout_ms))
    columns = (Session(args.dsn, COLUMNS, True, args.timeout_ms), Session(args.dsn, COLUMNS, False, args.timeout_ms))
    writers = (Session(args.dsn, WRITER, True, args.timeout_ms), Session(args.dsn, WRITER, False, args.timeout_ms))

    numbers = [args.replay] if args.replay is not None else range(args.cases)
    started = time.monotonic()
    counts = {"cases": 0, "timeouts": 0, "evaluation order": 0, "same error": 0, "explained": 0, "read a layout": 0,
              "as the column reader": 0}
    states, shapes, findings = {}, {}, []
    for n in numbers:
        if time.monotonic() - started > args.seconds:
            break
        case = draw(args.seed, n, data)
        on, off = writers if case.statements()[4] else columns if case.extra.get("columns") else readers
        case_started = time.monotonic()
        v = verdict(case, on, off)
        case_took = time.monotonic() - case_started
        counts["cases"] += 1
        counts["as the column reader"] += int(bool(case.extra.get("columns")))
        shapes[case.shape] = shapes.get(case.shape, 0) + 1
        if args.replay is not None or log:
            setup_, stmt, cleanup, _, _ = case.statements()
            line = f"{n}\t{case_took:.3f}\t{v}\t{'; '.join(setup_ + [stmt] + cleanup)}"
            (print if args.replay is not None else lambda t: log.write(t + "\n"))(line)
        if isinstance(v, tuple):
            # Agreed, or told apart only by what the plan decides (which rows meet an error, how
            # fast a scan is): counted.
            counts[{"timeout": "timeouts", "evaluation order": "evaluation order", "same error": "same error"}[v[0]]] += 1
            continue
        if v is not None:
            kind = v.split()[0].rstrip(":")
            small = shrink(case, on, off, kind)
            setup_, stmt, cleanup, _, _ = small.statements()
            findings.append(f"case {n}: {v}\n    shrunk ({small.shape} on {', '.join(small.rels)}, as {on.role}): "
                            + "; ".join(setup_ + [stmt] + cleanup))
            if len(findings) >= 20:
                break
            continue
        if args.explain_every and n % args.explain_every == 0:
            reads = plan_reads_layout(on, case, layout_indexes)
            if reads is not None:
                counts["explained"] += 1
                counts["read a layout"] += int(reads)
    took = time.monotonic() - started

    try:
        if admin.broken:
            admin = psycopg.connect(args.dsn, autocommit=True)
        with admin.cursor() as cur:
            if server_epoch(cur) != epoch:
                findings.append("RESTART: the postmaster or its checkpointer started again during the run")
    except psycopg.Error as e:
        findings.append(f"RESTART: the server could not be asked at the end ({e})")

    # The fuzzer tests the rewrites only where they happen: a grammar or a build under which
    # plans stop reading the layouts would pass every comparison and test nothing.
    if counts["explained"] >= 100 and counts["read a layout"] < 0.15 * counts["explained"]:
        findings.append(f"COVERAGE: only {counts['read a layout']} of {counts['explained']} plans explained read a layout")

    print(f"query_shapes: {counts['cases']} cases (seed {args.seed}) in {took:.0f} s, each run with and without the rewrites "
          f"({counts['as the column reader']} as a role granted only columns); {counts['same error']} gave the same error both ways, "
          f"{counts['evaluation order']} met a row's error on one side only, {counts['timeouts']} ran past the timeout "
          f"without the rewrites only; of {counts['explained']} plans explained, {counts['read a layout']} read a layout")
    print("  shapes: " + ", ".join(f"{k} {v}" for k, v in sorted(shapes.items())))
    for f in findings:
        print(f"  {f}")
    if findings:
        print(f"query_shapes: FAIL ({len(findings)} findings)")
        return 1
    print("query_shapes: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
