#!/bin/sh
# Regenerate the patch series beside this script (0001..) from the engine's files as they are in
# opensm_plugin/: `git am` the series on upstream's 3.3.24 snapshot, put the current engine files
# into the commit that adds them, `git format-patch` the commits again.
# usage: mkseries.sh            rewrite intree/0*.patch (make -C opensm_plugin series)
#        mkseries.sh --check    exit 1, with a diff, when they are not what it would write
# To change the other parts of the series (the option, the registration, the docs): apply it on the
# snapshot (build.sh --vendor leaves build/opensm-intree-3.3.24/src/opensm-3.3.24 a git
# repository), commit or amend there, `git format-patch --zero-commit --no-signature` the commits
# over the first one into this directory, then run this script.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PLUGIN=$(dirname "$HERE")
CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# fixed dates and identities: the same sources give the same series, byte for byte
export GIT_COMMITTER_NAME=series GIT_COMMITTER_EMAIL=series@localhost
export GIT_COMMITTER_DATE="2026-03-30T00:00:00Z"
SRC=$("$HERE/fetch.sh" --vendor "$WORK" | tail -n1)
cd "$SRC"
git init -q
git add -A -f
GIT_AUTHOR_NAME=upstream GIT_AUTHOR_EMAIL=upstream@localhost GIT_AUTHOR_DATE="$GIT_COMMITTER_DATE" \
    git commit -q -m "OpenSM 3.3.24"
BASE=$(git rev-parse HEAD)
# (the authors and dates of the patches are theirs)
git am -q "$HERE"/0*.patch

# the commit that adds the engine: its files replaced by the current ones, the later ones on top
ENGINE=$(git log --diff-filter=A --format=%H -- opensm/osm_ucast_hdor.c | tail -n1)
TIP=$(git rev-parse HEAD)
git checkout -q "$ENGINE"
for p in "$PLUGIN"/osm_hdor.h "$PLUGIN"/osm_hdor_*.c "$PLUGIN"/osm_ucast_hdor.c; do
    cp "$p" opensm/
done
git add -A opensm
git commit -q --amend --no-edit --allow-empty
for c in $(git rev-list --reverse "$ENGINE..$TIP"); do
    git cherry-pick --allow-empty "$c" >/dev/null
done

mkdir "$WORK/out"
git format-patch -q --zero-commit --no-signature -o "$WORK/out" "$BASE..HEAD"
if [ "$CHECK" = 1 ]; then
    mkdir "$WORK/now"
    cp "$HERE"/0*.patch "$WORK/now"/
    if ! diff -u -r "$WORK/now" "$WORK/out" >"$WORK/diff"; then
        head -n 60 "$WORK/diff"
        echo "mkseries: the series is not up to date: run opensm_plugin/intree/mkseries.sh"
        exit 1
    fi
    echo "mkseries: the series is up to date"
    exit 0
fi
rm -f "$HERE"/0*.patch
cp "$WORK"/out/*.patch "$HERE"/
ls "$HERE"/0*.patch
