"""Routing against a KNS hdor knows without having seen it complete (docs/hdor.md section 7): the
KNS of a description (hdor.conf, ibtool.routing.hdor_description) or the one it remembers, the
Python reference of opensm_plugin/osm_hdor_kns.c; identifying one at first sight is
hdor_first_sight (osm_hdor_sight.c), a description hdor_description (osm_hdor_conf.c).

    res = hdor.compute(now, description=hdor_conf.read("hdor.conf"))   # the KNS of the description
    res = hdor.compute(now, baseline=(complete, base))                 # the KNS remembered

The KNS is a complete Fabric (`bf`: devices and cables, with the LIDs of now; devices not there
keep the LIDs they had while those are free) and its coordinates; routed by docs section 4, the
fabric of now is then routed against it as against the KNS a long-running hdor remembers
(hdor_faults, docs section 6). A device that replaced another (same neighbours on the same ports,
a new GUID) takes its place: `bf` keeps the old GUID, the fabric is looked at with that GUID, and
the result is given back with the new one.
"""

from __future__ import annotations

from dataclasses import replace as dc_replace

from ibtool.errors import NotFamily
from ibtool.fabric import Fabric
from ibtool.formats.hdor_conf import PHANTOM, KnsConf
from ibtool.formats.lft import Tables
from ibtool.routing.hdor_complete import _Topology
from ibtool.routing.hdor_description import fabric_of
from ibtool.routing.hdor_result import HdorResult, _describe, not_kns


def _relid(now: Fabric, base: Fabric, keep: Fabric | None = None) -> Fabric:
    """`base` (a KNS, by place GUIDs; `now` looked at with the same GUIDs) with the LIDs of now;
    a port not there now keeps its LIDs from `keep` (default: base) while they are free and not
    above the highest LID of now."""
    keep = keep if keep is not None else base
    out = Fabric(base.name)
    for i in range(base.num_nodes):
        out.add_node(base.types[i], base.names[i], base.nports[i], base.roles[i], dict(base.labels[i]),
                     guid=base.guids[i])
    for li in range(base.num_links):
        out.add_link(base.link_a[li], base.link_b[li], base.link_pa[li], base.link_pb[li])
    taken = set(now.lid_owners())
    top = max(taken, default=0)
    for (c, p), v in now.port_lids.items():
        b = out.by_guid(now.guids[c])
        if b is not None:
            out.port_lids[(b, p)] = v
    for (y, p), (lid, lmc) in keep.port_lids.items():
        b = out.by_guid(keep.guids[y])
        if b is None or now.by_guid(keep.guids[y]) is not None:
            continue
        rng = range(lid, lid + (1 << lmc))
        if rng[-1] <= top and taken.isdisjoint(rng):
            out.port_lids[(b, p)] = (lid, lmc)
            taken.update(rng)
    return out


def routed(bf: Fabric, coords: dict | None, dims: dict | None) -> HdorResult:
    """Sections 1 and 4 on a complete KNS; coordinates by sections 2-3, or the given ones."""
    topo = _Topology(bf)
    topo.identify()
    if coords is None:
        topo.dimensions()
        topo.coordinates()
    else:
        topo.given(coords, dims)
    return topo.route()


def _renamed(f: Fabric, guid_of: dict[int, int]) -> Fabric:
    """A copy of `f` with some GUIDs replaced (node -> GUID), LIDs kept."""
    if not guid_of:
        return f
    out = Fabric(f.name)
    for i in range(f.num_nodes):
        out.add_node(f.types[i], f.names[i], f.nports[i], f.roles[i], dict(f.labels[i]), guid=guid_of.get(i, f.guids[i]))
    for li in range(f.num_links):
        out.add_link(f.link_a[li], f.link_b[li], f.link_pa[li], f.link_pb[li], f.link_rate[li])
    out.port_lids = dict(f.port_lids)
    out.port_guids = dict(f.port_guids)
    return out


def _back(res: HdorResult, f: Fabric, renamed: Fabric) -> HdorResult:
    """A result computed on `renamed` (replaced devices under their place GUIDs) for `f`."""
    if renamed is f:
        return res
    g = {renamed.guids[i]: f.guids[i] for i in range(f.num_nodes)}
    tables = Tables()
    for guid, row in res.tables.lft.items():
        tables.lft[g.get(guid, guid)] = row
        tables.names[g.get(guid, guid)] = res.tables.names.get(guid, "")
    out = dc_replace(res, tables=tables)
    if res.sl2vl is not None:
        sl2vl = type(res.sl2vl)()
        sl2vl.path = getattr(res.sl2vl, "path", None)
        for guid, rows in res.sl2vl.items():
            sl2vl[g.get(guid, guid)] = rows
            sl2vl.kind[g.get(guid, guid)] = res.sl2vl.kind.get(guid, "Switch")
        out.sl2vl = sl2vl
    order = lambda xs: sorted(xs, key=lambda i: f.guids[i])  # noqa: E731
    out.routers, out.switches, out.hcas = order(res.routers), order(res.switches), order(res.hcas)
    out.groups = [order(gr) for gr in res.groups]
    if res.kns is not None:  # the complete KNS with the replacements' GUIDs
        bf, t0 = res.kns
        guid_of = {bf.by_guid(a): b for a, b in g.items() if a != b and bf.by_guid(a) is not None}
        t = Tables()
        for guid, row in t0.lft.items():
            new = g.get(guid, guid)
            t.lft[new], t.names[new] = row, t0.names.get(guid, "")
        out.kns = (_renamed(bf, guid_of), t)
    return out


def against(now: Fabric, bf: Fabric, coords: dict | None, dims: dict | None, vls: int = 8,
            br: HdorResult | None = None, replaced: dict[int, int] | None = None) -> HdorResult:
    """Route `now` against the complete KNS `bf` (place GUIDs), as the C engine does with the KNS
    it knows: its fault-free tables for the LIDs of now, then the degraded pass (docs section 6);
    nothing failed: its tables. `replaced`: node of now -> the place GUID it took."""
    from ibtool.routing.hdor_faults import LidsMoved, degraded
    if replaced is None:
        replaced = replacements(now, bf)
    f = _renamed(now, replaced)
    if br is None:
        bf = _relid(f, bf)
        br = routed(bf, coords, dims)
    try:
        res = degraded(f, bf, br, vls)
    except LidsMoved:  # the fault-free tables again, for the LIDs of now
        keep = bf
        bf = _relid(f, bf, keep)
        br = routed(bf, _coords_of(bf, br), _dims_of(bf, br))
        res = degraded(f, bf, br, vls)
    if res is None:  # nothing failed: the KNS's own tables, on the fabric of now
        res = routed(f, *_given(f, bf, br))
    else:
        res.kns = (bf, br.tables)
    return _back(res, now, f)


def _coords_of(bf: Fabric, br: HdorResult) -> dict:
    return {i: br.coords[i] for i in br.routers}


def _dims_of(bf: Fabric, br: HdorResult) -> dict:
    return dict(br.dim)


def _given(f: Fabric, bf: Fabric, br: HdorResult) -> tuple[dict, dict]:
    """br's coordinates and dimensions for the same devices in `f` (by GUID)."""
    coords = {f.by_guid(bf.guids[i]): c for i, c in _coords_of(bf, br).items() if f.by_guid(bf.guids[i]) is not None}
    dims = {f.by_guid(bf.guids[i]): d for i, d in br.dim.items() if f.by_guid(bf.guids[i]) is not None}
    return coords, dims


def described(now: Fabric, conf: KnsConf, vls: int = 8) -> HdorResult:
    """Route `now` against the KNS of a description; NotFamily when `now` is not that KNS degraded
    (a device or cable it does not have), or the description not a KNS."""
    bf, coords, dims = fabric_of(conf)
    replaced = replacements(now, bf, conf)
    f = _renamed(now, replaced)
    _match(f, bf, f"the fabric is not the KNS of {conf.path or 'the description'}")
    bf = _relid(f, bf)
    try:
        br = routed(bf, coords, dims)
    except NotFamily as e:
        raise not_kns(f"{conf.path or 'the description'} does not describe a KNS: {e.reason}") from None
    by = conf.by_guid()
    for x in br.switches:  # the lines the description gives its switches
        want = tuple(by[_ident(bf, conf, x)].coords)
        if tuple(br.coords[x]) != want:
            raise not_kns(f"{conf.path or 'the description'} does not describe a KNS: switch "
                         f"{bf.guids[x]:#018x} has the coordinates of another line than its routers")
    return against(now, bf, coords, dims, vls, br=br, replaced=replaced)


def _ident(bf: Fabric, conf: KnsConf, x: int) -> int:
    g = bf.guids[x]
    for node in conf.nodes:
        if node.place == g:
            return node.guid
    return g


def _match(f: Fabric, bf: Fabric, what: str) -> None:
    """Every device of `f` (place GUIDs) is one of `bf`, of its kind, and every cable one of bf's."""
    for c in range(f.num_nodes):
        b = bf.by_guid(f.guids[c])
        if b is None or bf.types[b] != f.types[c]:
            raise not_kns(f"{what}: {_describe(f, c)} is not in the KNS")
    for c in range(f.num_nodes):
        b = bf.by_guid(f.guids[c])
        for port, peer, pport in f.neighbors(c):
            want = bf.peer(b, port)
            if want is None or bf.guids[want[0]] != f.guids[peer] or want[1] != pport:
                raise not_kns(f"{what}: {_describe(f, c)} port {port} is cabled to {_describe(f, peer)} port "
                             f"{pport}, not as in the KNS")


def replacements(now: Fabric, bf: Fabric, conf: KnsConf | None = None) -> dict[int, int]:
    """Devices of `now` at the place of another (node of now -> the place GUID it takes): those a
    description already says replaced one (was=), and each device not in `bf` that stands exactly
    where a device of bf is missing -- every cable of it goes to a device of bf, on the port the
    missing one's went to, from the port the missing one used (docs/hdor.md section 7). A device
    next to another new one is placed once that one is; never a phantom's place."""
    out: dict[int, int] = {}
    if conf is not None:
        for x in conf.nodes:
            c = now.by_guid(x.guid)
            if c is not None and x.place != x.guid:
                out[c] = x.place
    place = lambda c: out.get(c, now.guids[c])  # noqa: E731
    taken = {place(c) for c in range(now.num_nodes)}
    unknown = [c for c in sorted(range(now.num_nodes), key=lambda c: now.guids[c]) if bf.by_guid(place(c)) is None]
    progress = True
    while progress and unknown:
        progress = False
        for c in list(unknown):
            cand, ok, links = None, True, 0
            for port, peer, pport in now.neighbors(c):
                yb = bf.by_guid(place(peer))
                if yb is None or peer in unknown:
                    ok = False  # next to a device not placed (yet)
                    break
                b = bf.peer(yb, pport)
                if b is None or b[1] != port or (cand is not None and b[0] != cand):
                    ok = False
                cand = b[0] if b is not None else cand
                links += 1
            if not ok or not links or cand is None or bf.guids[cand] in taken or bf.types[cand] != now.types[c] \
                    or bf.guids[cand] >= PHANTOM:
                continue
            out[c] = bf.guids[cand]
            taken.add(bf.guids[cand])
            unknown.remove(c)
            progress = True
    return out


__all__ = ["against", "described", "replacements", "routed"]
