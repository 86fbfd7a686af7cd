#!/usr/bin/env bash
# The main job on the built-in example: CELLIA's KNS (paper 000, section 3.4: 6-ary 2-direct
# 1-indirect on 8-port IS5022 switches), planned, cabled, emulated in ibsim, routed by hdor, verified.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-demo}"
IBTOOL=.venv/bin/ibtool
step() { printf '\n== %s\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "1. plan the CELLIA KNS" \
    $IBTOOL topo kns --k 6 --n 2 --radix 8 --out "$OUT/cellia" --force
step "1b. its cabling plan: cable list, labels, rack and switch sheets, bill of materials" \
    $IBTOOL cabling "$OUT/cellia" --preset cellia --out "$OUT/cellia/cabling"
step "2. emulate it in ibsim, route it with hdor (stock OpenSM + opensm_plugin/libhdor.so), discover it" \
    $IBTOOL sim run "$OUT/cellia/topology.net" --engine hdor --out "$OUT/run"
step "3. what hdor decided (first lines of its coordinates dump)" \
    head -6 "$OUT/run/osm/opensm-hdor.dump"
step "4. plan vs. discovered" \
    $IBTOOL verify topology --plan "$OUT/cellia/topology.net" --discovered "$OUT/run/ibnetdiscover.out"
step "5. every check: cabling, coordinates, every route, deadlock freedom, balance" \
    $IBTOOL verify all "$OUT/run"
printf '\ndemo: OK — plan in %s/cellia, cabling sheets in %s/cellia/cabling/index.html, emulation results in %s/run\n' \
    "$OUT" "$OUT" "$OUT"
