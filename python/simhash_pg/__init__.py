"""The fingerprints of the simhash_pg PostgreSQL extension, made in Python.

The pipeline is the extension's own Rust crate (simhash_core), compiled into this module, so
``simhash(text, options)`` here is bit for bit ``simhash(text, options)`` in the server, for
the same options and pipeline version. Fingerprints are ``Fingerprint`` values: they print and
parse as the server's hex, convert to ``int`` as ``::int8`` does (signed) and to the 8 bytes of
the binary protocol. Adapters for psycopg 3, asyncpg and SQLAlchemy are in the submodules of
the same names.

    >>> from simhash_pg import simhash, hamming
    >>> a = simhash("The quick brown fox jumps over the lazy dog")
    >>> print(a)  # as the server prints simhash('The quick brown fox jumps over the lazy dog')
    860c8692885a92e3
    >>> hamming(a, simhash("THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG"))  # case is folded
    0

One word changed of nine moves a fingerprint this short by 10 bits, past the k = 7 of long
texts: short texts need sets of fingerprints or character shingles (docs/short-texts.md).

    >>> b = simhash("The quick brown fox jumped over the lazy dog")
    >>> hamming(a, b)
    10
"""
import array
import functools
import json
import operator
from decimal import Decimal

from . import _core

__all__ = [
    "Fingerprint",
    "PIPELINE_VERSION",
    "simhash",
    "simhash_many",
    "simhash_set",
    "simhash_weighted",
    "simhash_features",
    "simhash_extract",
    "simhash_jaccard",
    "hamming",
    "near",
    "keep_first_of_near",
    "NearIndex",
]

PIPELINE_VERSION = _core.PIPELINE_VERSION
_MASK = (1 << 64) - 1

# The extension's type, by identity, for the adapters: the simhash64 that extension simhash_pg
# owns, in whatever schema it was created (never another schema's type of that name).
TYPE_QUERY = """
SELECT t.typname, t.oid, t.typarray, n.nspname
  FROM pg_catalog.pg_extension e
  JOIN pg_catalog.pg_depend d ON d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
                             AND d.refobjid = e.oid AND d.deptype = 'e'
                             AND d.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
  JOIN pg_catalog.pg_type t ON t.oid = d.objid
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
 WHERE e.extname = 'simhash_pg' AND t.typname = 'simhash64'
"""


def _options(options):
    """Options as the JSON text the core parses, read as the server reads jsonb: None (the
    defaults), a dict, or JSON text. Numbers are normalised as jsonb stores them (1e3 and 1.0e3
    are the integer 1000, 2.0 stays a fraction), duplicate keys keep the last value."""
    if options is None:
        return None
    if isinstance(options, dict):
        text = json.dumps(options)
    elif isinstance(options, str):
        text = options
    else:
        raise TypeError(f"options must be a dict, JSON text or None, not {type(options).__name__}")
    try:
        value = json.loads(text, parse_float=Decimal, parse_constant=_no_constant)
    except ValueError as e:
        raise ValueError(f"invalid input syntax for type json: {e}") from None
    return json.dumps(_as_jsonb(value))


def _no_constant(name):
    raise ValueError(f"Token \"{name}\" is invalid")


def _as_jsonb(value):
    if isinstance(value, Decimal):
        # jsonb keeps a number's digits after the point; with none (1e3, 1.0e3) it is an integer.
        return int(value) if value.as_tuple().exponent >= 0 else float(value)
    if isinstance(value, dict):
        return {k: _as_jsonb(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_jsonb(v) for v in value]
    return value


def _text(body, function):
    """A text as the server can hold it: PostgreSQL text has no NUL character."""
    if not isinstance(body, str):
        raise TypeError(f"{function}: a text must be str, not {type(body).__name__}")
    if "\x00" in body:
        raise ValueError(f'{function}: invalid byte sequence for encoding "UTF8": 0x00 (PostgreSQL text cannot hold it)')
    return body


def _int(value, name, low, high):
    """An integer argument in low..high, as the server's int4 range checks say."""
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None
    if not low <= n <= high:
        raise ValueError(f"{name} is out of range: {n}")
    return n


@functools.total_ordering
class Fingerprint:
    """A simhash64 value: 64 bits. ``str()`` is the server's text form (16 lowercase hex
    digits), ``int()`` the signed value of ``fp::int8``, ``bytes()`` the 8 bytes of the binary
    protocol and of ``fp::bytea`` (big-endian). Equal fingerprints are equal and hash alike;
    they order as the server orders simhash64 (as unsigned integers)."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Fingerprint):
            value = value._value
        elif isinstance(value, str):
            value = _core.parse_hex(value)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            value = bytes(value)
            if len(value) != 8:
                raise ValueError(f"a simhash64 is exactly 8 bytes, got {len(value)}")
            value = int.from_bytes(value, "big")
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -(1 << 63) <= value <= _MASK:
                raise ValueError(f"{value} does not fit in 64 bits")
            value &= _MASK
        else:
            raise TypeError(f"a Fingerprint is made from an int, hex text or 8 bytes, not {type(value).__name__}")
        self._value = value

    @property
    def unsigned(self):
        """The 64 bits as an unsigned integer (0 .. 2**64 - 1)."""
        return self._value

    def __int__(self):
        v = self._value
        return v - (1 << 64) if v >> 63 else v

    def __str__(self):
        return _core.format_hex(self._value)

    def __repr__(self):
        return f"Fingerprint('{self}')"

    def __bytes__(self):
        return self._value.to_bytes(8, "big")

    def __eq__(self, other):
        return isinstance(other, Fingerprint) and other._value == self._value

    def __hash__(self):
        return hash(self._value)

    def __lt__(self, other):
        if not isinstance(other, Fingerprint):
            return NotImplemented
        return self._value < other._value

    def distance(self, other):
        """Hamming distance: the number of differing bits (``fp <-> other`` in SQL)."""
        return hamming(self, other)

    def near(self, other, k):
        """True when at most k bits differ (``simhash_near(fp, other, k)`` in SQL)."""
        return near(self, other, k)


def _fp(value):
    return value if isinstance(value, Fingerprint) else Fingerprint(value)


def simhash(body, options=None):
    """The fingerprint of a text: ``simhash(body, options)`` in SQL."""
    return Fingerprint(_core.simhash(_text(body, "simhash"), _options(options)))


def simhash_many(bodies, options=None):
    """``simhash`` of every text of a list (or any iterable of str: a pandas or Polars column, an
    Arrow string array), in order, in one call that releases the GIL: the fast way for batches
    and for threads."""
    if isinstance(bodies, str):
        raise TypeError("simhash_many takes a list of texts; for one text, call simhash")
    if hasattr(bodies, "to_pylist"):  # pyarrow arrays iterate as Arrow scalars
        bodies = bodies.to_pylist()
    bodies = list(bodies)
    opts = _options(options)
    # Missing values (None, as Arrow nulls and pandas' None) give None, as the server's STRICT
    # functions give NULL.
    present = [i for i, b in enumerate(bodies) if b is not None]
    fps = _core.simhash_many([_text(bodies[i], f"simhash_many (text {i})") for i in present], opts)
    out = [None] * len(bodies)
    for i, v in zip(present, fps):
        out[i] = Fingerprint(v)
    return out


def simhash_set(body, b, options=None):
    """b fingerprints of a text, seeds seed .. seed + b - 1: ``simhash_set(body, b, options)``."""
    b = _int(b, "b", -(1 << 31), (1 << 31) - 1)
    return [Fingerprint(v) for v in _core.simhash_set(_text(body, "simhash_set"), b, _options(options))]


def simhash_weighted(features, weights):
    """The fingerprint of your own features and weights: ``simhash_weighted(features, weights)``."""
    return Fingerprint(_core.simhash_weighted(list(features), [float(w) for w in weights]))


def simhash_features(body, options=None):
    """(feature, weight, hash) of each distinct feature in order of first occurrence, as
    ``simhash_features(body, options)`` returns them (the hash as a Fingerprint)."""
    return [(f, w, Fingerprint(h)) for f, w, h in _core.simhash_features(_text(body, "simhash_features"), _options(options))]


def simhash_extract(body, options=None):
    """The text the pipeline reads: ``simhash_extract(body, options)`` (with ``{"markup":
    "html"}``, what a reader of the page sees)."""
    return _core.simhash_extract(_text(body, "simhash_extract"), _options(options))


def simhash_jaccard(a, b, options=None):
    """Jaccard similarity of the distinct features of two texts: the exact check of a pair."""
    return _core.simhash_jaccard(_text(a, "simhash_jaccard"), _text(b, "simhash_jaccard"), _options(options))


def hamming(a, b):
    """Number of differing bits of two fingerprints (Fingerprint, int or hex text)."""
    return _core.hamming(_fp(a)._value, _fp(b)._value)


def near(a, b, k):
    """True when a and b differ in at most k bits; k outside 0..64 is a ValueError, as the
    server's 22023."""
    return hamming(a, b) <= _k(k)


def _k(k):
    n = _int(k, "k", -(1 << 31), (1 << 31) - 1)
    if not 0 <= n <= 64:
        raise ValueError(f"distance bound k must be between 0 and 64, got {n}")
    return n


def keep_first_of_near(fingerprints, k):
    """For an ordered batch, whether each fingerprint stays when it is dropped if it lies within
    k bits of an earlier one that stayed: the in-batch rule of ``simhash_ingest``, so a worker can
    drop a batch's near-copies before sending it. None always stays."""
    return _core.keep_first_of_near([None if f is None else _fp(f)._value for f in fingerprints], _k(k))


class NearIndex:
    """Fingerprints held by the client, to load against: ``keep_new(fps)`` applies
    ``simhash_ingest``'s rule (a row stays unless a member, or an earlier row of the batch that
    stayed, lies within k bits) and the rows that stay become members. Fill it with the table's
    fingerprints (``extend``) while holding a lock that keeps other writers out, and a load needs
    no lookups on the server: examples/etl_python.py's ``--check client``.

    Memory and time: about 100 bytes a member (150 at peak) for k = 3 to 7, measured on 1M;
    ``keep_new`` checks about 30,000 rows a second against 1M members at k = 7, on one core.
    One index is not for sharing between threads. If a call fails for want of memory, later
    calls raise RuntimeError: the members may be half added."""

    __slots__ = ("_index",)

    def __init__(self, k, fingerprints=None):
        self._index = _core.NearIndex(_k(k))
        if fingerprints is not None:
            self.extend(fingerprints)

    @property
    def k(self):
        return self._index.k

    def __len__(self):
        return len(self._index)

    def __repr__(self):
        return f"NearIndex(k={self.k}, {len(self)} fingerprints)"

    def extend(self, fingerprints):
        """Adds every fingerprint (Fingerprint, int or hex text; None is skipped) as a member,
        near ones included: the rows a table already holds. Any iterable, such as the rows of a
        COPY: they are gathered 8 bytes each and added in one call, laid out once."""
        values = array.array("Q", (_fp(f)._value for f in fingerprints if f is not None))
        self._index.extend_packed(values.tobytes())

    def near(self, fingerprint):
        """Whether some member lies within k bits of the fingerprint."""
        return self._index.any_near(_fp(fingerprint)._value)

    def keep_new(self, fingerprints):
        """For an ordered batch, whether each row stays: not within k bits of a member nor of an
        earlier row of the batch that stayed. The rows that stay become members; None stays and
        adds nothing."""
        return self._index.keep_new([None if f is None else _fp(f)._value for f in fingerprints])
