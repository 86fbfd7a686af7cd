"""One failure measured by verify's own checks, from the fault-free fabric's measures (whatif.base):
only the routes the failure changed are traced, before and after, and the difference is added.

    m = measure(base, dead_nodes, dead_links, lft, sl2vl=..., path_sls=...)

`dead_nodes`, `dead_links`: what failed with what it cut off from the subnet manager (indices of
base.fabric); `lft`: the tables after it, one row per switch of base.b (verify.bound's row order;
a failed switch's row is not read). What the routes are after it is decided by the engine
(whatif.engines); this module only measures them, as `verify all` would measure the fabric after
the failure: the delivery tally, the link loads (routes and all-to-all flows per channel), the
balance check's permutations, and the (channel, VL) dependency graph of every HCA-to-HCA route,
checked for a cycle with verify's own `find_cycle`.

Which routes changed: the entries (switch, LID) whose table entry changed or whose next hop failed,
and every entry whose fault-free route passes one (hops.upstream); the HCA pairs whose SL, or
whose SL's VLs, changed. Each sum the checks make is a sum over routes, so the fault-free sum less
those routes before plus those routes after is the sum after the failure (tests/whatif holds it to
`verify all` on the fabric after the failure, under ibsim and with the Python reference).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ibtool.fabric import CA
from ibtool.hops import upstream
from ibtool.verify.balance import Loads, _mmm
from ibtool.verify.bound import K_DEAD, Bound, chan_name, port_tables
from ibtool.verify.deadlock import find_cycle
from ibtool.verify.delivery import Tally, walk_pairs
from ibtool.verify.trace import DELIVERED, STATUS
from ibtool.whatif.base import NV, Base, Routes, sls_of

HOT = 5  # channels listed per failure: those whose all-to-all load grew the most


def after(base: Base, dead_nodes: set[int], dead_links: set[int], lft: np.ndarray) -> tuple[Bound, np.ndarray]:
    """The fault-free Bound with what failed taken out and the tables of after: as verify would bind
    the fabric the SM discovers after the failure, in the fault-free numbering. Also the LIDs that
    failed (a failed node's, a CA port's whose cable failed)."""
    b = base.b
    f = b.fabric
    dead_slots = []
    for li in dead_links:
        dead_slots += [b.offset[f.link_a[li]] + f.link_pa[li], b.offset[f.link_b[li]] + f.link_pb[li]]
    for x in dead_nodes:
        dead_slots += range(int(b.offset[x]), int(b.offset[x + 1]))
    ds = np.asarray(sorted(set(int(s) for s in dead_slots)), dtype=np.int64)
    peer, peer_port = b.peer.copy(), b.peer_port.copy()
    peer[ds], peer_port[ds] = -1, -1
    dead_ca_ports = {(int(base.node_of[s]), int(base.port_of[s])) for s in ds if b.types[base.node_of[s]] == CA}
    dead_lids = []
    for (x, p), (lid, lmc) in f.port_lids.items():
        if x in dead_nodes or (x, p) in dead_ca_ports:
            dead_lids += range(lid, lid + (1 << lmc))
    dl = np.asarray(sorted(dead_lids), dtype=np.int64)
    own_node, own_port, is_base = b.own_node.copy(), b.own_port.copy(), b.base.copy()
    att, att_port = b.att_sw.copy(), b.att_port.copy()
    hosts = {int(x) for x in att[dl] if x >= 0 and x not in dead_nodes}  # switches that lost a CA port
    own_node[dl], own_port[dl], is_base[dl], att[dl], att_port[dl] = -1, -1, False, -1, 0
    ca_ports, ca_in = b.ca_ports.copy(), b.ca_in_port.copy()
    for s in hosts:
        here = np.flatnonzero((att == s) & is_base)
        ca_ports[s] = len(here)
        ca_in[s] = int(att_port[here].min()) if len(here) else 0
    k0, n0, p0, slot = port_tables(b)
    kind, node, pport = k0.copy(), n0.copy(), p0.copy()
    sw = ds[b.row[base.node_of[ds]] >= 0]
    cell = b.row[base.node_of[sw]].astype(np.int64) * 256 + base.port_of[sw]
    kind[cell], node[cell], pport[cell] = K_DEAD, -1, -1
    nb = dataclasses.replace(b, lft=lft, peer=peer, peer_port=peer_port, own_node=own_node, own_port=own_port,
                             base=is_base, lids=b.lids[~np.isin(b.lids, dl)], att_sw=att, ca_ports=ca_ports,
                             ca_in_port=ca_in, att_port=att_port, missing_tables=[], top_missing=0, unaddressed=[],
                             _ptab=(kind, node, pport, slot))
    return nb, dl


def _sub(t: Tally, u: Tally, sign: int) -> None:
    t.status += sign * u.status
    t.status_ss += sign * u.status_ss
    t.pairs += sign * u.pairs
    for k, v in u.hist_len.items():
        t.hist_len[k] = t.hist_len.get(k, 0) + sign * v


def measure(base: Base, dead_nodes: set[int], dead_links: set[int], lft: np.ndarray, sl2vl=None,
            path_sls=None, changed: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """The checks' numbers after the failure (see the module docstring). `changed`: (rows, LIDs)
    the engine says it recomputed (a hint: the entries that differ are found among them); without
    it the tables are compared whole."""
    b = base.b
    nb, dl = after(base, dead_nodes, dead_links, lft)
    R, NL = b.lft.shape
    alive_row = np.ones(R, dtype=bool)
    alive_row[[b.row[x] for x in dead_nodes if b.row[x] >= 0]] = False
    alive_lid = np.zeros(NL, dtype=bool)
    alive_lid[nb.lids] = True
    # the entries whose route changed: seeds (entry changed, or its next hop failed), then upstream
    if changed is None:
        cr, cl = np.nonzero((lft != b.lft) & alive_row[:, None] & alive_lid[None, :])
    else:
        cr, cl = changed
        keep = alive_row[cr] & alive_lid[cl]
        cr, cl = cr[keep], cl[keep]
        diff = lft[cr, cl] != b.lft[cr, cl]
        cr, cl = cr[diff], cl[diff]
    seeds_r, seeds_l = [cr], [cl]
    gone = np.flatnonzero(nb.peer != b.peer)  # slots whose cable failed
    for r in np.unique(b.row[base.node_of[gone]]):
        if r < 0 or not alive_row[r]:
            continue
        dead_port = np.zeros(256, dtype=bool)
        dead_port[base.port_of[gone[b.row[base.node_of[gone]] == r]]] = True
        hit = np.flatnonzero(dead_port[b.lft[r]] & alive_lid)  # the fault-free next hop failed
        seeds_r.append(np.full(len(hit), r, dtype=np.int64))
        seeds_l.append(hit)
    sr, sl_ = np.concatenate(seeds_r).astype(np.int64), np.concatenate(seeds_l).astype(np.int64)
    sr, sl_ = _unique_cells(sr, sl_, NL)
    ar, al = upstream(b.lft, base.nxt, base.adj_ptr, base.adj_idx, alive_row, sr, sl_)
    # rows whose HCAs changed (an HCA port gone): every entry of theirs is weighed anew
    moved = np.flatnonzero(alive_row & (nb.ca_ports[b.sw_nodes] != b.ca_ports[b.sw_nodes]))
    if len(moved):
        ar = np.concatenate([ar, np.repeat(moved, len(nb.lids))])
        al = np.concatenate([al, np.tile(nb.lids, len(moved))])
        ar, al = _unique_cells(ar, al, NL)
    # delivery and loads: the fault-free sums, less the pairs before, plus the pairs after
    dead_rows = np.flatnonzero(~alive_row)
    old_r = np.concatenate([ar, np.repeat(dead_rows, len(b.lids)), np.tile(np.arange(R), len(dl))])
    old_l = np.concatenate([al, np.tile(b.lids, len(dead_rows)), np.repeat(dl, R)])
    old_r, old_l = _unique_cells(old_r, old_l, NL)
    tally = Tally()
    _sub(tally, base.tally, 1)
    loads = Loads(base.loads.routes.copy(), base.loads.a2a.copy())
    t_old, l_old = Tally(), Loads(np.zeros_like(loads.routes), np.zeros_like(loads.a2a))
    walk_pairs(b, b.sw_nodes[old_r], old_l, None, t_old, base.seen(), base.pw, [], None, l_old, None, {})
    t_new, l_new = Tally(), Loads(np.zeros_like(loads.routes), np.zeros_like(loads.a2a))
    walk_pairs(nb, b.sw_nodes[ar], al, None, t_new, base.seen(), base.pw, [], None, l_new, None, {})
    _sub(tally, t_old, -1)
    _sub(tally, t_new, 1)
    loads.routes += l_new.routes - l_old.routes
    loads.a2a += l_new.a2a - l_old.a2a
    # the HCA pairs whose route (or SL, or VLs) changed, and those that lost an end
    vl_new = base.vl_after(nb, sl2vl)
    try:
        return _measured(base, nb, dl, alive_row, ar, al, tally, loads, vl_new, path_sls)
    finally:
        base.vl_done()


def _measured(base: Base, nb: Bound, dl, alive_row, ar, al, tally, loads, vl_new, path_sls) -> dict:
    b = base.b
    R, NL = b.lft.shape
    S_new, L_new = _ca_pairs(base, nb, ar, al)
    S_new, L_new = _more_pairs(base, nb, alive_row, vl_new, path_sls, S_new, L_new)
    lost_S = np.flatnonzero(np.isin(base.src, dl))
    S_lost, L_lost = base.pairs(base.src[lost_S], None)
    S2, L2 = base.pairs(base.src[~np.isin(base.src, dl)], dl[np.isin(dl, base.dst)])
    S_old = np.concatenate([S_new, S_lost, S2])
    L_old = np.concatenate([L_new, L_lost, L2])
    old = Routes(b, base.vl, S_old, L_old, sls_of(base.sls, S_old, L_old))
    new = Routes(nb, vl_new, S_new, L_new, sls_of(path_sls, S_new, L_new))
    n = len(S_new)
    w = max(old.path.shape[1], new.path.shape[1])
    po = np.pad(old.path[:n], ((0, 0), (0, w - old.path.shape[1])), constant_values=-1)
    pn = np.pad(new.path, ((0, 0), (0, w - new.path.shape[1])), constant_values=-1)
    delivered = new.status == DELIVERED
    rerouted = delivered & (po != pn).any(axis=1)
    extra = (new.hops.astype(np.int64) - old.hops[:n])[rerouted]
    # the dependency graph: fault-free counts, less the routes before, plus the routes after
    counts = base.counts.copy()
    k, c = np.unique(old.keys, return_counts=True)
    counts[np.searchsorted(base.edges, k)] -= c
    k, c = np.unique(new.keys, return_counts=True)
    at = np.minimum(np.searchsorted(base.edges, k), max(len(base.edges) - 1, 0))
    inb = (base.edges[at] == k) if len(base.edges) else np.zeros(len(k), dtype=bool)
    counts[at[inb]] += c[inb]
    keys = np.concatenate([base.edges[counts > 0], k[~inb]])
    nch = base.nslots * NV
    vin = (keys // nch) % NV
    vout = (keys % nch) % NV
    # verify's cycle search, over the channels the graph has (numbered densely: the rounds of its
    # peeling count every node)
    used, inv = np.unique(np.concatenate([keys // nch, keys % nch]), return_inverse=True)
    dense = find_cycle(inv[:len(keys)] * len(used) + inv[len(keys):], len(used))
    cyc = [int(used[c]) for c in dense] if dense is not None else None
    # the balance check's permutations: the same flows when the same HCAs are there, else drawn anew
    isl = base.isl & (nb.peer >= 0)
    if len(dl) and np.isin(dl, base.src).any():
        from ibtool.verify.balance import permutation_flows
        flows = permutation_flows(nb, base.permutations, base.seed) or []
        perm = [int(Base.flow_loads(nb, s, d)[isl].max(initial=0)) for s, d in flows]
    else:
        cell = np.zeros(R * NL, dtype=bool)
        cell[ar * NL + al] = True
        perm = []
        for p, (s, d) in enumerate(base.flows):
            hit = cell[b.row[b.att_sw[s]].astype(np.int64) * NL + d]
            ld = base.perm_loads[p].astype(np.int64)
            if hit.any():
                ld = ld - Base.flow_loads(b, s[hit], d[hit]) + Base.flow_loads(nb, s[hit], d[hit])
            perm.append(int(ld[isl].max(initial=0)))
    # the channels whose all-to-all load grew most
    gain = np.where(isl, loads.a2a - base.loads.a2a, 0)
    hot = [int(x) for x in np.argsort(-gain, kind="stable")[:HOT] if gain[x] > 0]
    und = {STATUS[s]: int(tally.status[s]) for s in STATUS if s != DELIVERED}
    und_ss = {STATUS[s]: int(tally.status_ss[s]) for s in STATUS if s != DELIVERED}
    pairs_undelivered = base.ca_undelivered - int((old.status != DELIVERED).sum()) + int((~delivered).sum())
    lost_pairs = int(len(S_lost) + len(S2))
    hcas_lost = sorted({b.fabric.names[int(b.own_node[x])] for x in base.src[lost_S]})
    return {
        "hcas_lost": hcas_lost,
        "pairs_lost": lost_pairs,
        "pairs_undelivered": int(pairs_undelivered),
        "pairs_disconnected": int(lost_pairs + pairs_undelivered),
        "pairs_rerouted": int(rerouted.sum()),
        "extra_hops": {"max": int(extra.max(initial=0)), "mean": round(float(extra.mean()), 3) if len(extra) else 0.0},
        "vls_used": int(max(vin.max(initial=0), vout.max(initial=0)) + 1),
        "deadlock_free": cyc is None,
        "dependencies": int(len(keys)),
        "dependencies_per_vl": {f"VL{v}": int(c) for v, c in enumerate(np.bincount(vin, minlength=NV)) if c},
        "cycle": [f"{chan_name(b, c // NV)} (VL{c % NV})" for c in cyc] if cyc else None,
        "a2a_max_load": int(loads.a2a[isl].max(initial=0)),
        "perm_max_load": max(perm, default=0),
        "routes_per_link": _mmm(loads.routes[isl]),
        "a2a_links": _mmm(loads.a2a[isl]),
        "pairs": int(tally.pairs),
        "delivered": int(tally.status[DELIVERED]),
        "undelivered": und,
        "undelivered_switch_to_switch": und_ss,
        "hot_links": [[chan_name(b, x), int(loads.a2a[x]), int(base.loads.a2a[x])] for x in hot],
        "entries_changed": int(len(ar)),
        "_loads": loads,  # the channels' loads, for a test to compare with verify's (not written)
    }


def _unique_cells(r: np.ndarray, lid: np.ndarray, NL: int) -> tuple[np.ndarray, np.ndarray]:
    cell = np.unique(r.astype(np.int64) * NL + lid)
    return cell // NL, cell % NL


def _ca_pairs(base: Base, nb: Bound, ar: np.ndarray, al: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The HCA pairs (source base LID, destination LID) behind the entries (rows ar, LIDs al) that
    are still there after the failure: every HCA source on that row to that HCA destination."""
    hca = nb.att_sw[al] >= 0
    ar, al = ar[hca], al[hca]
    cnt = base.src_ptr[ar + 1] - base.src_ptr[ar]
    at = np.repeat(base.src_ptr[ar] - np.cumsum(cnt) + cnt, cnt) + np.arange(int(cnt.sum()))
    S = base.src_by_row[at]
    L = np.repeat(al, cnt)
    keep = nb.base[S] & ((nb.own_node[S] != nb.own_node[L]) | (nb.own_port[S] != nb.own_port[L]))
    return S[keep], L[keep]


def _more_pairs(base: Base, nb: Bound, alive_row: np.ndarray, vl_new, path_sls, S: np.ndarray, L: np.ndarray):
    """The pairs of S, L and those whose SL changed, or whose SL's VLs changed on a surviving switch."""
    rows = np.flatnonzero(alive_row)
    extra_S, extra_L = [], []
    sparse = getattr(path_sls, "table", None)
    if base.sls is None and sparse is not None and np.array_equal(base.vl.table[0][rows], vl_new.table[0][rows]):
        # every pair was on SL 0 and SL 0 keeps its VLs; the pairs not listed keep SL 0 (hdor's
        # detours): the listed ones are all that may have moved
        k = sparse.keys
        extra_S.append(k >> 16)
        extra_L.append(k & 0xFFFF)
    elif path_sls is not None or base.sls is not None or \
            any(not np.array_equal(base.vl.table[s][rows], vl_new.table[s][rows]) for s in range(16)):
        changed_sl = {s for s in range(16) if not np.array_equal(base.vl.table[s][rows], vl_new.table[s][rows])}
        Su, Lu = base.pairs(base.src[nb.base[base.src]], base.dst[nb.att_sw[base.dst] >= 0])
        s0, s1 = sls_of(base.sls, Su, Lu), sls_of(path_sls, Su, Lu)
        pick = (s0 != s1) | np.isin(s0, list(changed_sl)) | np.isin(s1, list(changed_sl))
        extra_S.append(Su[pick])
        extra_L.append(Lu[pick])
    if extra_S:
        key = np.unique(np.concatenate([S << 16 | L] + [s << 16 | d for s, d in zip(extra_S, extra_L)]))
        return key >> 16, key & 0xFFFF
    return S, L
