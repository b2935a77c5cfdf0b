#!/usr/bin/env bash
# Reruns the text benchmarks of BENCHMARKS.md on this machine, as root (Debian 12):
# fetches corpora and peers, installs the release build into the local PostgreSQL 15, then
# prints the throughput and detection-quality tables as Markdown. About 5 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
export PATH="$HOME/.cargo/bin:$PATH"
bash bench/fetch_data.sh
cargo pgrx install --release --pg-config /usr/bin/pg_config
cargo build --release -p simhash_core --example throughput
bash bench/make_db.sh simhash_bench
mkdir -p bench/results
echo "## Throughput"
bench/.venv/bin/python bench/text_throughput.py --runs 7
echo "## Detection quality"
bench/.venv/bin/python bench/text_quality.py --n 1000 --k 3 6 --json bench/results/text_quality.json
