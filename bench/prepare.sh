#!/usr/bin/env bash
# What every database benchmark needs first, as root (Debian 12): the machine set up, the
# benchmark venv, the release build installed into the local PostgreSQL 15, and
# shared_buffers = 8GB (so every method reads from memory). Run from the checkout's root.
set -euo pipefail
bash .ci/setup
export PATH="$HOME/.cargo/bin:$PATH"
[ -x bench/.venv/bin/python ] || python3 -m venv bench/.venv
bench/.venv/bin/pip install -q -r bench/requirements.txt
cargo pgrx install --release --pg-config /usr/bin/pg_config
if [ "$(runuser -u postgres -- psql -XAtc 'SHOW shared_buffers')" != 8GB ]; then
    runuser -u postgres -- psql -Xqc "ALTER SYSTEM SET shared_buffers = '8GB'"
    pg_ctlcluster --skip-systemctl-redirect 15 main restart
fi
