"""The fingerprint tables of the lookup and all-pairs benchmarks: random 64-bit fingerprints, 1 %
of the rows replaced by near-copies of earlier rows, an int8 primary key. Same seed, same rows."""


def load_planted(conn, table, rows, seed, max_flips):
    """(Re)creates `table`: rows - rows/100 random fingerprints, then copy j of row j with
    1 + j % max_flips random bit flips (a repeated bit flips once: d or fewer)."""
    planted = rows // 100
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (id int8 PRIMARY KEY, fp simhash64 NOT NULL)")
    conn.execute(f"SELECT setseed({seed})")
    conn.execute(
        f"""INSERT INTO {table}
            SELECT g, (((floor(random() * 4294967296)::int8) << 32) | floor(random() * 4294967296)::int8)::simhash64
              FROM generate_series(1, {rows - planted}) g"""
    )
    conn.execute(
        f"""INSERT INTO {table}
            SELECT {rows - planted} + s.id,
                   (s.fp::int8 # (SELECT bit_or(1::int8 << floor(random() * 64)::int)
                                   FROM generate_series(1, 1 + (s.id % {max_flips})::int) WHERE s.id > 0))::simhash64
              FROM {table} s WHERE s.id <= {planted}"""
    )
