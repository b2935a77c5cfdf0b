#!/usr/bin/env bash
# Reruns the all-pairs benchmark of BENCHMARKS.md (simhash_pairs and simhash_clusters against
# seomoz's find_all) on this machine, as root (Debian 12): installs the release build into the
# local PostgreSQL 15 (shared_buffers = 8GB, as bench/run_index.sh sets it), seomoz's
# simhash-pybind into its own venv (bench/.venv-seomoz: it clashes with the 'simhash' package of
# bench/.venv), and prints the Markdown table; then the cluster quality on real text with
# planted near-copies (bench/etl_quality.py, corpora fetched by bench/fetch_data.sh). Arguments
# go to bench/etl_pairs.py (default: 100k, 1M and 10M rows, brute force at 100k).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
export PATH="$HOME/.cargo/bin:$PATH"
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/pip install -q -r bench/requirements.txt
[ -x bench/.venv-seomoz/bin/python ] || python3 -m venv bench/.venv-seomoz
bench/.venv-seomoz/bin/pip install -q -r bench/requirements-seomoz.txt
cargo pgrx install --release --pg-config /usr/bin/pg_config
if [ "$(runuser -u postgres -- psql -XAtc 'SHOW shared_buffers')" != 8GB ]; then
    runuser -u postgres -- psql -Xqc "ALTER SYSTEM SET shared_buffers = '8GB'"
    pg_ctlcluster --skip-systemctl-redirect 15 main restart
fi
bash bench/fetch_data.sh
bash bench/make_db.sh simhash_etl
bash bench/make_db.sh simhash_bench
mkdir -p bench/results
echo "## All pairs"
(cd bench && .venv/bin/python etl_pairs.py "$@")
echo "## Cluster quality"
(cd bench && .venv/bin/python etl_quality.py --n 2000 --k 3 6 8)
