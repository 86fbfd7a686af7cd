"""The universal routing table of Equality networks (paper 002, section 3.4, Eq. 2), as forwarding
tables for OpenSM's `file` engine.

    result = compute(ibnetdiscover.read("ibnetdiscover.out"), n, sa, sb)

1. Router numbering from the wiring. The link sets say which r_j each r_i is cabled to; the
   discovered fabric says which switch is cabled to which. `number` finds a map r_i -> switch that
   carries one onto the other (a graph isomorphism): r_0 is the switch with the lowest GUID (every
   router sees the same network, Remark 2, so any switch may be r_0), then r_1, r_2, ... along the
   ring, each a free neighbour of the previous one whose already-numbered neighbours are exactly
   the images of its own; dead ends backtrack. Names play no part.
2. One table for all routers: T[j] = the link labels of r_0 that start a shortest path to r_j
   (one BFS from r_0). A packet at r_i for r_t takes a label of T[(t - i) mod N] if i is even,
   T[(i - t) mod N] if odd (Eq. 2); label l leaves r_i by the port cabled to its label-l peer.
3. Spreading: at each switch the destination LIDs, in ascending order, take the labels of their
   set in turn (the j-th LID whose set is L goes by L[j mod |L|]), so equal shortest paths share
   the load; HCA LIDs of the switch's own HCAs go to their port, its own LID to port 0.

All traffic uses VL0 (the file engine sets no SLs); `ibtool verify routes` reports whether that
is deadlock-free and prints a cycle if not (shortest paths on a ring with chords usually are not).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibtool.errors import NotFamily
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.topologies.equality_net import distances, eq1, labels


def _not_equality(reason: str) -> NotFamily:
    return NotFamily("equality", "Equality", reason, claim="the fabric does not match the link sets")


@dataclass
class EqualityResult:
    n: int
    k: int
    router: list[int]  # r_i -> fabric node
    port: np.ndarray  # (N, K): r_i's port for label l
    table: list[tuple[int, ...]]  # T[j]: labels of r_0 on shortest paths to r_j
    dist: np.ndarray  # hops from r_0
    tables: Tables
    lids: int = 0

    def summary(self) -> dict:
        ways = np.array([len(t) for t in self.table[1:]])
        return {"routers": self.n, "k": self.k, "lids": self.lids, "diameter": int(self.dist.max()),
                "average_distance": round(float(self.dist.sum()) / (self.n - 1), 6),
                "shortest_path_choices": {"min": int(ways.min()), "mean": round(float(ways.mean()), 3),
                                          "max": int(ways.max())}}


def _name(f: Fabric, node: int) -> str:
    return f"switch {f.guids[node]:#018x} '{f.names[node]}'"


def number(f: Fabric, n: int, sa, sb) -> list[int]:
    """r_i -> switch node, recovered from the wiring (see the module docstring). Raises
    NotFamily naming the switch at fault when the wiring cannot be these link sets."""
    sw = [i for i in range(f.num_nodes) if f.types[i] == SWITCH]
    k = eq1(n, sa, sb)
    if len(sw) != n:
        raise _not_equality(f"{len(sw)} switches, the link sets are for N = {n} routers")
    adj: dict[int, set[int]] = {}
    for i in sw:
        nb = {b for _, b, _ in f.neighbors(i) if f.types[b] == SWITCH}
        if len(nb) != k:
            raise _not_equality(f"{_name(f, i)} has {len(nb)} switch neighbours, K = {k}")
        adj[i] = nb
    offs = labels(n, sa, sb)

    def e_nbrs(i: int) -> list[int]:
        return [(i + o) % n if i % 2 == 0 else (i - o) % n for o in offs]

    back = [[x for x in e_nbrs(i) if x < i] for i in range(n)]  # numbered before r_i
    start = min(sw, key=lambda i: f.guids[i])
    img = [-1] * n
    used: dict[int, int] = {}  # switch -> r_i
    img[0], used[start] = start, 0
    # iterative depth-first search over r_1 .. r_{N-1}; cands[i] = untried choices for r_i
    cands: list[list[int]] = [[] for _ in range(n)]
    i = 1
    cands[1] = sorted(adj[start], key=lambda x: f.guids[x], reverse=True)
    while 0 < i < n:
        placed = False
        while cands[i]:
            c = cands[i].pop()
            if c in used:
                continue
            # its numbered neighbours must be exactly the images of r_i's earlier neighbours
            if all(img[x] in adj[c] for x in back[i]) and \
                    sum(1 for y in adj[c] if y in used) == len(back[i]):
                img[i], used[c] = c, i
                placed = True
                break
        if placed:
            i += 1
            if i < n:
                cands[i] = sorted((x for x in adj[img[i - 1]] if x not in used), key=lambda x: f.guids[x], reverse=True)
        else:
            i -= 1
            if i >= 1:
                del used[img[i]]
                img[i] = -1
    if i <= 0:
        raise _not_equality(f"no numbering of the switches fits the link sets (tried every ring from {_name(f, start)})")
    return img


def universal_table(n: int, sa, sb) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """(D, T): hops from r_0, and for each r_j the labels of r_0 that start a shortest path."""
    d = distances(n, sa, sb)
    offs = np.asarray(labels(n, sa, sb), dtype=np.int64)
    y = offs % n  # r_0's neighbour by each label
    j = np.arange(n)
    # dist(y, j) by Remark 2: D[(j - y) mod N] for even y, D[(y - j) mod N] for odd y
    dy = np.where((y % 2 == 0)[:, None], d[(j[None, :] - y[:, None]) % n], d[(y[:, None] - j[None, :]) % n])
    on = dy == (d[None, :] - 1)
    table = [tuple(np.flatnonzero(on[:, t]).tolist()) if t else () for t in range(n)]
    return d, table


def compute(f: Fabric, n: int, sa, sb) -> EqualityResult:
    """Forwarding tables for every switch and every LID of a discovered Equality fabric."""
    router = number(f, n, sa, sb)
    k = eq1(n, sa, sb)
    offs = labels(n, sa, sb)
    rindex = {node: i for i, node in enumerate(router)}
    port = np.zeros((n, k), dtype=np.int64)
    for i, node in enumerate(router):
        to = {b: p for p, b, _ in f.neighbors(node)}
        for l, o in enumerate(offs):
            port[i, l] = to[router[(i + o) % n if i % 2 == 0 else (i - o) % n]]
    d, table = universal_table(n, sa, sb)
    # the distinct label sets, padded into one array: set id per offset j
    sets: dict[tuple, int] = {}
    sid = np.array([sets.setdefault(t, len(sets)) for t in table], dtype=np.int64)
    width = max(len(t) for t in sets) or 1
    set_lab = np.zeros((len(sets), width), dtype=np.int64)
    set_len = np.ones(len(sets), dtype=np.int64)
    for t, s in sets.items():
        set_lab[s, :len(t)] = t
        set_len[s] = max(len(t), 1)

    owners = f.lid_owners()
    if not owners:
        raise _not_equality("no LIDs in the fabric file (give ibnetdiscover output of a running subnet)")
    lids = np.array(sorted(owners), dtype=np.int64)
    top = int(lids[-1])
    tgt = np.empty(len(lids), dtype=np.int64)  # destination router per LID
    local = np.zeros(len(lids), dtype=np.int64)  # the port at the destination router
    for x, lid in enumerate(lids.tolist()):
        node, p = owners[lid]
        if f.types[node] == CA:
            peer = f.peer(node, p)
            if peer is None or peer[0] not in rindex:
                raise _not_equality(f"LID {lid} ({f.names[node]} port {p}) is not cabled to a router")
            tgt[x], local[x] = rindex[peer[0]], peer[1]
        else:
            tgt[x], local[x] = rindex[node], 0
    tables = Tables()
    for i, node in enumerate(router):
        j = (tgt - i) % n if i % 2 == 0 else (i - tgt) % n
        s = sid[j]
        order = np.argsort(s, kind="stable")  # LIDs grouped by set, ascending within a set
        ss = s[order]
        first = np.r_[0, np.flatnonzero(np.diff(ss)) + 1]
        rank = np.empty(len(s), dtype=np.int64)
        rank[order] = np.arange(len(s)) - np.repeat(first, np.diff(np.r_[first, len(s)]))
        out = port[i, set_lab[s, rank % set_len[s]]]
        out = np.where(j == 0, local, out)
        arr = np.full(top + 1, NO_ROUTE, dtype=np.uint8)
        arr[lids] = out
        g = f.guids[node]
        tables.lft[g] = arr
        tables.names[g] = f.names[node]
    return EqualityResult(n, k, router, port, table, d, tables, lids=len(lids))
