"""Fastest Routing (FR) and Nearest Routing (NR) of paper 004, section II-E, as forwarding tables.

FR sends every packet along a lowest-latency path: a hop from switch u to switch w costs the
switch delay (the packet crosses w) plus the cable's delay (ns per metre x its length). NR takes
the fewest hops, and among those the lowest latency (the paper leaves NR's tie open; this choice
is the kindest to NR). The end-to-end latency of a switch pair (s, t), s != t, is

    injection (300 ns: 150 ns at each end) + switch delay x (hops + 1) + ns/m x metres on the path

Links between switches and HCAs are not counted (as in the paper). The latency figures are
ibtool.analyze.latency's (the one model `ibtool analyze` reports); the tables use scipy's Dijkstra.

Tables: for switch u and a LID owned by a port behind switch t, the candidate ports are those
whose neighbour w lies on a lowest-cost path (cost(u,w) + dist(w,t) = dist(u,t)); the LID takes
candidate number LID mod (number of candidates), ports in increasing order, so equal paths share
the load. A switch's own LID goes to port 0 and an HCA's LID, at its switch, to the HCA's port.
The tables are destination-based, so they are what OpenSM's `file` engine can load; they carry
no SLs (docs/topologies.md, "Paper 004 families", says why a deadlock-free FR needs more).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from ibtool.errors import InputError
from ibtool.fabric import SWITCH, Fabric
from ibtool.formats.lft import NO_ROUTE, Tables

SWITCH_DELAY = 60.0  # ns (paper 004, section III-B onwards)
NS_PER_M = 5.0  # optical cable delay
INJECTION = 300.0  # ns, 150 at each end
_HOP = 1e6  # NR: one hop outweighs any latency


@dataclass
class DelayGraph:
    """The switch graph weighted by delay (analyze.graph.Graph counts links): switch i is fabric
    node `nodes[i]`; directed edges e: src[e] -> dst[e] through `port[e]` of src, with cost
    `cost[e]` (ns) and cable `metres[e]`."""
    nodes: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    port: np.ndarray
    metres: np.ndarray
    cost: np.ndarray
    switch_delay: float
    ns_per_m: float

    def matrix(self, nr: bool = False, metres: bool = False) -> csr_matrix:
        """Switch x switch costs (NR: + one hop's weight; `metres`: cable lengths instead)."""
        n = len(self.nodes)
        w = self.metres if metres else self.cost + _HOP if nr else self.cost
        # parallel cables: keep the cheapest (csr would add them up)
        order = np.lexsort((w, self.dst, self.src))
        s, d, w = self.src[order], self.dst[order], w[order]
        first = np.ones(len(s), dtype=bool)
        first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
        return csr_matrix((w[first], (s[first], d[first])), shape=(n, n))


def graph(fabric: Fabric, metres: np.ndarray, switch_delay: float = SWITCH_DELAY,
          ns_per_m: float = NS_PER_M) -> DelayGraph:
    """The switch graph of `fabric`; `metres[l]` is the length of link l (fabric.link_a order)."""
    if switch_delay < 0 or ns_per_m < 0:
        raise InputError(f"switch delay {switch_delay} and ns/m {ns_per_m} must be >= 0")
    types = np.asarray(fabric.types)
    sw = np.flatnonzero(types == SWITCH)
    if len(sw) == 0:
        raise InputError("no switches in this fabric")
    idx = np.full(fabric.num_nodes, -1, dtype=np.int64)
    idx[sw] = np.arange(len(sw))
    a, b = np.asarray(fabric.link_a, dtype=np.int64), np.asarray(fabric.link_b, dtype=np.int64)
    pa, pb = np.asarray(fabric.link_pa, dtype=np.int64), np.asarray(fabric.link_pb, dtype=np.int64)
    m = np.asarray(metres, dtype=float)
    keep = (idx[a] >= 0) & (idx[b] >= 0)
    if np.isnan(m[keep]).any():
        j = int(np.flatnonzero(keep & np.isnan(m))[0])
        raise InputError(f"no cable length for the link {fabric.names[a[j]]}[{pa[j]}] - {fabric.names[b[j]]}[{pb[j]}]")
    a, b, pa, pb, m = a[keep], b[keep], pa[keep], pb[keep], m[keep]
    src = np.concatenate([idx[a], idx[b]])
    dst = np.concatenate([idx[b], idx[a]])
    port = np.concatenate([pa, pb])
    metres2 = np.concatenate([m, m])
    order = np.lexsort((port, src))
    src, dst, port, metres2 = src[order], dst[order], port[order], metres2[order]
    return DelayGraph(sw, src, dst, port, metres2, switch_delay + ns_per_m * metres2, switch_delay, ns_per_m)


def distances(g: DelayGraph, sources: np.ndarray, nr: bool = False) -> np.ndarray:
    """Lowest cost from each source switch to every switch (NR: hops x 1e6 + cost)."""
    return dijkstra(g.matrix(nr), directed=True, indices=sources)


def latency_stats(g: DelayGraph, nr: bool = False, injection: float = INJECTION, workers: int | None = None,
                  progress=None) -> dict:
    """Max and average end-to-end latency (ns) over all ordered switch pairs s != t (NR: and hops),
    by paper 004's model in ibtool.analyze.latency (the one implementation `ibtool analyze` uses)."""
    from ibtool.analyze.latency import LatencyModel, pair_latency
    key = "NR" if nr else "FR"
    model = LatencyModel(g.switch_delay, g.ns_per_m, injection)
    r = pair_latency(g.matrix(metres=True), np.arange(len(g.nodes)), model, (key,), workers, progress)
    if r["pairs"] == 0:
        raise InputError("no switch pairs: latency needs at least two switches")
    s = r[key]
    out = {"switches": len(g.nodes), "pairs": r["pairs"], "max_ns": s["max_ns"], "avg_ns": s["average_ns"]}
    if nr:
        out.update(max_hops=s["max_hops"], avg_hops=s["average_hops"])
    return out


def compute(fabric: Fabric, metres: np.ndarray, switch_delay: float = SWITCH_DELAY, ns_per_m: float = NS_PER_M,
            nr: bool = False, lid_block: int = 512) -> Tables:
    """Every switch's LFT for every LID of `fabric` (a discovered fabric: it must carry LIDs)."""
    owners = fabric.lid_owners()
    if not owners:
        raise InputError("no LIDs in this fabric (a plan? use the ibnetdiscover output of the running fabric)")
    g = graph(fabric, metres, switch_delay, ns_per_m)
    n = len(g.nodes)
    sw_index = {int(v): i for i, v in enumerate(g.nodes)}
    top = max(owners)
    # each LID's destination switch and, at that switch, the port that delivers it
    lids = np.asarray(sorted(owners), dtype=np.int64)
    dest = np.empty(len(lids), dtype=np.int64)
    last = np.empty(len(lids), dtype=np.int64)
    for j, lid in enumerate(lids.tolist()):
        node, port = owners[lid]
        if fabric.types[node] == SWITCH:
            dest[j], last[j] = sw_index[node], 0
        else:
            peer = fabric.peer(node, port)
            if peer is None or fabric.types[peer[0]] != SWITCH:
                raise InputError(f"LID {lid:#x} ({fabric.names[node]} port {port}) is not cabled to a switch")
            dest[j], last[j] = sw_index[peer[0]], peer[1]
    # LIDs grouped by destination switch, in blocks small enough that the (LIDs x edges) work
    # arrays stay near 256 MB whatever the fabric's size
    order = np.argsort(dest, kind="stable")
    lids, dest, last = lids[order], dest[order], last[order]
    lid_block = max(1, min(lid_block, (1 << 25) // max(1, len(g.src))))
    mat = g.matrix(nr)
    cost = g.cost + _HOP if nr else g.cost
    lft = np.full((n, top + 1), NO_ROUTE, dtype=np.uint8)
    starts = np.searchsorted(g.src, np.arange(n + 1))
    eps = 1e-6 * max(1.0, float(cost.max()))
    for lo in range(0, len(lids), lid_block):
        L, T = lids[lo:lo + lid_block], dest[lo:lo + lid_block]
        tu, inv = np.unique(T, return_inverse=True)
        Dt = dijkstra(mat, directed=True, indices=tu)[inv]  # symmetric costs: dist(t, u) = dist(u, t)
        if not np.isfinite(Dt).all():
            raise InputError("the switch graph is disconnected: some LIDs are unreachable")
        ok = np.abs(cost[None, :] + Dt[:, g.dst] - Dt[:, g.src]) <= eps  # (lids, edges): edge on a best path
        cs = np.cumsum(ok, axis=1, dtype=np.int32)
        before = np.concatenate([np.zeros((len(L), 1), dtype=cs.dtype), cs], axis=1)[:, starts[:-1]]
        count = cs[:, np.maximum(starts[1:] - 1, 0)] - before  # candidates per switch
        count[:, starts[1:] == starts[:-1]] = 0
        k = L[:, None] % np.maximum(count, 1)  # which candidate each (LID, switch) takes
        rank = cs - before[:, g.src] - 1  # rank of each edge among its switch's candidates
        pick = ok & (rank == k[:, g.src])
        r, e = np.nonzero(pick)
        lft[g.src[e], L[r]] = g.port[e]
        lft[T, L] = last  # at the destination switch: port 0 or the HCA's port
    t = Tables()
    for i, v in enumerate(g.nodes.tolist()):
        t.lft[fabric.guids[v]] = lft[i]
        t.names[fabric.guids[v]] = fabric.names[v]
    return t


def layers(fabric: Fabric, tables: Tables, max_vls: int = 8, limit: int = 4_000_000) -> tuple[dict, int]:
    """Deadlock-free FR: put the route of every (source switch, destination LID) pair in a layer
    (a VL, carried by an SL of the same number) so that each layer's channel dependency graph
    stays acyclic, greedily in the order LASH uses (first layer that takes the route whole).

    Returns ({(source switch node, LID): layer}, layers used). Routes that start and end at one
    switch cross no inter-switch channel and stay in layer 0. Refuses more than `limit` pairs
    (Python walks each route) and a route that needs more than `max_vls` layers.
    """
    owners = fabric.lid_owners()
    sw = [i for i in range(fabric.num_nodes) if fabric.types[i] == SWITCH]
    if len(sw) * len(owners) > limit:
        raise InputError(f"{len(sw)} switches x {len(owners)} LIDs is more routes than the layering walks "
                         f"({limit:,}); it is meant for small fabrics")
    lft = {i: tables.lft[fabric.guids[i]] for i in sw}
    succ: list[dict[tuple, set]] = []  # per layer: channel -> channels that wait for it

    def reaches(g: dict, start: tuple, goal: tuple) -> bool:
        stack, seen = [start], {start}
        while stack:
            c = stack.pop()
            if c == goal:
                return True
            for d in g.get(c, ()):
                if d not in seen:
                    seen.add(d)
                    stack.append(d)
        return False

    out: dict = {}
    for s in sw:
        for lid in sorted(owners):
            chans, cur = [], s
            for _ in range(64):
                port = int(lft[cur][lid])
                if port in (0, NO_ROUTE):
                    break
                peer = fabric.peer(cur, port)
                if peer is None or fabric.types[peer[0]] != SWITCH:
                    break
                chans.append((cur, port))
                cur = peer[0]
            deps = list(zip(chans, chans[1:]))
            for k in range(max_vls):
                if k == len(succ):
                    succ.append({})
                g, added = succ[k], []
                for a, b in deps:  # one by one: together they may close a cycle none closes alone
                    if b in g.get(a, ()):
                        continue
                    if reaches(g, b, a):
                        break
                    g.setdefault(a, set()).add(b)
                    added.append((a, b))
                else:
                    out[(s, lid)] = k
                    break
                for a, b in added:  # this layer cannot take the route: undo
                    g[a].discard(b)
            else:
                raise InputError(f"the FR routes need more than {max_vls} layers (VLs) to be deadlock-free "
                                 f"(route {fabric.names[s]} -> LID {lid})")
    return out, max(out.values(), default=0) + 1


def write_sls(fabric: Fabric, layer: dict, layers: int, path) -> None:
    """'src_lid dst_lid sl' for every source port (a switch's own LID and its HCAs' LIDs take the
    switch's routes) and destination LID, from layers()."""
    from ibtool.formats import atomic_write
    owners = fabric.lid_owners()
    at = {}
    for lid, (node, port) in owners.items():
        peer = fabric.peer(node, port) if fabric.types[node] != SWITCH else (node, 0)
        if peer is not None:
            at[lid] = peer[0]
    with atomic_write(path) as fh:
        fh.write(f"# ibtool route fr: SL per (source LID, destination LID); {layers} layers, SL k on VL k\n"
                 "# src_lid dst_lid sl\n")
        for src in sorted(at):
            s = at[src]
            fh.write("".join(f"{src:#06x} {dst:#06x} {layer.get((s, dst), 0)}\n"
                             for dst in sorted(owners) if dst != src))
