"""Delivery and length of every route: (source port, destination LID) pairs, counted by the
source ports behind each (origin switch, LID) pair.

Routing in InfiniBand is by destination: a packet for LID L at switch W leaves by LFT_W[L], so
the route from any source port to L is the route from the switch it is cabled to. LIDs whose
forwarding graph provably delivers on shortest paths are certified without tracing (`certify`);
the rest are traced pair by pair (`walk`), which also gathers link loads and dimension order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ibtool.fabric import CA, SWITCH
from ibtool.verify.balance import Loads
from ibtool.verify.bound import K_SWITCH, Bound, port_name, port_tables
from ibtool.verify.deadlock import certified_dependencies
from ibtool.verify.trace import DELIVERED, NO_ENTRY, NO_LID, NSTATUS, STATUS, VLMap, route_example, trace


EXAMPLES = 5
PAIRS_PER_CHUNK = 1_000_000  # small enough for the temporaries to stay in cache
CHUNK_CELLS = 1 << 20  # (LID, switch) cells per certification chunk: the temporaries stay in cache


@dataclass
class Tally:
    """What the delivery check counts, by (source port, LID) pair weight."""

    status: np.ndarray = field(default_factory=lambda: np.zeros(NSTATUS, dtype=np.int64))
    status_ss: np.ndarray = field(default_factory=lambda: np.zeros(NSTATUS, dtype=np.int64))  # switch to switch LID
    hist_len: dict = field(default_factory=dict)
    hist_extra: dict = field(default_factory=dict)
    examples: dict = field(default_factory=lambda: {k: [] for k in STATUS if k != DELIVERED})
    pairs: int = 0
    certified_lids: int = 0

    def add_hist(self, hist: dict, counts: np.ndarray, shift: int = 0) -> None:
        for val in np.flatnonzero(counts):
            hist[int(val) + shift] = hist.get(int(val) + shift, 0) + int(counts[val])


def _targets(b: Bound):
    """Per LID: the switch row that must deliver it (-1: none) and the port it must leave by there
    (0 for a switch's own LID, the port cabled to the HCA port otherwise)."""
    n = len(b.own_node)
    dsw = np.full(n, -1, dtype=np.int32)
    dport = np.zeros(n, dtype=np.int16)
    sw = (b.own_node >= 0) & (b.types[np.maximum(b.own_node, 0)] == SWITCH)
    dsw[sw] = b.row[b.own_node[sw]]
    ca = b.att_sw >= 0
    dsw[ca] = b.row[b.att_sw[ca]]
    dport[ca] = b.att_port[ca]
    return dsw, dport


def certify(b: Bound, dist: np.ndarray, t: Tally, seen: np.ndarray | None, pw: int, say) -> np.ndarray:
    """The LIDs whose routes are all delivered on shortest paths, proved without tracing a pair.

    Per destination LID the tables form a forwarding graph over switches. If every switch either
    is the one that delivers the LID (and its entry is the right port) or forwards it to a switch
    one hop closer (by the all-pairs distance table), then by induction every route arrives, with
    exactly the shortest length: one gather per (switch, LID) cell instead of a walk per pair.
    Such LIDs are tallied here (delivered, lengths, and, with `seen`, the channel dependencies of
    the HCA-to-HCA routes); the rest are traced pair by pair. Returns the certified mask by LID."""
    ns = len(b.sw_nodes)
    kind, node, _, _ = port_tables(b)
    # (row * 256 + port) -> the next switch's row; ns (a column of -9 distances) for anything else
    nxt_t = np.where(kind == K_SWITCH, b.row[np.maximum(node, 0)], ns).astype(np.int32)
    lft_t = np.ascontiguousarray(b.lft.T)  # LID-major: one row of switches per LID
    dist_t = np.full((ns, ns + 1), -9, dtype=np.int16)
    dist_t[:, :ns] = dist.T  # dist_t[target, source]
    dsw, dport = _targets(b)
    sw256 = (np.arange(ns, dtype=np.int32) * 256)[None, :]
    # route lengths depend only on the delivering switch: histograms per target switch, once
    nl = int(dist.max()) + 3
    ca_w = b.ca_ports[b.sw_nodes]
    keys = (np.arange(ns, dtype=np.int64)[:, None] * nl + np.maximum(dist_t[:, :ns], 0)).ravel()
    h_sw = np.bincount(keys, minlength=ns * nl).reshape(ns, nl)
    h_ca = np.bincount(keys, weights=np.tile(ca_w, ns), minlength=ns * nl).reshape(ns, nl).astype(np.int64)
    width = lft_t.shape[0]
    cert = np.zeros(width, dtype=bool)
    # switches without HCAs cabled to each other: carrying HCA traffic may take several steps to spread
    bare = np.flatnonzero(ca_w == 0)
    chains = bool(len(bare)) and bool(np.isin(nxt_t.reshape(ns, 256)[bare], bare).any())
    c = max(1, CHUNK_CELLS // max(ns, 1))
    it = np.int32 if c * (ns + 1) < 2**31 else np.int64
    last_say = time.monotonic()
    for a in range(1, width, c):
        e = min(width, a + c)
        D = np.maximum(dsw[a:e], 0)
        P = lft_t[a:e]
        N = nxt_t[sw256 + P]
        H = dist_t[D]
        Hn = H.ravel()[(np.arange(e - a, dtype=it) * (ns + 1))[:, None] + N]
        closer = np.count_nonzero(Hn == H[:, :ns] - 1, axis=1)
        good = (closer == ns - 1) & (P[np.arange(e - a), D] == dport[a:e]) & (dsw[a:e] >= 0) \
            & (b.own_node[a:e] >= 0)
        if not good.any():
            continue
        cert[a:e] = good
        g = np.flatnonzero(good)
        cadest = b.att_sw[a:e][g] >= 0
        Dg = D[g]
        # switch sources (each LID's own switch excluded), HCA sources one link longer (each HCA
        # port to its own LID excluded); an HCA destination adds the last link
        hs = h_sw[Dg[~cadest]].sum(axis=0)
        hs[0] -= int((~cadest).sum())
        hs_ca = h_sw[Dg[cadest]].sum(axis=0)
        hc = h_ca[Dg[~cadest]].sum(axis=0)
        hc_ca = h_ca[Dg[cadest]].sum(axis=0)
        hc_ca[0] -= int(cadest.sum())
        t.add_hist(t.hist_len, hs)
        t.add_hist(t.hist_len, hs_ca + hc, shift=1)
        t.add_hist(t.hist_len, hc_ca, shift=2)
        npairs = int(hs.sum() + hs_ca.sum() + hc.sum() + hc_ca.sum())
        t.status[DELIVERED] += npairs
        t.hist_extra[0] = t.hist_extra.get(0, 0) + npairs
        t.pairs += npairs
        t.certified_lids += len(g)
        if seen is not None and cadest.any():
            sel = g[cadest]
            certified_dependencies(b, seen, pw, P[sel], N[sel], H[sel], D[sel], ca_w, chains)
        if time.monotonic() - last_say > 2:
            say(f"  {e}/{width} LIDs checked")
            last_say = time.monotonic()
    return cert


def walk(b: Bound, lids: np.ndarray, dist, t: Tally | None, seen, pw, edges: list, vl: VLMap | None,
          loads: Loads | None, dims, dimt: dict, say) -> None:
    """Trace (every switch, each of `lids`) pair hop by hop: the general check, for LIDs the
    certificate could not prove (non-minimal or broken routes, VLs that change along a path), and
    for what needs each route's links (loads, dimension order). Tallies into `t` when given."""
    ns = len(b.sw_nodes)
    chunk = max(1, PAIRS_PER_CHUNK // max(ns, 1))
    last_say = time.monotonic()
    for c0 in range(0, len(lids), chunk):
        cl = lids[c0:c0 + chunk]
        walk_pairs(b, np.repeat(b.sw_nodes, len(cl)), np.tile(cl, ns), dist, t, seen, pw, edges, vl, loads, dims,
                   dimt)
        if time.monotonic() - last_say > 2:
            say(f"  {min(c0 + chunk, len(lids))}/{len(lids)} LIDs traced")
            last_say = time.monotonic()


def walk_pairs(b: Bound, o: np.ndarray, L: np.ndarray, dist, t: Tally | None, seen, pw, edges: list,
               vl: VLMap | None, loads: Loads | None, dims, dimt: dict) -> None:
    """walk() for the (origin switch o, LID L) pairs given: each weighed by the source ports behind
    it, so the tallies and loads of any set of pairs add up (what-if subtracts a failure's
    pairs before it and adds them after)."""
    nslots = int(b.offset[-1])
    nvl = vl.nvl if vl is not None else 1
    nch = nslots * nvl
    # source ports behind each pair: the switch itself, plus its CAs (not the destination itself)
    attL = b.att_sw[L]
    wca = (b.ca_ports[o] - (attL == o)).astype(np.int32)
    wsw = (b.own_node[L] != o).astype(np.int32)
    cadest = attL >= 0
    wt = wsw + wca
    a2w = np.where(cadest & b.base[L], wca, 0)  # all-to-all: CA ports to CA base LIDs
    depf = cadest & (wca > 0)  # CA-to-CA routes: the ones the deadlock analysis follows

    def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
        if loads is not None:
            loads.routes[:] += np.bincount(gslot, weights=wt[gi], minlength=nslots).astype(np.int64)
            loads.a2a[:] += np.bincount(gslot, weights=a2w[gi], minlength=nslots).astype(np.int64)
        if t is None:
            return
        dep = depf[gi] & (gin >= 0)
        if not dep.any():
            return
        if vl is None or vl.uniform is not None:  # one VL per route: (channel in, port out) bitmap
            seen[gin[dep].astype(np.int64) * pw + (gslot[dep] - b.offset[gcur[dep]])] = True
            return
        ci = gin[dep].astype(np.int64) * nvl + vin[dep]
        co = gslot[dep].astype(np.int64) * nvl + vout[dep]
        edges.append(np.unique(ci * nch + co))

    cb = on_hop if (loads is not None or t is not None) else None
    vary = t is not None and vl is not None and vl.uniform is None  # VLs change along paths
    st, hp, _, dv = trace(b, o, L, hop_cb=cb, vl=vl if vary else None, dims=dims)
    if dims is not None:
        _, router = dims
        ok = st == DELIVERED
        chk = router[o] & ok & ((b.types[b.own_node[L]] == CA) | router[b.own_node[L]])
        dimt["checked"] += int(wt[chk].sum())
        bad = chk & dv
        if dimt.get("detoured") is not None:  # a fault step: the scheme's detours may turn back
            acc = bad & dimt["detoured"][b.row[o], L]
            if dimt.get("sls") is not None:  # and the CA pairs behind it are not left on SL 0 (VL 0)
                js, srcs, dsts = [], [], []
                for j in np.flatnonzero(acc & (b.types[b.own_node[L]] == CA)).tolist():
                    d = int(L[j])
                    for s in dimt["cas"].get(int(o[j]), ()):
                        if s != d:
                            js.append(j)
                            srcs.append(s)
                            dsts.append(d)
                if js:  # one lookup of every such pair; a pair without a PathRecord is on SL 0
                    sl, _ = dimt["sls"].lookup(np.array(srcs), np.array(dsts))
                    acc[np.array(js)[sl == 0]] = False
            dimt["accepted"] += int(wt[acc].sum())
            bad &= ~acc
        dimt["violations"] += int(wt[bad].sum())
        if dimt["example"] is None and bad.any():
            j = int(np.flatnonzero(bad)[0])
            dimt["example"] = (int(o[j]), int(L[j]))
    if t is None:
        return
    t.pairs += int(wt.sum())
    t.status += np.bincount(st, weights=wt, minlength=NSTATUS).astype(np.int64)
    sw_only = ~cadest  # switch source (weight wsw) to a switch LID: management traffic only
    t.status_ss += np.bincount(st[sw_only], weights=wsw[sw_only], minlength=NSTATUS).astype(np.int64)
    ok = st == DELIVERED
    lens = hp.astype(np.int32)
    if ok.any():
        # length counted from the source port: CA sources add their own link
        t.add_hist(t.hist_len, np.bincount(lens[ok], weights=wsw[ok]).astype(np.int64))
        t.add_hist(t.hist_len, np.bincount(lens[ok] + 1, weights=wca[ok]).astype(np.int64))
        if dist is not None:
            tgt = np.where(cadest, attL, b.own_node[L])
            sp = dist[b.row[o], b.row[np.maximum(tgt, 0)]].astype(np.int32) + cadest
            extra = (lens - sp)[ok]
            base_ex = int(extra.min())
            t.add_hist(t.hist_extra, np.bincount(extra - base_ex, weights=wt[ok]).astype(np.int64), base_ex)
    if t.status[DELIVERED] != t.status.sum():
        for k in t.examples:
            if len(t.examples[k]) < EXAMPLES:
                for j in np.flatnonzero((st == k) & (wt > 0))[:EXAMPLES - len(t.examples[k])]:
                    t.examples[k].append((int(o[j]), int(L[j])))


def delivery_section(b: Bound, t: Tally, have_dist: bool) -> dict:
    fabric = b.fabric
    ns = len(b.sw_nodes)
    n_src = ns + int(b.ca_ports.sum())
    # a port without a LID can neither be reached nor send: its pairs count, as undelivered
    u_ca = sum(1 for i, _ in b.unaddressed if b.types[i] == CA)
    u = len(b.unaddressed)
    if u:
        t.status[NO_LID] += u * (n_src + u_ca - 1) + u_ca * len(b.lids)
    top = None
    if b.top_missing:
        top = {"lid": b.top_missing, "owner": port_name(b, int(b.own_node[b.top_missing]),
                                                          int(b.own_port[b.top_missing])), "pairs_not_checked": n_src - 1,
               "reason": f"the tables list LIDs up to {b.top_missing - 1} on every switch but not the top LID "
                         f"{b.top_missing}, a multiple of 64: dump_fts and ibroute (infiniband-diags) leave it out. "
                         f"Not checked; `ibtool sim run` collects it, or verify OpenSM's opensm-lfts.dump"}
    res = {
        "pairs": int(t.status.sum()),
        "source_ports": n_src,
        "lids": int(len(b.lids)),
        "switches": ns,
        "switches_without_table": [fabric.names[i] for i in b.missing_tables],
        "delivered": int(t.status[DELIVERED]),
        "undelivered": {STATUS[k]: int(t.status[k]) for k in STATUS if k != DELIVERED},
        "undelivered_switch_to_switch": {STATUS[k]: int(t.status_ss[k]) for k in STATUS if k != DELIVERED},
        "undelivered_examples": {STATUS[k]: [route_example(b, o, L) for o, L in v] for k, v in t.examples.items() if v},
        "unaddressed": [port_name(b, i, p) + " has no LID" for i, p in b.unaddressed],
        "top_lid_not_in_dump": top,
        "length_histogram": {str(k): v for k, v in sorted(t.hist_len.items())},
        "extra_hops_histogram": {str(k): v for k, v in sorted(t.hist_extra.items())} if have_dist else None,
        "minimal": (have_dist and all(k <= 0 for k in t.hist_extra)),
        "certified_lids": t.certified_lids,
    }
    return res


def delivery_ok(res: dict) -> bool:
    """Every pair with an HCA at either end is delivered, and no pair loops or ends at a wrong or
    dead port. Switch-to-switch pairs without an LFT entry are reported but do not fail the check:
    up/down engines (updn, ftree) do not route between their roots."""
    ss = res["undelivered_switch_to_switch"]
    hole = STATUS[NO_ENTRY]
    return all(v == (ss[k] if k == hole else 0) for k, v in res["undelivered"].items()) \
        and not res["switches_without_table"]
