"""hdor: Hybrid-DOR routing for KNS fabrics — the Python reference of docs/hdor.md.

The C engine (opensm_plugin/osm_hdor*.c) and this module implement the same specification and must
produce identical forwarding tables; docs/hdor.md is the authority, and the section numbers below
refer to it.

    result = compute(ibnetdiscover.read("ibnetdiscover.out"))   # raises NotFamily with a reason
    result.coords[node], result.tables.lft[switch_guid][lid]

The passes live in modules of their own, hdor.compute picks one: hdor_complete (sections 1-4, a
complete KNS), hdor_faults (section 6, a KNS degraded against the one remembered), hdor_kns
(section 7: routing against the KNS of a description or the one remembered), hdor_first_sight
(section 7: the KNS identified at first sight); hdor_description writes and reads descriptions,
hdor_result holds the types they share.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ibtool.errors import NotFamily
from ibtool.fabric import Fabric
from ibtool.formats import atomic_write
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.routing import hdor_kns
from ibtool.routing.hdor_first_sight import at_first_sight
from ibtool.routing.hdor_complete import complete as _complete
from ibtool.routing.hdor_result import HdorResult, _Declined, not_kns

__all__ = ["HdorResult", "NotFamily", "compare_tables", "compute", "dump_lines", "port_guids", "write_dump"]


# ------------------------------------------------------------------------------------ compute

def compute(fabric: Fabric, baseline: tuple[Fabric, HdorResult] | None = None, vls: int = 8,
            description=None, first_sight: bool = True) -> HdorResult:
    """Identify the KNS, assign dimensions and coordinates and fill every switch's LFT (docs/hdor.md),
    as the C engine does with what it knows (docs section 7; ibtool.routing.hdor_kns, hdor_first_sight).

    baseline: (fabric, result) of the last complete KNS hdor routed (the C engine remembers it
    across sweeps). A fabric with failed elements against it is routed as a degraded KNS with
    path SLs and SL2VL tables using at most `vls` VLs (docs/hdor.md "Fault tolerance").
    description: a KNS description (ibtool.formats.hdor_conf.KnsConf): the fabric is routed
    against that KNS, or declined when it is not that KNS degraded.
    first_sight: a fabric that is neither is identified at first sight when its faults leave one
    KNS possible (else NotFamily says why)."""
    if description is not None:
        return hdor_kns.described(fabric, description, vls)
    if baseline is not None:
        try:
            return hdor_kns.against(fabric, baseline[0], None, None, vls, br=baseline[1])
        except NotFamily as declined:  # not a degraded KNS of it: perhaps a complete (new) one
            if isinstance(declined, _Declined):
                raise
            try:
                return _complete(fabric)
            except NotFamily:
                if first_sight:
                    try:
                        return at_first_sight(fabric, vls)
                    except NotFamily:
                        pass
                raise declined from None
    try:
        return _complete(fabric)
    except NotFamily as e:
        if not first_sight:
            raise
        try:
            return at_first_sight(fabric, vls)
        except _Declined:
            raise
        except NotFamily as e2:
            raise not_kns(f"{e.reason}; not identified at first sight ({e2.reason})") from None


# ------------------------------------------------------------------------------------ outputs

def _coord_str(c: tuple) -> str:
    return "[" + ",".join(str(x) for x in c) + "]"


def dump_lines(result: HdorResult, fabric: Fabric) -> list[str]:
    """The coordinates dump (opensm-hdor.dump, docs/hdor.md section 5), one string per line."""
    f, r = fabric, result
    out = [f"# hdor k={r.k} n={r.n} routers={len(r.routers)} switches={len(r.switches)} hcas={len(r.hcas)} "
           f"lids={r.lids}"]
    if r.faults:  # a degraded KNS (section 6); a complete one's dump is unchanged
        e = r.extra_hops
        out[0] += f" vls={r.vls} detoured={e['detoured']} extra_max={e['max']} extra_mean={e['mean']:.3f}"
    for x in r.routers:
        out.append(f'router 0x{f.guids[x]:016x} {_coord_str(r.coords[x])} "{f.names[x]}"')
    for x in r.switches:
        out.append(f'switch 0x{f.guids[x]:016x} dim={r.dim[x]} {_coord_str(r.coords[x])} "{f.names[x]}"')
    for x in r.hcas:
        out.append(f'hca    0x{f.guids[x]:016x} {_coord_str(r.coords[x])} "{f.names[x]}"')
    for (x, d) in sorted(r.spread, key=lambda rd: (f.guids[rd[0]], rd[1])):
        per = r.spread[(x, d)]
        out.append(f"spread 0x{f.guids[x]:016x} dim={d} ports=" + ",".join(f"{p}:{per[p]}" for p in sorted(per)))
    return out


def write_dump(result: HdorResult, fabric: Fabric, path: str | Path) -> None:
    with atomic_write(path) as fh:
        fh.write("\n".join(dump_lines(result, fabric)) + "\n")


def port_guids(fabric: Fabric) -> dict[int, int]:
    """LID -> port GUID, for the ` portguid` annotations of the file engine's LFT file."""
    return {lid: fabric.port_guid(node, port) for lid, (node, port) in fabric.lid_owners().items()}


def compare_tables(a: Tables, b: Tables, limit: int = 5) -> list[str]:
    """Differences between two sets of tables, one line per differing switch (empty list: equal).

    Missing entries and entries past an array's end count as 255 (no route).
    """
    out: list[str] = []
    for g in sorted(set(a.lft) - set(b.lft)):
        out.append(f"switch {g:#018x} '{a.names.get(g, '')}': only in the first tables")
    for g in sorted(set(b.lft) - set(a.lft)):
        out.append(f"switch {g:#018x} '{b.names.get(g, '')}': only in the second tables")
    for g in sorted(set(a.lft) & set(b.lft)):
        x, y = a.lft[g], b.lft[g]
        top = max(len(x), len(y))
        xa = np.full(top, NO_ROUTE, dtype=np.uint8)
        ya = xa.copy()
        xa[:len(x)], ya[:len(y)] = x, y
        diff = np.flatnonzero(xa != ya)
        if len(diff):
            shown = ", ".join(f"LID {int(i):#06x}: {int(xa[i])} vs {int(ya[i])}" for i in diff[:limit])
            more = f" (+{len(diff) - limit} more)" if len(diff) > limit else ""
            out.append(f"switch {g:#018x} '{a.names.get(g) or b.names.get(g, '')}': {len(diff)} LID(s) differ: "
                       f"{shown}{more}")
    return out
