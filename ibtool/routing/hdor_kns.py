"""The KNS hdor knows without having seen it complete (docs/hdor.md section 7): from a description
(hdor.conf, ibtool.formats.hdor_conf), from what it remembers, or identified at first sight — the
Python reference of opensm_plugin/osm_hdor_conf.c and osm_hdor_sight.c.

    res = hdor.compute(now, description=hdor_conf.read("hdor.conf"))   # the KNS of the description
    res = hdor.compute(now)                   # complete, or identified at first sight
    conf = describe(fabric, hdor.compute(fabric))                      # a complete KNS, described

Each gives a complete KNS as a Fabric (`bf`: devices and cables, with the LIDs of now; devices
not there keep the LIDs they had while those are free) and its coordinates; routed by docs
section 4, the fabric of now is then routed against it as against the KNS a long-running hdor
remembers (hdor_faults, docs section 6). A device that replaced another (same neighbours on the
same ports, a new GUID) takes its place: `bf` keeps the old GUID, the fabric is looked at with
that GUID, and the result is given back with the new one.
"""

from __future__ import annotations

from dataclasses import replace as dc_replace

from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.hdor_conf import PHANTOM, KnsConf, Node
from ibtool.formats.lft import Tables
from ibtool.routing.hdor_complete import _Topology, complete
from ibtool.routing.hdor_result import HdorResult, NotKNS, _describe


# ------------------------------------------------------------------------------ describing a KNS

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
    except NotKNS:
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


# ------------------------------------------------------------------------------ routing against a KNS

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


def _routed(bf: Fabric, coords: dict | None, dims: dict | None) -> HdorResult:
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
        br = _routed(bf, coords, dims)
    try:
        res = degraded(f, bf, br, vls)
    except LidsMoved:  # the fault-free tables again, for the LIDs of now
        keep = bf
        bf = _relid(f, bf, keep)
        br = _routed(bf, _coords_of(bf, br), _dims_of(bf, br))
        res = degraded(f, bf, br, vls)
    if res is None:  # nothing failed: the KNS's own tables, on the fabric of now
        res = _routed(f, *_given(f, bf, br))
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
    """Route `now` against the KNS of a description; NotKNS when `now` is not that KNS degraded
    (a device or cable it does not have), or the description not a KNS."""
    bf, coords, dims = fabric_of(conf)
    replaced = replacements(now, bf, conf)
    f = _renamed(now, replaced)
    _match(f, bf, f"the fabric is not the KNS of {conf.path or 'the description'}")
    bf = _relid(f, bf)
    try:
        br = _routed(bf, coords, dims)
    except NotKNS as e:
        raise NotKNS(f"{conf.path or 'the description'} does not describe a KNS: {e.reason}") from None
    by = conf.by_guid()
    for x in br.switches:  # the lines the description gives its switches
        want = tuple(by[_ident(bf, conf, x)].coords)
        if tuple(br.coords[x]) != want:
            raise NotKNS(f"{conf.path or 'the description'} does not describe a KNS: switch "
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
            raise NotKNS(f"{what}: {_describe(f, c)} is not in the KNS")
    for c in range(f.num_nodes):
        b = bf.by_guid(f.guids[c])
        for port, peer, pport in f.neighbors(c):
            want = bf.peer(b, port)
            if want is None or bf.guids[want[0]] != f.guids[peer] or want[1] != pport:
                raise NotKNS(f"{what}: {_describe(f, c)} port {port} is cabled to {_describe(f, peer)} port "
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


# ------------------------------------------------------------------------------ first sight

def first_sight(f: Fabric) -> tuple[Fabric, dict]:
    """The complete KNS the fabric `f` is a degraded copy of (docs/hdor.md section 7), as a Fabric
    with phantoms for what is missing and the LIDs of `f`; NotKNS when it is not decided.
    Returns (bf, {"routers": r, "switches": s, "cables": c} missing)."""
    topo = _Topology(f)
    topo.structure()
    G = topo.groups
    routers = topo.routers  # by GUID
    gof = topo.groups_of  # router -> its groups (ids in key order)
    if not routers:
        raise NotKNS("no router (no switch has an HCA linked to it)")
    n = max(len(gof[r]) for r in routers)
    k = max((len(g.members) for g in G), default=0)
    multi = any(len(g.switches) > 1 for g in G)
    if n < 1 or n > 16 or k < 2 or k > 255:
        raise NotKNS(f"no KNS shape (routers in up to {n} indirect networks, networks of up to {k} routers)")
    full = 1
    for _ in range(n):
        if full > 65536 // k:
            raise NotKNS(f"k^n = {k}^{n} is beyond what first sight identifies")
        full *= k
    if len(routers) > full:
        raise NotKNS(f"{len(routers)} routers, more than k^n = {k}^{n}")
    for g in G:
        if len(g.members) < 2:
            raise NotKNS(f"the indirect network of switch {f.guids[g.switches[0]]:#018x} '{f.names[g.switches[0]]}' "
                         f"has {len(g.members)} router(s): too few to place")
    for gi, g in enumerate(G):
        cnt: dict[int, int] = {}
        for m in g.members:
            for h in gof[m]:
                if h != gi:
                    cnt[h] = cnt.get(h, 0) + 1
                    if cnt[h] >= 2:
                        raise NotKNS(f"the indirect networks of switches {f.guids[g.switches[0]]:#018x} and "
                                     f"{f.guids[G[h].switches[0]]:#018x} share routers")
    seed = next((r for r in routers if len(gof[r]) == n and all(len(G[g].members) == k for g in gof[r])), None)
    if seed is None:
        raise NotKNS(f"no router has all {n} of its indirect networks with {k} routers")
    # dimensions: parallel networks (no common router, two or more networks meeting both)
    keys: dict[tuple[int, int], int] = {}
    for H, g in enumerate(G):
        mem = g.members
        for a in range(len(mem)):
            for b in range(a + 1, len(mem)):
                for g1 in gof[mem[a]]:
                    for g2 in gof[mem[b]]:
                        if g1 == H or g2 == H or g1 == g2:
                            continue
                        key = (min(g1, g2), max(g1, g2))
                        keys[key] = keys.get(key, 0) + 1
    uf = list(range(len(G)))

    def find(x):
        while uf[x] != x:
            uf[x] = uf[uf[x]]
            x = uf[x]
        return x
    for (g1, g2), c in sorted(keys.items()):
        if c >= 2:
            a, b = find(g1), find(g2)
            if a != b:
                uf[max(a, b)] = min(a, b)
    cls = [-1] * len(G)
    for d, sg in enumerate(sorted(gof[seed])):  # ids are in key order
        root = find(sg)
        for gi in range(len(G)):
            if find(gi) == root:
                if cls[gi] >= 0:
                    raise NotKNS(f"{_describe(f, seed, 'router')} is in two parallel indirect networks")
                cls[gi] = d
    for gi in range(len(G)):
        if cls[gi] < 0:
            raise NotKNS(f"the indirect network of switch {f.guids[G[gi].switches[0]]:#018x} is parallel to none of "
                         f"router {f.guids[seed]:#018x}'s")
    for r in routers:
        cs = [cls[g] for g in gof[r]]
        if len(set(cs)) != len(cs):
            raise NotKNS(f"{_describe(f, r, 'router')} is in two parallel indirect networks")
    # phase-1 coordinates
    ridx = {r: i for i, r in enumerate(routers)}
    R = len(routers)
    pc = [[-1] * n for _ in range(R)]
    for d in range(n):
        axis = next(G[g] for g in gof[seed] if cls[g] == d)
        ufr = list(range(R))

        def fr(x):
            while ufr[x] != x:
                ufr[x] = ufr[ufr[x]]
                x = ufr[x]
            return x
        for gi, g in enumerate(G):
            if cls[gi] == d:
                continue
            a = fr(ridx[g.members[0]])
            for m in g.members[1:]:
                b = fr(ridx[m])
                if a != b:
                    ufr[b] = a
        val = [-1] * R
        for j, m in enumerate(axis.members):
            c = fr(ridx[m])
            if val[c] >= 0:
                raise NotKNS(f"routers {f.guids[axis.members[val[c]]]:#018x} and {f.guids[m]:#018x} of one indirect "
                             f"network share a hyperplane")
            val[c] = j
        changed = True
        while changed:
            changed = False
            cand = [set(range(k)) for _ in range(R)]
            for i, r in enumerate(routers):
                c = fr(i)
                if val[c] >= 0:
                    continue
                for gi in gof[r]:
                    if cls[gi] != d:
                        continue
                    for m in G[gi].members:
                        v = val[fr(ridx[m])]
                        if v >= 0:
                            cand[c].discard(v)
            for i, r in enumerate(routers):
                if fr(i) != i or val[i] >= 0:
                    continue
                if not cand[i]:
                    raise NotKNS(f"{_describe(f, r, 'router')} has no place left in its dimension-{d} line")
                if len(cand[i]) == 1:
                    val[i] = min(cand[i])
                    changed = True
        left = None
        for i in range(R):
            pc[i][d] = val[fr(i)]
            if pc[i][d] < 0 and left is None:
                left = routers[i]
        if left is not None:
            raise NotKNS(f"the place of {_describe(f, left, 'router')} is not decided by the fabric (more than one "
                         f"missing device or cable could be there): give hdor the description hdor.conf")
    lines = full // k

    def point(c):
        lin = 0
        for d in range(n - 1, -1, -1):
            lin = lin * k + c[d]
        return lin

    def line(c, d):
        li = 0
        for e in range(n - 1, -1, -1):
            if e != d:
                li = li * k + c[e]
        return li
    pt_of: dict[int, int] = {}
    for i, r in enumerate(routers):
        p = point(pc[i])
        if p in pt_of:
            raise NotKNS(f"routers {f.guids[routers[pt_of[p]]]:#018x} and {f.guids[r]:#018x} would have the same "
                         f"coordinates")
        pt_of[p] = i
    line_grp: dict[tuple[int, int], int] = {}
    for gi, g in enumerate(G):
        d = cls[gi]
        m0 = pc[ridx[g.members[0]]]
        for m in g.members:
            c = pc[ridx[m]]
            if any(c[e] != m0[e] for e in range(n) if e != d):
                raise NotKNS(f"the routers of the indirect network of switch {f.guids[g.switches[0]]:#018x} are not "
                             f"on one line")
        key = (d, line(m0, d))
        if key in line_grp:
            raise NotKNS(f"the indirect networks of switches {f.guids[G[line_grp[key]].switches[0]]:#018x} and "
                         f"{f.guids[g.switches[0]]:#018x} are on one line (a network split in two?): give hdor the "
                         f"description hdor.conf")
        line_grp[key] = gi

    # phase 2: nodes (present by GUID, phantom routers by point, switches by line, HCAs), cables
    present = sorted(range(f.num_nodes), key=lambda i: f.guids[i])
    nodes = [(f.guids[i], f.types[i], f.nports[i], i) for i in present]  # (guid, type, ports, node of f | None)
    sid = {i: j for j, i in enumerate(present)}
    used = [set(p for p, _, _ in f.neighbors(i)) for i in present]
    links: list[tuple[int, int, int, int]] = []

    def add(guid, t, ports):
        nodes.append((guid, t, ports, None))
        used.append(set())
        return len(nodes) - 1

    def cable(a, pa, b, pb):
        links.append((a, pa, b, pb))
        used[a].add(pa)
        used[b].add(pb)

    def free_port(x):
        for p in range(1, nodes[x][2] + 1):
            if p not in used[x]:
                return p
        return 0
    phantom = PHANTOM
    ph_r: dict[int, int] = {}
    for p in range(full):
        if p not in pt_of:
            ph_r[p] = add(phantom, SWITCH, n + 1)
            phantom += 1
    ph_sw: dict[tuple[int, int], int] = {}
    for d in range(n):
        for li in range(lines):
            if (d, li) not in line_grp:
                if multi:
                    raise NotKNS(f"an indirect network of dimension-class {d} is missing whole, and networks here "
                                 f"have several switches: give hdor the description hdor.conf")
                ph_sw[(d, li)] = add(phantom, SWITCH, k)
                phantom += 1
    for li in range(f.num_links):  # the cables there now
        cable(sid[f.link_a[li]], f.link_pa[li], sid[f.link_b[li]], f.link_pb[li])
    for p, x in ph_r.items():
        h = add(0, CA, 1)
        cable(x, 1, h, 1)
    ncab = 0
    order = [(i, None) for i in range(R)] + [(None, p) for p in sorted(ph_r)]
    for i, p in order:
        if i is not None:
            c, x = pc[i], sid[routers[i]]
        else:
            c = [(p // k ** d) % k for d in range(n)]
            x = ph_r[p]
        for d in range(n):
            li = line(c, d)
            gi = line_grp.get((d, li))
            if i is not None and gi is not None and gi in gof[routers[i]]:
                continue
            if i is not None and gi is not None:
                ncab += 1
            if gi is None:
                sw, ps = ph_sw[(d, li)], c[d] + 1
            else:
                g = G[gi]
                if len(g.switches) == 1:
                    sw = sid[g.switches[0]]
                else:
                    def rcount(s):
                        return sum(1 for _, y, _ in f.neighbors(s) if topo.is_router[y])
                    most = max(rcount(s) for s in g.switches)
                    cands = [s for s in g.switches if 0 < rcount(s) < most]
                    if len(cands) != 1:
                        raise NotKNS(f"a router's cable into the indirect network of switch {f.guids[g.switches[0]]:#018x} "
                                     f"is missing, and {len(cands)} of its switches could take it: give hdor the "
                                     f"description hdor.conf")
                    sw = sid[cands[0]]
                ps = free_port(sw)
                if not ps:
                    raise NotKNS(f"switch {nodes[sw][0]:#018x} has no free port for a missing cable")
            px = free_port(x) if i is not None else 2 + d
            if not px:
                raise NotKNS(f"router {nodes[x][0]:#018x} has no free port for a missing cable")
            cable(x, px, sw, ps)
    nr, ns = len(ph_r), len(ph_sw)
    if nr > max(1, full // 8) or ns > max(1, n * lines // 8) or ncab > max(1, n * full // 8):
        raise NotKNS(f"{nr} router(s), {ns} indirect network(s) and {ncab} cable(s) missing: more than first sight "
                     f"completes (an eighth of each)")
    for j, (guid, t, ports, orig) in enumerate(nodes):  # phantom HCAs: GUIDs last, in their routers' order
        if orig is None and t == CA:
            nodes[j] = (phantom, t, ports, None)
            phantom += 1
    guids = [x[0] for x in nodes]
    if any(b <= a for a, b in zip(guids, guids[1:])):
        raise NotKNS("a GUID is in the range hdor keeps for missing devices")

    def build(names):
        bf = Fabric(f.name + "-completed")
        for j, (guid, t, ports, orig) in enumerate(nodes):
            role = "hca" if t == CA else "switch"
            bf.add_node(t, names[j], ports, role, guid=guid)
        for a, pa, b, pb in links:
            bf.add_link(a, b, pa, pb)
        for (c, p), v in f.port_lids.items():
            bf.port_lids[(sid[c], p)] = v
        return bf
    names = [f.names[orig] if orig is not None else f"phantom {guid:#018x}" for guid, t, ports, orig in nodes]
    bf = build(names)
    br = _routed(bf, None, None)
    for j, (guid, t, ports, orig) in enumerate(nodes):  # the phantoms named by their coordinates
        if orig is None:
            c = ",".join(str(v) for v in br.coords[j])
            names[j] = (f"missing router [{c}]" if br.role[j] == "router" else
                        f"missing switch dim={br.dim[j]} [{c}]" if br.role[j] == "switch" else f"missing HCA [{c}]")
    return build(names), {"routers": nr, "switches": ns, "cables": ncab}


def at_first_sight(now: Fabric, vls: int = 8) -> HdorResult:
    """Identify `now` at first sight and route it against that KNS (NotKNS: why not)."""
    bf, missing = first_sight(now)
    res = against(now, bf, None, None, vls)
    res.faults = dict(res.faults or {}, first_sight=missing)
    return res


__all__ = ["describe", "fabric_of", "described", "against", "first_sight", "at_first_sight", "replacements",
           "irregular", "plan_description", "PHANTOM"]
