#!/bin/sh
# The plugin's ibsim tests against upstream's OpenSM 3.3.24 instead of Debian's 3.3.23: the stock
# 3.3.24 (make plugin-3.3.24) first on PATH (ibtool and the tests start `opensm` from PATH), and
# opensm_plugin/libhdor.so replaced for the run by the one built against its headers (newer than
# its sources, so the tests' `make libhdor.so` keeps it; rebuilt for Debian's OpenSM at the end).
# usage: opensm_plugin/intree/test-3.3.24.sh [pytest arguments]   (default: the plugin's ibsim
#        tests and the fault matrix as make test runs them)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PLUGIN=$(dirname "$HERE")
TOP=$(dirname "$PLUGIN")
make -s -C "$PLUGIN" plugin-3.3.24 >/dev/null
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"; make -s -B -C "$PLUGIN" libhdor.so' EXIT
ln -s "$TOP/build/opensm-3.3.24/opensm" "$BIN/opensm"
cp "$TOP/build/opensm-3.3.24/libhdor.so" "$PLUGIN/libhdor.so"
export PATH="$BIN:$PATH"
opensm --version 2>/dev/null | grep -q "OpenSM 3.3.24" || { echo "test-3.3.24: opensm on PATH is not 3.3.24"; exit 1; }
echo "test-3.3.24: $(command -v opensm) -> $(readlink "$BIN/opensm")"
cd "$TOP"
if [ $# -gt 0 ]; then
    .venv/bin/pytest "$@"
    exit $?
fi
# as make test runs them: the parallel part, then the tests marked `alone` (two SMs on one ibsim)
rc=0
.venv/bin/pytest -n 2 --dist loadfile -m "not alone" tests/plugin/test_hdor_ibsim.py \
    tests/plugin/test_hdor_kns_ibsim.py tests/plugin/test_hdor_faults_ibsim.py \
    tests/plugin/test_hdor_mcast_ibsim.py tests/test_hdor_fault_matrix.py || rc=$?
.venv/bin/pytest -m alone tests/plugin/test_hdor_failover_ibsim.py || rc=$?
exit $rc
