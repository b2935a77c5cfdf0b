"""A dedup load with the Python package: texts fingerprinted in worker processes, near-copies
within each batch dropped on the client, the rest sent with binary COPY and loaded with
simhash_ingest, which skips what is near a row already in the table. The server computes no
fingerprint. Run from python/'s virtualenv (python/test.sh makes one) against a database with the
extension:

    python examples/etl_python.py texts.txt --dsn "dbname=simhash_example" --k 7

texts.txt holds one text a line. The table (docs by default) is made on first use, with the
block indexes for k; the options must be the ones every fingerprint of its column was made with.

Dropping a batch's near-copies before the table is asked keeps a little less than
simhash_ingest alone would: a row B near only an earlier row A that is itself near a row already
in the table is dropped here (A stayed in the batch) where simhash_ingest would keep B (A is
skipped, so it drops nothing). Either way no two rows of the table are within k bits.
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


def load_batch(conn, pool, texts, table, k, options, next_id, workers):
    """One batch: fingerprints from the workers, the batch's near-copies dropped, the rest sent
    by binary COPY into the temporary table staging and ingested into table. Returns (inserted,
    skipped by simhash_ingest, dropped here, the next free id)."""
    parts = list(pool.map(fingerprints, [texts[i::workers] for i in range(workers)], [options] * workers))
    fps = [None] * len(texts)
    for i, part in enumerate(parts):
        fps[i::workers] = part
    keep = simhash_pg.keep_first_of_near(fps, k)
    with conn.cursor() as cur:
        with cur.copy("COPY staging (id, body, fp) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "text", "simhash64"])
            for text, fp, stays in zip(texts, fps, keep):
                if stays:
                    copy.write_row((next_id, text, simhash_pg.Fingerprint(fp)))
                    next_id += 1
        inserted, skipped = cur.execute("SELECT inserted, skipped FROM simhash_ingest(%s, 'fp', 'staging', %s)",
                                        (table, k)).fetchone()
        cur.execute("TRUNCATE staging")
    return inserted, skipped, len(texts) - sum(keep), next_id


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
