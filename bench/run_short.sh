#!/usr/bin/env bash
# Reruns the short-text benchmark (bench/short_text.py) on this machine: fetches corpora and
# peers, builds the core crate's `fingerprints` example (no PostgreSQL needed), then prints the
# Markdown tables; raw numbers go to bench/results/short_text.json. About 9 minutes on
# 2 cores. Extra arguments go to the script (e.g. --short-n 1000 --short-pos 300 --pos 300
# for a quick run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash bench/fetch_data.sh
cargo build --release -p simhash_core --example fingerprints
mkdir -p bench/results
echo "## Short texts: b seeded fingerprints, near when any is within k"
bench/.venv/bin/python bench/short_text.py --json bench/results/short_text.json "$@"
