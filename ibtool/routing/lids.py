"""LIDs for fabrics that have none yet (plans): the numbering used by tests and benchmarks.

A discovered fabric carries the LIDs OpenSM gave it; a plan from `ibtool.topologies` carries none.
`assign_lids` numbers a plan the way OpenSM numbers a fresh subnet in spirit (switches first, then
CA ports), but deterministically: switches by node GUID get base LIDs 1, 2, ...; then every linked
CA port, by (node GUID, port). With LMC > 0 every base LID is a multiple of 2^lmc and each port
owns 2^lmc LIDs (switch port 0 included, as with OpenSM's `lmc_esp0`).
"""

from __future__ import annotations

from ibtool.errors import InputError
from ibtool.fabric import SWITCH, Fabric

MAX_UNICAST_LID = 0xBFFF


def assign_lids(fabric: Fabric, lmc: int = 0) -> int:
    """Fill `fabric.port_lids` (replacing any LIDs); returns the highest LID."""
    if not 0 <= lmc <= 7:
        raise InputError(f"LMC {lmc} is outside 0..7")
    step = 1 << lmc
    fabric.port_lids.clear()
    order = sorted(range(fabric.num_nodes), key=lambda i: fabric.guids[i])
    ends: list[tuple[int, int]] = [(i, 0) for i in order if fabric.types[i] == SWITCH]
    for i in order:
        if fabric.types[i] != SWITCH:
            ends += [(i, p) for p, _, _ in fabric.neighbors(i)]
    top = len(ends) * step + step - 1
    if top > MAX_UNICAST_LID:
        raise InputError(f"{len(ends)} ports with LMC {lmc} need LIDs up to {top:#x}, beyond {MAX_UNICAST_LID:#x}")
    fabric.port_lids = {}
    for j, (node, port) in enumerate(ends):
        fabric.port_lids[(node, port)] = ((j + 1) * step, lmc)
    return len(ends) * step + step - 1 if ends else 0
