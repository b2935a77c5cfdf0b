#!/usr/bin/env bash
# Reruns the block-index layouts benchmark of BENCHMARKS.md on this machine, as root (Debian 12):
# the release build in the local PostgreSQL 15 (shared_buffers = 8GB, bench/prepare.sh), and,
# for the comparison with the SP-GiST BK-tree of pg-spgist_hamming, that extension built from
# BKTREE_SRC (a checkout of https://github.com/fake-name/pg-spgist_hamming; cloned into /tmp when
# unset and the network allows; left out otherwise). Arguments go to bench/layouts.py (default:
# 1M and 10M rows). About 40 minutes for both sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
src=${BKTREE_SRC:-/tmp/simhash_pg-bench/pg-spgist_hamming}
if [ ! -d "$src/bktree" ] && [ -z "${BKTREE_SRC:-}" ]; then
    git clone -q --depth 1 https://github.com/fake-name/pg-spgist_hamming "$src" 2>/dev/null || true
fi
if [ -d "$src/bktree" ]; then
    make -s -C "$src/bktree" PG_CONFIG=/usr/bin/pg_config >/dev/null
    make -s -C "$src/bktree" PG_CONFIG=/usr/bin/pg_config install >/dev/null
else
    echo "pg-spgist_hamming not found (set BKTREE_SRC): the BK-tree is left out" >&2
fi
bash bench/make_db.sh simhash_lookup
mkdir -p bench/results
cd bench && .venv/bin/python layouts.py "$@"
