#!/bin/sh
# Fetch and unpack the upstream OpenSM source that Debian's opensm package is built from.
# usage: fetch.sh <build dir>   -> <build dir>/src/opensm-<version>/
set -eu
BUILD=$1
mkdir -p "$BUILD/dl"
BUILD=$(cd "$BUILD" && pwd)
# a deb-src entry for bookworm main (same URI, suite and key as debian.sources)
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null \
   && ! grep -rqs '^deb-src ' /etc/apt/sources.list.d/ /etc/apt/sources.list 2>/dev/null; then
    echo "intree: adding /etc/apt/sources.list.d/ibtool-deb-src.sources and running apt-get update"
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
    apt-get source --download-only opensm || ls opensm_*.orig.tar.* >/dev/null
fi
ORIG=$(ls opensm_*.orig.tar.* | head -n1)
mkdir -p "$BUILD/src"
tar -C "$BUILD/src" -xf "$ORIG"
ls -d "$BUILD"/src/opensm-*
