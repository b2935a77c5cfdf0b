#!/usr/bin/env bash
# Installs the Debian package on a fresh Debian 12 system and runs the SQL regression tests
# there: debootstrap makes a minimal bookworm root in a scratch folder, `apt-get install
# ./postgresql-15-simhash-pg_*.deb` inside it pulls PostgreSQL 15 from Debian's archive, the
# package's cluster is started, and pg_regress runs tests/pg_regress against it. Nothing of the
# build machine is visible inside (no Rust, no cargo-pgrx, no earlier install).
# Run as root after `bash .ci/package`; needs Debian's archive (about 150 MB) and 5-10 minutes.
#   bash tests/package/fresh_machine.sh [path/to/the.deb]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEB=${1:-$(ls -t target/package/postgresql-15-simhash-pg_*_amd64.deb | head -1)}
FRESH=${TMPDIR:-/var/tmp}/simhash_pg-fresh
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
cleanup() {
    chroot "$FRESH" pg_ctlcluster --skip-systemctl-redirect 15 main stop 2>/dev/null || true
    for m in dev/pts dev proc sys; do umount "$FRESH/$m" 2>/dev/null || true; done
}
trap cleanup EXIT
cleanup
rm -rf "$FRESH"
echo "==> debootstrap bookworm (minbase) into $FRESH from $MIRROR"
debootstrap --variant=minbase bookworm "$FRESH" "$MIRROR" >"$ROOT/target/fresh-debootstrap.log" 2>&1
mount -t proc proc "$FRESH/proc"
mount -t sysfs sys "$FRESH/sys"
mount --bind /dev "$FRESH/dev"
mount --bind /dev/pts "$FRESH/dev/pts"
cp /etc/resolv.conf "$FRESH/etc/resolv.conf"
# No service starts from package scripts inside the chroot; the cluster is started by hand.
printf '#!/bin/sh\nexit 101\n' >"$FRESH/usr/sbin/policy-rc.d"
chmod +x "$FRESH/usr/sbin/policy-rc.d"
cp "$DEB" "$FRESH/tmp/"
echo "==> apt-get install ./$(basename "$DEB")"
chroot "$FRESH" env DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 sh -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends ./tmp/$(basename "$DEB")" \
    >"$ROOT/target/fresh-apt.log" 2>&1 || { tail -20 "$ROOT/target/fresh-apt.log"; exit 1; }
chroot "$FRESH" dpkg -l postgresql-15 postgresql-15-simhash-pg | tail -2
chroot "$FRESH" sh -c 'pg_lsclusters -h | grep -q . || pg_createcluster 15 main' >/dev/null
# Its own port: the chroot shares the host's network, where 5432 may be taken.
chroot "$FRESH" pg_conftool 15 main set port 5499
chroot "$FRESH" pg_conftool 15 main set listen_addresses localhost
chroot "$FRESH" pg_ctlcluster --skip-systemctl-redirect 15 main start
echo "==> pg_regress inside"
rm -rf "$FRESH/tmp/regress"
mkdir -p "$FRESH/tmp/regress"
cp -r tests/pg_regress/sql tests/pg_regress/expected "$FRESH/tmp/regress/"
cp tests/upgrade/simhash_pg--*.sql "$FRESH/usr/share/postgresql/15/extension/"
chroot "$FRESH" chown -R postgres:postgres /tmp/regress
names="setup $(ls tests/pg_regress/sql | sed 's/\.sql$//' | grep -vx setup | tr '\n' ' ')"
status=0
chroot "$FRESH" su postgres -s /bin/sh -c "cd /tmp/regress && /usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress \
    --bindir=/usr/lib/postgresql/15/bin --port=5499 --inputdir=. --outputdir=. --dbname=simhash_fresh $names" || status=$?
[ -f "$FRESH/tmp/regress/regression.diffs" ] && head -50 "$FRESH/tmp/regress/regression.diffs"
[ "$status" -eq 0 ] && echo "PASS: the package installed on a fresh Debian 12 and passed the SQL regression tests"
exit $status
