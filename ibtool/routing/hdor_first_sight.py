"""A KNS identified at first sight (docs/hdor.md section 7): the complete KNS a degraded fabric is
a copy of, with phantoms for what is missing, and the fabric routed against it (hdor_kns) — the
Python reference of opensm_plugin/osm_hdor_sight.c.

    res = hdor.compute(now)                   # complete, or identified at first sight
"""

from __future__ import annotations

from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.hdor_conf import PHANTOM
from ibtool.routing.hdor_complete import _Topology
from ibtool.routing.hdor_kns import against, routed
from ibtool.routing.hdor_result import HdorResult, _describe, not_kns


def first_sight(f: Fabric) -> tuple[Fabric, dict]:
    """The complete KNS the fabric `f` is a degraded copy of (docs/hdor.md section 7), as a Fabric
    with phantoms for what is missing and the LIDs of `f`; NotFamily when it is not decided.
    Returns (bf, {"routers": r, "switches": s, "cables": c} missing)."""
    topo = _Topology(f)
    topo.structure()
    G = topo.groups
    routers = topo.routers  # by GUID
    gof = topo.groups_of  # router -> its groups (ids in key order)
    if not routers:
        raise not_kns("no router (no switch has an HCA linked to it)")
    n = max(len(gof[r]) for r in routers)
    k = max((len(g.members) for g in G), default=0)
    multi = any(len(g.switches) > 1 for g in G)
    if n < 1 or n > 16 or k < 2 or k > 255:
        raise not_kns(f"no KNS shape (routers in up to {n} indirect networks, networks of up to {k} routers)")
    full = 1
    for _ in range(n):
        if full > 65536 // k:
            raise not_kns(f"k^n = {k}^{n} is beyond what first sight identifies")
        full *= k
    if len(routers) > full:
        raise not_kns(f"{len(routers)} routers, more than k^n = {k}^{n}")
    for g in G:
        if len(g.members) < 2:
            raise not_kns(f"the indirect network of switch {f.guids[g.switches[0]]:#018x} '{f.names[g.switches[0]]}' "
                         f"has {len(g.members)} router(s): too few to place")
    for gi, g in enumerate(G):
        cnt: dict[int, int] = {}
        for m in g.members:
            for h in gof[m]:
                if h != gi:
                    cnt[h] = cnt.get(h, 0) + 1
                    if cnt[h] >= 2:
                        raise not_kns(f"the indirect networks of switches {f.guids[g.switches[0]]:#018x} and "
                                     f"{f.guids[G[h].switches[0]]:#018x} share routers")
    seed = next((r for r in routers if len(gof[r]) == n and all(len(G[g].members) == k for g in gof[r])), None)
    if seed is None:
        raise not_kns(f"no router has all {n} of its indirect networks with {k} routers")
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
                    raise not_kns(f"{_describe(f, seed, 'router')} is in two parallel indirect networks")
                cls[gi] = d
    for gi in range(len(G)):
        if cls[gi] < 0:
            raise not_kns(f"the indirect network of switch {f.guids[G[gi].switches[0]]:#018x} is parallel to none of "
                         f"router {f.guids[seed]:#018x}'s")
    for r in routers:
        cs = [cls[g] for g in gof[r]]
        if len(set(cs)) != len(cs):
            raise not_kns(f"{_describe(f, r, 'router')} is in two parallel indirect networks")
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
                raise not_kns(f"routers {f.guids[axis.members[val[c]]]:#018x} and {f.guids[m]:#018x} of one indirect "
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
                    raise not_kns(f"{_describe(f, r, 'router')} has no place left in its dimension-{d} line")
                if len(cand[i]) == 1:
                    val[i] = min(cand[i])
                    changed = True
        left = None
        for i in range(R):
            pc[i][d] = val[fr(i)]
            if pc[i][d] < 0 and left is None:
                left = routers[i]
        if left is not None:
            raise not_kns(f"the place of {_describe(f, left, 'router')} is not decided by the fabric (more than one "
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
            raise not_kns(f"routers {f.guids[routers[pt_of[p]]]:#018x} and {f.guids[r]:#018x} would have the same "
                         f"coordinates")
        pt_of[p] = i
    line_grp: dict[tuple[int, int], int] = {}
    for gi, g in enumerate(G):
        d = cls[gi]
        m0 = pc[ridx[g.members[0]]]
        for m in g.members:
            c = pc[ridx[m]]
            if any(c[e] != m0[e] for e in range(n) if e != d):
                raise not_kns(f"the routers of the indirect network of switch {f.guids[g.switches[0]]:#018x} are not "
                             f"on one line")
        key = (d, line(m0, d))
        if key in line_grp:
            raise not_kns(f"the indirect networks of switches {f.guids[G[line_grp[key]].switches[0]]:#018x} and "
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
                    raise not_kns(f"an indirect network of dimension-class {d} is missing whole, and networks here "
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
                        raise not_kns(f"a router's cable into the indirect network of switch {f.guids[g.switches[0]]:#018x} "
                                     f"is missing, and {len(cands)} of its switches could take it: give hdor the "
                                     f"description hdor.conf")
                    sw = sid[cands[0]]
                ps = free_port(sw)
                if not ps:
                    raise not_kns(f"switch {nodes[sw][0]:#018x} has no free port for a missing cable")
            px = free_port(x) if i is not None else 2 + d
            if not px:
                raise not_kns(f"router {nodes[x][0]:#018x} has no free port for a missing cable")
            cable(x, px, sw, ps)
    nr, ns = len(ph_r), len(ph_sw)
    if nr > max(1, full // 8) or ns > max(1, n * lines // 8) or ncab > max(1, n * full // 8):
        raise not_kns(f"{nr} router(s), {ns} indirect network(s) and {ncab} cable(s) missing: more than first sight "
                     f"completes (an eighth of each)")
    for j, (guid, t, ports, orig) in enumerate(nodes):  # phantom HCAs: GUIDs last, in their routers' order
        if orig is None and t == CA:
            nodes[j] = (phantom, t, ports, None)
            phantom += 1
    guids = [x[0] for x in nodes]
    if any(b <= a for a, b in zip(guids, guids[1:])):
        raise not_kns("a GUID is in the range hdor keeps for missing devices")

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
    br = routed(bf, None, None)
    for j, (guid, t, ports, orig) in enumerate(nodes):  # the phantoms named by their coordinates
        if orig is None:
            c = ",".join(str(v) for v in br.coords[j])
            names[j] = (f"missing router [{c}]" if br.role[j] == "router" else
                        f"missing switch dim={br.dim[j]} [{c}]" if br.role[j] == "switch" else f"missing HCA [{c}]")
    return build(names), {"routers": nr, "switches": ns, "cables": ncab}


def at_first_sight(now: Fabric, vls: int = 8) -> HdorResult:
    """Identify `now` at first sight and route it against that KNS (NotFamily: why not)."""
    bf, missing = first_sight(now)
    res = against(now, bf, None, None, vls)
    res.faults = dict(res.faults or {}, first_sight=missing)
    return res



__all__ = ["first_sight", "at_first_sight"]
