"""hdor on a degraded KNS: the Python reference of docs/hdor.md section 6 ("Fault tolerance").

    base = hdor.compute(complete)                      # the KNS while complete (remembered)
    res = hdor.compute(now, baseline=(complete, base))  # raises NotFamily with a reason
    res.tables, res.path_sls, res.sl2vl, res.vls, res.extra_hops

The fault-free tables are the start: an entry (switch W, LID L) whose fault-free route from W
touches no failed element is kept; only the others are recomputed, destination by destination,
by a shortest-path search over routers in which a group (one dimension's indirect network)
hands every packet for L to one exit member. The VL of a hop is the number of dimension-order
violations the path has made so far; the SL of a (source, destination) pair is the first SL
whose SL2VL entries agree with the VLs the path needs.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque

import numpy as np

from ibtool.errors import NotFamily
from ibtool.fabric import CA, SWITCH, Fabric, switch_graph
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.formats.pathrecord import PathSLs
from ibtool.formats.sl2vl import SL2VL
from ibtool.hops import bfs_hops
from ibtool.routing.hdor_result import HdorResult, _Declined, _describe, not_kns

INF = 1 << 30
MAX_SLS = 16


class LidsMoved(NotFamily):
    """The fabric is the remembered KNS with failures, but its LIDs are not the remembered ones:
    the fault-free tables are computed again for the LIDs of now (hdor_kns.against)."""

    def __init__(self, reason: str):
        super().__init__("hdor", "KNS", reason)


def degraded(f: Fabric, bf: Fabric, br: HdorResult, vls: int = 8) -> HdorResult | None:
    """Route `f`, the remembered KNS `bf` (routed as `br`) with elements failed; None when nothing
    failed (the caller routes it as a complete KNS, byte-identical to the fault-free tables)."""
    return _Degraded(f, bf, br, vls).run()


class _Degraded:
    def __init__(self, f: Fabric, bf: Fabric, br: HdorResult, vls: int):
        self.f, self.bf, self.br, self.vls = f, bf, br, vls

    # ----------------------------------------------------------------- what failed
    def _match(self) -> bool:
        f, bf = self.f, self.bf
        b2c = [-1] * bf.num_nodes
        for c in range(f.num_nodes):
            b = bf.by_guid(f.guids[c])
            if b is None or bf.types[b] != f.types[c]:
                raise not_kns(f"{_describe(f, c)} is not in the KNS")
            b2c[b] = c
        self.b2c = b2c
        dead_nodes = [b for b in range(bf.num_nodes) if b2c[b] < 0]
        dead_links = []
        for li in range(bf.num_links):
            a, pa, b, pb = bf.link_a[li], bf.link_pa[li], bf.link_b[li], bf.link_pb[li]
            if b2c[a] < 0 or b2c[b] < 0 or f.peer(b2c[a], pa) != (b2c[b], pb):
                dead_links.append(li)
        if not dead_nodes and not dead_links and f.num_links == bf.num_links:
            return False  # the remembered KNS itself: sections 1-5 route it
        for c in range(f.num_nodes):
            for port, peer, pport in f.neighbors(c):
                b = bf.by_guid(f.guids[c])
                want = bf.peer(b, port)
                if want is None or b2c[want[0]] != peer or want[1] != pport:
                    raise not_kns(f"{_describe(f, c)} port {port} is cabled to {_describe(f, peer)} port {pport}, "
                                 f"not as in the KNS")
        owners, bowners = f.lid_owners(), bf.lid_owners()
        for lid, (c, port) in owners.items():
            bo = bowners.get(lid)
            if bo is None or b2c[bo[0]] != c or bo[1] != port:
                raise LidsMoved(f"LID {lid} ({_describe(f, c)} port {port}) moved")
        self.owners = owners
        self.faults = {"nodes": [bf.names[b] for b in dead_nodes],
                       "links": [f"{bf.names[bf.link_a[li]]}[{bf.link_pa[li]}]-{bf.names[bf.link_b[li]]}"
                                 f"[{bf.link_pb[li]}]" for li in dead_links]}
        return True

    def _links(self):
        """Base-fabric port arrays and, per base slot, whether its remembered link works now."""
        f, bf = self.f, self.bf
        P, Q = bf.ports(), f.ports()
        self.boff, self.bpeer, self.bpport = P.offset, P.peer.astype(np.int64), P.peer_port.astype(np.int64)
        node_of = np.repeat(np.arange(bf.num_nodes), np.diff(P.offset))
        port_of = np.arange(len(P.peer)) - P.offset[node_of]
        b2c = np.asarray(self.b2c, dtype=np.int64)
        c, cp = b2c[node_of], b2c[np.maximum(self.bpeer, 0)]
        fn = np.asarray(f.nports, dtype=np.int64)
        ok = (self.bpeer >= 0) & (c >= 0) & (cp >= 0) & (port_of >= 1)
        ok &= port_of <= fn[np.maximum(c, 0)]
        slot = Q.offset[np.maximum(c, 0)] + np.minimum(port_of, fn[np.maximum(c, 0)])
        ok &= (Q.peer[slot] == cp) & (Q.peer_port[slot] == self.bpport)
        self.ok = ok
        self.b2c_arr = b2c
        # each node's working links (port, peer, peer port), by port
        idx = np.flatnonzero(ok)
        cut = np.searchsorted(node_of[idx], np.arange(bf.num_nodes + 1))
        ports, peers, pports = port_of[idx].tolist(), self.bpeer[idx].tolist(), self.bpport[idx].tolist()
        self._work = [list(zip(ports[a:b], peers[a:b], pports[a:b])) for a, b in zip(cut[:-1].tolist(), cut[1:].tolist())]

    def alive(self, b: int, port: int) -> tuple[int, int] | None:
        """The base peer (node, port) of base node b's port when that link still works."""
        if port > self.bf.nports[b]:
            return None
        s = int(self.boff[b]) + port
        return (int(self.bpeer[s]), int(self.bpport[s])) if self.ok[s] else None

    def _working(self, x: int) -> list[tuple[int, int, int]]:
        """(port, base peer, peer port) of base node x's working links."""
        return self._work[x]

    # ----------------------------------------------------------------- the run
    def run(self) -> HdorResult | None:
        if not self._match():
            return None
        self._prepare()
        self._detours()
        return self._result()

    def _prepare(self) -> None:
        """What failed, laid out: working links, table rows, groups, the affected entries; `table`
        is the fault-free tables with those entries (and the LIDs of failed ports) cleared."""
        bf, br = self.bf, self.br
        self._links()
        self.sw = [x for x in br.routers + br.switches if self.b2c[x] >= 0]  # alive switches, table rows
        self.row = {x: i for i, x in enumerate(self.sw)}
        self.rowa = np.full(bf.num_nodes, -1, dtype=np.int64)
        self.rowa[self.sw] = np.arange(len(self.sw))
        self.rowl = self.rowa.tolist()
        top = max(self.owners) if self.owners else 0
        NL = top + 1
        self.NL = NL
        T0 = np.full((len(self.sw), NL), NO_ROUTE, dtype=np.uint8)
        for i, x in enumerate(self.sw):
            a = br.tables.lft[bf.guids[x]]
            T0[i, :min(NL, len(a))] = a[:NL]
        self.T0 = T0
        self._structure()
        aff = self._affected()
        table = T0.copy()
        table[aff] = NO_ROUTE
        owned = np.zeros(NL, dtype=bool)
        owned[list(self.owners)] = True
        table[:, ~owned] = NO_ROUTE  # LIDs of failed ports: no entry, as for any LID without an owner
        self.table, self.aff = table, aff

    def _detours(self) -> None:
        """Candidates of every affected entry, LID by LID; then spreading (section 4's counters
        over the affected entries, in ascending LID order)."""
        bf, aff, table = self.bf, self.aff, self.table
        counters: list[dict] = [{} for _ in self.sw]
        todo = np.flatnonzero(aff.any(axis=0)).tolist()
        # the switch targets among them follow the BFS rule: their distances in one batch
        self._distances([bf.by_guid(self.f.guids[self.owners[lid][0]]) for lid in todo
                         if self.f.types[self.owners[lid][0]] == SWITCH])
        for lid in todo:
            rows = np.flatnonzero(aff[:, lid]).tolist()
            cands = self._route_lid(lid, rows)
            for r in rows:
                C = cands.get(r)
                if C:
                    C = tuple(sorted(C))  # by port, as in section 4
                    j = counters[r].get(C, 0)
                    counters[r][C] = j + 1
                    table[r, lid] = C[j % len(C)]

    def _structure(self):
        """Groups, members and in-group levels. A group here is a connected component of the
        surviving switches of a remembered group over working links (section "Terms": a failure
        inside a tree may split it); its members are the routers with a working link into it."""
        bf, br = self.bf, self.br
        self.is_router = {x: True for x in br.routers}
        self.router_arr = np.zeros(bf.num_nodes, dtype=bool)
        self.router_arr[br.routers] = True
        self.group_of = {}  # surviving indirect switch -> group (component)
        self.group_sw: list[list[int]] = []
        self.group_dim: list[int] = []
        for gi, sw in enumerate(br.groups):
            inside = {x for x in sw if self.b2c[x] >= 0}
            for x in sw:
                if x in inside and x not in self.group_of:
                    comp, q = [x], deque([x])
                    self.group_of[x] = len(self.group_sw)
                    while q:
                        u = q.popleft()
                        for port, p, pp in self._working(u):
                            if p in inside and p not in self.group_of:
                                self.group_of[p] = len(self.group_sw)
                                comp.append(p)
                                q.append(p)
                    self.group_sw.append(sorted(comp, key=lambda y: bf.guids[y]))
                    self.group_dim.append(br.group_dim[gi])
        self.members = [set() for _ in self.group_sw]
        self.gdim_of: dict[tuple[int, int], list[int]] = {}  # (router, dim) -> its groups, ascending
        for gi, sw in enumerate(self.group_sw):
            for x in sw:
                for port, p, pp in self._working(x):
                    if p in self.is_router and p not in self.members[gi]:
                        self.members[gi].add(p)
                        self.gdim_of.setdefault((p, self.group_dim[gi]), []).append(gi)
        # a router's groups in the order Dijkstra visits them: by dimension, then group order
        self.rgroups: dict[int, list[int]] = {}
        for (r, d), gs in sorted(self.gdim_of.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            self.rgroups.setdefault(r, []).extend(gs)
        # level: fewest remembered in-group hops to a switch linked to a member (stage in a k-ary
        # s-tree); "up" = toward a higher (level, GUID)
        self.rank = {}
        for sw in br.groups:
            inside = set(sw)
            lev = {x: 0 for x in sw if any(p in self.is_router for _, p, _ in bf.neighbors(x))}
            q = deque(lev)
            while q:
                u = q.popleft()
                for _, v, _ in bf.neighbors(u):
                    if v in inside and v not in lev:
                        lev[v] = lev[u] + 1
                        q.append(v)
            for x in sw:
                self.rank[x] = (lev.get(x, INF), bf.guids[x])
        self._ig_cache = {}
        self._dist_cache = {}
        # members as arrays (GUID order), and which of them can be their group's exit (a switch of
        # the group reaches them over working links)
        guid_rank = np.empty(bf.num_nodes, dtype=np.int64)
        guid_rank[np.argsort(np.asarray(bf.guids, dtype=np.uint64), kind="stable")] = np.arange(bf.num_nodes)
        self.guid_rank = guid_rank
        self.gmem = [np.asarray(sorted(m, key=lambda y: bf.guids[y]), dtype=np.int64) for m in self.members]
        self.gmem_l = [m.tolist() for m in self.gmem]
        self.gelig_l = [[bool(self._in_group(gi, M)[0]) for M in mem] for gi, mem in enumerate(self.gmem_l)]
        self._switch_links()

    def _switch_links(self, rows=None) -> None:
        """The working switch-switch links, for the BFS rule: the graph (hops.bfs_hops reads it)
        and per row (port, row behind it) by port; `rows`: only those rows' lists made anew (a
        pass that starts from a kept layout, hdor_single)."""
        self.swg = switch_graph(self.bf, self.sw, self.ok)
        ptr, nbr, port = self.swg.indptr, self.swg.indices, self.swg.port
        if rows is None:
            ptr, nbr, port = ptr.tolist(), nbr.tolist(), port.tolist()
            self.sw_adj = [list(zip(port[a:b], nbr[a:b])) for a, b in zip(ptr[:-1], ptr[1:])]
            return
        for r in rows:
            self.sw_adj[r] = list(zip(port[ptr[r]:ptr[r + 1]].tolist(), nbr[ptr[r]:ptr[r + 1]].tolist()))

    def _affected(self) -> np.ndarray:
        """affected[row, LID]: the fault-free route from that switch to that LID touches a failed
        link or node (its next hop is dead, or the next switch's route is affected). Every entry's
        route is followed at once by pointer jumping (each round doubles the hops looked ahead)."""
        bf, T0 = self.bf, self.T0
        R, NL = T0.shape
        nxt = np.full((R, 256), -1, dtype=np.int64)  # row of the switch behind a port; -1 other
        dead = np.ones((R, 256), dtype=bool)
        pdim = np.full((R, 256), -1, dtype=np.int64)  # dimension of the group behind a port
        dim_of = np.full(bf.num_nodes, -1, dtype=np.int64)
        for x, d in self.br.dim.items():
            dim_of[x] = d
        router = self.router_arr[self.sw]
        # every port of every surviving switch at once: (row, port) -> slot
        xs = np.asarray(self.sw, dtype=np.int64)
        cnt = np.asarray(bf.nports, dtype=np.int64)[xs] + 1
        ri = np.repeat(np.arange(R), cnt)
        port_i = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        slot = self.boff[xs][ri] + port_i
        peers, okp = self.bpeer[slot], self.ok[slot]
        has = peers >= 0
        pdim[ri[has], port_i[has]] = dim_of[peers[has]]
        dead[ri[okp], port_i[okp]] = False
        dead[:, 0] = False
        sw_next = okp & has & (np.asarray(bf.types, dtype=np.int64)[np.maximum(peers, 0)] == SWITCH)
        nxt[ri[sw_next], port_i[sw_next]] = self.rowa[peers[sw_next]]
        self.pdim = pdim
        lids = np.zeros(NL, dtype=bool)
        lids[list(self.owners)] = True
        routed = (T0 != NO_ROUTE) & lids[None, :]
        rows = np.arange(R)[:, None]
        port = T0.astype(np.intp)
        aff = routed & dead[rows, port]
        aff |= lids[None, :] & ~routed  # owned now, no fault-free entry (cannot happen for a KNS)
        nr = np.where(routed, nxt[rows, port], -1).astype(np.int32)
        # links to the LID's port (0 at the port's switch, else 1 to the next switch or to the CA)
        # and the first router reached (the entry's own switch for a router), for the unaffected
        # entries
        ln = np.where(port == 0, 0, 1).astype(np.int16)
        ex = np.broadcast_to(np.where(router, np.asarray(self.sw), -1).astype(np.int32)[:, None], (R, NL)).copy()
        jump = nr
        col = np.arange(NL, dtype=np.intp)[None, :]
        while True:
            has = jump >= 0
            if not has.any():
                break
            j = np.where(has, jump, 0).astype(np.intp)
            j *= NL
            j += col  # the flat (row, LID) each entry jumps to
            aff |= has & aff.ravel()[j]
            ln += np.where(has, ln.ravel()[j], 0).astype(np.int16)
            np.copyto(ex, ex.ravel()[j], where=(ex < 0) & has)
            jump = np.where(has, jump.ravel()[j], -1)
        self.len0, self.exit0 = ln, ex
        self.len0T, self.exit0T = np.ascontiguousarray(ln.T), np.ascontiguousarray(ex.T)  # by LID
        self.dim0 = np.take_along_axis(pdim, np.where(routed, port, 0), axis=1)
        return aff

    # ----------------------------------------------------------------- in-group routes
    def _in_group(self, gi: int, M: int):
        """Up*/down* routes inside group gi toward member M on the working links: per switch,
        (cost in links to M, candidate ports); routers' ports into gi: (cost, ports)."""
        key = (gi, M)
        got = self._ig_cache.get(key)
        if got is not None:
            return got
        bf, rank = self.bf, self.rank
        sw = self.group_sw[gi]
        adj = {x: [(port, p) for port, p, pp in self._working(x)] for x in sw}
        dd = {}
        for x in sorted(sw, key=rank.get):  # ascending: down-neighbours first
            direct = [port for port, p in adj[x] if p == M]
            if direct:
                dd[x] = (1, tuple(direct))
                continue
            best = min((dd[p][0] for _, p in adj[x] if p in dd and rank[p] < rank[x]), default=INF)
            if best < INF:
                dd[x] = (best + 1, tuple(port for port, p in adj[x]
                                         if p in dd and rank[p] < rank[x] and dd[p][0] == best))
        cost = dict(dd)
        for x in sorted(sw, key=rank.get, reverse=True):  # descending: up-neighbours first
            if x in dd:
                continue
            best = min((cost[p][0] for _, p in adj[x] if p in cost and rank[p] > rank[x]), default=INF)
            if best < INF:
                cost[x] = (best + 1, tuple(port for port, p in adj[x]
                                           if p in cost and rank[p] > rank[x] and cost[p][0] == best))
        into = {}
        for W in self.members[gi]:
            if W == M or self.b2c[W] < 0:
                continue
            links = [(port, p) for port, p, pp in self._working(W) if self.group_of.get(p) == gi and p in cost]
            if links:
                best = min(cost[p][0] for _, p in links)
                into[W] = (best + 1, tuple(sorted(port for port, p in links if cost[p][0] == best)))
        got = self._ig_cache[key] = (cost, into)
        return got

    # ----------------------------------------------------------------- one destination
    def _route_lid(self, lid: int, rows: list[int]) -> dict[int, tuple]:
        """Candidate ports of every affected row for this LID (section 6 "Detours").

        Only the groups holding an affected switch (as member router or as indirect switch) matter,
        and of the fixed routers only those that can claim such a group's exit: its fault-free exit
        when it has one, else its eligible fixed member with the smallest (links, GUID). So the
        Dijkstra runs over the affected routers and those few fixed ones."""
        f, bf = self.f, self.bf
        c, port = self.owners[lid]
        b = bf.by_guid(f.guids[c])
        if f.types[c] == CA:
            pc = f.peer(c, port)
            if pc is None:
                return {}
            T, fin = bf.by_guid(f.guids[pc[0]]), pc[1]
        elif b in self.is_router:
            T, fin = b, 0
        else:
            return self._bfs_rule(lid, b, rows, {})
        guids = bf.guids
        row = self.rowl
        hit = set(rows)  # the affected rows
        nodes = [self.sw[r] for r in rows]
        len0 = self.len0T[lid]  # read at a few rows: .item(r), not the whole row as a list
        exit0 = self.exit0T[lid]
        is_router, rgroups, group_of, group_sw = self.is_router, self.rgroups, self.group_of, self.group_sw
        # the relevant groups with their affected member routers; their fault-free exits (the last
        # unaffected switch's, by GUID)
        exit_of: dict[int, int | None] = {}
        nonfixed: dict[int, list[int]] = {}
        for x in nodes:
            isr = x in is_router
            for gi in (rgroups.get(x, ()) if isr else (group_of[x],)):
                if gi not in exit_of:
                    ex = None
                    for s_ in group_sw[gi]:
                        r = row[s_]
                        if r not in hit:
                            ex = exit0.item(r)
                    exit_of[gi] = ex
                    nonfixed[gi] = []
                if isr:
                    nonfixed[gi].append(x)
        best: dict[int, tuple] = {T: (0, 0, guids[T])}
        first_dim = {T: -1}
        via: dict[int, int] = {}
        heap = [(0, 0, guids[T], T)]
        for gi, ex in exit_of.items():
            if ex is None:  # the eligible fixed member with the smallest (links, GUID)
                key = None
                for W, el in zip(self.gmem_l[gi], self.gelig_l[gi]):
                    if W == T or not el:
                        continue
                    r = row[W]
                    if r in hit:
                        continue
                    k = (len0.item(r), guids[W])
                    if key is None or k < key:
                        key, ex = k, W
            elif not nonfixed[gi]:
                continue  # its fault-free exit would relax no one: its pop changes nothing here
            if ex is not None and ex != T and row[ex] not in hit and ex not in best:
                r = row[ex]
                best[ex] = k = (len0.item(r), 0, guids[ex])
                first_dim[ex] = self.dim0.item(r, lid)
                heapq.heappush(heap, (*k, ex))
        # Dijkstra over routers from T: key (links, violations, GUID)
        done = set()
        group_dim, ig = self.group_dim, self._ig_cache
        while heap:
            ln, v, g, X = heapq.heappop(heap)
            if X in done or best[X] != (ln, v, g):
                continue
            done.add(X)
            for gi in rgroups.get(X, ()):
                ex = exit_of.get(gi, -1)
                if ex != X and ex is not None:
                    continue  # holds nothing affected (-1), or its exit is another router
                e = group_dim[gi]
                cost, into = ig.get((gi, X)) or self._in_group(gi, X)
                if not cost:  # X has no working link into the group
                    continue
                exit_of[gi] = X
                turn = 1 if X != T and first_dim[X] <= e else 0
                for W in nonfixed[gi]:
                    got = into.get(W)
                    if got is None or W in done:
                        continue
                    cand = (ln + got[0], v + turn, guids[W])
                    if W not in best or cand < best[W]:
                        best[W], via[W], first_dim[W] = cand, gi, e
                        heapq.heappush(heap, (*cand, W))
        out: dict[int, tuple] = {}
        orphans = {}
        for r, x in zip(rows, nodes):
            if x == T:
                out[r] = (fin,)
            elif x in self.is_router:
                if x not in done:
                    if self._switch_dist(T)[self.row[x]] < 0:
                        continue  # cut off from the destination: no entry
                    raise _Declined(f"{_describe(self.f, self.b2c[x], 'router')} reaches LID {lid} only by a "
                                 f"route the scheme does not allow (a group connects them only down and up again)")
                gi = via[x]
                out[r] = (ig.get((gi, exit_of[gi])) or self._in_group(gi, exit_of[gi]))[1][x][1]
            else:
                gi = group_of[x]
                M = exit_of.get(gi)
                cost = (ig.get((gi, M)) or self._in_group(gi, M))[0] if M is not None else {}
                if x in cost:
                    out[r] = cost[x][1]
                else:
                    orphans[r] = True
        if orphans:
            out.update(self._bfs_rule(lid, T, orphans, out))
        return out

    def _bfs_rule(self, lid: int, target: int, rows, out) -> dict[int, tuple]:
        """Rows no CA-to-CA route passes (management targets, switches off every chosen route):
        toward a neighbour switch one hop closer to the target over the working links."""
        dist = self._switch_dist(target)
        res = {}
        for r in rows:
            x = self.sw[r]
            if x == target:
                res[r] = (0,)
            elif dist[r] >= 0:
                res[r] = tuple(port for port, v in self.sw_adj[r] if dist[v] == dist[r] - 1)
        return res

    def _distances(self, targets: list[int]) -> None:
        """_switch_dist of many targets at once (hops.bfs_hops; the graph is symmetric, so hops
        from a target are hops to it), 256 at a time: its temporaries grow with targets x links."""
        targets = sorted({t for t in targets if t not in self._dist_cache and t in self.row})
        g = self.swg
        for lo in range(0, len(targets), 256):
            chunk = targets[lo:lo + 256]
            for t, row in zip(chunk, bfs_hops(g.indptr, g.indices, [self.row[t] for t in chunk]).tolist()):
                self._dist_cache[t] = row

    def _switch_dist(self, target: int) -> list[int]:
        """Hops from every switch row to switch `target` over the working links, -1 when cut off
        (cached per target)."""
        if target not in self._dist_cache:
            self._distances([target])
        return self._dist_cache[target]

    # ----------------------------------------------------------------- VLs, SLs, result
    def _result(self) -> HdorResult:
        f, bf, br = self.f, self.bf, self.br
        tables = Tables()
        for i, x in enumerate(self.sw):
            tables.lft[bf.guids[x]] = self.table[i]
            tables.names[bf.guids[x]] = bf.names[x]
        vl_need, path_sls, sl2vl, extra = self._sls()
        c = self.b2c
        role = ["hca" if f.types[i] == CA else "switch" for i in range(f.num_nodes)]
        for x in br.routers:
            if c[x] >= 0:
                role[c[x]] = "router"
        coords = {c[x]: v for x, v in br.coords.items() if c[x] >= 0}
        spread: dict[tuple[int, int], dict[int, int]] = {}
        for x in br.routers:
            if c[x] < 0:
                continue
            cnt = np.bincount(self.table[self.row[x]], minlength=256)
            for d in range(br.n):
                ports = [p for p, y, _ in f.neighbors(c[x]) if br.dim.get(bf.by_guid(f.guids[y])) == d]
                if len(ports) >= 2:
                    spread[(c[x], d)] = {p: int(cnt[p]) for p in ports}
        alive = lambda xs: sorted((c[x] for x in xs if c[x] >= 0), key=lambda i: f.guids[i])
        groups = [alive(sw) for sw in br.groups]
        keep = [gi for gi, g in enumerate(groups) if g]
        return HdorResult(k=br.k, n=br.n, s=br.s, role=role, dim={c[x]: d for x, d in br.dim.items() if c[x] >= 0},
                          coords=coords, tables=tables, spread=spread, routers=alive(br.routers),
                          switches=alive(br.switches), hcas=alive(br.hcas), groups=[groups[g] for g in keep],
                          group_dim=[br.group_dim[g] for g in keep], lids=len(self.owners), vls=vl_need,
                          sl2vl=sl2vl, path_sls=path_sls, faults=self.faults, extra_hops=extra)

    def _walks(self, src: np.ndarray, pin: np.ndarray, dlid: np.ndarray, new: bool):
        """Every pair's walk at once, from its source router `src` (base node, entered by port
        `pin`) to `dlid`, over the degraded tables (new) or the fault-free ones: (hops as
        (switch, in, out) arrays of pairs x steps, -1 past the end; links; delivered)."""
        bf = self.bf
        P = len(src)
        types = self.btypes
        cur, pn = src.astype(np.int64), pin.astype(np.int64)
        links = np.ones(P, dtype=np.int64)
        live = np.ones(P, dtype=bool)  # still walking
        ok = np.zeros(P, dtype=bool)  # delivered to a CA
        hx, hi, ho = [], [], []
        for _ in range(64):
            if not live.any():
                break
            if new:
                out = self.table[self.rowa[cur], dlid]
            else:
                r = self.brow[cur]
                out = np.where(dlid < self.T0full.shape[1], self.T0full[r, np.minimum(dlid, self.T0full.shape[1] - 1)],
                               NO_ROUTE)
            out = out.astype(np.int64)
            live &= (out != NO_ROUTE) & (out != 0)
            hx.append(np.where(live, cur, -1))
            hi.append(np.where(live, pn, -1))
            ho.append(np.where(live, out, -1))
            slot = self.boff[cur] + np.where(live, out, 0)
            nx, nxp = self.bpeer[slot], self.bpport[slot]
            live &= nx >= 0
            if new:
                live &= self.ok[slot]
            links += live
            arrived = live & (types[np.maximum(nx, 0)] != SWITCH)
            ok |= arrived
            live &= ~arrived
            cur, pn = np.where(live, nx, 0), np.where(live, nxp, 0)
        if not hx:  # no pair to walk: no route the failures touched (a router cut off with its HCAs)
            hx = hi = ho = [np.full(P, -1, dtype=np.int64)]
        return np.stack(hx, axis=1), np.stack(hi, axis=1), np.stack(ho, axis=1), links, ok

    def _sls(self):
        """Walk every CA-to-CA pair whose route changed (its fault-free route is affected; the others
        keep it, on SL 0): the VL of each hop (violations so far), the SL (the first whose SL2VL
        entries agree, pairs taken by destination then source LID), and the extra links against the
        fault-free route. The walks run for all pairs at once; the SLs, which depend on the entries
        earlier pairs set, pair by pair. Declined when the failures need more VLs than the ports
        offer."""
        f, bf, br = self.f, self.bf, self.br
        owners = self.owners
        srcs = sorted((lid, c, p) for lid, (c, p) in owners.items()
                      if f.types[c] == CA and f.peer(c, p) is not None and f.port_lids[(c, p)][0] == lid)
        dsts = sorted(lid for lid, (c, p) in owners.items() if f.types[c] == CA and f.peer(c, p) is not None)
        self.btypes = np.asarray(bf.types, dtype=np.int64)
        dim_of = np.full(bf.num_nodes, -1, dtype=np.int64)
        for x, d in br.dim.items():
            dim_of[x] = d
        path_sls = PathSLs()
        path_sls.path = "hdor (Python reference)"
        entries: list[dict] = [{} for _ in range(MAX_SLS)]  # per SL: (switch, in, out) -> VL
        if not srcs or not dsts:
            return 1, path_sls, self._sl2vl(entries), {"detoured": 0, "max": 0, "mean": 0.0}
        # the fault-free tables of every remembered switch (a fault-free route may cross a failed one)
        bsw = br.routers + br.switches
        self.brow = np.full(bf.num_nodes, -1, dtype=np.int64)
        self.brow[bsw] = np.arange(len(bsw))
        NL0 = max(len(br.tables.lft[bf.guids[x]]) for x in bsw)
        self.T0full = np.full((len(bsw), NL0), NO_ROUTE, dtype=np.uint8)
        for i, x in enumerate(bsw):
            a = br.tables.lft[bf.guids[x]]
            self.T0full[i, :len(a)] = a
        s_lid = np.asarray([s[0] for s in srcs], dtype=np.int64)
        s_b = np.asarray([bf.by_guid(f.guids[c]) for _, c, _ in srcs], dtype=np.int64)
        s_p = np.asarray([p for _, _, p in srcs], dtype=np.int64)
        slot = self.boff[s_b] + s_p
        s_x, s_in = self.bpeer[slot], self.bpport[slot]  # the source's router and its port
        d_lid = np.asarray(dsts, dtype=np.int64)
        # a destination LID of the source's own port (its LMC range) is no pair
        d_owner = [owners[d] for d in dsts]
        own = {(c, p): i for i, (_, c, p) in enumerate(srcs)}
        self_of = np.asarray([own.get(o, -1) for o in d_owner], dtype=np.int64)
        pair = np.ones((len(dsts), len(srcs)), dtype=bool)  # [destination, source]
        has_self = self_of >= 0
        pair[np.flatnonzero(has_self), self_of[has_self]] = False
        touched = self.aff[self.rowa[s_x]][:, d_lid].T & pair  # the fault-free route is affected
        di, si = np.nonzero(touched)  # by destination, then source LID: the order SLs are given in
        hx, hi, ho, ln, ok = self._walks(s_x[si], s_in[si], d_lid[di], new=True)
        # violations: at a router, from the dimension of the group it came from to the one it leaves
        # by, when the new one is <= the old; the VL of a hop = violations so far (that one included)
        valid = hx >= 0
        xs = np.maximum(hx, 0)
        a = dim_of[self.bpeer[self.boff[xs] + np.maximum(hi, 0)]]
        b = dim_of[self.bpeer[self.boff[xs] + np.maximum(ho, 0)]]
        viol = valid & self.router_arr[xs] & (a >= 0) & (b >= 0) & (b <= a)
        vl = np.cumsum(viol, axis=1)
        nviol = vl[:, -1]
        sl = np.zeros(len(di), dtype=np.int64)
        keys = (hx * 65536 + hi * 256 + ho).tolist()
        vls = vl.tolist()
        for j in np.flatnonzero(ok & (nviol > 0)).tolist():
            need = [(k, w) for k, w in zip(keys[j], vls[j]) if k >= 0]
            for s_ in range(1, MAX_SLS):
                ent = entries[s_]
                for k, w in need:
                    x = ent.get(k)
                    if x is not None and x != w:
                        break
                else:
                    break  # every entry agrees
            else:
                raise _Declined(f"the failures need more than {MAX_SLS} SLs (pair LID {int(s_lid[si[j]])} -> "
                             f"{int(d_lid[di[j]])})")
            entries[s_].update(need)
            sl[j] = s_
        path_sls = self._path_sls(path_sls, s_lid, d_lid, has_self, self_of, si, di, ok, sl)
        # extra links of the pairs whose route changed
        hx0, hi0, ho0, ln0, _ = self._walks(s_x[si], s_in[si], d_lid[di], new=False)
        width = max(hx.shape[1], hx0.shape[1])

        def pad(m):
            return np.pad(m, ((0, 0), (0, width - m.shape[1])), constant_values=-1)
        same = (pad(hx) == pad(hx0)).all(axis=1) & (pad(hi) == pad(hi0)).all(axis=1) & (pad(ho) == pad(ho0)).all(axis=1)
        changed = ok & ~same
        extra = (ln - ln0)[changed]
        most = int(nviol[ok].max()) if ok.any() else 0
        ex = {"detoured": int(changed.sum()), "max": int(extra.max()) if len(extra) else 0,
              "mean": round(float(extra.sum()) / len(extra), 3) if len(extra) else 0.0}
        if most + 1 > self.vls:
            raise _Declined(f"the failures need {most + 1} VLs, the ports offer {self.vls}")
        return most + 1, path_sls, self._sl2vl(entries), ex

    def _path_sls(self, path_sls, s_lid, d_lid, has_self, self_of, si, di, ok, sl):
        """Every pair's SL: SL 0 for every pair whose route is the fault-free one (all source
        LIDs s_lid x destinations d_lid, less each source's own port's), nothing for a pair not
        delivered, `sl` for the detoured pairs (si, di: indices into s_lid, d_lid; ok: delivered)."""
        path_sls.update(dict.fromkeys(itertools.product(s_lid.tolist(), d_lid.tolist()), 0))  # all, then
        for d, s_ in zip(np.flatnonzero(has_self).tolist(), self_of[has_self].tolist()):  # less the own port's
            del path_sls[(int(s_lid[s_]), int(d_lid[d]))]
        for j in np.flatnonzero(~ok).tolist():  # and the pairs not delivered
            del path_sls[(int(s_lid[si[j]]), int(d_lid[di[j]]))]
        path_sls.update(zip(zip(s_lid[si[ok]].tolist(), d_lid[di[ok]].tolist()), sl[ok].tolist()))
        return path_sls

    def _sl2vl(self, entries: list[dict]) -> SL2VL:
        """The SL2VL rows of the entries set (switch, in, out) -> VL per SL; rows not listed: VL 0."""
        bf = self.bf
        sl2vl = SL2VL()
        sl2vl.path = "hdor (Python reference)"
        for sl in range(1, MAX_SLS):
            for k, w in entries[sl].items():
                if w:
                    x, pin, pout = k >> 16, (k >> 8) & 255, k & 255
                    row = sl2vl.setdefault(bf.guids[x], {}).setdefault((pin, pout), [0] * 16)
                    row[sl] = w
        for g in sl2vl:
            sl2vl.kind[g] = "Switch"
            for k in sl2vl[g]:
                sl2vl[g][k] = tuple(sl2vl[g][k])
        return sl2vl
