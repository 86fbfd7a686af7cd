"""hdor on a degraded KNS: the Python reference of docs/hdor.md section 6 ("Fault tolerance").

    base = hdor.compute(complete)                      # the KNS while complete (remembered)
    res = hdor.compute(now, baseline=(complete, base))  # raises NotKNS with a reason
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
from collections import deque

import numpy as np

from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.formats.pathrecord import PathSLs
from ibtool.formats.sl2vl import SL2VL
from ibtool.routing.hdor import HdorResult, NotKNS, _Declined, _describe

INF = 1 << 30
MAX_SLS = 16


class LidsMoved(NotKNS):
    """The fabric is the remembered KNS with failures, but its LIDs are not the remembered ones:
    the fault-free tables are computed again for the LIDs of now (hdor_kns.against)."""


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
                raise NotKNS(f"{_describe(f, c)} is not in the KNS")
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
                    raise NotKNS(f"{_describe(f, c)} port {port} is cabled to {_describe(f, peer)} port {pport}, "
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

    def alive(self, b: int, port: int) -> tuple[int, int] | None:
        """The base peer (node, port) of base node b's port when that link still works."""
        c = self.b2c[b]
        if c < 0:
            return None
        pc = self.f.peer(c, port)
        if pc is None:
            return None
        bp = self.bf.by_guid(self.f.guids[pc[0]])
        return bp, pc[1]

    # ----------------------------------------------------------------- the run
    def run(self) -> HdorResult | None:
        if not self._match():
            return None
        bf, br = self.bf, self.br
        self.sw = [x for x in br.routers + br.switches if self.b2c[x] >= 0]  # alive switches, table rows
        self.row = {x: i for i, x in enumerate(self.sw)}
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
        counters: list[dict] = [{} for _ in self.sw]
        for lid in sorted(self.owners):
            rows = np.flatnonzero(aff[:, lid])
            if len(rows):
                cands = self._route_lid(lid, set(rows.tolist()))
                for r in rows.tolist():
                    C = tuple(sorted(cands.get(r, ())))  # by port, as in section 4
                    if C:
                        j = counters[r].get(C, 0)
                        counters[r][C] = j + 1
                        table[r, lid] = C[j % len(C)]
        return self._result()

    def _structure(self):
        """Groups, members and in-group levels. A group here is a connected component of the
        surviving switches of a remembered group over working links (section "Terms": a failure
        inside a tree may split it); its members are the routers with a working link into it."""
        bf, br = self.bf, self.br
        self.is_router = {x: True for x in br.routers}
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
                        for port, p, pp in bf.neighbors(u):
                            if p in inside and p not in self.group_of and self.alive(u, port) == (p, pp):
                                self.group_of[p] = len(self.group_sw)
                                comp.append(p)
                                q.append(p)
                    self.group_sw.append(sorted(comp, key=lambda y: bf.guids[y]))
                    self.group_dim.append(br.group_dim[gi])
        self.members = [set() for _ in self.group_sw]
        self.gdim_of: dict[tuple[int, int], list[int]] = {}  # (router, dim) -> its groups, ascending
        for gi, sw in enumerate(self.group_sw):
            for x in sw:
                for port, p, pp in bf.neighbors(x):
                    if p in self.is_router and self.alive(x, port) == (p, pp) and p not in self.members[gi]:
                        self.members[gi].add(p)
                        self.gdim_of.setdefault((p, self.group_dim[gi]), []).append(gi)
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

    def _affected(self) -> np.ndarray:
        """affected[row, LID]: the fault-free route from that switch to that LID touches a failed
        link or node (its next hop is dead, or the next switch's route is affected)."""
        bf, T0 = self.bf, self.T0
        R, NL = T0.shape
        nxt = np.full((R, 256), -1, dtype=np.int64)  # row of the switch behind a port; -1 other
        dead = np.ones((R, 256), dtype=bool)
        pdim = np.full((R, 256), -1, dtype=np.int64)  # dimension of the group behind a port
        router = np.zeros(R, dtype=bool)
        self.sw_adj = {}  # switch -> [(port, switch)] over working links
        for i, x in enumerate(self.sw):
            dead[i, 0] = False
            router[i] = x in self.is_router
            adj = self.sw_adj[x] = []
            for port, p, pp in bf.neighbors(x):
                if p in self.br.dim:
                    pdim[i, port] = self.br.dim[p]
                if self.alive(x, port) == (p, pp):
                    dead[i, port] = False
                    if bf.types[p] == SWITCH:
                        nxt[i, port] = self.row[p]
                        adj.append((port, p))
        lids = np.zeros(NL, dtype=bool)
        lids[list(self.owners)] = True
        routed = (T0 != NO_ROUTE) & lids[None, :]
        rows = np.arange(R)[:, None]
        aff = routed & dead[rows, T0]
        aff |= lids[None, :] & ~routed  # owned now, no fault-free entry (cannot happen for a KNS)
        nr = np.where(routed, nxt[rows, T0], -1)
        cols = np.broadcast_to(np.arange(NL)[None, :], nr.shape)
        has = nr >= 0
        for _ in range(R):
            new = aff.copy()
            new[has] |= aff[nr[has], cols[has]]
            if (new == aff).all():
                break
            aff = new
        # for unaffected entries: links to the LID's port, the first dimension of a router's route
        # and the first router an indirect switch's route reaches (its group's exit)
        port = T0.astype(np.int64)
        ln = np.where(port == 0, 0, np.where(routed & (nr < 0), 1, -1))
        ex = np.where(router[:, None], np.asarray(self.sw)[:, None], -1)
        ex = np.where(~router[:, None] & (nr >= 0) & router[np.maximum(nr, 0)], np.asarray(self.sw)[np.maximum(nr, 0)],
                      ex)
        for _ in range(R):  # until nothing changes (a route to a switch LID has no exit)
            todo = (ln < 0) & has
            todo_x = (ex < 0) & has
            got = ln[nr[todo], cols[todo]]
            got_x = ex[nr[todo_x], cols[todo_x]]
            if not (got >= 0).any() and not (got_x >= 0).any():
                break
            ln[todo] = np.where(got >= 0, got + 1, -1)
            ex[todo_x] = got_x
        self.len0, self.exit0 = ln, ex
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
        adj = {x: [(port, p) for port, p, pp in bf.neighbors(x) if self.alive(x, port) == (p, pp)] for x in sw}
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
            links = [(port, p) for port, p, pp in bf.neighbors(W)
                     if self.group_of.get(p) == gi and p in cost and self.alive(W, port) == (p, pp)]
            if links:
                best = min(cost[p][0] for _, p in links)
                into[W] = (best + 1, tuple(sorted(port for port, p in links if cost[p][0] == best)))
        got = self._ig_cache[key] = (cost, into)
        return got

    # ----------------------------------------------------------------- one destination
    def _route_lid(self, lid: int, rows: set) -> dict[int, tuple]:
        """Candidate ports of every affected row for this LID."""
        f, bf, br = self.f, self.bf, self.br
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
        # fault-free exits of groups holding an unaffected switch, lengths of unaffected routers
        exit_of: dict[int, int] = {}
        fixed: dict[int, tuple[int, int]] = {}  # router -> (links to the LID's port, first dim)
        for i in np.flatnonzero(~self.aff[:, lid]).tolist():
            x = self.sw[i]
            if x in self.is_router:
                fixed[x] = (int(self.len0[i, lid]), int(self.dim0[i, lid]))
            else:
                exit_of[self.group_of[x]] = int(self.exit0[i, lid])
        # Dijkstra over routers, from T: key (links, violations, GUID)
        best: dict[int, tuple] = {T: (0, 0, bf.guids[T])}
        first_dim = {T: -1}
        via: dict[int, int] = {}
        heap = [(0, 0, bf.guids[T], T)]
        for x, (ln, d) in fixed.items():
            if x != T:
                best[x] = (ln, 0, bf.guids[x])
                first_dim[x] = d
                heapq.heappush(heap, (ln, 0, bf.guids[x], x))
        done = set()
        while heap:
            ln, v, g, X = heapq.heappop(heap)
            if X in done or best[X] != (ln, v, g):
                continue
            done.add(X)
            for gi in [g for d in range(br.n) for g in self.gdim_of.get((X, d), ())]:
                e = self.group_dim[gi]
                if exit_of.get(gi, X) != X:
                    continue
                cost, into = self._in_group(gi, X)
                if not cost:  # X has no working link into the group
                    continue
                exit_of[gi] = X
                turn = 1 if X != T and first_dim[X] <= e else 0
                for W, (cost, _) in into.items():
                    if W in done or W in fixed:
                        continue
                    cand = (ln + cost, v + turn, bf.guids[W])
                    if W not in best or cand < best[W]:
                        best[W], via[W], first_dim[W] = cand, gi, e
                        heapq.heappush(heap, (*cand, W))
        out: dict[int, tuple] = {}
        orphans = {}
        for r in rows:
            x = self.sw[r]
            if x == T:
                out[r] = (fin,)
            elif x in self.is_router:
                if x not in done:
                    if x not in self._switch_dist(T):
                        continue  # cut off from the destination: no entry
                    raise _Declined(f"{_describe(self.f, self.b2c[x], 'router')} reaches LID {lid} only by a "
                                 f"route the scheme does not allow (a group connects them only down and up again)")
                gi = via[x]
                out[r] = self._in_group(gi, exit_of[gi])[1][x][1]
            else:
                gi = self.group_of[x]
                M = exit_of.get(gi)
                cost = self._in_group(gi, M)[0] if M is not None else {}
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
            elif x in dist:
                res[r] = tuple(port for port, p in self.sw_adj[x] if dist.get(p) == dist[x] - 1)
        return res

    def _switch_dist(self, target: int) -> dict[int, int]:
        """Hops from every switch to switch `target` over the working links (cached per target)."""
        got = self._dist_cache.get(target)
        if got is None:
            got = self._dist_cache[target] = {target: 0}
            q = deque([target])
            while q:
                u = q.popleft()
                for _, p in self.sw_adj[u]:
                    if p not in got:
                        got[p] = got[u] + 1
                        q.append(p)
        return got

    # ----------------------------------------------------------------- VLs, SLs, result
    def _result(self) -> HdorResult:
        f, bf, br = self.f, self.bf, self.br
        tables = Tables()
        for i, x in enumerate(self.sw):
            tables.lft[bf.guids[x]] = self.table[i]
            tables.names[bf.guids[x]] = bf.names[x]
        vl_need, path_sls, sl2vl, extra = self._sls(tables)
        if vl_need > self.vls:
            raise _Declined(f"the failures need {vl_need} VLs, the ports offer {self.vls}")
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

    def _sls(self, tables: Tables):
        """Walk every CA-to-CA pair: the VL of each hop (violations so far), the SL (first SL whose
        SL2VL entries agree), and the extra links against the fault-free route."""
        f, bf, br = self.f, self.bf, self.br
        dim = br.dim
        srcs = sorted((lid, c, p) for lid, (c, p) in self.owners.items()
                      if f.types[c] == CA and f.peer(c, p) is not None and f.port_lids[(c, p)][0] == lid)
        dsts = sorted(lid for lid, (c, p) in self.owners.items() if f.types[c] == CA and f.peer(c, p) is not None)
        entries: list[dict] = [{} for _ in range(MAX_SLS)]  # per SL: (guid, in, out) -> VL
        path_sls = PathSLs()
        path_sls.path = "hdor (Python reference)"
        most = 0
        extra = []
        for dlid in dsts:
            for slid, c, p in srcs:
                if self.owners[dlid] == (c, p):
                    continue
                bsrc = bf.by_guid(f.guids[c])
                if not self.aff[self.row[bf.peer(bsrc, p)[0]], dlid]:
                    path_sls[(slid, dlid)] = 0  # the fault-free route, intact: no violation, unchanged
                    continue
                hops, ln = self._walk(bsrc, p, dlid, tables)
                if hops is None:
                    continue  # not delivered: the verifier reports it
                v = 0
                need = []
                for x, pin, pout in hops:
                    if x in self.is_router:
                        a, b = bf.peer(x, pin)[0], bf.peer(x, pout)[0]
                        if a in dim and b in dim and dim[b] <= dim[a]:
                            v += 1
                    need.append(((bf.guids[x], pin, pout), v))
                most = max(most, v)
                sl = 0
                if v:
                    for sl in range(1, MAX_SLS):
                        if all(entries[sl].get(k, w) == w for k, w in need):
                            break
                    else:
                        raise _Declined(f"the failures need more than {MAX_SLS} SLs (pair LID {slid} -> {dlid})")
                    entries[sl].update(need)
                path_sls[(slid, dlid)] = sl
                hops0, ln0 = self._walk(bsrc, p, dlid, None)
                if hops0 != hops:
                    extra.append(ln - ln0)
        sl2vl = SL2VL()
        sl2vl.path = "hdor (Python reference)"
        for sl in range(1, MAX_SLS):
            for (g, pin, pout), w in entries[sl].items():
                if w:
                    row = sl2vl.setdefault(g, {}).setdefault((pin, pout), [0] * 16)
                    row[sl] = w
        for g in sl2vl:
            sl2vl.kind[g] = "Switch"
            for k in sl2vl[g]:
                sl2vl[g][k] = tuple(sl2vl[g][k])
        ex = {"detoured": len(extra), "max": max(extra, default=0),
              "mean": round(sum(extra) / len(extra), 3) if extra else 0.0}
        return most + 1, path_sls, sl2vl, ex

    def _walk(self, bsrc: int, port: int, dlid: int, tables: Tables | None):
        """(hops [(switch, in port, out port)], links) from a CA port to a LID, in base nodes, over
        the degraded tables (or the fault-free ones when tables is None); (None, None) if lost."""
        bf = self.bf
        x, pin = bf.peer(bsrc, port)
        hops, links = [], 1
        for _ in range(64):
            lft = tables.lft[bf.guids[x]] if tables is not None else self.br.tables.lft[bf.guids[x]]
            out = int(lft[dlid]) if dlid < len(lft) else NO_ROUTE
            if out in (NO_ROUTE, 0):
                return None, None
            hops.append((x, pin, out))
            nx = bf.peer(x, out)
            if nx is None or (tables is not None and self.alive(x, out) != nx):
                return None, None
            links += 1
            if bf.types[nx[0]] != SWITCH:
                return hops, links
            x, pin = nx
        return None, None
