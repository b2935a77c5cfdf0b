"""SQLAlchemy column type for simhash64, with the two operations the block indexes serve:

    from simhash_pg.sqlalchemy import SimHash64
    class Doc(Base):
        __tablename__ = "docs"
        id = mapped_column(Integer, primary_key=True)
        fp = mapped_column(SimHash64)

    select(Doc.id).where(Doc.fp.near(query_fp, 7))          # simhash_near(docs.fp, $1, 7)
    select(Doc.id, Doc.fp.distance(query_fp))              # docs.fp <-> $1

With psycopg 3 register the adapters on the engine's connections
(``simhash_pg.psycopg.register``, see ``register_on``), so that the query fingerprint is a
typed parameter: then ``near`` compiles to the call the planner turns into index probes.
"""
from sqlalchemy import Integer, event, func
from sqlalchemy.types import Boolean, UserDefinedType

from . import _fp


class SimHash64(UserDefinedType):
    """The extension's simhash64: values are Fingerprint (int or hex text accepted on the way in)."""

    cache_ok = True

    def get_col_spec(self, **kw):
        return "simhash64"

    def bind_processor(self, dialect):
        def process(value):
            return None if value is None else _fp(value)

        return process

    def result_processor(self, dialect, coltype):
        def process(value):
            return None if value is None else _fp(value)

        return process

    class comparator_factory(UserDefinedType.Comparator):
        def near(self, other, k):
            """``simhash_near(col, other, k)``: within k bits, as the block indexes answer it."""
            return func.simhash_near(self.expr, _param(other), k, type_=Boolean)

        def distance(self, other):
            """``col <-> other``: the Hamming distance."""
            return self.expr.op("<->", return_type=Integer)(_param(other))


def _param(value):
    from sqlalchemy import ColumnElement, bindparam

    if isinstance(value, ColumnElement):
        return value
    return bindparam(None, value, type_=SimHash64())


def register_on(engine):
    """Registers simhash_pg.psycopg's adapters on every new connection of a psycopg 3 engine."""
    from . import psycopg as adapters

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        adapters.register(dbapi_connection)

    return engine
