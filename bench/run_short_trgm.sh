#!/usr/bin/env bash
# Short texts against pg_trgm (bench/short_vs_trgm.py), as root on the local PostgreSQL 15:
# fetches the corpora, makes the database simhash_short (pg_trgm from the server's contrib),
# then prints the Markdown tables; raw numbers in bench/results/short_trgm_<lang>_<rows>.json.
# Usage: bash bench/run_short_trgm.sh [--lang en|zh] [--rows N] [other options of the script]
set -euo pipefail
cd "$(dirname "$0")/.."
bash bench/fetch_data.sh
psql -X -q -d postgres -tc "SELECT 1 FROM pg_database WHERE datname = 'simhash_short'" | grep -q 1 \
    || createdb simhash_short
cd bench
lang=en rows=1000000
args=("$@")
while [ $# -gt 0 ]; do
    case $1 in
        --lang) lang=$2; shift ;;
        --rows) rows=$2; shift ;;
    esac
    shift
done
echo "## Short texts against pg_trgm ($lang, $rows rows)"
.venv/bin/python short_vs_trgm.py --json "results/short_trgm_${lang}_${rows}.json" "${args[@]}"
