#!/bin/sh
# Build OpenSM 3.3.23 (Debian's source package) with hdor as a built-in routing engine.
# usage: build.sh <build dir>      (make -C opensm_plugin intree: build/opensm-intree)
# Result: <build dir>/opensm (a symlink to <build dir>/inst/sbin/opensm), runnable as
#   <build dir>/opensm -R hdor ...
# Steps: fetch + unpack the .orig tarball (fetch.sh), apply intree/*.patch (enum, static
# routing module row, Makefile.am, file ids), copy the engine's files (../osm_hdor*.[ch],
# ../osm_ucast_hdor.c) into opensm/, autoreconf, configure (shared libraries only), make -j2 and
# make install of the parts opensm needs. Re-running rebuilds only what changed.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PLUGIN=$(dirname "$HERE")
BUILD=$1
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
JOBS=${JOBS:-2}

need=""
for tool in gcc make autoconf automake libtoolize libtool bison flex dpkg-source; do
    command -v "$tool" >/dev/null 2>&1 || need="$need $tool"
done
[ -e /usr/include/infiniband/umad.h ] || need="$need umad.h"
if [ -n "$need" ]; then
    echo "intree: missing:$need -> apt-get install (needs root)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q build-essential autoconf automake libtool \
        libtool-bin bison flex dpkg-dev libibumad-dev
fi

SRC=$(ls -d "$BUILD"/src/opensm-* 2>/dev/null | head -n1 || true)
# the patches applied, by content: another series unpacks the source afresh
STAMP=$(cat "$HERE"/*.patch | sha256sum | cut -c1-16)
if [ -z "$SRC" ] || [ "$(cat "$SRC/.hdor-patched" 2>/dev/null)" != "$STAMP" ]; then
    rm -rf "$BUILD/src"
    "$HERE/fetch.sh" "$BUILD" >/dev/null
    SRC=$(ls -d "$BUILD"/src/opensm-* | head -n1)
    for p in "$HERE"/*.patch; do
        echo "intree: applying $(basename "$p")"
        patch -d "$SRC" -p1 --forward --quiet < "$p"
    done
    echo "$STAMP" > "$SRC/.hdor-patched"
fi
# the same engine files as the plugin; copied only when they changed (keeps make incremental)
for p in "$PLUGIN"/osm_hdor.h "$PLUGIN"/osm_hdor_*.c "$PLUGIN"/osm_ucast_hdor.c; do
    f=$(basename "$p")
    cmp -s "$p" "$SRC/opensm/$f" || cp "$p" "$SRC/opensm/$f"
done

cd "$SRC"
if [ ! -x configure ]; then
    echo "intree: autoreconf"
    aclocal -I config && libtoolize --force --copy >/dev/null && autoheader &&
        automake --foreign --add-missing --copy 2>/dev/null && autoconf
fi
if [ ! -f Makefile ]; then
    echo "intree: configure"
    # shared libraries only: libtool would compile every source a second time for static ones
    ./configure --prefix="$BUILD/inst" --sysconfdir="$BUILD/inst/etc" --disable-static >"$BUILD/configure.log" 2>&1 ||
        { tail -n 30 "$BUILD/configure.log"; exit 1; }
fi
echo "intree: make -j$JOBS (log: $BUILD/make.log)"
# the parts opensm needs, in their order: not osmtest (a separate SA test client)
: >"$BUILD/make.log"
: >"$BUILD/install.log"
for part in complib libopensm libvendor opensm include; do
    make -C "$part" -j"$JOBS" >>"$BUILD/make.log" 2>&1 || { grep -E "error|Error" "$BUILD/make.log" | tail -n 30; exit 1; }
    make -C "$part" install >>"$BUILD/install.log" 2>&1 || { tail -n 30 "$BUILD/install.log"; exit 1; }
done
ln -sf inst/sbin/opensm "$BUILD/opensm"
"$BUILD/opensm" --version 2>/dev/null | head -n 3 || true
grep -q '"hdor"' opensm/osm_opensm.c
echo "intree: built $BUILD/opensm (routing engine hdor built in: -R hdor)"
