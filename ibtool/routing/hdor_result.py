"""What an hdor pass returns and how it refuses: the types every pass shares — the complete KNS
(hdor_complete), the degraded one (hdor_faults), the KNS from elsewhere (hdor_kns, hdor_first_sight) — and
hdor.compute, which picks the pass. They live below all of them, so no pass imports another's
module for them (docs/design.md: no import circle).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibtool.errors import NotFamily
from ibtool.fabric import SWITCH, Fabric
from ibtool.formats.lft import Tables


def not_kns(reason: str) -> NotFamily:
    """hdor's refusal: the fabric is not a (complete) KNS; `reason` names the device at fault when
    there is one."""
    return NotFamily("hdor", "KNS", reason)


class _Declined(NotFamily):
    """The fabric is the KNS hdor knows, degraded, but the degraded pass declines it (VLs, SLs, a
    detour the scheme does not allow): nothing else is tried, as in the C engine."""

    def __init__(self, reason: str):
        super().__init__("hdor", "KNS", reason)


@dataclass
class HdorResult:
    k: int
    n: int
    s: int  # stages: 1 + the largest group "radius" (see _stages); 1 for single-switch groups
    role: list[str]  # per node: "router", "switch" (indirect) or "hca"
    dim: dict[int, int]  # indirect switch -> its group's dimension
    coords: dict[int, tuple]  # routers, HCAs: [r_{n-1},...,r_0]; indirect switches: group coordinates
    tables: Tables  # every switch GUID -> uint8 array by LID (0..max LID), 255 = no entry
    spread: dict[tuple[int, int], dict[int, int]]  # (router, dim) with parallel links -> {port: LIDs}
    routers: list[int] = field(default_factory=list)  # by GUID
    switches: list[int] = field(default_factory=list)  # indirect switches, by GUID
    hcas: list[int] = field(default_factory=list)  # by GUID
    groups: list[list[int]] = field(default_factory=list)  # switches of each group, groups by key
    group_dim: list[int] = field(default_factory=list)
    lids: int = 0  # LIDs routed (every LID of every LMC range)
    # degraded KNS (docs/hdor.md "Fault tolerance"); fault-free: 1 VL, no SLs, nothing failed
    vls: int = 1  # VLs the CA-to-CA routes use (1 + the most dimension-order violations of a path)
    sl2vl: dict | None = None  # SL2VL (formats.sl2vl): switch GUID -> {(in, out): 16 VLs}; rows not listed: VL 0
    path_sls: dict | None = None  # PathSLs (formats.pathrecord): (SLID, DLID) -> SL, every CA-to-CA pair
    faults: dict = field(default_factory=dict)  # failed links/nodes against the remembered KNS
    extra_hops: dict = field(default_factory=dict)  # CA-to-CA pairs whose path changed: count, max, mean links
    kns: tuple | None = None  # degraded: (the complete KNS as a Fabric, its fault-free Tables) routed against

    def spread_summary(self) -> dict:
        return spread_summary(self.spread)


def spread_summary(spread: dict[tuple[int, int], dict[int, int]]) -> dict:
    """How evenly parallel router–group links share the LIDs (max - min per pair)."""
    if not spread:
        return {"pairs": 0}
    counts = [c for per in spread.values() for c in per.values()]
    imb = [max(per.values()) - min(per.values()) for per in spread.values()]
    return {"pairs": len(spread), "ports": len(counts), "min_lids": min(counts),
            "max_lids": max(counts), "max_imbalance": max(imb)}


def _describe(f: Fabric, node: int, role: str | None = None) -> str:
    role = role or ("switch" if f.types[node] == SWITCH else "hca")
    return f"{role} {f.guids[node]:#018x} '{f.names[node]}'"
