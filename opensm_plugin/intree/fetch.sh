#!/bin/sh
# Fetch and unpack an OpenSM source tree.
# usage: fetch.sh <build dir>            Debian's 3.3.23 (the source of its opensm package)
#        fetch.sh --vendor <build dir>   upstream's 3.3.24 snapshot (commit fa74b98)
# -> <build dir>/src/opensm-<version>/ (printed)
#
# The snapshot is a `git archive` of github.com/linux-rdma/opensm at SNAPSHOT_COMMIT. It is taken
# from $OPENSM_SNAPSHOT (a tarball), else ../shared/vendor/ beside the repository (machines without
# network), else downloaded from GitHub; either way it must say AC_INIT(opensm, 3.3.24).
set -eu
VENDOR=0
if [ "${1:-}" = "--vendor" ]; then
    VENDOR=1
    shift
fi
BUILD=$1
mkdir -p "$BUILD/dl"
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
SNAPSHOT_COMMIT=fa74b98c4b604ebb8b6bb348ca3ac065ba418df0
SNAPSHOT_NAME=opensm-3.3.24-fa74b98.tar.gz
SNAPSHOT_SHA256=43e86dc0b08d03ef4c21b31bc1d2d999e3356ddf60b96fec347c7581a15e4580

if [ "$VENDOR" = 1 ]; then
    cd "$BUILD/dl"
    if [ ! -f "$SNAPSHOT_NAME" ]; then
        for cand in "${OPENSM_SNAPSHOT:-}" "$TOP/../shared/vendor/$SNAPSHOT_NAME"; do
            if [ -n "$cand" ] && [ -f "$cand" ]; then
                cp "$cand" "$SNAPSHOT_NAME.part"
                break
            fi
        done
        if [ ! -f "$SNAPSHOT_NAME.part" ]; then
            echo "intree: downloading OpenSM $SNAPSHOT_COMMIT from GitHub" >&2
            curl -fsSL -o "$SNAPSHOT_NAME.part" \
                "https://github.com/linux-rdma/opensm/archive/$SNAPSHOT_COMMIT.tar.gz"
        fi
        mv "$SNAPSHOT_NAME.part" "$SNAPSHOT_NAME"
    fi
    # the vendored file is checked by its digest; GitHub's archive of the same commit by its content
    if [ "$(sha256sum "$SNAPSHOT_NAME" | cut -c1-64)" != "$SNAPSHOT_SHA256" ]; then
        echo "intree: $SNAPSHOT_NAME is not the vendored snapshot (checking its AC_INIT)" >&2
    fi
    rm -rf "$BUILD/src"
    mkdir -p "$BUILD/src/unpack"
    tar -C "$BUILD/src/unpack" -xzf "$SNAPSHOT_NAME"
    top=$(ls -d "$BUILD"/src/unpack/*/ | head -n1)
    grep -q '^AC_INIT(opensm, 3.3.24,' "$top/configure.ac" ||
        { echo "intree: $SNAPSHOT_NAME is not OpenSM 3.3.24" >&2; exit 1; }
    mv "$top" "$BUILD/src/opensm-3.3.24"
    rmdir "$BUILD/src/unpack"
    echo "$BUILD/src/opensm-3.3.24"
    exit 0
fi

# a deb-src entry for bookworm main (same URI, suite and key as debian.sources)
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null \
   && ! grep -rqs '^deb-src ' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null; then
    echo "intree: adding /etc/apt/sources.list.d/ibtool-deb-src.sources and running apt-get update" >&2
    cat > /etc/apt/sources.list.d/ibtool-deb-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
fi
cd "$BUILD/dl"
if ! ls opensm_*.orig.tar.* >/dev/null 2>&1; then
    # the Debian packaging tarball may 404; the orig tarball is all we need
    apt-get source --download-only opensm >&2 || ls opensm_*.orig.tar.* >/dev/null
fi
ORIG=$(ls opensm_*.orig.tar.* | head -n1)
rm -rf "$BUILD/src"
mkdir -p "$BUILD/src"
tar -C "$BUILD/src" -xf "$ORIG"
ls -d "$BUILD"/src/opensm-*
