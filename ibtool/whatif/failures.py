"""Failure sets: which failures what-if routes, each named as the crew names it.

    singles(fabric, cables, sm)          # every switch-switch cable (router-switch included), every
                                         # switch and router: the set a fabric is ranked on
    pairs(singles, n, seed)              # n random double failures, reproducible from the seed
    chosen(fabric, cables, ["C0043", "S[0,1]", "R[1,1] 3", "C0043+C0077"])   # --only

A cable is named by its ID (and carries its labels and places) when the plan has a cable list
(`ibtool cabling`: PLAN/cabling/cables.csv), else by its ends, "R[1,1] P3 - S[0,1] P2". A host
cable or an HCA only disconnects its host: `hosts` counts them, they are not routed (an --only
naming one is refused, saying so). The subnet manager's own device fails with every path it
manages: a row of its own, not routed (`sm`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric


@dataclass(frozen=True)
class Failure:
    """What fails together: fabric link indices and nodes, and how the row names it."""

    id: str
    kind: str  # cable | switch | router | pair
    links: tuple[int, ...] = ()
    nodes: tuple[int, ...] = ()
    parts: tuple[dict, ...] = field(default=(), compare=False)  # each element: kind, id, ends, labels, where

    def down(self, fabric: Fabric) -> list[str]:
        """The element as `sim run --faults` names it: 'DEVICE PORT' for a cable, 'DEVICE'."""
        out = [f"{fabric.names[fabric.link_a[li]]} {fabric.link_pa[li]}" for li in self.links]
        return out + [fabric.names[x] for x in self.nodes]


def node_kind(fabric: Fabric, x: int) -> str:
    return "router" if fabric.roles[x] == "router" else "switch"


def cable(fabric: Fabric, li: int, cables: dict | None) -> Failure:
    a, pa, b, pb = fabric.link_a[li], fabric.link_pa[li], fabric.link_b[li], fabric.link_pb[li]
    ends = [[fabric.names[a], pa], [fabric.names[b], pb]]
    c = (cables or {}).get((fabric.names[a], pa)) or (cables or {}).get((fabric.names[b], pb))
    if c is not None:
        part = {"kind": "cable", "id": c.id, "ends": ends, "labels": [c.a_label, c.b_label],
                "where": [x for x in (c.at(c.a), c.at(c.b)) if x]}
    else:
        part = {"kind": "cable", "id": f"{ends[0][0]} P{pa} - {ends[1][0]} P{pb}", "ends": ends}
    return Failure(part["id"], "cable", links=(li,), parts=(part,))


def device(fabric: Fabric, x: int) -> Failure:
    part = {"kind": node_kind(fabric, x), "id": fabric.names[x]}
    return Failure(fabric.names[x], part["kind"], nodes=(x,), parts=(part,))


def switch_cable(fabric: Fabric, li: int) -> bool:
    return fabric.types[fabric.link_a[li]] == SWITCH and fabric.types[fabric.link_b[li]] == SWITCH


@dataclass
class Set:
    """The failures to route, and what is counted without routing."""

    failures: list[Failure]
    hosts: dict = field(default_factory=dict)  # {"host_cables": n, "hcas": n}: each disconnects its host only
    how: str = ""  # "every single failure", "12 random pairs (seed 1)", "chosen"


def singles(fabric: Fabric, cables: dict | None = None) -> Set:
    """Every switch-switch cable, then every switch and router (fabric order)."""
    f = fabric
    out = [cable(f, li, cables) for li in range(f.num_links) if switch_cable(f, li)]
    out += [device(f, x) for x in range(f.num_nodes) if f.types[x] == SWITCH]
    hcas = [x for x in range(f.num_nodes) if f.types[x] == CA]
    host_cables = sum(1 for li in range(f.num_links) if not switch_cable(f, li))
    return Set(out, {"host_cables": host_cables, "hcas": len(hcas)}, "every single failure")


KINDS = ("cable", "switch", "router")


def of_kinds(single: Set, kinds: list[str]) -> Set:
    """--kind: only the single failures of these kinds (cable, switch, router)."""
    out = [fl for fl in single.failures if fl.kind in kinds]
    return Set(out, single.hosts, "every single " + " and ".join(k for k in KINDS if k in kinds))


def pairs(single: Set, n: int, seed: int) -> Set:
    """`n` distinct random pairs of single failures (cables, switches, routers), from `seed`."""
    fs = single.failures
    most = len(fs) * (len(fs) - 1) // 2
    if n > most:
        raise InputError(f"--pairs {n}: the fabric has {len(fs)} single failures, {most} pairs of them")
    rng = random.Random(seed)
    seen: set[tuple[int, int]] = set()
    out = []
    while len(out) < n:
        i, j = sorted(rng.sample(range(len(fs)), 2))
        if (i, j) in seen:
            continue
        seen.add((i, j))
        out.append(combined([fs[i], fs[j]]))
    return Set(out, single.hosts, f"{n} random pairs of single failures (seed {seed})")


def combined(parts: list[Failure]) -> Failure:
    return Failure(" + ".join(p.id for p in parts), "pair" if len(parts) == 2 else "set",
                   links=tuple(li for p in parts for li in p.links), nodes=tuple(x for p in parts for x in p.nodes),
                   parts=tuple(q for p in parts for q in p.parts))


def chosen(fabric: Fabric, specs: list[str], cables: dict | None = None) -> Set:
    """--only: cable IDs, device names, 'DEVICE PORT' (a cable by either end); A+B fail together."""
    f = fabric
    by_id = {}
    for li in range(f.num_links):
        c = cable(f, li, cables)
        by_id[c.id] = (li, c)
    names = {n: i for i, n in enumerate(f.names)}
    at = {}  # (node, port) -> its link
    for li in range(f.num_links):
        at[(f.link_a[li], f.link_pa[li])] = at[(f.link_b[li], f.link_pb[li])] = li
    out = []
    for spec in specs:
        parts = []
        for one in (s.strip() for s in spec.split("+")):
            name, _, port = one.rpartition(" ")
            if one in by_id:
                li, c = by_id[one]
            elif name in names and port.isdigit() and f.peer(names[name], int(port)) is not None:
                li = at[(names[name], int(port))]
                c = cable(f, li, cables)
            elif one in names and f.types[names[one]] == SWITCH:
                parts.append(device(f, names[one]))
                continue
            elif one in names:
                raise InputError(f"--only {one}: an HCA only disconnects its own host (counted, not routed)")
            else:
                raise InputError(f"--only {one}: no cable ID, device or 'DEVICE PORT' of the fabric is called that")
            if not switch_cable(f, li):
                raise InputError(f"--only {one}: a host cable only disconnects its own host (counted, not routed)")
            parts.append(c)
        out.append(parts[0] if len(parts) == 1 else combined(parts))
    return Set(out, {}, "chosen")
