"""Independent checks for hdor tests: a slow, literal oracle of docs/hdor.md section 4, a route
walker over the fabric, and fabric surgery (rebuild with links/nodes dropped, shuffled, renamed)."""

from __future__ import annotations

import functools
import random
from collections import deque

import numpy as np

from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.routing.lids import assign_lids
from ibtool.topologies.kns import kns


def kns_with_lids(k, n, s=1, h=1, m=1, radix=36, lmc=0) -> Fabric:
    f = kns(k, n, s=s, hcas_per_router=h, multiplicity=m, radix=radix)
    assign_lids(f, lmc)
    return f


def rebuild(f: Fabric, drop_nodes=(), drop_links=(), node_order=None, port_map=None, guid_map=None) -> Fabric:
    """A copy of `f` without some nodes/links, nodes added in `node_order`, ports renumbered by
    port_map[node][port], GUIDs replaced by guid_map[node]. LIDs are not copied."""
    drop_nodes = set(drop_nodes)
    order = [i for i in (node_order or range(f.num_nodes)) if i not in drop_nodes]
    g = Fabric(f.name)
    g.params = dict(f.params)
    new = {}
    for i in order:
        guid = guid_map[i] if guid_map else f.guids[i]
        new[i] = g.add_node(f.types[i], f.names[i], f.nports[i], f.roles[i], dict(f.labels[i]), guid=guid)
    pm = (lambda i, p: port_map[i][p]) if port_map else (lambda i, p: p)
    links = [li for li in range(f.num_links) if li not in set(drop_links)]
    if node_order:
        random.Random(len(links)).shuffle(links)
    for li in links:
        a, pa, b, pb = f.link_a[li], f.link_pa[li], f.link_b[li], f.link_pb[li]
        if a in drop_nodes or b in drop_nodes:
            continue
        g.add_link(new[a], new[b], pm(a, pa), pm(b, pb))
    return g


def switch_dist(f: Fabric) -> np.ndarray:
    """Hops between every pair of switches over switch-switch links (HCAs never forward)."""
    N = f.num_nodes
    adj = [[p for _, p, _ in f.neighbors(i) if f.types[p] == SWITCH] if f.types[i] == SWITCH else []
           for i in range(N)]
    D = np.full((N, N), -1, dtype=np.int64)
    for s in range(N):
        if f.types[s] != SWITCH:
            continue
        D[s, s] = 0
        q = deque([s])
        while q:
            u = q.popleft()
            for v in adj[u]:
                if D[s, v] < 0:
                    D[s, v] = D[s, u] + 1
                    q.append(v)
    return D


def walk(f: Fabric, tables, start: int, lid: int, owners: dict, limit: int = 64) -> list[int]:
    """Nodes visited from switch `start` to the owner of `lid` (owners = f.lid_owners()); raises
    AssertionError on a missing entry, a wrong delivery or a loop."""
    owner, oport = owners[lid]
    node, path = start, [start]
    for _ in range(limit):
        port = int(tables.lft[f.guids[node]][lid])
        assert port != 255, f"{f.names[node]} has no route to LID {lid}"
        if port == 0:
            assert node == owner and oport == 0, f"{f.names[node]} delivers LID {lid} locally, owner {f.names[owner]}"
            return path
        nxt = f.peer(node, port)
        assert nxt is not None, f"{f.names[node]} port {port} (LID {lid}) is not cabled"
        path.append(nxt[0])
        if f.types[nxt[0]] == CA:
            assert nxt == (owner, oport), f"LID {lid} delivered to {f.names[nxt[0]]}[{nxt[1]}]"
            return path
        node = nxt[0]
    raise AssertionError(f"LID {lid} loops from {f.names[start]}: {[f.names[x] for x in path[:12]]}")


def oracle(f: Fabric, res) -> dict[int, np.ndarray]:
    """docs/hdor.md section 4, read literally: for every switch, every LID in ascending order,
    the candidate set C, then C[j mod |C|] with a counter per distinct C. Uses only the result's
    roles, dimensions, coordinates and groups; distances from its own BFS."""
    n = res.n
    owners = f.lid_owners()
    top = max(owners)
    role = res.role

    def c_of(node):  # coordinate by dimension index (d = 0 is the last written coordinate)
        t = res.coords[node]
        return {n - 1 - i: v for i, v in enumerate(t)}

    group_of = {}
    for gi, sw in enumerate(res.groups):
        for s in sw:
            group_of[s] = gi
    gdim = res.group_dim
    members = {gi: set() for gi in range(len(res.groups))}
    for gi, sw in enumerate(res.groups):
        for s in sw:
            for _, p, _ in f.neighbors(s):
                if role[p] == "router":
                    members[gi].add(p)

    @functools.lru_cache(maxsize=None)
    def hops_in(gi, sources):
        dist = {s: 0 for s in sources}
        q = deque(sources)
        while q:
            u = q.popleft()
            for _, v, _ in f.neighbors(u):
                if group_of.get(v) == gi and v not in dist:
                    dist[v] = dist[u] + 1
                    q.append(v)
        return dist

    @functools.lru_cache(maxsize=None)
    def dist_member(gi, M):  # switch -> 1 + hops to a switch linked to M
        linked = tuple(s for s in res.groups[gi] if any(p == M for _, p, _ in f.neighbors(s)))
        return {s: 1 + h for s, h in hops_in(gi, linked).items()}

    def member_with(gi, e, v):
        (m,) = [x for x in members[gi] if c_of(x)[e] == v]
        return m

    def router_group(W, e):
        (gi,) = {group_of[p] for _, p, _ in f.neighbors(W) if p in group_of and gdim[group_of[p]] == e}
        return gi

    def router_toward(W, gi, dist):  # W's ports into gi with minimal 1 + dist(s)
        links = [(port, p) for port, p, _ in f.neighbors(W) if group_of.get(p) == gi]
        best = min(dist[p] for _, p in links)
        return tuple(sorted(port for port, p in links if dist[p] == best))

    def switch_toward(W, gi, dist):  # ports to group switches one closer
        return tuple(sorted(port for port, p, _ in f.neighbors(W) if group_of.get(p) == gi and dist[p] == dist[W] - 1))

    def target(L):
        node, port = owners[L]
        if f.types[node] == CA:
            T, tp = f.peer(node, port)
            return ("t", T, tp, c_of(T))
        if role[node] == "router":
            return ("t", node, 0, c_of(node))
        gi = group_of[node]
        dims = [d for d in range(n - 1, -1, -1) if d != gdim[gi]]  # group coordinates omit the dimension
        return ("s", node, gi, gdim[gi], dict(zip(dims, res.coords[node])))

    targets = {L: target(L) for L in owners}
    out = {}
    for W in res.routers + res.switches:
        row = np.full(top + 1, 255, dtype=np.uint8)
        counters: dict[tuple, int] = {}
        for L in sorted(owners):
            tg = targets[L]
            if role[W] == "router":
                c = c_of(W)
                if tg[0] == "t":
                    _, T, tp, t = tg
                    if T == W:
                        C = (tp,)
                    else:
                        e = min(d for d in range(n) if c[d] != t[d])
                        gi = router_group(W, e)
                        C = router_toward(W, gi, dist_member(gi, member_with(gi, e, t[e])))
                else:
                    _, D, gD, d, fc = tg
                    diff = [e for e in range(n) if e != d and c[e] != fc[e]]
                    if diff:
                        e = diff[0]
                        gi = router_group(W, e)
                        C = router_toward(W, gi, dist_member(gi, member_with(gi, e, fc[e])))
                    else:
                        assert W in members[gD]
                        C = router_toward(W, gD, hops_in(gD, (D,)))
            else:
                gi = group_of[W]
                e = gdim[gi]
                if tg[0] == "s" and tg[1] == W:
                    C = (0,)
                elif tg[0] == "s" and tg[2] == gi:
                    C = switch_toward(W, gi, hops_in(gi, (tg[1],)))
                else:
                    if tg[0] == "t":
                        M = member_with(gi, e, tg[3][e])
                    elif tg[3] != e:
                        M = member_with(gi, e, tg[4][e])
                    else:  # another group of dimension e: the j with the least in-group distances
                        _, D, gD = tg[:3]
                        k = len(members[gi])
                        cost = [dist_member(gi, member_with(gi, e, j))[W] + dist_member(gD, member_with(gD, e, j))[D]
                                for j in range(k)]
                        M = member_with(gi, e, cost.index(min(cost)))
                    direct = tuple(sorted(port for port, p, _ in f.neighbors(W) if p == M))
                    C = direct or switch_toward(W, gi, dist_member(gi, M))
            assert C, (f.names[W], L)
            j = counters.get(C, 0)
            counters[C] = j + 1
            row[L] = C[j % len(C)]
        out[f.guids[W]] = row
    return out


def shuffled(f, seed, ports=True, guids=False):
    """A copy of f with its nodes in another order, every port renumbered (ports) and the GUIDs
    dealt anew (guids): (the copy, the port map). LIDs are not copied."""
    rnd = random.Random(seed)
    order = list(range(f.num_nodes))
    rnd.shuffle(order)
    port_map = None
    if ports:
        port_map = {}
        for i in range(f.num_nodes):
            ps = list(range(1, f.nports[i] + 1))
            rnd.shuffle(ps)
            port_map[i] = dict(zip(range(1, f.nports[i] + 1), ps))
    guid_map = None
    if guids:
        gs = list(f.guids)
        rnd.shuffle(gs)
        guid_map = dict(zip(range(f.num_nodes), gs))
    return rebuild(f, node_order=order, port_map=port_map, guid_map=guid_map), port_map



def degrade(f, nodes=(), links=()):
    """The fabric with nodes (and their HCAs, which discovery no longer sees) and links removed;
    surviving ports keep their LIDs, as OpenSM keeps them."""
    nodes = set(nodes)
    for x in list(nodes):
        if f.roles[x] == "router":
            nodes |= {p for _, p, _ in f.neighbors(x) if f.types[p] == CA}
    g = rebuild(f, drop_nodes=nodes, drop_links=links)
    for (x, port), v in f.port_lids.items():
        y = g.by_guid(f.guids[x])
        if y is not None:
            g.port_lids[(y, port)] = v
    return g


def discovered(f, dead_nodes, dead_links):
    """`f` without what failed, with the LIDs of its linked ports: as ibnetdiscover reads the fabric
    the SM sees after a failure (a CA port whose cable failed has no LID there)."""
    g = rebuild(f, drop_nodes=dead_nodes, drop_links=dead_links)
    for (x, port), v in f.port_lids.items():
        y = g.by_guid(f.guids[x])
        if y is not None and (f.types[x] != CA or g.peer(y, port) is not None):
            g.port_lids[(y, port)] = v
    return g
