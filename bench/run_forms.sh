#!/usr/bin/env bash
# Reruns the query-forms benchmark of BENCHMARKS.md (bench/query_forms.py) on this machine, as
# root (Debian 12): the release build in the local PostgreSQL 15 with shared_buffers = 8GB, a
# database simhash_forms, then the Markdown table; raw numbers in bench/results/query_forms.json.
# Arguments go to the script (e.g. --reuse to keep the tables of an earlier run). About 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/prepare.sh
[ "${1:-}" = --reuse ] || bash bench/make_db.sh simhash_forms
mkdir -p bench/results
cd bench && .venv/bin/python query_forms.py "$@"
