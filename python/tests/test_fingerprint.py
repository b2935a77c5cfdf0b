"""The package alone, without a server: values, conversions and errors as the server has them."""
import pytest

import simhash_pg
from simhash_pg import Fingerprint, hamming, near, simhash, simhash_set


def test_fingerprint_forms_are_the_servers():
    fp = Fingerprint("860c8692885a92e3")
    assert str(fp) == "860c8692885a92e3"
    assert repr(fp) == "Fingerprint('860c8692885a92e3')"
    assert int(fp) == -8787500808995695901  # fp::int8, signed
    assert fp.unsigned == 0x860C8692885A92E3
    assert bytes(fp) == bytes.fromhex("860c8692885a92e3")  # fp::bytea and the binary protocol
    assert Fingerprint(int(fp)) == fp == Fingerprint(fp.unsigned) == Fingerprint(bytes(fp)) == Fingerprint("0x860C8692885A92E3")
    assert hash(fp) == hash(Fingerprint(str(fp)))
    assert Fingerprint(1) < Fingerprint(-1)  # ordered as unsigned, as the server's B-tree
    assert str(Fingerprint(0)) == "0000000000000000"


@pytest.mark.parametrize("bad", ["", "xyz", "0123456789abcde", "0123456789abcdef0", "0x"])
def test_bad_hex_is_the_servers_error(bad):
    with pytest.raises(ValueError, match="invalid input syntax for type simhash64"):
        Fingerprint(bad)


def test_bad_values_are_refused():
    with pytest.raises(ValueError):
        Fingerprint(1 << 64)
    with pytest.raises(ValueError):
        Fingerprint(b"1234567")
    with pytest.raises(TypeError):
        Fingerprint(1.5)
    with pytest.raises(TypeError):
        Fingerprint(True)


def test_known_fingerprints():
    # The same values the extension's tests pin (src/tests.rs, docs).
    assert str(simhash("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。")) == "46b58b86d69c7ead"
    assert simhash("") == Fingerprint(0)
    assert simhash("The quick brown fox", None) == simhash("The quick brown fox", {}) == simhash("The quick brown fox", "{}")


def test_options_are_checked_with_the_servers_messages():
    with pytest.raises(ValueError, match='invalid simhash option "ngramm": unknown option'):
        simhash("x", {"ngramm": 3})
    with pytest.raises(ValueError, match='invalid simhash option "ngram"'):
        simhash("x", '{"ngram": 9}')
    with pytest.raises(ValueError, match="invalid simhash options"):
        simhash("x", "[1]")
    with pytest.raises(TypeError):
        simhash("x", 3)


def test_sets_distance_and_near():
    s = simhash_set("hello world", 4, {"tokenizer": "chars", "ngram": 3})
    assert len(s) == 4 and s[0] == simhash("hello world", {"tokenizer": "chars", "ngram": 3})
    with pytest.raises(ValueError, match="simhash_set"):
        simhash_set("x", 17)
    a, b = Fingerprint(0), Fingerprint(0b1011)
    assert hamming(a, b) == a.distance(b) == 3 and hamming("0000000000000000", 0b1011) == 3
    assert near(a, b, 3) and not near(a, b, 2) and a.near(b, 3)
    with pytest.raises(ValueError, match="distance bound k"):
        near(a, b, 65)


def test_batches_and_threads_give_the_same_fingerprints():
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"document number {i} about topic {i % 7}" for i in range(2000)]
    one_by_one = [simhash(t, {"weighting": "tf"}) for t in texts]
    assert simhash_pg.simhash_many(texts, {"weighting": "tf"}) == one_by_one
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda i: simhash_pg.simhash_many(texts[i::4], {"weighting": "tf"}), range(4)))
    assert [parts[i % 4][i // 4] for i in range(len(texts))] == one_by_one


def test_features_weighted_and_extract():
    feats = simhash_pg.simhash_features("hello hello world", {"weighting": "tf"})
    assert [(f, w) for f, w, _ in feats] == [("hello", 2.0), ("world", 1.0)]
    assert simhash_pg.simhash_weighted([f for f, _, _ in feats], [w for _, w, _ in feats]) == simhash("hello hello world", {"weighting": "tf"})
    with pytest.raises(ValueError, match="same length"):
        simhash_pg.simhash_weighted(["a"], [1.0, 2.0])
    assert simhash_pg.simhash_extract("<p>Hello <b>world</b></p><script>x()</script>", {"markup": "html"}).split() == ["Hello", "world"]
    assert simhash_pg.simhash_jaccard("alpha beta gamma", "alpha beta delta") == pytest.approx(0.5)


def test_keep_first_of_near_is_the_ingest_rule():
    fps = [Fingerprint(0), Fingerprint(0b1), Fingerprint(0b111), None, Fingerprint(0b1111111), Fingerprint(0)]
    # 0b1 is within 1 of 0; 0b111 within 3 of 0 but not 2; None stays; 0b1111111 is 7 from 0, 4 from 0b111.
    assert simhash_pg.keep_first_of_near(fps, 2) == [True, False, True, True, True, False]
    assert simhash_pg.keep_first_of_near(fps, 0) == [True, True, True, True, True, False]
    with pytest.raises(ValueError, match="distance bound k"):
        simhash_pg.keep_first_of_near(fps, 65)


def test_columns_of_dataframes_and_arrow_arrays():
    texts = ["alpha beta gamma", "beta gamma delta", "今天天气很好"]
    want = simhash_pg.simhash_many(texts)
    pa = pytest.importorskip("pyarrow")
    assert simhash_pg.simhash_many(pa.array(texts)) == want
    assert simhash_pg.simhash_many(iter(texts)) == want


def test_options_are_read_as_jsonb_reads_them():
    # 1e3 and 1.0e3 are the integer 1000 in jsonb; 2.0 and 1000.0 are fractions, refused as the
    # server refuses them ({"seed": 1000.0} is what json.dumps writes for the float 1e3).
    assert simhash("some words here", '{"seed": 1e3}') == simhash("some words here", '{"seed": 1.0e3}') \
        == simhash("some words here", {"seed": 1000})
    with pytest.raises(ValueError, match="got 1000.0"):
        simhash("some words here", {"seed": 1e3})
    with pytest.raises(ValueError, match='invalid simhash option "ngram"'):
        simhash("x", '{"ngram": 2.0}')
    assert simhash("a b", '{"ngram": 3, "ngram": 2}') == simhash("a b", {"ngram": 2})  # the last key wins
    with pytest.raises(ValueError, match="invalid input syntax for type json"):
        simhash("x", "{nope")
    with pytest.raises(ValueError, match="invalid input syntax for type json"):
        simhash("x", '{"seed": NaN}')


def test_inputs_the_server_cannot_hold_or_take():
    with pytest.raises(ValueError, match="0x00"):
        simhash("a\x00b")
    with pytest.raises(TypeError):
        simhash_pg.simhash_many("one text")
    assert simhash_pg.simhash_many(["x y", None]) == [simhash("x y"), None]
    with pytest.raises(ValueError, match="out of range"):
        simhash_set("x", 1 << 40)
    with pytest.raises(ValueError, match="out of range"):
        simhash_pg.keep_first_of_near([0], 1 << 70)
    a, b = Fingerprint(1), Fingerprint(2)
    assert a <= b and b >= a and sorted([b, a]) == [a, b]


def test_near_index_is_the_ingest_rule_across_calls():
    """NearIndex.keep_new over calls of any size keeps what keep_first_of_near keeps of the whole
    stream, members added by extend included; near() is a brute-force scan's answer."""
    import random

    rng = random.Random(53)
    table = [rng.getrandbits(64) for _ in range(3000)]
    stream = []
    for i in range(80_000):
        r = rng.random()
        if r < 0.05:
            stream.append(None)
        elif r < 0.35:
            src = rng.choice(table + [f for f in stream[-500:] if f is not None])
            stream.append(src ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)))
        else:
            stream.append(rng.getrandbits(64))
    for k in (0, 3, 7):
        want = simhash_pg.keep_first_of_near(table + stream, k)[len(table):]
        index = simhash_pg.NearIndex(k)
        index.extend(table)
        got, start = [], 0
        for size in (1, 7, 70_000, 300):
            got += index.keep_new(stream[start:start + size])
            start += size
        got += index.keep_new(stream[start:])
        # The table's rows lie near each other only at random (64-bit values): none is dropped
        # from want's prefix, so the two rules agree row for row.
        assert got == want, k
        assert len(index) == len(table) + sum(1 for f, stays in zip(stream, got) if stays and f is not None)
        assert repr(index) == f"NearIndex(k={k}, {len(index)} fingerprints)"
        members = table + [f for f, stays in zip(stream, got) if stays and f is not None]
        for q in [rng.getrandbits(64) for _ in range(50)] + [t ^ 0b111 for t in table[:50]]:
            assert index.near(q) == any(bin(q ^ m).count("1") <= k for m in members)
    with pytest.raises(ValueError, match="between 0 and 64"):
        simhash_pg.NearIndex(65)
    # extend takes any iterable (a generator here), values over 2**63 included.
    index = simhash_pg.NearIndex(0, (f for f in [2**64 - 1, None, 1 << 63]))
    assert len(index) == 2 and index.near(2**64 - 1) and index.near(Fingerprint(1 << 63)) and not index.near(0)
    with pytest.raises(ValueError, match="8 bytes each"):
        index._index.extend_packed(b"1234567")
    assert simhash_pg.NearIndex(2, ["0000000000000003", Fingerprint(-1), None]).keep_new([0, 12, -2]) == [False, True, False]


def test_a_long_batch_stops_on_ctrl_c():
    """simhash_many looks at Python's signals between chunks of about 2 MB of text: a
    KeyboardInterrupt stops a batch of minutes within a fraction of a second."""
    import os
    import signal
    import threading
    import time

    texts = ["中文文本的指纹，用来检查中断。" * 400] * 20_000  # about 140 MB of Chinese: several seconds
    # A shell's background job starts with SIGINT ignored: give it Python's handler for the test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            simhash_pg.simhash_many(texts)
        assert time.monotonic() - started < 2.0
    finally:
        signal.signal(signal.SIGINT, previous)
