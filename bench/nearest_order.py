"""`ORDER BY fp <-> $1 LIMIT n` (the nearest-first scan) side by side with the other ways to ask
for the n nearest rows, on the tables of bench/query_forms.py (1M random fingerprints, 1 % planted
near-copies; `forms4` with 4 covering blocks, `forms8` with 8).

With pgbench, prepared statements, one client, interleaved rounds, n = 5:

  order         SELECT id FROM t ORDER BY fp <-> $1 LIMIT 5            (the nearest-first scan)
  order+key     ... ORDER BY fp <-> $1, id LIMIT 5                      (ties by key: Incremental Sort)
  order filter  ... WHERE id % 10 = 3 ORDER BY fp <-> $1 LIMIT 5        (a filter passing 10 %)
  nearest       simhash_nearest(t, 'fp', $1, 5, 'id', NULL::int8)       (this release: runs `order+key`)
  nearest 0.2.0 the same through 0.2.0's algorithm: simhash_near within k = 0, 1, 3, 7, 11, 15, 23,
                then a full scan, until a ring holds 5 rows (its PL/pgSQL, created here as
                nearest_020)
  brute         ORDER BY (fp <-> $1) + 0 LIMIT 5: every row read and sorted (a few transactions)

for two kinds of query: `dup`, the fingerprint of a planted row (a near-copy lies within 1-7
bits: what dedup asks), and `random`, a random fingerprint (its nearest rows lie 10-16 bits
away at 1M rows: the worst case for the rings). Before timing, every form's answer (distances,
and ids where ties are cut by key) is checked against brute force for 50 queries of each kind
(--check-queries).

Prints Markdown; raw numbers go to bench/results/nearest_order.json. Usage: bench/.venv/bin/python
bench/nearest_order.py [--rows N] [--seconds 5] [--runs 3] [--reuse]. Run through
bench/run_nearest.sh (release build, 8 GB buffers).
"""
import os

import psycopg

from index_lookup import pgbench, summary
from pg import arguments, dsn, log, plan_of, save, server
from planted import load_planted

# SIMHASH_BENCH_DB: another database, to keep tables of another size beside these.
DSN = dsn(os.environ.get("SIMHASH_BENCH_DB", "simhash_forms"))
RANDOM_Q = "\\set hi random(0, 4294967295)\n\\set lo random(0, 4294967295)\n\\set q (:hi << 32) | :lo\n"

# 0.2.0's simhash_nearest, by key: every row within k bits for growing k, until n rows.
NEAREST_020 = """
CREATE OR REPLACE FUNCTION nearest_020(tbl regclass, col name, query simhash64, n int4)
RETURNS TABLE (key int8, distance int4) LANGUAGE plpgsql STABLE AS $$
DECLARE
    k int4;
    keys int8[];
    dists int4[];
    found int4;
BEGIN
    FOREACH k IN ARRAY ARRAY[0, 1, 3, 7, 11, 15, 23, 64] LOOP
        EXECUTE format(
            'SELECT array_agg(s.r ORDER BY s.d, s.r), array_agg(s.d ORDER BY s.d, s.r), count(*)
               FROM (SELECT t.id AS r, hamming_distance(t.%1$I, $1) AS d FROM %2$s t
                      WHERE %3$s ORDER BY 2, 1 LIMIT %4$s) s',
            col, tbl,
            CASE WHEN k < 64 THEN format('simhash_near(t.%I, $1, %s)', col, k) ELSE format('t.%I IS NOT NULL', col) END, n)
          INTO keys, dists, found USING query;
        IF found >= n OR k = 64 THEN
            RETURN QUERY SELECT u.k, u.d FROM unnest(keys, dists) WITH ORDINALITY AS u(k, d, o) ORDER BY u.o;
            RETURN;
        END IF;
    END LOOP;
END
$$;
"""


def scripts(table, rows, kind):
    planted = rows // 100
    if kind == "dup":
        head = f"\\set id random(1, {planted})\n"
        q = f"(SELECT fp FROM {table} WHERE id = :id)"
    else:
        head = RANDOM_Q
        q = ":q::int8::simhash64"
    return {
        "order": head + f"SELECT id FROM {table} ORDER BY fp <-> {q} LIMIT 5;\n",
        "order+key": head + f"SELECT id FROM {table} ORDER BY fp <-> {q}, id LIMIT 5;\n",
        "order filter": head + f"SELECT id FROM {table} WHERE id % 10 = 3 ORDER BY fp <-> {q} LIMIT 5;\n",
        "nearest": head + f"SELECT * FROM simhash_nearest('{table}', 'fp', {q}, 5, 'id', NULL::int8);\n",
        "nearest 0.2.0": head + f"SELECT * FROM nearest_020('{table}', 'fp', {q}, 5);\n",
        "brute": head + f"SELECT id FROM {table} ORDER BY (fp <-> {q}) + 0 LIMIT 5;\n",
    }


def check(conn, table, rows, kind, n=50):
    """Mismatches against brute force over n queries, per form."""
    planted = rows // 100
    if kind == "dup":
        queries = [r[0] for r in conn.execute(
            f"SELECT fp::text FROM {table} WHERE id <= {planted} ORDER BY hashint8(id) LIMIT {n}")]
    else:
        queries = [r[0] for r in conn.execute(
            f"SELECT hashtextextended('q' || g, 9)::simhash64::text FROM generate_series(1, {n}) g")]
    bad = {"order": 0, "order+key": 0, "order filter": 0, "nearest": 0, "nearest 0.2.0": 0}
    for q in queries:
        def rows_of(sql):
            return [tuple(r) for r in conn.execute(sql.replace("$q", "%(q)s::simhash64"), {"q": q})]
        want_key = rows_of(f"SELECT id, (fp <-> $q) + 0 FROM {table} ORDER BY 2, 1 LIMIT 5")
        want_filter = rows_of(f"SELECT id, (fp <-> $q) + 0 FROM {table} WHERE id %% 10 = 3 ORDER BY 2, 1 LIMIT 5")
        got = [d for (d,) in rows_of(f"SELECT fp <-> $q FROM {table} ORDER BY fp <-> $q LIMIT 5")]
        bad["order"] += got != [d for _, d in want_key]
        bad["order+key"] += rows_of(f"SELECT id, fp <-> $q FROM {table} ORDER BY fp <-> $q, id LIMIT 5") != want_key
        bad["order filter"] += rows_of(
            f"SELECT id, fp <-> $q FROM {table} WHERE id %% 10 = 3 ORDER BY fp <-> $q, id LIMIT 5") != want_filter
        bad["nearest"] += rows_of(f"SELECT key, distance FROM simhash_nearest('{table}', 'fp', $q, 5, 'id', NULL::int8)") != want_key
        bad["nearest 0.2.0"] += rows_of(f"SELECT key, distance FROM nearest_020('{table}', 'fp', $q, 5)") != want_key
    return {"queries": len(queries), "mismatches": bad}



def main():
    ap = arguments("nearest_order.json", rows=1_000_000, seconds=5, runs=3)
    ap.add_argument("--brute-transactions", type=int, default=5)
    ap.add_argument("--check-queries", type=int, default=50, help="queries of each kind checked against brute force")
    ap.add_argument("--reuse", action="store_true", help="keep the tables of an earlier run (same --rows)")
    args = ap.parse_args()
    conn = psycopg.connect(DSN, autocommit=True)
    layouts = {"forms4": 3, "forms8": 7}
    for table, max_k in layouts.items():
        have = conn.execute(f"SELECT to_regclass('{table}')").fetchone()[0]
        n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] if args.reuse and have else 0
        if n != args.rows:
            log(f"building {table} ({args.rows} rows, max_k {max_k})")
            load_planted(conn, table, args.rows, 0.42, 7)
            conn.execute(f"SELECT simhash_create_index('{table}', 'fp', max_k => {max_k})")
            conn.execute(f"VACUUM ANALYZE {table}")
    conn.execute(NEAREST_020)
    settings = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in ("server_version", "shared_buffers", "work_mem")}
    report = {"settings": {**settings, **vars(args)}, "tables": {}}
    for table in layouts:
        for kind in ("dup", "random"):
            log(f"{table} {kind}: exactness")
            exact = check(conn, table, args.rows, kind, args.check_queries)
            cases = scripts(table, args.rows, kind)
            plan = plan_of(conn, f"SELECT id FROM {table} ORDER BY fp <-> '0123456789abcdef' LIMIT 5")
            lat = {name: [] for name in cases}
            for r in range(args.runs):
                for name, sql in cases.items():
                    log(f"{table} {kind} {name} round {r + 1}")
                    if name == "brute":
                        if r == 0:
                            lat[name] += pgbench(sql, DSN, transactions=args.brute_transactions)
                        continue
                    lat[name] += pgbench(sql, DSN, seconds=args.seconds)
            report["tables"][f"{table} {kind}"] = {
                "exact": exact, "plan": plan, "latency": {name: summary(v) for name, v in lat.items()}}
    save(report, args.json)
    print_markdown(report)


def print_markdown(report):
    s = report["settings"]
    print(f"{server(s)}, {s['rows']:,} rows, "
          f"{s['runs']} interleaved rounds of {s['seconds']} s per form (brute: {s['brute_transactions']} transactions)\n")
    print("| table, query | form | p50 ms | p95 ms | x order | wrong answers |")
    print("|---|---|---|---|---|---|")
    for key, t in report["tables"].items():
        base = t["latency"]["order"]["p50_ms"]
        for name, v in t["latency"].items():
            bad = t["exact"]["mismatches"].get(name, 0) if name != "brute" else "-"
            wrong = f"{bad} of {t['exact']['queries']}" if bad != "-" else "(reference)"
            print(f"| {key} | {name} | {v['p50_ms']:.3f} | {v['p95_ms']:.3f} | {v['p50_ms'] / base:.2f} | {wrong} |")


if __name__ == "__main__":
    main()
