#!/usr/bin/env bash
# Reruns the real-revision benchmark of BENCHMARKS.md (issue 54) on this machine, as root
# (Debian 12): installs the release build into the local PostgreSQL 15, fetches the Debian
# documentation and package descriptions of three releases with apt-get (bench/data/revisions,
# not committed), and prints the tables as Markdown. About 5 minutes after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup
export PATH="$HOME/.cargo/bin:$PATH"
[ -x bench/.venv/bin/python ] || bash bench/fetch_data.sh
cargo pgrx install --release --pg-config /usr/bin/pg_config
bash bench/make_db.sh simhash_bench
mkdir -p bench/results
bench/.venv/bin/python bench/revisions.py --json bench/results/revisions.json "$@"
