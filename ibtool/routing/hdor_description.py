"""A KNS described (docs/hdor.md section 7, the hdor.conf of ibtool.formats.hdor_conf): written
from a complete KNS hdor identified (`describe`; a plan's own, `plan_description`, written with the
plan), checked for what a discovery may have missed (`irregular`), and read back as the complete
KNS it describes (`fabric_of`) for routing against it (hdor_kns.described).

    conf = describe(fabric, hdor.compute(fabric))                      # a complete KNS, described
"""

from __future__ import annotations

from ibtool.errors import NotFamily
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.hdor_conf import KnsConf, Node
from ibtool.routing.hdor_complete import complete
from ibtool.routing.hdor_result import HdorResult, _describe


def describe(fabric: Fabric, result: HdorResult, lids: bool = True, comment: str = "") -> KnsConf:
    """The description of a complete KNS (`result` = hdor.compute(fabric), complete)."""
    conf = KnsConf(result.k, result.n, result.s, comment=comment)
    f = fabric
    for x in range(f.num_nodes):
        role = result.role[x]
        node = Node(role, f.guids[x], f.nports[x], tuple(result.coords.get(x, ())),
                    dim=result.dim.get(x) if role == "switch" else None, desc=f.names[x])
        if lids:
            node.lids = {p: v for (y, p), v in f.port_lids.items() if y == x}
        conf.nodes.append(node)
    for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb):
        conf.links.append((f.guids[a], pa, f.guids[b], pb))
    return conf


MAX_PLAN_LIDS = 0xBFFF  # a plan beyond OpenSM's unicast LIDs gets no description


def plan_description(fabric: Fabric) -> KnsConf | None:
    """The description of a planned KNS (no LIDs: OpenSM assigns them), for the plan's hdor.conf;
    None when hdor does not see a complete KNS in it, or it is beyond the unicast LIDs."""
    from ibtool.routing.lids import assign_lids
    lids = fabric.count(kind=SWITCH) + sum(fabric.nports[i] for i in range(fabric.num_nodes) if fabric.types[i] == CA)
    if lids > MAX_PLAN_LIDS:
        return None
    saved = fabric.port_lids
    try:
        fabric.port_lids = {}
        assign_lids(fabric)  # hdor's coordinates do not depend on LIDs; routing wants some
        res = complete(fabric)
    except NotFamily:
        return None
    finally:
        fabric.port_lids = saved
    return describe(fabric, res, lids=False,
                    comment="the KNS for the hdor routing engine (docs/plugin.md \"hdor.conf\"), written with the "
                            "plan (`ibtool topo`, `ibtool cabling import`):\nit is read from the directory of the "
                            "opensm.conf OpenSM is started with (-F), else /etc/opensm")


def irregular(fabric: Fabric, result: HdorResult) -> list[str]:
    """What keeps a complete KNS (as hdor identifies it) from being the whole of it: every router
    has as many HCA cables and as many cables into each dimension as the others, every indirect
    network as many switches and inner cables. hdor routes uneven multiplicity, but a description
    written from a discovery missing one of two parallel cables would call the cable's return a
    recabling. Empty when regular."""
    f, r = fabric, result
    out: list[str] = []
    dim_of = r.dim
    per_router: dict[tuple, list[int]] = {}
    for x in r.routers:
        nh = sum(1 for _, y, _ in f.neighbors(x) if f.types[y] == CA)
        per = [0] * r.n
        for _, y, _ in f.neighbors(x):
            if y in dim_of:
                per[dim_of[y]] += 1
        per_router.setdefault((nh, *per), []).append(x)
    if len(per_router) > 1:
        common = max(per_router, key=lambda key: len(per_router[key]))
        for key, xs in per_router.items():
            if key != common:
                out.append(f"{_describe(f, xs[0], 'router')} has {key[0]} HCA cable(s) and "
                           f"{', '.join(str(c) for c in key[1:])} cable(s) into dimensions 0-{r.n - 1}; "
                           f"{len(per_router[common])} routers have {common[0]} and "
                           f"{', '.join(str(c) for c in common[1:])}")
                break
    shape: dict[tuple, list[list[int]]] = {}
    for sw in r.groups:
        inside = set(sw)
        inner = sum(1 for x in sw for _, y, _ in f.neighbors(x) if y in inside) // 2
        shape.setdefault((len(sw), inner), []).append(sw)
    if len(shape) > 1:
        common = max(shape, key=lambda key: len(shape[key]))
        for key, gs in shape.items():
            if key != common:
                out.append(f"the indirect network of {_describe(f, gs[0][0])} has {key[0]} switch(es) and {key[1]} "
                           f"inner cable(s), {len(shape[common])} others {common[0]} and {common[1]}")
                break
    return out


def fabric_of(conf: KnsConf) -> tuple[Fabric, dict, dict]:
    """The KNS of a description as a Fabric (GUIDs: each device's place), its routers'
    coordinates and its switches' dimensions (by node), with the description's LIDs."""
    f = Fabric("kns-description")
    names: dict[str, int] = {}
    for x in conf.nodes:
        names[x.desc] = names.get(x.desc, 0) + 1
    idx = {}
    coords, dims = {}, {}
    for x in sorted(conf.nodes, key=lambda x: x.place):
        name = x.desc if x.desc and names[x.desc] == 1 else f"{x.desc or x.role} {x.guid:#018x}"
        i = f.add_node(CA if x.role == "hca" else SWITCH, name, x.ports, x.role, guid=x.place)
        idx[x.guid] = i
        for p, v in x.lids.items():
            f.port_lids[(i, p)] = v
        if x.role == "router":
            coords[i] = tuple(x.coords)
        elif x.role == "switch":
            dims[i] = x.dim
    for a, pa, b, pb in conf.links:
        f.add_link(idx[a], idx[b], pa, pb)
    return f, coords, dims


__all__ = ["describe", "plan_description", "irregular", "fabric_of", "MAX_PLAN_LIDS"]
