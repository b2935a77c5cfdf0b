"""The peers' fingerprints on the same texts: ClickHouse (chdb) and the Python simhash package."""
import json
import os
import tempfile

import chdb
from simhash import Simhash

CLICKHOUSE = ["wordShingleSimHashUTF8", "ngramSimHashUTF8"]


def clickhouse(func, texts):
    """ClickHouse's func(text) for every text, in order, single-threaded."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"n": i, "t": t}, ensure_ascii=False) + "\n")
        path = f.name
    try:
        res = chdb.query(
            f"SELECT {func}(t) FROM file('{path}', 'JSONEachRow', 'n UInt32, t String') ORDER BY n "
            "SETTINGS max_threads = 1",
            "CSV",
        )
        return [int(x) for x in str(res).split()]
    finally:
        os.unlink(path)


def python_simhash(texts):
    return [Simhash(t).value for t in texts]
