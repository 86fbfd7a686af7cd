"""Deadlock freedom: the channel dependency graph (Dally & Seitz) of the HCA-to-HCA routes over
(channel, VL) pairs, and a concrete cycle (a credit loop) when it has one.

Channels are directed links, named by the egress slot of `Fabric.ports()`. An edge (c_in, vl_in)
-> (c_out, vl_out) is wherever a CA-to-CA route arrives on c_in and leaves on c_out; the VL on
each hop comes from the SL2VL dump when given (SL 0, or each path's own SL from the path SLs),
else VL 0. As ibdmchk does, traffic to switch LIDs (management) is left out.
"""

from __future__ import annotations

import numpy as np

from ibtool.verify.bound import Bound, chan_name
from ibtool.verify.trace import VLMap, trace


def find_cycle(keys: np.ndarray, nnodes: int) -> list[int] | None:
    """A cycle of the directed graph with edges keys = src * nnodes + dst, or None if acyclic.

    Peel nodes without incoming or without outgoing edges until nothing changes (numpy, one pass
    over the edges a round); if anything is left, every remaining node has a successor among the
    rest, so walking successors must revisit one: that closed walk is the cycle."""
    src = (keys // nnodes).astype(np.int64)
    dst = (keys % nnodes).astype(np.int64)
    alive = np.ones(len(src), dtype=bool)
    while True:
        s, d = src[alive], dst[alive]
        indeg = np.bincount(d, minlength=nnodes)
        outdeg = np.bincount(s, minlength=nnodes)
        keep = (indeg[s] > 0) & (outdeg[d] > 0)
        if keep.all():
            break
        idx = np.flatnonzero(alive)
        alive[idx[~keep]] = False
        if not alive.any():
            return None
    s, d = src[alive], dst[alive]
    if not len(s):
        return None
    succ = dict(zip(s.tolist(), d.tolist()))
    node = int(s[0])
    order: dict[int, int] = {}
    walk = []
    while node not in order:
        order[node] = len(walk)
        walk.append(node)
        node = succ[node]
    return walk[order[node]:]


def certified_dependencies(b, seen, pw, P, N, H, D, ca_w, chains: bool = True) -> None:
    """Channel dependencies of the HCA-to-HCA routes to certified LIDs (rows: LIDs, columns:
    switches; N the next switch, ns for none; H the distance with a -9 column for none). A switch
    carries such routes when an HCA other than the destination hangs on it, or when one that does
    forwards to it (grown to a fixed point; one step when no two switches without HCAs are cabled
    to each other, as then only those can be newly marked and they forward to marked switches or
    to the destination's own, which has no dependency to add). Each carrying switch p at distance >= 2 gives the
    dependency (p -> s, s -> t) with s = N[p], t = N[s]."""
    m, ns = P.shape
    base = (np.arange(m, dtype=np.int32) * (ns + 1))[:, None]
    idx = base + N  # flat index of the next switch's cell in an (m, ns + 1) array
    act = np.zeros((m, ns + 1), dtype=bool)
    view = act[:, :ns]
    view[:] = (ca_w > 0)[None, :]
    view[np.arange(m), D] = ca_w[D] > 1  # the destination HCA itself is no source
    count = np.count_nonzero(view) if chains else 0
    while True:
        act.ravel()[np.where(view, idx, base + ns)] = True
        act[:, ns] = False
        if not chains:
            break
        now = np.count_nonzero(view)
        if now == count:
            break
        count = now
    pn = np.zeros((m, ns + 1), dtype=np.uint8)
    pn[:, :ns] = P
    ps = pn.ravel()[idx]  # the port the next switch forwards by
    kt = np.int32 if len(seen) < 2**31 else np.int64
    key = (b.offset[b.sw_nodes].astype(kt)[None, :] + P) * kt(pw) + ps
    seen[key[view & (H[:, :ns] >= 2)]] = True


def vl_map(b: Bound, sl2vl) -> VLMap:
    """The VL of each (switch, in port, out port, SL) for routes with their own SLs: the SL2VL
    tables, or without them the SL itself (0..7), as OpenSM's default SL2VL maps it."""
    vl = VLMap(b, sl2vl if sl2vl is not None else {}, all_sls=True)
    if sl2vl is None:  # no tables: a switch maps SL to VL one to one, as OpenSM's default SL2VL does
        vl.table[:] = (np.arange(16) & 7).astype(np.int8)[:, None, None, None]
        vl.nvl = 8
    vl.nvl = max(vl.nvl, int(vl.table.max()) + 1)
    return vl


def sl_dependencies(b: Bound, sl2vl, path_sls):
    """Every HCA-to-HCA route traced from its own source port with its own SL (from the path
    SLs), the VL of each hop from the SL2VL tables (the SL itself, 0..7, where there are none):
    the dependencies between (channel, VL) pairs (path_sls: a pathrecord.PathSLTable). Returns
    (VLMap, edges, None, pairs without a PathRecord, which use SL 0)."""
    vl = vl_map(b, sl2vl)
    src = np.flatnonzero(b.base & (b.att_sw >= 0)).astype(np.int32)  # HCA port base LIDs
    dst = np.flatnonzero(b.att_sw >= 0).astype(np.int32)
    S = np.repeat(src, len(dst))
    L = np.tile(dst, len(src))
    keep = (b.own_node[S] != b.own_node[L]) | (b.own_port[S] != b.own_port[L])
    S, L = S[keep], L[keep]
    sl, found = path_sls.lookup(S, L)
    nosl = int(len(S) - found.sum())
    nslots = int(b.offset[-1])
    nch = nslots * vl.nvl
    edges: list[np.ndarray] = []

    def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
        dep = gin >= 0
        if dep.any():
            ci = gin[dep].astype(np.int64) * vl.nvl + vin[dep]
            co = gslot[dep].astype(np.int64) * vl.nvl + vout[dep]
            edges.append(np.unique(ci * nch + co))

    trace(b, b.att_sw[S], L, hop_cb=on_hop, vl=vl, sl=sl)
    return vl, edges, None, nosl


def deadlock_section(b: Bound, seen, pw, edges, vl, have_sl2vl, say) -> dict:
    """The channel dependency graph of the HCA-to-HCA routes over (channel, VL) pairs; a cycle is
    a credit loop."""
    say("channel dependency graph")
    nslots = int(b.offset[-1])
    nvl = vl.nvl if vl is not None else 1
    nch = nslots * nvl
    if seen is not None:
        k = np.flatnonzero(seen)
        v = vl.uniform if vl is not None else 0
        cin = k // pw
        cout = b.offset[b.peer[cin]] + (k % pw)
        edges = [(cin * nvl + v) * nch + cout * nvl + v] if len(k) else []
    cycle = None
    nedges = 0
    per_vl = {}
    if edges:
        allk = np.unique(np.concatenate(edges))
        nedges = len(allk)
        vin = (allk // nch) % nvl
        per_vl = {f"VL{v}": int(c) for v, c in enumerate(np.bincount(vin, minlength=nvl)) if c}
        cyc = find_cycle(allk, nch)
        if cyc is not None:
            cycle = [(c // nvl, c % nvl) for c in cyc]
    return {
        "vls": nvl,
        "sl2vl": have_sl2vl,
        "channels": int(nch),
        "dependencies": int(nedges),
        "dependencies_per_vl": per_vl,
        "free": cycle is None,
        "cycle": [f"{chan_name(b, c)} (VL{v})" for c, v in cycle] if cycle else None,
    }
