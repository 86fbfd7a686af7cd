"""The fault-free fabric, measured once by verify's own checks: what every failure's evaluation
starts from and patches.

    base = Base(fabric, tables, sl2vl, path_sls)     # a fabric with LIDs and its forwarding tables
    base.tally, base.loads       # verify's delivery tally and link loads over every (source port, LID) pair
    base.edges, base.counts      # the (channel, VL) dependencies of every HCA-to-HCA route, with how
                                 # many routes make each
    base.perm_loads              # each random permutation's load per channel (verify's balance check)

Everything is in the fault-free fabric's numbering: channels are its egress slots (verify.bound),
table rows its switches. A failure's evaluation (ibtool.whatif.evaluate) retraces only the routes
that changed and adds the difference; the sums are those of the whole checks because every
quantity here is a sum over routes.
"""

from __future__ import annotations

import time

import numpy as np

from ibtool.fabric import SWITCH
from ibtool.verify.balance import Loads, permutation_flows
from ibtool.verify.bound import K_SWITCH, Bound, bind, port_tables
from ibtool.verify.deadlock import vl_map
from ibtool.verify.delivery import PAIRS_PER_CHUNK, Tally, walk
from ibtool.verify.trace import DELIVERED, VLMap, trace

NV = 16  # VLs in a dependency's key: (channel * NV + VL), whatever the fabric's SL2VL uses


def sls_of(sls, S: np.ndarray, L: np.ndarray) -> np.ndarray:
    """The SL of each pair: the path SLs' (a PathSLTable or what has its `lookup`), 0 without them."""
    if sls is None:
        return np.zeros(len(S), dtype=np.int8)
    return sls.lookup(S, L)[0]


class Routes:
    """HCA-to-HCA routes traced with their VLs: status, links after the source's switch, the
    channel of each hop (pairs x hops, -1 past the end), and the (channel, VL) dependencies they
    make (one key per dependency a route makes: counted with multiplicity)."""

    def __init__(self, b: Bound, vl: VLMap, S: np.ndarray, L: np.ndarray, sl: np.ndarray, paths: bool = True):
        nslots = int(b.offset[-1])
        nch = nslots * NV
        keys, cols = [], []

        def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
            dep = gin >= 0
            if dep.any():
                keys.append((gin[dep].astype(np.int64) * NV + vin[dep]) * nch + gslot[dep].astype(np.int64) * NV
                            + vout[dep])
            if paths:
                cols.append((gi, gslot))

        self.status, self.hops, _, _ = trace(b, b.att_sw[S], L, hop_cb=on_hop, vl=vl, sl=sl) if len(S) else (
            np.zeros(0, np.int8), np.zeros(0, np.int16), None, None)
        self.keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
        if paths:
            self.path = np.full((len(S), len(cols)), -1, dtype=np.int64)
            for h, (gi, gslot) in enumerate(cols):
                self.path[gi, h] = gslot


def merge_counts(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys and their summed counts from several (keys, counts)."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = np.concatenate([p[0] for p in parts])
    c = np.concatenate([p[1] for p in parts])
    u, inv = np.unique(k, return_inverse=True)
    return u, np.bincount(inv, weights=c, minlength=len(u)).astype(np.int64)


class Base:
    """The fault-free fabric and tables (with the SL2VL tables and path SLs the SM programmed, if
    any), measured: see the module docstring. `say`: progress messages."""

    def __init__(self, fabric, tables, sl2vl=None, path_sls=None, permutations: int = 16, seed: int = 1,
                 say=None):
        say = say or (lambda m: None)
        t0 = time.monotonic()
        b = self.b = bind(fabric, tables)
        self.fabric, self.sl2vl, self.sls = fabric, sl2vl, path_sls
        self.permutations, self.seed = permutations, seed
        self._scratch = None
        kind, node, _, _ = port_tables(b)
        R = len(b.sw_nodes)
        # the row of the switch behind each (row, port), -1 for none: the fault-free next hops
        self.nxt = np.where(kind == K_SWITCH, b.row[np.maximum(node, 0)], -1).reshape(R, 256).astype(np.int32)
        adj = [sorted(set(self.nxt[r][self.nxt[r] >= 0].tolist())) for r in range(R)]
        self.adj_ptr = np.concatenate([[0], np.cumsum([len(a) for a in adj])]).astype(np.int64)
        self.adj_idx = np.asarray([y for a in adj for y in a], dtype=np.int64)
        nslots = int(b.offset[-1])
        self.nslots = nslots
        # inter-switch channels (the balance check's links)
        node_of = np.repeat(np.arange(len(b.nports)), np.diff(b.offset))
        port_of = np.arange(nslots) - b.offset[node_of]
        pe = b.peer
        self.node_of, self.port_of = node_of, port_of
        self.isl = (b.types[node_of] == SWITCH) & (port_of >= 1) & (pe >= 0) & (b.types[np.maximum(pe, 0)] == SWITCH)
        self.vl = vl_map(b, sl2vl)
        # the HCA pairs: source base LIDs x destination LIDs (not the source's own port), and the
        # sources behind each switch row
        self.src = np.flatnonzero(b.base & (b.att_sw >= 0)).astype(np.int64)
        self.dst = np.flatnonzero(b.att_sw >= 0).astype(np.int64)
        srow = b.row[b.att_sw[self.src]]
        order = np.argsort(srow, kind="stable")
        self.src_by_row = self.src[order]
        self.src_ptr = np.concatenate([[0], np.cumsum(np.bincount(srow, minlength=R))]).astype(np.int64)
        # delivery and loads over every (source port, LID) pair
        say(f"fault-free fabric: {R} switches x {len(b.lids)} LIDs, delivery and link loads")
        self.tally = Tally()
        self.loads = Loads(np.zeros(nslots, dtype=np.int64), np.zeros(nslots, dtype=np.int64))
        walk(b, b.lids, None, self.tally, self.seen(), self.pw, [], None, self.loads, None, {}, say)
        # every HCA pair's route with its VLs: the dependencies, counted
        say(f"fault-free fabric: {len(self.src) * len(self.dst):,} HCA pairs, channel dependencies per VL")
        parts, undelivered, self.hca_pairs = [], 0, 0
        per = max(1, PAIRS_PER_CHUNK // max(len(self.dst), 1))
        for a in range(0, len(self.src), per):
            S, L = self.pairs(self.src[a:a + per], None)
            rt = Routes(b, self.vl, S, L, sls_of(path_sls, S, L), paths=False)
            undelivered += int((rt.status != DELIVERED).sum())
            self.hca_pairs += len(S)
            parts.append(np.unique(rt.keys, return_counts=True))
        self.edges, self.counts = merge_counts(parts)
        self.ca_undelivered = undelivered
        # the balance check's random permutations: each one's load per channel
        self.flows = permutation_flows(b, permutations, seed) or []
        self.perm_loads = np.zeros((len(self.flows), nslots), dtype=np.int32)
        for p, (s, d) in enumerate(self.flows):
            self.perm_loads[p] = self.flow_loads(b, s, d)
        self.seconds = round(time.monotonic() - t0, 3)

    def vl_after(self, nb: Bound, sl2vl) -> VLMap:
        """The VL map after a failure (verify's vl_map of its SL2VL tables): the entries the tables
        set, in an all-zero map of this fabric kept for it (a new map a failure cost 47 MB on KNS
        12^3), cleared again by `vl_done`. Without tables, verify's map of none."""
        if sl2vl is None:
            return vl_map(nb, None)
        if self._scratch is None:
            self._scratch = VLMap(self.b, {}, all_sls=True)
        v = self._scratch
        v.fill(nb, sl2vl)
        v.nvl = max(1, max((max(x) for rows in sl2vl.values() for x in rows.values()), default=0) + 1)
        return v

    def vl_done(self) -> None:
        if self._scratch is not None and getattr(self._scratch, "set", None) is not None:
            r, pi, po, cas = self._scratch.set
            self._scratch.table[:, r, pi, po] = 0
            self._scratch.ca[cas] = 0
            self._scratch.set = None

    @property
    def pw(self) -> int:
        return int(self.b.nports.max()) + 1

    def seen(self) -> np.ndarray:
        """A scratch bitmap for verify's walk (its VL0 dependencies, which what-if counts itself)."""
        return np.zeros(self.nslots * self.pw, dtype=bool)

    def pairs(self, src: np.ndarray, dst: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Every (source, destination) of `src` x (`dst`, default every HCA LID), less a source's own
        port."""
        b = self.b
        dst = self.dst if dst is None else dst
        S, L = np.repeat(src, len(dst)), np.tile(dst, len(src))
        keep = (b.own_node[S] != b.own_node[L]) | (b.own_port[S] != b.own_port[L])
        return S[keep], L[keep]

    @staticmethod
    def flow_loads(b: Bound, s: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Flows per channel of the flows s -> d, as verify's balance check counts a permutation's."""
        nslots = int(b.offset[-1])
        load = np.zeros(nslots, dtype=np.int64)
        if len(s):
            def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
                load[:] += np.bincount(gslot, minlength=nslots)
            trace(b, b.att_sw[s], d, hop_cb=on_hop)
        return load

    def summary(self) -> dict:
        """What the fault-free fabric measures: the numbers each failure's are compared with."""
        isl = self.isl
        a2a = self.loads.a2a[isl]
        perm = [int(x[isl].max(initial=0)) for x in self.perm_loads]
        return {"switches": len(self.b.sw_nodes), "hcas": int(len(self.src)), "lids": int(len(self.b.lids)),
                "hca_pairs": self.hca_pairs,
                "a2a_max_load": int(a2a.max(initial=0)), "perm_max_load": max(perm, default=0),
                "permutations": len(self.flows), "seed": self.seed,
                "dependencies": int(len(self.edges)), "ca_pairs_undelivered": self.ca_undelivered,
                "seconds": self.seconds}
