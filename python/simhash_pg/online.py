"""Block layouts built and dropped on a table that keeps taking writes, with psycopg 3: the
statements of the extension's ``simhash_index_statements`` (or ``simhash_drop_index_statements``)
run one by one in autocommit, with the progress of each index build from
``pg_stat_progress_create_index``.

    import psycopg, simhash_pg.online
    conn = psycopg.connect(..., autocommit=True)
    simhash_pg.online.build(conn, "docs", "fp", max_k=7)

Run again after a failure (an error, a cancel, a lost connection), it goes on from where it
stopped: the server returns only what is left, and an index a failed build left invalid is
dropped and made again. ``clean`` drops those invalid indexes alone, without going on. From a
shell::

    python -m simhash_pg.online "dbname=crawl" docs fp --max-k 7
    python -m simhash_pg.online "dbname=crawl" docs fp --clean
    python -m simhash_pg.online "dbname=crawl" docs fp --drop

``refingerprint`` moves a table to new fingerprint options while writers go on: a new column
that fill triggers keep equal to ``simhash(text, options)``, filled for the rows already there by
``CALL simhash_backfill`` (batches that commit one by one), then its layout, online::

    simhash_pg.online.refingerprint(conn, "docs", "body", "fp2", '{"weighting": "tf"}', max_k=3)
    python -m simhash_pg.online "dbname=crawl" docs fp2 --from-text body --options '{"weighting": "tf"}' --max-k 3
"""
import json
import argparse
import sys
import threading

import psycopg
from psycopg import sql

_OPTIONS = ("max_k", "blocks", "covering", "permuted", "expected_rows", "key_blocks")

_PROGRESS = """SELECT p.phase, p.blocks_done, p.blocks_total, p.tuples_done, p.tuples_total
  FROM pg_stat_progress_create_index p WHERE p.pid = %s"""


def statements(conn, table, column, drop=False, **options):
    """The statements left to run, in order: of ``simhash_index_statements(table, column,
    options...)``, or with ``drop`` of ``simhash_drop_index_statements(table, column)``."""
    unknown = set(options) - set(_OPTIONS)
    if unknown:
        raise TypeError(f"unknown options: {', '.join(sorted(unknown))}")
    if drop:
        if options:
            raise TypeError("drop takes no options")
        query = sql.SQL("SELECT simhash_drop_index_statements(%s::regclass, %s)")
    else:
        query = sql.SQL("SELECT simhash_index_statements(%s::regclass, %s{})").format(
            sql.SQL("").join(sql.SQL(", {} => %s").format(sql.Identifier(k)) for k in options))
    with conn.cursor() as cur:
        return [r[0] for r in cur.execute(query, [table, column, *options.values()]).fetchall()]


def run(conn, stmts, progress=None, interval=2.0):
    """Runs each statement in autocommit (CREATE INDEX CONCURRENTLY cannot run in a transaction
    block). While one builds an index, ``progress(statement, row)`` is called every ``interval``
    seconds with its row of pg_stat_progress_create_index (phase, blocks_done, blocks_total,
    tuples_done, tuples_total), read on a second connection; and ``progress(statement, None)``
    before each statement. Returns how many ran."""
    if not conn.autocommit:
        raise psycopg.ProgrammingError("the connection must be in autocommit: CREATE INDEX CONCURRENTLY cannot run in a transaction block")
    pid = conn.info.backend_pid
    watcher = psycopg.connect(conn.info.dsn, autocommit=True) if progress else None
    try:
        for n, stmt in enumerate(stmts):
            if progress:
                progress(stmt, None)
            done = threading.Event()
            thread = None
            if progress and stmt.startswith("CREATE INDEX"):
                def watch(stmt=stmt, done=done):
                    while not done.wait(interval):
                        row = watcher.execute(_PROGRESS, [pid]).fetchone()
                        if row:
                            progress(stmt, row)
                thread = threading.Thread(target=watch, daemon=True)
                thread.start()
            try:
                conn.execute(stmt)
            finally:
                done.set()
                if thread:
                    thread.join()
        return len(stmts)
    finally:
        if watcher:
            watcher.close()


def build(conn, table, column, progress=None, **options):
    """Builds the layout ``simhash_create_index(table, column, options...)`` would build, online;
    returns how many statements ran (0: nothing was left to do)."""
    return run(conn, statements(conn, table, column, **options), progress)


def drop(conn, table, column, progress=None):
    """Drops the block layouts of ``column`` online (``simhash_drop_index_statements``)."""
    return run(conn, statements(conn, table, column, drop=True), progress)


def refingerprint(conn, table, text_column, new_column, options=None, batch_rows=10000, progress=None, **layout):
    """Adds ``new_column`` = simhash(``text_column``, ``options``) to ``table`` and fills it while
    writers go on (``simhash_refingerprint_statements``: the column, its fill triggers, ``CALL
    simhash_backfill``), then builds its layout online (``layout``: simhash_create_index's
    options). Run again after a failure, it goes on. Returns how many statements ran."""
    if isinstance(options, dict):
        options = json.dumps(options)
    with conn.cursor() as cur:
        stmts = [r[0] for r in cur.execute(
            "SELECT simhash_refingerprint_statements(%s::regclass, %s, %s, %s::jsonb, batch_rows => %s)",
            [table, text_column, new_column, options, batch_rows]).fetchall()]
    n = run(conn, stmts, progress)
    return n + run(conn, statements(conn, table, new_column, **layout), progress)


def _invalid_drops(stmts):
    """The statements among `stmts` that drop an index a failed build left invalid."""
    return [s for s in stmts if s.startswith("DROP INDEX CONCURRENTLY IF EXISTS")]


def clean(conn, table, column, progress=None, **options):
    """Drops the indexes a failed online build left invalid, and nothing else."""
    return run(conn, _invalid_drops(statements(conn, table, column, **options)), progress)


def _print_progress(stmt, row):
    if row is None:
        print(stmt, flush=True)
    else:
        phase, blocks_done, blocks_total, tuples_done, tuples_total = row
        done = f"{blocks_done:,} of {blocks_total:,} blocks" if blocks_total else f"{tuples_done:,} of {tuples_total:,} tuples"
        print(f"  {phase}: {done}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m simhash_pg.online", description=__doc__.split("\n\n")[0])
    ap.add_argument("dsn", help="libpq connection string")
    ap.add_argument("table")
    ap.add_argument("column")
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--drop", action="store_true", help="drop the layouts of the column instead")
    what.add_argument("--clean", action="store_true", help="only drop the indexes a failed build left invalid")
    what.add_argument("--dry-run", action="store_true", help="print the statements, run nothing")
    what.add_argument("--from-text", metavar="TEXT_COLUMN",
                      help="make COLUMN anew: simhash(TEXT_COLUMN, --options) kept by triggers, backfilled, then indexed")
    ap.add_argument("--options", help="with --from-text: the fingerprint options, as JSON")
    ap.add_argument("--batch-rows", type=int, default=10000, help="with --from-text: rows per backfill batch")
    ap.add_argument("--max-k", type=int)
    ap.add_argument("--blocks", type=int)
    ap.add_argument("--permuted", choices=("true", "false"))
    ap.add_argument("--expected-rows", type=float)
    ap.add_argument("--key-blocks", type=int)
    args = ap.parse_args(argv)
    options = {k: v for k, v in (("max_k", args.max_k), ("blocks", args.blocks), ("expected_rows", args.expected_rows),
                                 ("key_blocks", args.key_blocks),
                                 ("permuted", None if args.permuted is None else args.permuted == "true")) if v is not None}
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda d: print(f"{d.severity}: {d.message_primary}", file=sys.stderr, flush=True))
        if args.from_text:
            n = refingerprint(conn, args.table, args.from_text, args.column, args.options, args.batch_rows,
                              _print_progress, **options)
            print(f"{n} statement(s) run", file=sys.stderr)
            return 0
        stmts = statements(conn, args.table, args.column, drop=args.drop, **({} if args.drop else options))
        if args.clean:
            stmts = _invalid_drops(stmts)
        if args.dry_run:
            print("\n".join(stmts))
            return 0
        n = run(conn, stmts, _print_progress)
        print(f"{n} statement(s) run" if n else "nothing left to do", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
