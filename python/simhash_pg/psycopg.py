"""psycopg 3 adapters for simhash64: ``register(conn)`` and then Fingerprint values go to the server
as simhash64 (text or binary, arrays as simhash64[]) and simhash64 and simhash64[] columns come
back as Fingerprint values, binary COPY included.

    import psycopg, simhash_pg.psycopg
    conn = psycopg.connect(...)
    simhash_pg.psycopg.register(conn)
    conn.execute("SELECT id FROM docs WHERE simhash_near(fp, %s, 7)", [fp])

For an AsyncConnection: ``await simhash_pg.psycopg.register_async(aconn)``.
"""
import psycopg
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from . import TYPE_QUERY, Fingerprint


def type_info(conn):
    """The TypeInfo of the extension's simhash64 in the database `conn` is connected to."""
    # In a transaction block of its own (a savepoint inside an open one), as psycopg's own
    # TypeInfo.fetch: no transaction is left open on a connection that is not in autocommit.
    with conn.transaction():
        row = conn.execute(TYPE_QUERY).fetchone()
    return _info(row)


async def type_info_async(conn):
    """``type_info`` on an AsyncConnection."""
    async with conn.transaction():
        cur = await conn.execute(TYPE_QUERY)
        row = await cur.fetchone()
    return _info(row)


def _info(row):
    if row is None:
        raise psycopg.ProgrammingError("extension simhash_pg is not installed in this database (CREATE EXTENSION simhash_pg)")
    name, oid, array_oid, _ = row
    return TypeInfo(name, oid, array_oid)


class _TextDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj):
        return str(obj).encode()


class _BinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj):
        return bytes(obj)


class _TextLoader(Loader):
    format = Format.TEXT

    def load(self, data):
        return Fingerprint(bytes(data).decode())


class _BinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data):
        return Fingerprint(bytes(data))


def register(context, info=None):
    """Registers the simhash64 adapters on a connection or cursor (or, with `info` from
    ``type_info``, on any adapters context, such as ``psycopg.adapters``)."""
    if info is None:
        conn = context if isinstance(context, psycopg.Connection) else context.connection
        info = type_info(conn)
    info.register(context)  # simhash64[] as a list of the element type
    adapters = context.adapters
    text = type("SimHash64TextDumper", (_TextDumper,), {"oid": info.oid})
    binary = type("SimHash64BinaryDumper", (_BinaryDumper,), {"oid": info.oid})
    adapters.register_dumper(Fingerprint, text)
    adapters.register_dumper(Fingerprint, binary)
    adapters.register_loader(info.oid, _TextLoader)
    adapters.register_loader(info.oid, _BinaryLoader)
    return info


async def register_async(context):
    """``register`` on an AsyncConnection or one of its cursors."""
    conn = context if isinstance(context, psycopg.AsyncConnection) else context.connection
    return register(context, await type_info_async(conn))
