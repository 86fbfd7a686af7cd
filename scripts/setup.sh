#!/usr/bin/env bash
# Install what ibtool needs on a fresh Debian machine: the Debian packages listed in
# scripts/debian-packages.txt (only the missing ones) and the Python package in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

mapfile -t wanted < <(grep -v '^\s*#' scripts/debian-packages.txt | awk 'NF{print $1}')
missing=()
for p in "${wanted[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    $SUDO apt-get update -qq
    # The Slurm and OpenSM packages start services on install; on a machine without systemd
    # that is harmless, and ibtool starts its own instances anyway.
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($PY --version)"
    "$PY" -m venv .venv
fi
stamp=.venv/.ibtool-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e '.[test]'
    touch "$stamp"
fi
echo "setup: ok ($(.venv/bin/ibtool --version))"
