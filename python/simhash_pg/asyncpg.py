"""asyncpg codec for simhash64: ``await register(conn)`` and then Fingerprint values go to the
server as simhash64 in binary, simhash64 and simhash64[] columns come back as Fingerprint
values, and ``copy_records_to_table`` sends fingerprints in binary COPY.

    import asyncpg, simhash_pg.asyncpg
    conn = await asyncpg.connect(...)
    await simhash_pg.asyncpg.register(conn)
    await conn.fetch("SELECT id FROM docs WHERE simhash_near(fp, $1, 7)", fp)

For a pool: ``asyncpg.create_pool(..., init=simhash_pg.asyncpg.register)``.
"""
from . import TYPE_QUERY, Fingerprint, _fp


def _encode(value):
    return bytes(_fp(value))


def _decode(data):
    return Fingerprint(data)


async def register(conn):
    """Sets the binary codec of the extension's simhash64 on an asyncpg connection (arrays of it
    follow). Values to send may be Fingerprint, int or hex text."""
    row = await conn.fetchrow(TYPE_QUERY)
    if row is None:
        raise RuntimeError("extension simhash_pg is not installed in this database (CREATE EXTENSION simhash_pg)")
    await conn.set_type_codec(row["typname"], schema=row["nspname"], encoder=_encode, decoder=_decode, format="binary")
