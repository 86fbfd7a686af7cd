#!/bin/sh
# make -C opensm_plugin deb: the Debian package opensm-hdor (debian/control), built with
# dpkg-buildpackage in a copy of the sources under build/deb/ (the source tree stays clean).
# usage: debian/build.sh [<output dir>]   -> <output dir>/opensm-hdor_<version>_<arch>.deb
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PLUGIN=$(dirname "$HERE")
TOP=$(dirname "$PLUGIN")
OUT=${1:-$TOP/build/deb}
if ! command -v dh >/dev/null 2>&1 || ! command -v dpkg-buildpackage >/dev/null 2>&1; then
    echo "deb: missing debhelper/dpkg-dev -> apt-get install (needs root)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debhelper dpkg-dev
fi
VER=$(dpkg-parsechangelog -l "$HERE/changelog" -S Version)
STAGE="$OUT/opensm-hdor-$VER"
rm -rf "$STAGE"
mkdir -p "$STAGE/docs"
cd "$PLUGIN"
cp Makefile .clang-format libhdor.map libhdorcore.map osm_hdor.h osm_hdor_*.c osm_ucast_hdor.c \
    hdor_offline.c hdor_offline.h "$STAGE/"
cp -r debian examples "$STAGE/"
rm -f "$STAGE/debian/build.sh"
cp "$TOP/docs/plugin.md" "$TOP/docs/hdor.md" "$STAGE/docs/"
cd "$STAGE"
echo "deb: dpkg-buildpackage (log: $OUT/build.log)"
dpkg-buildpackage -b -us -uc >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
rm -rf "$STAGE"
ls "$OUT"/opensm-hdor_"$VER"_*.deb
