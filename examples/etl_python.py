"""A dedup load with the Python package: texts fingerprinted in worker processes, near-copies
dropped, the rest sent with binary COPY. The server computes no fingerprint. Run from python/'s
virtualenv (python/test.sh makes one) against a database with the extension:

    python examples/etl_python.py texts.txt --dsn "dbname=simhash_example" --k 7 [--check client]

texts.txt holds one text a line. The table (docs by default) is made on first use, with the
block indexes for k; the options must be the ones every fingerprint of its column was made with.

Two ways to check against the rows already in the table:

--check server (the default): each batch's near-copies are dropped on the client, the rest go to
    a staging table and simhash_ingest skips what is near a row of the table. Other writers may
    load at the same time, and each batch commits on its own. Dropping a batch's near-copies
    before the table is asked keeps a little less than simhash_ingest alone would: a row B near
    only an earlier row A that is itself near a row already in the table is dropped here (A
    stayed in the batch) where simhash_ingest would keep B (A is skipped, so it drops nothing).

--check client: the whole load is one transaction that locks the table against other writers
    (SHARE ROW EXCLUSIVE: readers go on, writers wait until it commits), reads its fingerprints
    once into a simhash_pg.NearIndex, and COPYs each batch's rows that stay straight into the
    table. The rule is simhash_ingest's, applied to the whole load; the server only inserts, so
    it spends a fraction of the CPU (BENCHMARKS.md). The client holds about 100 bytes a row of
    the table (150 at peak).

Either way no two rows of the table are within k bits.
"""
import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor

import psycopg

import simhash_pg
import simhash_pg.psycopg

OPTIONS = {"weighting": "tf"}  # docs/text.md, Choosing k and the options


def fingerprints(texts, options):
    """A worker's share: one call for the whole chunk (the GIL is released inside)."""
    return [fp.unsigned for fp in simhash_pg.simhash_many(texts, options)]


def worker_fingerprints(pool, texts, options, workers):
    """The texts' fingerprints (unsigned ints), in order, made by the worker processes."""
    parts = list(pool.map(fingerprints, [texts[i::workers] for i in range(workers)], [options] * workers))
    fps = [None] * len(texts)
    for i, part in enumerate(parts):
        fps[i::workers] = part
    return fps


def copy_rows(cur, target, texts, fps, keep, next_id):
    """Binary COPY of the rows that stay into target (id, body, fp); returns the next free id."""
    with cur.copy(psycopg.sql.SQL("COPY {} (id, body, fp) FROM STDIN (FORMAT BINARY)").format(target)) as copy:
        copy.set_types(["int8", "text", "simhash64"])
        for text, fp, stays in zip(texts, fps, keep):
            if stays:
                copy.write_row((next_id, text, simhash_pg.Fingerprint(fp)))
                next_id += 1
    return next_id


def load_batch(conn, pool, texts, table, k, options, next_id, workers):
    """--check server, one batch: fingerprints from the workers, the batch's near-copies dropped,
    the rest sent by binary COPY into the temporary table staging and ingested into table.
    Returns (inserted, skipped by simhash_ingest, dropped here, the next free id)."""
    fps = worker_fingerprints(pool, texts, options, workers)
    keep = simhash_pg.keep_first_of_near(fps, k)
    with conn.cursor() as cur:
        next_id = copy_rows(cur, psycopg.sql.Identifier("staging"), texts, fps, keep, next_id)
        inserted, skipped = cur.execute("SELECT inserted, skipped FROM simhash_ingest(%s, 'fp', 'staging', %s)",
                                        (table, k)).fetchone()
        cur.execute("TRUNCATE staging")
    return inserted, skipped, len(texts) - sum(keep), next_id


def load_client_checked(conn, pool, text_batches, table, k, options, workers):
    """--check client: every batch in one transaction holding SHARE ROW EXCLUSIVE on table, so
    that no other writer adds a row while the client's copy of its fingerprints decides. Returns
    (rows read, inserted)."""
    target = psycopg.sql.Identifier(table)
    read = inserted = 0
    with conn.transaction(), conn.cursor() as cur:
        cur.execute(psycopg.sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(target))
        index = simhash_pg.NearIndex(k)
        with cur.copy(psycopg.sql.SQL("COPY (SELECT fp FROM {} WHERE fp IS NOT NULL) TO STDOUT (FORMAT BINARY)")
                      .format(target)) as copy:
            copy.set_types(["simhash64"])
            index.extend(row[0] for row in copy.rows())
        next_id = cur.execute(psycopg.sql.SQL("SELECT coalesce(max(id), 0) + 1 FROM {}").format(target)).fetchone()[0]
        for texts in text_batches:
            fps = worker_fingerprints(pool, texts, options, workers)
            keep = index.keep_new(fps)
            next_id = copy_rows(cur, target, texts, fps, keep, next_id)
            read += len(texts)
            inserted += sum(keep)
    return read, inserted


def batches(path, size):
    with open(path, encoding="utf-8") as f:
        batch = []
        for line in f:
            batch.append(line.rstrip("\n"))
            if len(batch) == size:
                yield batch
                batch = []
        if batch:
            yield batch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("texts")
    ap.add_argument("--dsn", default="dbname=simhash_example")
    ap.add_argument("--table", default="docs")
    ap.add_argument("--k", type=int, default=7)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=20000)
    ap.add_argument("--options", default=json.dumps(OPTIONS))
    ap.add_argument("--check", choices=("server", "client"), default="server",
                    help="where rows are checked against the table: simhash_ingest, or a NearIndex under a table lock")
    args = ap.parse_args()
    options = json.loads(args.options)
    started = time.time()
    read = dropped_here = inserted = skipped = 0
    with psycopg.connect(args.dsn, autocommit=True) as conn, ProcessPoolExecutor(args.workers) as pool:
        simhash_pg.psycopg.register(conn)
        conn.execute(psycopg.sql.SQL("CREATE TABLE IF NOT EXISTS {} (id int8 PRIMARY KEY, body text, fp simhash64)")
                     .format(psycopg.sql.Identifier(args.table)))
        if not conn.execute("SELECT count(*) FROM simhash_block_columns(%s::regclass)", (args.table,)).fetchone()[0]:
            conn.execute("SELECT simhash_create_index(%s, 'fp', max_k => %s)", (args.table, args.k))
        if args.check == "client":
            read, inserted = load_client_checked(conn, pool, batches(args.texts, args.batch), args.table, args.k, options,
                                                 args.workers)
            print(f"read {read} texts; {read - inserted} near a row of {args.table} or an earlier text, "
                  f"checked by the client; inserted {inserted} in {time.time() - started:.1f} s")
            return
        conn.execute("CREATE TEMP TABLE staging (id int8, body text, fp simhash64)")
        next_id = conn.execute(psycopg.sql.SQL("SELECT coalesce(max(id), 0) + 1 FROM {}")
                               .format(psycopg.sql.Identifier(args.table))).fetchone()[0]
        for texts in batches(args.texts, args.batch):
            ins, skip, dropped, next_id = load_batch(conn, pool, texts, args.table, args.k, options, next_id, args.workers)
            read += len(texts)
            dropped_here += dropped
            inserted += ins
            skipped += skip
    print(f"read {read} texts; {dropped_here} near-copies dropped within their batch by the workers, "
          f"{skipped} near rows already in {args.table}; inserted {inserted} in {time.time() - started:.1f} s")

if __name__ == "__main__":
    main()
