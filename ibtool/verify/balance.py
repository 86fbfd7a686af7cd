"""Balance: routes and all-to-all flows per inter-switch link, and random permutations of the
HCA ports (the most loaded link, a static estimate of Netgauge's effective bisection bandwidth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibtool.fabric import SWITCH
from ibtool.verify.bound import Bound
from ibtool.verify.trace import DELIVERED, trace


@dataclass
class Loads:
    """Per channel (egress slot): routes (all pairs) and all-to-all flows (HCA base LIDs)."""

    routes: np.ndarray
    a2a: np.ndarray


def balance_section(b: Bound, loads: Loads, permutations: int, seed: int) -> dict:
    nslots = int(b.offset[-1])
    isl = np.zeros(nslots, dtype=bool)
    for i in b.sw_nodes:
        lo, hi = int(b.offset[i]) + 1, int(b.offset[i + 1])
        pe = b.peer[lo:hi]
        isl[lo:hi] = (pe >= 0) & (b.types[np.maximum(pe, 0)] == SWITCH)
    rpl = loads.routes[isl]
    perm = permutation_load(b, isl, permutations, seed) if permutations else None
    names = b.fabric.names
    chans = np.flatnonzero(isl)
    node = np.searchsorted(b.offset, chans, side="right") - 1
    return {
        "inter_switch_channels": int(isl.sum()),
        # per directed inter-switch channel: [from end, to end, routes, all-to-all load] (the heat
        # map of the HTML report)
        "links": [[f"{names[n]}[{c - b.offset[n]}]", f"{names[b.peer[c]]}[{b.peer_port[c]}]", int(loads.routes[c]),
                   int(loads.a2a[c])] for n, c in zip(node.tolist(), chans.tolist())],
        "routes_per_link": _mmm(rpl),
        "all_to_all_max_link_load": int(loads.a2a[isl].max(initial=0)),
        "all_to_all_links": _mmm(loads.a2a[isl]),
        "permutations": perm,
    }


def permutation_load(b: Bound, isl: np.ndarray, count: int, seed: int) -> dict | None:
    """Random permutations of the CA ports (base LIDs): each flow's route, the most loaded link per
    permutation, and the mean over flows of 1 / (the highest load on its route): a static estimate
    of the effective bisection bandwidth that Netgauge's ebb measures (fraction of link speed)."""
    flows = permutation_flows(b, count, seed)
    if flows is None:
        return None
    nslots = len(isl)
    maxes, ebbs = [], []
    for src_l, dst_l in flows:
        origins = b.att_sw[src_l]
        rec_f, rec_s = [], []

        def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
            rec_f.append(gi)
            rec_s.append(gslot)

        st, _, _, _ = trace(b, origins, dst_l, hop_cb=on_hop)
        if not rec_f:
            maxes.append(0)
            ebbs.append(1.0)
            continue
        fl = np.concatenate(rec_f)
        sl = np.concatenate(rec_s)
        load = np.bincount(sl, minlength=nslots)
        worst = np.ones(len(src_l))
        np.maximum.at(worst, fl, load[sl].astype(float))
        bw = np.where(st == DELIVERED, 1.0 / worst, 0.0)
        maxes.append(int(load[isl].max(initial=0)))
        ebbs.append(float(bw.mean()))
    return {"count": count, "seed": seed, "max_link_load": {"min": min(maxes), "mean": round(float(np.mean(maxes)), 2),
                                                           "max": max(maxes)},
            "ebb_estimate": round(float(np.mean(ebbs)), 4)}


def permutation_flows(b: Bound, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The flows (source base LID, destination base LID) of each random permutation of the CA
    ports (a port sent to itself is no flow); None with fewer than two CA ports."""
    ca_l = np.flatnonzero(b.base & (b.att_sw >= 0)).astype(np.int32)
    if len(ca_l) < 2:
        return None
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        dst = rng.permutation(ca_l)
        keep = dst != ca_l
        out.append((ca_l[keep], dst[keep]))
    return out


def _mmm(a: np.ndarray) -> dict:
    if not len(a):
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": int(a.min()), "mean": round(float(a.mean()), 2), "max": int(a.max())}
