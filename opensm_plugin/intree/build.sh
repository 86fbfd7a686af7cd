#!/bin/sh
# Build OpenSM from source, with hdor built in (the patch series beside this script) or stock.
# usage: build.sh [--vendor] [--stock] <build dir>
#   (none)     Debian's 3.3.23 + the series       make -C opensm_plugin intree         build/opensm-intree
#   --vendor   upstream's 3.3.24 snapshot + series make -C opensm_plugin intree-3.3.24  build/opensm-intree-3.3.24
#   --stock    no series: the OpenSM a plugin loads into (make -C opensm_plugin plugin-3.3.24:
#              build/opensm-3.3.24, and its libhdor.so)
# Result: <build dir>/opensm (a symlink to <build dir>/inst/sbin/opensm), runnable as
#   <build dir>/opensm -R hdor ...
# Steps: fetch + unpack the source (fetch.sh), make it a git repository and `git am` the series
# (0001 the hdor_config option, 0002 the engine's files and their registration, 0003 the docs),
# autoreconf, configure (shared libraries only), make -j2 and make install of the parts opensm
# needs. Re-running rebuilds only what changed; a series changed elsewhere than in the engine's
# files unpacks the source afresh. The engine's files are then copied from opensm_plugin/ when they
# differ (a series not regenerated yet: intree/mkseries.sh; tests/plugin/test_hdor_intree.py fails
# until it is).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PLUGIN=$(dirname "$HERE")
VENDOR=""
STOCK=0
while [ $# -gt 1 ]; do
    case "$1" in
        --vendor) VENDOR=--vendor ;;
        --stock) STOCK=1 ;;
        *) echo "usage: build.sh [--vendor] [--stock] <build dir>" >&2; exit 2 ;;
    esac
    shift
done
BUILD=$1
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
JOBS=${JOBS:-2}

need=""
for tool in gcc make autoconf automake libtoolize libtool bison flex git; do
    command -v "$tool" >/dev/null 2>&1 || need="$need $tool"
done
[ -n "$VENDOR" ] || command -v dpkg-source >/dev/null 2>&1 || need="$need dpkg-source"
[ -e /usr/include/infiniband/umad.h ] || need="$need umad.h"
if [ -n "$need" ]; then
    echo "intree: missing:$need -> apt-get install (needs root)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q build-essential autoconf automake libtool \
        libtool-bin bison flex dpkg-dev git libibumad-dev
fi

# what the source tree is: the series applied, by content (another series unpacks it afresh)
if [ "$STOCK" = 1 ]; then
    STAMP=stock
else
    # (the engine's own files left out: they are copied below, so a series regenerated for an
    # engine change keeps the tree and its objects)
    STAMP=$(cat "$HERE"/0*.patch | awk '
        /^diff --git /       { skip = ($3 ~ /^a\/opensm\/osm_(hdor|ucast_hdor)/) }
        /^ opensm\/osm_(hdor|ucast_hdor)/ || /^ [0-9]+ files? changed/ { next }
        !skip' | sha256sum | cut -c1-16)
fi
SRC=$(ls -d "$BUILD"/src/opensm-* 2>/dev/null | head -n1 || true)
if [ -z "$SRC" ] || [ "$(cat "$SRC/.hdor-patched" 2>/dev/null)" != "$STAMP" ]; then
    SRC=$("$HERE/fetch.sh" $VENDOR "$BUILD" | tail -n1)
    if [ "$STOCK" = 0 ]; then
        # the series as a maintainer would apply it: git am on a repository of the release
        export GIT_AUTHOR_NAME=intree GIT_AUTHOR_EMAIL=intree@localhost
        export GIT_COMMITTER_NAME=intree GIT_COMMITTER_EMAIL=intree@localhost
        git -C "$SRC" init -q
        git -C "$SRC" add -A -f
        git -C "$SRC" commit -q -m "OpenSM $(basename "$SRC")"
        for p in "$HERE"/0*.patch; do echo "intree: git am $(basename "$p")"; done
        git -C "$SRC" am -q "$HERE"/0*.patch
    fi
    echo "$STAMP" > "$SRC/.hdor-patched"
fi
if [ "$STOCK" = 0 ]; then
    # the engine's files as they are now (the series carries them as of its last regeneration:
    # mkseries.sh); copied only when they changed (keeps make incremental)
    for p in "$PLUGIN"/osm_hdor.h "$PLUGIN"/osm_hdor_*.c "$PLUGIN"/osm_ucast_hdor.c; do
        f=$(basename "$p")
        cmp -s "$p" "$SRC/opensm/$f" || cp "$p" "$SRC/opensm/$f"
    done
fi

cd "$SRC"
if [ ! -x configure ]; then
    echo "intree: autoreconf (log: $BUILD/autoreconf.log)"
    { aclocal -I config && libtoolize --force --copy && autoheader &&
        automake --foreign --add-missing --copy && autoconf; } >"$BUILD/autoreconf.log" 2>&1 ||
        { tail -n 30 "$BUILD/autoreconf.log"; exit 1; }
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
if [ "$STOCK" = 1 ]; then
    echo "intree: built $BUILD/opensm (stock $(basename "$SRC"))"
else
    grep -q '"hdor"' opensm/osm_opensm.c
    echo "intree: built $BUILD/opensm (routing engine hdor built in: -R hdor)"
fi
