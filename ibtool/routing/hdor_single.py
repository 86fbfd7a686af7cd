"""hdor's degraded pass for one failure at a time against a KNS loaded once: docs/hdor.md section 6,
the pass of hdor_faults, with everything no failure changes computed once.

    kns = Loaded(fabric, hdor.compute(fabric), vls=8)   # the complete KNS, with its LIDs
    one = kns.route(nodes={x}, links={li})               # a switch or router, a cable (base indices)
    one.table, one.changed, one.vls, one.sl2vl, one.path_sls, one.extra_hops   # or hdor's refusal (declined)

What-if routes every failure of a fabric in turn. A full degraded pass (hdor.compute(now,
baseline=...)) compares the fabric with the remembered KNS, lays out its groups, and follows every
(switch, LID) entry's fault-free route to find the affected ones; for one failure most of that is
the same every time. Loaded keeps it: the fault-free tables as one matrix, each entry's fault-free
length, exit and first dimension, the groups with their in-group routes. A failure then costs
what it touches: the groups it is in (laid out again), the affected entries (found from the ones
whose next hop failed, walking the fault-free routes backwards: the switches that forward to an
affected entry), the detours of those LIDs, and the walks of the pairs whose route changed.
The tables, VLs, SL2VL rows and path SLs are byte for byte those of the full pass on the fabric
as the SM sees it (tests/routing/test_hdor_single.py asserts it on every single failure of the
test KNS); what differs is the form: one matrix in Loaded's row order (a failed switch's row all
255), the path SLs of the detoured pairs only (every other pair keeps SL 0).

The fabric after a failure is the piece the subnet manager's node is in (`sm`: its base index;
what discovery from it finds, as `sim run --fail` discovers it); the rest is failed with it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ibtool.fabric import CA, Fabric
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.formats.pathrecord import PathSLs, PathSLTable
from ibtool.hops import Pieces, upstream
from ibtool.routing.hdor_faults import _Degraded
from ibtool.routing.hdor_result import HdorResult


@dataclass
class Single:
    """One failure routed. table: (rows, LIDs) uint8 in Loaded.rows order, a failed switch's row
    all 255; changed: (rows, LIDs) of the entries recomputed (the affected ones: every other entry
    of a surviving switch is the fault-free one, or 255 for a LID of a failed port)."""

    table: np.ndarray
    changed: tuple[np.ndarray, np.ndarray]
    vls: int
    sl2vl: dict
    path_sls: DetourSLs
    extra_hops: dict
    faults: dict
    dead_nodes: list[int]
    dead_links: list[int]


class DetourSLs:
    """The path SLs after one failure: SL 0 for every CA-to-CA pair (source base LID, destination
    LID) but the detoured ones, which `table` holds (delivered) or `undelivered` lists (no record).
    `lookup` answers as formats.pathrecord.PathSLTable does."""

    def __init__(self, table: PathSLTable, undelivered: list[tuple[int, int]], srcs: np.ndarray,
                 dsts: np.ndarray, own: list[tuple[int, int]]):
        self.table, self.undelivered, self.srcs, self.dsts, self.own = table, undelivered, srcs, dsts, own
        self.path = table.path

    def lookup(self, slid: np.ndarray, dlid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.table.lookup(slid, dlid)

    def expand(self) -> PathSLs:
        """The whole map, as the full pass gives it (for tests and files; millions of pairs)."""
        out = PathSLs()
        out.path = self.path
        out.update(((s, d), 0) for s in self.srcs.tolist() for d in self.dsts.tolist())
        for pair in self.own + self.undelivered:
            out.pop(pair, None)
        out.update(zip(zip((self.table.keys >> 16).tolist(), (self.table.keys & 0xFFFF).tolist()),
                       self.table.sls.tolist()))
        return out


class Loaded:
    """A complete KNS (routed as `br`, with its LIDs) ready for one failure at a time."""

    def __init__(self, bf: Fabric, br: HdorResult, vls: int = 8):
        t = _Degraded(bf, bf, br, vls)
        t.b2c = list(range(bf.num_nodes))
        t.owners = bf.lid_owners()
        t.faults = {"nodes": [], "links": []}
        t._prepare()  # nothing failed: the layout every failure starts from
        if len(t.group_sw) != len(br.groups):
            raise ValueError("a group of the complete KNS is not connected")
        self.t, self.bf, self.br, self.vls = t, bf, br, vls
        self.rows = t.sw  # base node of each table row
        R = len(t.sw)
        # the next switch row behind each (row, port) over the complete fabric: -1 for none
        self.nxt = np.full((R, 256), -1, dtype=np.int32)
        for r, x in enumerate(t.sw):
            for port, p, _ in t._work[x]:
                if t.rowa[p] >= 0:
                    self.nxt[r, port] = t.rowa[p]
        # switch rows adjacent over the complete fabric (CSR): where an entry's predecessors are
        self.adj_ptr, self.adj_idx = t.swg.indptr, t.swg.indices
        self.unrouted = np.argwhere((t.T0 == NO_ROUTE) & self._owned(set())[None, :])  # none in a KNS
        self.link_ends = (np.asarray(bf.link_a), np.asarray(bf.link_pa), np.asarray(bf.link_b),
                          np.asarray(bf.link_pb))
        self.pieces = Pieces(bf.num_nodes, bf.link_a, bf.link_b)

    def _owned(self, dead_lids: set[int]) -> np.ndarray:
        owned = np.zeros(self.t.NL, dtype=bool)
        owned[[lid for lid in self.t.owners if lid not in dead_lids]] = True
        return owned

    def piece(self, nodes: set[int], links: set[int], sm: int) -> tuple[set[int], set[int]]:
        """(nodes, links) failed, with what only they connected to the SM's node `sm`."""
        return self.pieces.cut_off(nodes, links, sm)

    def route(self, nodes=(), links=(), sm: int = 0) -> Single:
        """The degraded pass with `nodes` and `links` (base indices) failed; when hdor declines,
        its refusal (the _Declined kind of hdor_result)."""
        dead_n, dead_l = self.piece(set(nodes), set(links), sm)
        return _One(self, dead_n, dead_l).run()

    def tables(self, one: Single) -> Tables:
        """The tables of the surviving switches as hdor.compute returns them (tests, files)."""
        out = Tables()
        dead = set(one.dead_nodes)
        for r, x in enumerate(self.rows):
            if x not in dead:
                out.lft[self.bf.guids[x]] = one.table[r]
                out.names[self.bf.guids[x]] = self.bf.names[x]
        return out


class _One(_Degraded):
    """The full pass's steps, each from what Loaded laid out, patched for what failed."""

    def __init__(self, kns: Loaded, dead_nodes: set[int], dead_links: set[int]):
        super().__init__(kns.bf, kns.bf, kns.br, kns.vls)
        self.k, self.t = kns, kns.t
        self.dead_nodes, self.dead_links = dead_nodes, dead_links

    # ----------------------------------------------------------------- what failed
    def _match(self) -> bool:
        bf, t = self.bf, self.t
        self.b2c = [-1 if x in self.dead_nodes else x for x in range(bf.num_nodes)]
        a, pa, b, pb = self.k.link_ends
        dl = sorted(self.dead_links)
        # the LIDs of failed ports: a failed node's, and a CA port's whose cable failed
        self.dead_lids = set()
        for (x, port), (lid, lmc) in bf.port_lids.items():
            if x in self.dead_nodes:
                self.dead_lids.update(range(lid, lid + (1 << lmc)))
        for li in dl:
            for x, port in ((a[li], pa[li]), (b[li], pb[li])):
                if bf.types[x] == CA and (int(x), int(port)) in bf.port_lids:
                    lid, lmc = bf.port_lids[(int(x), int(port))]
                    self.dead_lids.update(range(lid, lid + (1 << lmc)))
        self.owners = {lid: o for lid, o in t.owners.items() if lid not in self.dead_lids}
        self.faults = {"nodes": [bf.names[x] for x in sorted(self.dead_nodes)],
                       "links": [f"{bf.names[a[li]]}[{pa[li]}]-{bf.names[b[li]]}[{pb[li]}]" for li in dl]}
        return bool(self.dead_nodes or self.dead_links)

    def _links(self):
        t = self.t
        a, pa, b, pb = self.k.link_ends
        self.boff, self.bpeer, self.bpport, self.b2c_arr = t.boff, t.bpeer, t.bpport, np.asarray(self.b2c)
        self.ok = t.ok.copy()
        dl = list(self.dead_links)
        self.ok[t.boff[a[dl]] + pa[dl]] = False
        self.ok[t.boff[b[dl]] + pb[dl]] = False
        for x in self.dead_nodes:
            self.ok[t.boff[x]:t.boff[x + 1]] = False
        self.touched = set(a[dl].tolist()) | set(b[dl].tolist()) | self.dead_nodes
        self._work = list(t._work)
        for x in self.touched:
            self._work[x] = [w for w in t._work[x] if self.ok[t.boff[x] + w[0]]]

    def _prepare(self) -> None:
        t = self.t
        self._links()
        self.sw, self.row, self.rowa, self.rowl, self.NL, self.T0 = t.sw, t.row, t.rowa, t.rowl, t.NL, t.T0
        self._structure()
        rs, ls = self._affected_entries()
        R, NL = t.T0.shape
        aff = np.zeros((R, NL), dtype=bool, order="F")  # read by LID (column) below
        aff[rs, ls] = True
        table = t.T0.copy()
        table[rs, ls] = NO_ROUTE
        table[:, sorted(x for x in self.dead_lids if x < NL)] = NO_ROUTE
        dead_rows = [t.rowa[x] for x in self.dead_nodes if t.rowa[x] >= 0]
        table[dead_rows] = NO_ROUTE
        self.table, self.aff, self.changed = table, aff, (rs, ls)
        self.len0, self.exit0, self.len0T, self.exit0T = t.len0, t.exit0, t.len0T, t.exit0T
        self.dim0, self.pdim = t.dim0, t.pdim
        self._dist_cache = {}

    def _structure(self):
        """The complete KNS's groups, with those a failure touches laid out again as the full pass
        lays them out (connected components of their surviving switches; a split group's first
        component keeps the group's index, the others come after every group, in order)."""
        t, bf, br = self.t, self.bf, self.br
        for name in ("is_router", "router_arr", "rank", "guid_rank"):
            setattr(self, name, getattr(t, name))
        touched = sorted({t.group_of[x] for x in self.touched if x in t.group_of})
        self.group_of, self.group_sw, self.group_dim = dict(t.group_of), list(t.group_sw), list(t.group_dim)
        self.members, self.gmem, self.gmem_l, self.gelig_l = list(t.members), list(t.gmem), list(t.gmem_l), \
            list(t.gelig_l)
        self.gdim_of, self.rgroups = dict(t.gdim_of), dict(t.rgroups)
        self._ig_cache = {k: v for k, v in t._ig_cache.items() if k[0] not in set(touched)} if touched \
            else dict(t._ig_cache)
        relaid = []
        for gi0 in touched:
            inside = {x for x in br.groups[gi0] if x not in self.dead_nodes}
            for x in br.groups[gi0]:
                self.group_of.pop(x, None)
            comps = []
            for x in br.groups[gi0]:
                if x in inside and x not in self.group_of:
                    comp, q = [x], deque([x])
                    self.group_of[x] = -1
                    while q:
                        u = q.popleft()
                        for _, p, _ in self._working(u):
                            if p in inside and p not in self.group_of:
                                self.group_of[p] = -1
                                comp.append(p)
                                q.append(p)
                    comps.append(sorted(comp, key=lambda y: bf.guids[y]))
            for j, comp in enumerate(comps or [[]]):
                gi = gi0 if j == 0 else len(self.group_sw)
                if j:
                    self.group_sw.append(comp)
                    self.group_dim.append(br.group_dim[gi0])
                    for lst in (self.members, self.gmem, self.gmem_l, self.gelig_l):
                        lst.append(None)
                else:
                    self.group_sw[gi] = comp
                for x in comp:
                    self.group_of[x] = gi
                relaid.append(gi)
        if not relaid:
            self._switch_rows()
            return
        # members of the groups laid out again, and the groups of their routers (by dimension,
        # ascending index: the order Dijkstra visits them)
        was = set().union(*(t.members[gi] for gi in touched))
        for gi in relaid:
            m = set()
            for x in self.group_sw[gi]:
                for _, p, _ in self._working(x):
                    if p in self.is_router:
                        m.add(p)
            self.members[gi] = m
        gone = set(touched)
        for r in was:
            groups = {}
            for d in range(br.n):
                keep = [g for g in t.gdim_of.get((r, d), ()) if g not in gone]
                keep += [g for g in relaid if r in self.members[g] and self.group_dim[g] == d]
                self.gdim_of.pop((r, d), None)
                if keep:
                    self.gdim_of[(r, d)] = groups[d] = sorted(keep)
            self.rgroups.pop(r, None)
            if groups:
                self.rgroups[r] = [g for d in sorted(groups) for g in groups[d]]
        for gi in relaid:
            self.gmem[gi] = np.asarray(sorted(self.members[gi], key=lambda y: bf.guids[y]), dtype=np.int64)
            self.gmem_l[gi] = self.gmem[gi].tolist()
            self.gelig_l[gi] = [bool(self._in_group(gi, M)[0]) for M in self.gmem_l[gi]]
        self._switch_rows()

    def _switch_rows(self):
        """The working switch links: the kept ones, the rows of what failed laid out anew."""
        self.sw_adj = list(self.t.sw_adj)
        self._switch_links([r for r in (self.t.rowa[x] for x in self.touched) if r >= 0])

    def _affected_entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, LIDs) of the affected entries: those whose next hop failed (the seeds), and every
        entry whose fault-free route reaches one — found backwards, from an affected entry (r, L)
        to the neighbours of r whose fault-free next hop for L is r."""
        t, k = self.t, self.k
        owned = k._owned(self.dead_lids)
        alive = np.ones(len(t.sw), dtype=bool)
        alive[[t.rowa[x] for x in self.dead_nodes if t.rowa[x] >= 0]] = False
        rs, ls = [], []
        for x in self.touched:
            r = t.rowa[x]
            if r < 0 or not alive[r]:
                continue
            lo = int(t.boff[x])
            for port in range(1, self.bf.nports[x] + 1):
                if t.bpeer[lo + port] >= 0 and not self.ok[lo + port]:
                    hit = np.flatnonzero((t.T0[r] == port) & owned)
                    rs.append(np.full(len(hit), r, dtype=np.int64))
                    ls.append(hit)
        if len(k.unrouted):
            u = k.unrouted[alive[k.unrouted[:, 0]] & owned[k.unrouted[:, 1]]]
            rs.append(u[:, 0])
            ls.append(u[:, 1])
        fr = np.concatenate(rs) if rs else np.zeros(0, dtype=np.int64)
        fl = np.concatenate(ls) if ls else np.zeros(0, dtype=np.int64)
        return upstream(t.T0, k.nxt, k.adj_ptr, k.adj_idx, alive, fr, fl)

    # ----------------------------------------------------------------- result
    def _path_sls(self, path_sls, s_lid, d_lid, has_self, self_of, si, di, ok, sl):
        table = PathSLTable(s_lid[si[ok]], d_lid[di[ok]], sl[ok], "hdor (Python reference)")
        undelivered = list(zip(s_lid[si[~ok]].tolist(), d_lid[di[~ok]].tolist()))
        own = list(zip(s_lid[self_of[has_self]].tolist(), d_lid[np.flatnonzero(has_self)].tolist()))
        return DetourSLs(table, undelivered, s_lid, d_lid, own)

    def _result(self) -> Single:
        vl_need, path_sls, sl2vl, extra = self._sls()
        if not isinstance(path_sls, DetourSLs):  # no CA pairs at all
            path_sls = DetourSLs(PathSLTable.of(path_sls), [], np.zeros(0, np.int64), np.zeros(0, np.int64), [])
        return Single(self.table, self.changed, vl_need, sl2vl, path_sls, extra, self.faults,
                      sorted(self.dead_nodes), sorted(self.dead_links))
