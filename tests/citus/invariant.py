#!/usr/bin/env python3
"""The routed layout's invariant under a generated mix of writes, DDL and faults (issue 67).

A routed lookup on Citus reads the routes only while every row its snapshot sees has a route for
each of its blocks; otherwise it asks every shard (docs/citus.md, "Fail closed"). This test draws
steps at random: writes by every path (INSERT of one row and of many, INSERT ... SELECT, COPY,
the inserts view, simhash_ingest, UPDATE of the fingerprint and of other columns, DELETE, upserts,
writable CTEs, transactions rolled back or cut off by a terminated backend), writes on a worker,
and DDL (the key's unique index replaced and restored, the changes table renamed and back, the
table renamed, a column the inserts view shows changed or dropped, guards disabled, TRUNCATE,
alter_distributed_table, shard moves, the layout dropped and made again). After each step it looks up fingerprints of rows and near them, through
the routed layout and on every shard's own scan (FROM ONLY), and counts every difference.

PASS: no lookup differs, no internal error (XX000), no node restarts, and at least one lookup in
five read the routes (so the test tests them). Usage:
  invariant.py --coordinator DSN --worker DSN [--steps N] [--seed S] [--log FILE]
"""
import argparse
import random
import sys
import time

import psycopg

TABLE = "inv"
# Refusals a step may meet: the layout's own (55000 refused write, 25001), a key taken (23505),
# what Citus does not do (0A000, 42P01 after a rename raced, 42704), lock conflicts.
EXPECTED = {"55000", "25001", "23505", "0A000", "40001", "40P01", "55P03", "57014", "42P07", "42704", "42P01", "23502"}


class Failure(Exception):
    pass


REFUSED = object()  # what Run.sql returns for a statement refused with an expected SQLSTATE


def connect(dsn):
    conn = psycopg.connect(dsn, autocommit=True, options="-c session_preload_libraries=simhash_pg -c client_min_messages=warning")
    return conn


def server_epoch(conn):
    # The checkpointer's start: a postmaster that reinitializes after a crash keeps
    # pg_postmaster_start_time() (tests/hostile/server_epoch.py).
    return conn.execute("SELECT backend_start FROM pg_stat_activity WHERE backend_type = 'checkpointer'").fetchone()[0]


class Run:
    def __init__(self, args):
        self.rng = random.Random(args.seed)
        self.args = args
        self.coord = connect(args.coordinator)
        self.worker = connect(args.worker)
        self.epochs = (server_epoch(self.coord), server_epoch(self.worker))
        self.next_id = 100000
        self.counts = {}
        self.errors = {}
        self.lookups = 0
        self.routed_lookups = 0
        self.mismatches = 0
        self.log = open(args.log, "w") if args.log else None

    def note(self, text):
        if self.log:
            self.log.write(text + "\n")

    def fp(self):
        return "%016x" % self.rng.getrandbits(64)

    def new_id(self):
        self.next_id += 1
        return self.next_id

    def sql(self, conn, stmt, params=None, step="?"):
        try:
            cur = conn.execute(stmt, params)
            return cur.fetchall() if cur.description else None
        except psycopg.Error as e:
            state = e.sqlstate or "conn"
            if state == "XX000" or state not in EXPECTED:
                raise Failure(f"{step}: {state} {e}: {stmt}")
            self.errors[state] = self.errors.get(state, 0) + 1
            self.note(f"  {step}: {state} {str(e).splitlines()[0]}")
            return REFUSED

    def existing(self, n=1):
        rows = self.coord.execute(
            f"SELECT id, fp::text FROM ONLY {TABLE} WHERE fp IS NOT NULL ORDER BY random() LIMIT %s", (n,)).fetchall()
        return rows

    # ---- steps ----
    def step_insert(self):
        self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) VALUES (%s, %s)", (self.new_id(), self.fp()), "insert")

    def step_insert_many(self):
        values = ", ".join(f"({self.new_id()}, '{self.fp()}')" for _ in range(self.rng.randint(2, 20)))
        self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) VALUES {values}", None, "insert_many")

    def step_insert_near(self):
        # A row near an existing one: the lookups find both.
        rows = self.existing()
        if rows:
            fp = int(rows[0][1], 16) ^ (1 << self.rng.randrange(64))
            self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) VALUES (%s, %s)", (self.new_id(), "%016x" % fp), "insert_near")

    def step_insert_select(self):
        base = self.new_id()
        self.next_id += 30
        self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) SELECT {base} + g, hashint8extended({base} + g, 3)::simhash64 "
                             f"FROM generate_series(1, 30) g", None, "insert_select")

    def step_copy(self):
        try:
            with self.coord.cursor().copy(f"COPY {TABLE} (id, fp) FROM STDIN") as copy:
                for _ in range(self.rng.randint(1, 15)):
                    copy.write_row((self.new_id(), self.fp()))
        except psycopg.Error as e:
            if e.sqlstate == "XX000" or e.sqlstate not in EXPECTED:
                raise Failure(f"copy: {e.sqlstate} {e}")
            self.errors[e.sqlstate] = self.errors.get(e.sqlstate, 0) + 1

    def step_view_insert(self):
        self.sql(self.coord, f"INSERT INTO {TABLE}_inserts (id, fp) VALUES (%s, %s)", (self.new_id(), self.fp()), "view_insert")

    def step_ingest(self):
        ids = [self.new_id() for _ in range(self.rng.randint(1, 10))]
        values = ", ".join(f"({i}::int8, 0, '{self.fp()}'::simhash64)" for i in ids)
        self.sql(self.coord, "DROP TABLE IF EXISTS pg_temp.inv_batch")
        self.sql(self.coord, f"CREATE TEMP TABLE inv_batch (id, v, fp) AS VALUES {values}")
        self.sql(self.coord, f"SELECT count(*) FROM simhash_ingest('{TABLE}', 'fp', 'inv_batch', {self.rng.choice([0, 3])})",
                 None, "ingest")

    def step_update_fp(self):
        for row_id, _ in self.existing(self.rng.randint(1, 5)):
            self.sql(self.coord, f"UPDATE {TABLE} SET fp = %s WHERE id = %s", (self.fp(), row_id), "update_fp")

    def step_update_other(self):
        for row_id, _ in self.existing():
            self.sql(self.coord, f"UPDATE {TABLE} SET v = v + 1 WHERE id = %s", (row_id,), "update_other")

    def step_update_many(self):
        self.sql(self.coord, f"UPDATE {TABLE} SET fp = hashint8extended(id, %s)::simhash64 WHERE id %% 97 = %s",
                 (self.rng.randrange(1000), self.rng.randrange(97)), "update_many")

    def step_delete(self):
        for row_id, _ in self.existing(self.rng.randint(1, 5)):
            self.sql(self.coord, f"DELETE FROM {TABLE} WHERE id = %s", (row_id,), "delete")

    def step_upsert(self):
        rows = self.existing()
        row_id = rows[0][0] if rows and self.rng.random() < 0.7 else self.new_id()
        self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET fp = excluded.fp",
                 (row_id, self.fp()), "upsert")

    def step_cte(self):
        rows = self.existing()
        if rows:
            self.sql(self.coord, f"WITH d AS (DELETE FROM {TABLE} WHERE id = %s RETURNING id) "
                                 f"INSERT INTO {TABLE} (id, fp) SELECT %s, %s FROM d", (rows[0][0], self.new_id(), self.fp()), "cte")

    def step_rollback(self):
        with self.coord.transaction(force_rollback=True):
            self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) VALUES (%s, %s)", (self.new_id(), self.fp()), "rollback")
            for row_id, _ in self.existing():
                self.sql(self.coord, f"UPDATE {TABLE} SET fp = %s WHERE id = %s", (self.fp(), row_id), "rollback")

    def step_terminated(self):
        # A writer cut off mid-transaction: its changes must vanish with it.
        victim = connect(self.args.coordinator)
        try:
            victim.execute("BEGIN")
            victim.execute(f"INSERT INTO {TABLE} (id, fp) VALUES (%s, %s)", (self.new_id(), self.fp()))
            pid = victim.info.backend_pid
            self.coord.execute("SELECT pg_terminate_backend(%s)", (pid,))
        except psycopg.Error as e:
            if e.sqlstate == "XX000":
                raise Failure(f"terminated: {e}")
        finally:
            try:
                victim.close()
            except psycopg.Error:
                pass

    def step_worker_write(self):
        kind = self.rng.choice(["insert", "update", "delete", "update_other"])
        rows = self.existing()
        if kind == "insert" or not rows:
            self.sql(self.worker, f"INSERT INTO {TABLE} (id, fp) VALUES (%s, %s)", (self.new_id(), self.fp()), "worker_insert")
        elif kind == "update":
            self.sql(self.worker, f"UPDATE {TABLE} SET fp = %s WHERE id = %s", (self.fp(), rows[0][0]), "worker_update")
        elif kind == "delete":
            self.sql(self.worker, f"DELETE FROM {TABLE} WHERE id = %s", (rows[0][0],), "worker_delete")
        else:
            self.sql(self.worker, f"UPDATE {TABLE} SET v = v + 1 WHERE id = %s", (rows[0][0],), "worker_update_other")

    def step_key_replaced(self):
        # The key's unique index replaced by one on more columns, some writes, then restored.
        # (Citus takes ADD CONSTRAINT alone in its ALTER TABLE.)
        if self.sql(self.coord, f"ALTER TABLE {TABLE} DROP CONSTRAINT {TABLE}_pkey", None, "key_dropped") is REFUSED:
            return
        self.step_insert()
        self.check("key dropped")
        self.sql(self.coord, f"ALTER TABLE {TABLE} ADD PRIMARY KEY (id, v)", None, "key_replaced")
        for _ in range(3):
            self.step_insert()
            self.step_update_fp()
            self.step_delete()
            self.check("key replaced")
        self.sql(self.coord, f"ALTER TABLE {TABLE} DROP CONSTRAINT {TABLE}_pkey", None, "key_dropped")
        self.sql(self.coord, f"ALTER TABLE {TABLE} ADD PRIMARY KEY (id)", None, "key_restored")

    def step_changes_renamed(self):
        self.sql(self.coord, f"ALTER TABLE {TABLE}_fp_changes RENAME TO {TABLE}_elsewhere", None, "changes_renamed")
        self.step_insert()
        self.step_delete()
        self.check("changes renamed")
        self.sql(self.coord, f"ALTER TABLE {TABLE}_elsewhere RENAME TO {TABLE}_fp_changes", None, "changes_back")

    def step_trigger_disabled(self):
        # Refused (55000): writes meanwhile would have no routes.
        which = self.rng.choice(["_simhash_routed", "_simhash_routed_update", "_simhash_routed_delete", "ALL", "USER"])
        self.sql(self.coord, "SET citus.enable_unsafe_triggers = on")
        how = "DISABLE" if which in ("ALL", "USER") else self.rng.choice(["DISABLE", "ENABLE REPLICA"])
        self.sql(self.coord, f"ALTER TABLE {TABLE} {how} TRIGGER {which}", None, "trigger_disabled")
        self.step_insert()
        self.step_update_fp()
        self.step_delete()
        self.check("trigger disabled")
        self.sql(self.coord, f"ALTER TABLE {TABLE} ENABLE TRIGGER {which}", None, "trigger_enabled")
        self.sql(self.coord, "RESET citus.enable_unsafe_triggers")

    def step_replica_role(self):
        # The guard does not fire under session_replication_role = replica: writes are refused.
        self.sql(self.coord, "SET session_replication_role = replica")
        self.step_insert()
        self.step_update_fp()
        self.sql(self.coord, "RESET session_replication_role")

    def step_truncate(self):
        if self.rng.random() < 0.3:
            self.sql(self.coord, f"TRUNCATE {TABLE}", None, "truncate")
            self.load(200)

    def step_move(self):
        shard = self.coord.execute(
            "SELECT s.shardid, p.nodename, p.nodeport FROM pg_dist_shard s JOIN pg_dist_placement pl USING (shardid) "
            "JOIN pg_dist_node p ON p.groupid = pl.groupid WHERE s.logicalrelid = %s::regclass AND p.groupid <> 0 "
            "ORDER BY random() LIMIT 1", (TABLE,)).fetchone()
        if not shard:
            return
        target = self.coord.execute(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND isactive AND shouldhaveshards "
            "AND (nodename, nodeport) <> (%s, %s) ORDER BY random() LIMIT 1", (shard[1], shard[2])).fetchone()
        if target:
            self.sql(self.coord, "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')",
                     (shard[0], shard[1], shard[2], target[0], target[1]), "move")

    def step_convert(self):
        self.sql(self.coord, "SET citus.enable_unsafe_triggers = on")
        # A count other than the table's (Citus raises XX000 for a call that changes nothing).
        now = self.coord.execute("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = %s::regclass", (TABLE,)).fetchone()[0]
        shards = self.rng.choice([n for n in (2, 4, 6) if n != now])
        self.sql(self.coord, f"SELECT alter_distributed_table('{TABLE}', shard_count := {shards}, cascade_to_colocated := true)",
                 None, "convert")
        self.sql(self.coord, "RESET citus.enable_unsafe_triggers")
        self.step_insert()
        self.check("converted")
        self.remake()

    def step_remake(self):
        self.remake()

    def step_create_again(self):
        self.sql(self.coord, f"SELECT simhash_create_index('{TABLE}', 'fp', routed => true)", None, "create_again")

    def step_table_renamed(self):
        self.sql(self.coord, f"ALTER TABLE {TABLE} RENAME TO {TABLE}_renamed", None, "table_renamed")
        self.sql(self.coord, f"INSERT INTO {TABLE}_renamed (id, fp) VALUES (%s, %s)", (self.new_id(), self.fp()), "insert_renamed")
        self.sql(self.coord, f"ALTER TABLE {TABLE}_renamed RENAME TO {TABLE}", None, "table_back")

    def step_column_changed(self):
        # ALTER COLUMN TYPE or DROP COLUMN of a column the inserts view shows: the view is set
        # aside and made again (src/routed_ddl.rs); writes through it go on.
        if self.rng.random() < 0.5:
            self.sql(self.coord, f"ALTER TABLE {TABLE} ALTER COLUMN v TYPE {self.rng.choice(['int4', 'int8'])}", None, "column_type")
        else:
            self.sql(self.coord, f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS note", None, "column_drop")
            self.sql(self.coord, f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS note text", None, "column_add")
        self.step_view_insert()

    def step_vacuum(self):
        self.sql(self.coord, f"VACUUM {TABLE}", None, "vacuum")

    def remake(self):
        self.sql(self.coord, f"SELECT simhash_drop_index('{TABLE}', 'fp')", None, "drop_layout")
        self.sql(self.coord, f"SELECT simhash_create_index('{TABLE}', 'fp', routed => true)", None, "make_layout")

    def load(self, n):
        base = self.next_id
        self.next_id += n
        self.sql(self.coord, f"INSERT INTO {TABLE} (id, fp) SELECT {base} + g, hashint8extended({base} + g, 1)::simhash64 "
                             f"FROM generate_series(1, {n}) g", None, "load")

    # ---- the check ----
    def check(self, after):
        probes = [(r[1], self.rng.choice([0, 3, 3, 7])) for r in self.existing(2)]
        probes.append((self.fp(), self.rng.choice([3, 10])))
        for fp, k in probes:
            # fp is a hex string of this script's: a literal, as users write it.
            spelling = self.rng.choice(["simhash_near(fp, '{q}', {k})", "fp <-> '{q}' <= {k}"]).format(q=fp, k=k)
            plan = self.coord.execute(f"EXPLAIN (COSTS OFF) SELECT id FROM {TABLE} WHERE {spelling}").fetchall()
            routed = any("_simhash_routed_lookup" in line[0] for line in plan)
            got = self.coord.execute(f"SELECT array_agg(id ORDER BY id) FROM {TABLE} WHERE {spelling}").fetchone()[0]
            want = self.coord.execute(f"SELECT array_agg(id ORDER BY id) FROM ONLY {TABLE} "
                                      f"WHERE (fp <-> '{fp}'::simhash64) <= {k}").fetchone()[0]
            self.lookups += 1
            self.routed_lookups += routed
            if got != want:
                self.mismatches += 1
                self.note(f"MISMATCH after {after}: {spelling} q={fp} routed={routed} got={got} want={want}")
                print(f"mismatch after {after}: {spelling} q={fp} routed={routed}: {len(got or [])} rows, brute force {len(want or [])}")

    def setup(self):
        c = self.coord
        c.execute("CREATE EXTENSION IF NOT EXISTS simhash_pg")
        c.execute(f"DROP TABLE IF EXISTS {TABLE}, {TABLE}_renamed CASCADE")
        c.execute(f"DROP TABLE IF EXISTS {TABLE}_fp_routes, {TABLE}_fp_changes, {TABLE}_elsewhere CASCADE")
        c.execute(f"CREATE TABLE {TABLE} (id int8 PRIMARY KEY, v int4 NOT NULL DEFAULT 0, note text, fp simhash64)")
        c.execute(f"SELECT create_distributed_table('{TABLE}', 'id', shard_count => 4)")
        self.load(2000)
        c.execute(f"SELECT simhash_create_index('{TABLE}', 'fp', routed => true)")

    STEPS = [
        ("insert", 12), ("insert_many", 5), ("insert_near", 6), ("insert_select", 3), ("copy", 4), ("view_insert", 5),
        ("ingest", 4), ("update_fp", 10), ("update_other", 4), ("update_many", 2), ("delete", 8), ("upsert", 5),
        ("cte", 3), ("rollback", 4), ("terminated", 2), ("worker_write", 8), ("key_replaced", 1),
        ("changes_renamed", 1), ("trigger_disabled", 1), ("replica_role", 1), ("truncate", 1), ("move", 1), ("convert", 0.3),
        ("remake", 0.5), ("create_again", 0.5), ("table_renamed", 1), ("column_changed", 1), ("vacuum", 1),
    ]

    def run(self):
        self.setup()
        names = [n for n, _ in self.STEPS]
        weights = [w for _, w in self.STEPS]
        started = time.monotonic()
        for i in range(self.args.steps):
            name = self.rng.choices(names, weights)[0]
            self.note(f"{i}: {name}")
            getattr(self, "step_" + name)()
            self.counts[name] = self.counts.get(name, 0) + 1
            self.check(name)
            if self.args.seconds and time.monotonic() - started > self.args.seconds:
                print(f"stopped after {i + 1} steps at the {self.args.seconds} s limit")
                break
        took = time.monotonic() - started
        restarted = (server_epoch(self.coord), server_epoch(self.worker)) != self.epochs
        steps = sum(self.counts.values())
        print(f"invariant: {steps} steps in {took:.0f} s, {self.lookups} lookups ({self.routed_lookups} read the routes), "
              f"{self.mismatches} differ from every shard's own scan; refusals and conflicts: "
              + (", ".join(f"{k} {v}" for k, v in sorted(self.errors.items())) or "none"))
        print("  steps: " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())))
        ok = self.mismatches == 0 and not restarted and self.routed_lookups * 5 >= self.lookups
        if restarted:
            print("a node restarted")
        if self.routed_lookups * 5 < self.lookups:
            print("fewer than one lookup in five read the routes")
        return ok


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coordinator", required=True)
    p.add_argument("--worker", required=True)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seconds", type=float, default=0)
    p.add_argument("--log")
    args = p.parse_args()
    run = Run(args)
    try:
        ok = run.run()
    except Failure as e:
        print(f"invariant: FAIL: {e}")
        sys.exit(1)
    print("invariant: PASS" if ok else "invariant: FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
