"""hdor on a complete KNS, docs/hdor.md sections 1-4: the routers, switches and groups identified,
dimensions and coordinates assigned, every switch's table filled (`complete`). hdor.compute calls
it first; the KNS from elsewhere (hdor_kns, hdor_first_sight) reuses its steps on a fabric with phantoms.

How the tables are filled fast: a switch's candidate set for a LID depends only on a small *key*
of the LID's target (a router: the lowest dimension e in which the target differs and the target's
e-coordinate; an indirect switch: the coordinate, in its dimension, of the member it sends to —
the target's own, or for a switch of another group of that dimension the member chosen by the
in-group distances of section 4), plus a few
fix-ups (the switch's own LIDs, its HCAs, switches of its own groups). So each switch gets a small
lookup table key -> candidate set, the keys of all LIDs are computed with numpy for blocks of
switches at once, and the spreading rule (the j-th LID with candidate set C takes C[j mod |C|])
becomes a cumulative count along the LID axis for each multi-port set.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric, switch_graph
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.hops import bfs_hops
from ibtool.routing.hdor_result import HdorResult, _describe, not_kns

_CELLS = 1 << 22  # table cells computed per block of switches (bounds temporary memory)


def _mode(values: list[int]) -> int:
    """The most common value; ties go to the value seen first."""
    return Counter(values).most_common(1)[0][0]


class _UnionFind:
    def __init__(self, n: int):
        self.p = list(range(n))

    def find(self, x: int) -> int:
        p = self.p
        while p[x] != x:
            p[x] = p[p[x]]
            x = p[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.p[max(ra, rb)] = min(ra, rb)


@dataclass
class _Group:
    switches: list[int]  # nodes, by GUID (switches[0] is the key)
    members: list[int]  # routers, by GUID
    local: dict[int, int]  # switch node -> index in `switches`
    dim: int = -1
    coords: tuple = ()  # n entries, index = dimension, -1 at `dim`
    by_coord: list[int] = field(default_factory=list)  # member router with coordinate v in `dim`
    hops: np.ndarray | None = None  # switch-to-switch hops inside the group (local indices)
    attach: dict[int, list[int]] = field(default_factory=dict)  # member -> local switches linked to it
    _dist: dict[int, np.ndarray] = field(default_factory=dict)

    def dist(self, member: int) -> np.ndarray:
        """dist(s, M) for every local switch s: 1 + fewest hops from s to a switch linked to M."""
        d = self._dist.get(member)
        if d is None:
            d = 1 + self.hops[:, self.attach[member]].min(axis=1)
            self._dist[member] = d
        return d


def complete(fabric: Fabric) -> HdorResult:
    """Sections 1-4 on a complete KNS (raises NotFamily otherwise)."""
    topo = _Topology(fabric)
    topo.identify()
    topo.dimensions()
    topo.coordinates()
    return topo.route()


class _Topology:
    def __init__(self, f: Fabric):
        self.f = f
        P = f.ports()
        self.types = np.asarray(f.types, dtype=np.int8)
        nports = np.asarray(f.nports, dtype=np.int64)
        N = f.num_nodes
        self.N = N
        node_of = np.repeat(np.arange(N, dtype=np.int64), nports + 1)
        slot = np.arange(int(P.offset[-1]), dtype=np.int64)
        linked = P.peer >= 0
        self.s_node = node_of[linked]
        self.s_port = (slot - P.offset[node_of])[linked]
        self.s_peer = P.peer[linked].astype(np.int64)
        self.s_peer_port = P.peer_port[linked].astype(np.int64)
        self.guid = np.asarray(f.guids, dtype=np.uint64)

    def nbrs(self, node: int) -> list[tuple[int, int]]:
        """(port, peer node) of every linked port of `node`, by port."""
        lo, hi = self._nb_off[node], self._nb_off[node + 1]
        return list(zip(self._nb_port[lo:hi], self._nb_peer[lo:hi]))

    # ----------------------------------------------------------------- 1. identification
    def structure(self):
        """Routers, indirect switches, groups and their members; check 1."""
        f, types = self.f, self.types
        sn, sp = self.s_node, self.s_peer
        # slots are ordered by node then port already (CSR order)
        self._nb_off = np.searchsorted(sn, np.arange(self.N + 1)).tolist()
        self._nb_port = self.s_port.tolist()
        self._nb_peer = sp.tolist()

        is_sw = types == SWITCH
        is_ca = types == CA
        for i in np.flatnonzero(~is_sw & ~is_ca)[:1]:
            raise not_kns(f"node {f.guids[int(i)]:#018x} '{f.names[int(i)]}' is neither a switch nor a CA "
                         f"(an InfiniBand router)")
        router = np.zeros(self.N, dtype=bool)
        router[sn[is_sw[sn] & is_ca[sp]]] = True
        self.is_router = router
        self.is_indirect = is_sw & ~router
        role = np.where(is_ca, "hca", np.where(router, "router", "switch"))
        self.role = role.tolist()

        linked_ca = np.zeros(self.N, dtype=bool)
        linked_ca[sn[is_ca[sn]]] = True
        for i in np.flatnonzero(is_ca & ~linked_ca)[:1]:
            raise not_kns(f"{_describe(f, int(i))} has no linked port")
        bad = is_ca[sn] & is_ca[sp]
        for j in np.flatnonzero(bad)[:1]:
            raise not_kns(f"{_describe(f, int(sn[j]))} port {int(self.s_port[j])} is cabled to another HCA "
                         f"{_describe(f, int(sp[j]))}")
        by_guid = lambda nodes: sorted((int(x) for x in nodes), key=lambda i: f.guids[i])  # noqa: E731
        self.routers = by_guid(np.flatnonzero(router))
        self.indirect = by_guid(np.flatnonzero(self.is_indirect))
        self.hcas = by_guid(np.flatnonzero(is_ca))
        if not self.routers:
            raise not_kns("no router (no switch has an HCA linked to it)")

        # groups: connected components of indirect switches
        uf = _UnionFind(self.N)
        ind = self.is_indirect
        e = ind[sn] & ind[sp]
        for a, b in zip(sn[e].tolist(), sp[e].tolist()):
            uf.union(a, b)
        comps: dict[int, list[int]] = {}
        for x in self.indirect:  # GUID order, so each list is by GUID and [0] is the key
            comps.setdefault(uf.find(x), []).append(x)
        glist = sorted(comps.values(), key=lambda sw: f.guids[sw[0]])
        self.group_of = np.full(self.N, -1, dtype=np.int64)
        for gi, sw in enumerate(glist):
            self.group_of[sw] = gi
        # members: routers linked to a switch of the group
        rl = router[sn] & ind[sp]
        pairs = sorted(set(zip(sn[rl].tolist(), self.group_of[sp[rl]].tolist())))
        members: list[list[int]] = [[] for _ in glist]
        self.groups_of: dict[int, list[int]] = {r: [] for r in self.routers}
        for r, g in pairs:
            members[g].append(r)
            self.groups_of[r].append(g)
        self.groups = [_Group(sw, sorted(m, key=lambda i: f.guids[i]), {s: j for j, s in enumerate(sw)})
                       for sw, m in zip(glist, members)]

    def identify(self):
        """Roles, groups, members (structure) and the counts of checks 2-3."""
        self.structure()
        self.counts()

    def counts(self):
        f = self.f
        counts = [len(self.groups_of[r]) for r in self.routers]
        n = _mode(counts)
        for r, c in zip(self.routers, counts):
            if c != n:
                raise not_kns(f"{_describe(f, r, 'router')} is in {c} group(s), others in {n}")
        if n == 0:
            raise not_kns(f"{_describe(f, self.routers[0], 'router')} is linked to no indirect switch")
        sizes = [len(g.members) for g in self.groups]
        k = _mode(sizes)
        for g, c in zip(self.groups, sizes):
            if c != k:
                raise not_kns(f"the group of {_describe(f, g.switches[0])} has {c} member router(s), others {k}")
        if k < 2:
            raise not_kns(f"the group of {_describe(f, self.groups[0].switches[0])} has {k} member router; "
                         f"a KNS needs k >= 2")
        if len(self.routers) != k ** n:
            raise not_kns(f"groups of {k} routers, {n} per router, need k^n = {k ** n} routers; found "
                         f"{len(self.routers)}")
        self.k, self.n = k, n

    # ----------------------------------------------------------------- 2. dimensions
    def dimensions(self):
        f, G, n = self.f, self.groups, self.n
        gof = self.groups_of
        memset = [set(g.members) for g in G]
        r0 = self.routers[0]
        for d, g in enumerate(sorted(gof[r0])):  # group ids are in key order
            G[g].dim = d
        visited = {r0}
        queue = deque([r0])
        others_cache: dict[tuple[int, int], set] = {}
        while queue:
            r = queue.popleft()
            by_dim = sorted((G[g].dim, g) for g in gof[r])
            for d, S in by_dim:
                for x in G[S].members:
                    if x in visited:
                        continue
                    for e, T in by_dim:
                        if T == S:
                            continue
                        y = next(m for m in G[T].members if m != r)
                        u = others_cache.get((y, T))
                        if u is None:
                            u = set().union(*(memset[Y] for Y in gof[y] if Y != T))
                            others_cache[(y, T)] = u
                        cands = [X for X in gof[x] if X != S and not memset[X].isdisjoint(u)]
                        if len(cands) != 1:
                            raise not_kns(f"inconsistent dimension at {_describe(f, x, 'router')}: "
                                         f"{len(cands)} candidate groups for dimension {e}")
                        X = cands[0]
                        if G[X].dim not in (-1, e):
                            raise not_kns(f"inconsistent dimension at {_describe(f, x, 'router')}: the group "
                                         f"of {_describe(f, G[X].switches[0])} is dimension {G[X].dim}, "
                                         f"here it would be {e}")
                        G[X].dim = e
                    visited.add(x)
                    queue.append(x)
        for r in self.routers:
            if r not in visited:
                raise not_kns(f"{_describe(f, r, 'router')} is not reachable from {_describe(f, r0, 'router')} "
                             f"through groups")
            dims = sorted(G[g].dim for g in gof[r])
            if dims != list(range(n)):
                raise not_kns(f"inconsistent dimension at {_describe(f, r, 'router')}: its groups have "
                             f"dimensions {dims}")
        for g in G:
            if g.dim < 0:
                raise not_kns(f"the group of {_describe(f, g.switches[0])} has no dimension")
        self.gdim = {r: {G[g].dim: g for g in gof[r]} for r in self.routers}

    # ----------------------------------------------------------------- 3. coordinates
    def coordinates(self):
        f, G, k, n = self.f, self.groups, self.k, self.n
        r0 = self.routers[0]
        ridx = {r: i for i, r in enumerate(self.routers)}
        RC = np.full((len(self.routers), n), -1, dtype=np.int64)
        for d in range(n):
            uf = _UnionFind(len(self.routers))
            for g in G:
                if g.dim != d:
                    a = ridx[g.members[0]]
                    for m in g.members[1:]:
                        uf.union(a, ridx[m])
            roots = {uf.find(i) for i in range(len(self.routers))}
            if len(roots) != k:
                raise not_kns(f"dimension {d} has {len(roots)} hyperplanes, expected k = {k}")
            pos: dict[int, int] = {}
            for p, m in enumerate(G[self.gdim[r0][d]].members):
                root = uf.find(ridx[m])
                if root in pos:
                    raise not_kns(f"dimension {d}: {_describe(f, m, 'router')} shares a hyperplane with another "
                                 f"router of {_describe(f, r0, 'router')}'s dimension-{d} group")
                pos[root] = p
            for i in range(len(self.routers)):
                RC[i, d] = pos[uf.find(i)]
        self._lines(RC, ridx)

    def given(self, coords: dict[int, tuple], dims: dict[int, int]):
        """Sections 2-3 replaced by given coordinates (router -> as written, most significant first)
        and dimensions (indirect switch -> d): a description's, checked to be a KNS labelling."""
        f, G, n = self.f, self.groups, self.n
        for g in G:
            ds = {dims.get(s) for s in g.switches}
            if None in ds or len(ds) != 1:
                raise not_kns(f"the switches of the group of {_describe(f, g.switches[0])} do not have one "
                             f"dimension of the description")
            g.dim = ds.pop()
        self.gdim = {}
        for r in self.routers:
            by = {}
            for gi in self.groups_of[r]:
                if G[gi].dim in by:
                    raise not_kns(f"{_describe(f, r, 'router')} is in two groups of dimension {G[gi].dim}")
                by[G[gi].dim] = gi
            self.gdim[r] = by
        ridx = {r: i for i, r in enumerate(self.routers)}
        RC = np.full((len(self.routers), n), -1, dtype=np.int64)
        for r, i in ridx.items():
            if r not in coords:
                raise not_kns(f"{_describe(f, r, 'router')} has no coordinates in the description")
            RC[i] = coords[r][::-1]
        self._lines(RC, ridx)

    def _lines(self, RC, ridx):
        """Routers at distinct points of [0,k)^n; each group's members one line of its dimension."""
        f, G, k, n = self.f, self.groups, self.k, self.n
        code = RC @ (k ** np.arange(n, dtype=np.int64))
        if len(np.unique(code)) != len(self.routers):
            _, first, cnt = np.unique(code, return_index=True, return_counts=True)
            i = int(first[np.flatnonzero(cnt > 1)[0]])
            raise not_kns(f"two routers share the coordinates of {_describe(f, self.routers[i], 'router')}")
        self.RC, self.ridx = RC, ridx
        for g in G:
            mi = [ridx[m] for m in g.members]
            rest = np.delete(RC[mi], g.dim, axis=1)
            if (rest != rest[0]).any():
                raise not_kns(f"the members of the group of {_describe(f, g.switches[0])} do not agree on "
                             f"their coordinates outside dimension {g.dim}")
            vals = RC[mi, g.dim]
            if sorted(vals.tolist()) != list(range(k)):
                raise not_kns(f"the members of the group of {_describe(f, g.switches[0])} do not cover "
                             f"coordinates 0..{k - 1} in dimension {g.dim}")
            c = RC[mi[0]].copy()
            c[g.dim] = -1
            g.coords = tuple(c.tolist())
            g.by_coord = [0] * k
            for m, v in zip(g.members, vals.tolist()):
                g.by_coord[v] = m

    # ----------------------------------------------------------------- 4. tables
    def _group_distances(self):
        # the groups are the components of the indirect switches: one graph of them all, each
        # group a block of consecutive vertices (its switches in local order) with no link out
        sg = switch_graph(self.f, [s for g in self.groups for s in g.switches])
        lo = 0
        for g in self.groups:
            for j, s in enumerate(g.switches):
                for port, p in self.nbrs(s):
                    if self.is_router[p]:
                        lst = g.attach.setdefault(p, [])
                        if not lst or lst[-1] != j:
                            lst.append(j)
            hi = lo + len(g.switches)
            a, b = sg.indptr[lo], sg.indptr[hi]
            g.hops = bfs_hops(sg.indptr[lo:hi + 1] - a, sg.indices[a:b] - lo).astype(np.int64)
            lo = hi

    def _member_distances(self) -> np.ndarray:
        """dvec[X, j] = dist(X, member with coordinate j of X's group) for every indirect switch X."""
        dvec = np.zeros((self.N, self.k), dtype=np.int64)
        for g in self.groups:
            dvec[g.switches] = np.stack([g.dist(m) for m in g.by_coord], axis=1)
        return dvec

    def _stages(self) -> int:
        """1 + max over groups of min over switches of the hops to the farthest router-linked switch."""
        s = 1
        for g in self.groups:
            linked = sorted({j for lst in g.attach.values() for j in lst})
            s = max(s, 1 + int(g.hops[:, linked].max(axis=1).min()))
        return s

    def route(self) -> HdorResult:
        f, G, k, n = self.f, self.groups, self.k, self.n
        self._group_distances()
        owners = f.lid_owners()
        if not owners:
            raise InputError("the fabric has no LIDs (a plan, not a discovered fabric? use the ibnetdiscover.out "
                             "of `ibtool sim run`, or ibtool.routing.lids.assign_lids)")
        NL = max(owners) + 1
        # --- what each LID targets
        lid_arr = np.fromiter(owners.keys(), dtype=np.int64, count=len(owners))
        own = np.asarray(list(owners.values()), dtype=np.int64).reshape(-1, 2)
        onode, oport = own[:, 0], own[:, 1]
        otype = self.types[onode]
        TC = np.full((NL, n), -1, dtype=np.int32)  # target coordinates (dimension index), -1 masked
        T = np.full(NL, -1, dtype=np.int64)  # target router node (HCA/router targets)
        fin = np.zeros(NL, dtype=np.int64)  # port at T
        swlid = np.full(NL, -1, dtype=np.int64)  # indirect switch node (switch targets)
        ca = otype == CA
        if ca.any():
            # the router port linked to each HCA port
            key = self.s_node * 256 + self.s_port
            order = np.argsort(key)
            q = onode[ca] * 256 + oport[ca]
            pos = order[np.minimum(np.searchsorted(key, q, sorter=order), len(key) - 1)]
            ok = key[pos] == q  # a LID on an unlinked HCA port has no route
            T[lid_arr[ca][ok]] = self.s_peer[pos[ok]]
            fin[lid_arr[ca][ok]] = self.s_peer_port[pos[ok]]
        rt = self.is_router[onode]
        T[lid_arr[rt]] = onode[rt]
        ind = self.is_indirect[onode]
        swlid[lid_arr[ind]] = onode[ind]
        ridx_arr = np.full(self.N, -1, dtype=np.int64)
        ridx_arr[self.routers] = np.arange(len(self.routers))
        has_t = T >= 0
        TC[has_t] = self.RC[ridx_arr[T[has_t]]]
        gcoords = np.asarray([g.coords for g in G], dtype=np.int64).reshape(len(G), n)
        is_sw = swlid >= 0
        TC[is_sw] = gcoords[self.group_of[swlid[is_sw]]]
        lids_of_switch: dict[int, list[int]] = {}
        for lid in np.flatnonzero(is_sw).tolist():
            lids_of_switch.setdefault(int(swlid[lid]), []).append(lid)
        lids_of_router: dict[int, list[int]] = {}
        for lid in np.flatnonzero(has_t).tolist():
            lids_of_router.setdefault(int(T[lid]), []).append(lid)
        self.fin = fin

        switches = self.routers + self.indirect  # table rows
        table = np.full((len(switches), NL), NO_ROUTE, dtype=np.uint8)
        # routers: key = e*k + t_e for the lowest dimension e where the target differs
        R = len(self.routers)
        block = max(1, _CELLS // max(NL, 1))
        for lo in range(0, R, block):
            rows = self.routers[lo:lo + block]
            C = self.RC[lo:lo + block]
            key = np.full((len(rows), NL), -1, dtype=np.int32)
            differ = np.empty((len(rows), NL), dtype=bool)
            for e in range(n - 1, -1, -1):  # the lowest differing dimension is written last
                te = TC[:, e]
                np.not_equal(te[None, :], C[:, e:e + 1], out=differ)
                differ &= (te >= 0)[None, :]
                np.copyto(key, (e * k + te)[None, :], where=differ)
            plans = [self._router_plan(r, lids_of_switch, lids_of_router) for r in rows]
            table[lo:lo + len(rows)] = _fill(key, plans)
        # indirect switches: key = the coordinate, in the switch's dimension, of the member the packet
        # heads for: the target's own coordinate; for a switch of another group of the same
        # dimension, the j minimising dist(W, member j) + dist(D, member j of D's group)
        keyd = np.where(TC >= 0, TC, 0).astype(np.int32)
        keyd[(~has_t) & (~is_sw)] = -1
        keyd = np.ascontiguousarray(keyd.T)  # (n, NL)
        dvec = self._member_distances()
        same_dim = []  # per dimension: switch-target LIDs of that dimension, their distinct dist vectors
        sw_dim = np.full(NL, -1, dtype=np.int64)
        sw_dim[is_sw] = np.asarray([G[g].dim for g in range(len(G))], dtype=np.int64)[self.group_of[swlid[is_sw]]]
        for e in range(n):
            lids_e = np.flatnonzero(sw_dim == e)
            if not len(lids_e):
                same_dim.append((lids_e, None, None))
                continue
            uniq, inv = np.unique(dvec[swlid[lids_e]], axis=0, return_inverse=True)
            same_dim.append((lids_e, uniq, inv.reshape(-1)))
        for lo in range(0, len(self.indirect), block):
            rows = self.indirect[lo:lo + block]
            dims = [G[self.group_of[w]].dim for w in rows]
            key = keyd[dims]
            for i, (w, e) in enumerate(zip(rows, dims)):
                lids_e, uniq, inv = same_dim[e]
                if len(lids_e):
                    key[i, lids_e] = np.argmin(uniq + dvec[w][None, :], axis=1)[inv]  # lowest j on ties
            plans = [self._switch_plan(w, lids_of_switch) for w in rows]
            table[R + lo:R + lo + len(rows)] = _fill(key, plans)

        tables = Tables()
        for i, w in enumerate(switches):
            g = f.guids[w]
            tables.lft[g] = table[i]
            tables.names[g] = f.names[w]
        # spread over parallel router-group links
        spread: dict[tuple[int, int], dict[int, int]] = {}
        for i, r in enumerate(self.routers):
            for d in range(n):
                ports = [p for p, x in self.nbrs(r) if self.group_of[x] == self.gdim[r][d]]
                if len(ports) >= 2:
                    cnt = np.bincount(table[i], minlength=256)
                    spread[(r, d)] = {p: int(cnt[p]) for p in ports}
        coords: dict[int, tuple] = {}
        for i, r in enumerate(self.routers):
            coords[r] = tuple(self.RC[i, ::-1].tolist())
        dim: dict[int, int] = {}
        for g in G:
            gc = tuple(c for c in reversed(g.coords) if c >= 0)
            for s in g.switches:
                dim[s] = g.dim
                coords[s] = gc
        for h in self.hcas:
            nb = self.nbrs(h)
            coords[h] = coords[nb[0][1]]
        return HdorResult(k=k, n=n, s=self._stages(), role=self.role, dim=dim, coords=coords, tables=tables,
                          spread=spread, routers=self.routers, switches=self.indirect, hcas=self.hcas,
                          groups=[g.switches for g in G], group_dim=[g.dim for g in G], lids=len(owners))

    def _router_plan(self, W: int, lids_of_switch, lids_of_router) -> "_Plan":
        G, k, n = self.groups, self.k, self.n
        plan = _Plan(n * k)
        into: dict[int, list[tuple[int, int]]] = {}
        for port, p in self.nbrs(W):
            g = int(self.group_of[p])
            if g >= 0:
                into.setdefault(g, []).append((port, G[g].local[p]))
        for e in range(n):
            gi = self.gdim[W][e]
            g = G[gi]
            links = into[gi]
            same = all(s == links[0][1] for _, s in links)
            if same:
                one = plan.set_of(tuple(p for p, _ in links))
            for v in range(k):
                M = g.by_coord[v]
                if M == W:
                    continue
                plan.lut[e * k + v] = one if same else plan.set_of(_best(links, g.dist(M)))
            for D in g.switches:
                lids = lids_of_switch.get(D)
                if lids:
                    sid = one if same else plan.set_of(_best(links, g.hops[:, g.local[D]]))
                    plan.fix(lids, sid)
        for lid in lids_of_router.get(W, ()):
            plan.fin_lids.append(lid)
            plan.fin_ports.append(int(self.fin[lid]))
        return plan

    def _switch_plan(self, W: int, lids_of_switch) -> "_Plan":
        G, k = self.groups, self.k
        gi = int(self.group_of[W])
        g = G[gi]
        w = g.local[W]
        plan = _Plan(k)
        to_member: dict[int, list[int]] = {}
        to_switch: list[tuple[int, int]] = []
        for port, p in self.nbrs(W):
            if self.group_of[p] == gi:
                to_switch.append((port, g.local[p]))
            elif self.is_router[p]:
                to_member.setdefault(p, []).append(port)
        for v in range(k):
            M = g.by_coord[v]
            direct = to_member.get(M)
            if direct:
                plan.lut[v] = plan.set_of(tuple(direct))
            else:
                dm = g.dist(M)
                plan.lut[v] = plan.set_of(tuple(p for p, s in to_switch if dm[s] == dm[w] - 1))
        for D in g.switches:
            lids = lids_of_switch.get(D)
            if not lids:
                continue
            if D == W:
                plan.fix(lids, plan.set_of((0,)))
            else:
                h = g.hops[:, g.local[D]]
                plan.fix(lids, plan.set_of(tuple(p for p, s in to_switch if h[s] == h[w] - 1)))
        return plan


def _best(links: list[tuple[int, int]], dist: np.ndarray) -> tuple:
    """Ports (sorted) of `links` (port, local switch) whose switch is nearest by `dist`."""
    best = min(int(dist[s]) for _, s in links)
    return tuple(sorted(p for p, s in links if dist[s] == best))


class _Plan:
    """One switch's candidate sets: key -> set, fix-ups (LIDs -> set), direct ports (LIDs -> port)."""

    def __init__(self, nkeys: int):
        self.sets: list[tuple] = []
        self._ids: dict[tuple, int] = {}
        self.lut = np.full(nkeys, -1, dtype=np.int64)
        self.fix_lids: list[int] = []
        self.fix_sets: list[int] = []
        self.fin_lids: list[int] = []
        self.fin_ports: list[int] = []

    def set_of(self, ports: tuple) -> int:
        if not ports:
            raise AssertionError("empty candidate set")  # the checks of section 1 exclude this
        ports = tuple(sorted(ports))
        i = self._ids.get(ports)
        if i is None:
            i = self._ids[ports] = len(self.sets)
            self.sets.append(ports)
        return i

    def fix(self, lids: list[int], sid: int):
        self.fix_lids += lids
        self.fix_sets += [sid] * len(lids)


def _fill(key: np.ndarray, plans: list[_Plan]) -> np.ndarray:
    """Ports for a block of switches: key (rows x LIDs, -1 = none) -> candidate set -> spread port."""
    b, NL = key.shape
    K = max(len(p.lut) for p in plans)
    lut = np.full((b, K + 1), -1, dtype=np.int64)  # column K: key -1
    for i, p in enumerate(plans):
        lut[i, :len(p.lut)] = p.lut
    key = np.where(key >= 0, key, K)
    if all(len(c) == 1 for p in plans for c in p.sets):  # no spreading: key -> port directly
        S = max(len(p.sets) for p in plans)
        first = np.full((b, S + 1), NO_ROUTE, dtype=np.uint8)
        for i, p in enumerate(plans):
            first[i, :len(p.sets)] = [c[0] for c in p.sets]
        port_of_key = np.take_along_axis(first, np.where(lut >= 0, lut, S), axis=1)
        out = np.take_along_axis(port_of_key, key, axis=1)
        for i, p in enumerate(plans):
            if p.fix_lids:
                out[i, p.fix_lids] = first[i, p.fix_sets]
            if p.fin_lids:
                out[i, p.fin_lids] = p.fin_ports
        return out
    ls = np.take_along_axis(lut, key, axis=1)
    for i, p in enumerate(plans):
        if p.fix_lids:
            ls[i, p.fix_lids] = p.fix_sets
    S = max(len(p.sets) for p in plans)
    first = np.full((b, S + 1), NO_ROUTE, dtype=np.uint8)  # column S: no set
    for i, p in enumerate(plans):
        first[i, :len(p.sets)] = [c[0] for c in p.sets]
    out = np.take_along_axis(first, np.where(ls >= 0, ls, S), axis=1)
    # spreading: the j-th LID (ascending) with multi-port set C at a switch takes C[j mod |C|]
    multi: dict[int, list[int]] = {}
    for i, p in enumerate(plans):
        for sid, c in enumerate(p.sets):
            if len(c) > 1:
                multi.setdefault(sid, []).append(i)
    for sid, rows in multi.items():
        rows_a = np.asarray(rows)
        r_idx, lids = np.nonzero(ls[rows_a] == sid)  # row-major: ascending LIDs within each row
        if not len(r_idx):
            continue
        count = np.bincount(r_idx, minlength=len(rows))
        start = np.concatenate(([0], np.cumsum(count)[:-1]))
        j = np.arange(len(r_idx)) - start[r_idx]  # j-th LID with this set at this switch
        width = max(len(plans[i].sets[sid]) for i in rows)
        ptab = np.zeros((len(rows), width), dtype=np.uint8)
        size = np.zeros(len(rows), dtype=np.int64)
        for r, i in enumerate(rows):
            c = plans[i].sets[sid]
            ptab[r, :len(c)] = c
            size[r] = len(c)
        out[rows_a[r_idx], lids] = ptab[r_idx, j % size[r_idx]]
    for i, p in enumerate(plans):
        if p.fin_lids:
            out[i, p.fin_lids] = p.fin_ports
    return out
