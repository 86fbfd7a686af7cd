"""Bisection: the fewest links cut to split the fabric's endpoints into two equal halves.

Endpoints are the HCAs (an HCA may land on the other side of its switch, cutting its own link,
as paper 002 counts a single switch's bisection); a fabric without HCAs splits its switches.
Exact: a mixed-integer program (scipy's HiGHS) for small fabrics, or a family's closed form;
otherwise METIS (pymetis) with exact rebalancing, reported as an upper bound.

b_r and B_r follow paper 002 section 4.3: b_r = B / (all cables, endpoint links included),
B_r = B / (inter-switch cables).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, milp

from ibtool.analyze.graph import Graph
from ibtool.fabric import CA
from ibtool.registry import TOPOLOGIES

EXACT_MAX_VERTICES = 128  # the MILP proves optimality in seconds up to about this size


def _full_graph(g: Graph):
    """All nodes (switches and HCAs) with link multiplicities, and endpoint weights."""
    f = g.fabric
    n = f.num_nodes
    a = np.asarray(f.link_a, dtype=np.int64)
    b = np.asarray(f.link_b, dtype=np.int64)
    t = np.asarray(f.types)
    has_hca = (t == CA).any()
    weight = (t == CA).astype(np.int64) if has_hca else np.ones(n, dtype=np.int64)
    m = sp.coo_matrix((np.ones(len(a)), (np.minimum(a, b), np.maximum(a, b))), shape=(n, n)).tocsr()
    m.sum_duplicates()
    return m.tocoo(), weight


def cut_of(g: Graph, side: np.ndarray) -> int:
    f = g.fabric
    a = np.asarray(f.link_a, dtype=np.int64)
    b = np.asarray(f.link_b, dtype=np.int64)
    return int((side[a] != side[b]).sum())


def exact(g: Graph, time_limit: float = 60.0) -> dict | None:
    """min sum(w_e y_e), y_e >= |x_u - x_v|, sum(weight x) = W/2 (floor), x binary, x_0 = 0."""
    edges, weight = _full_graph(g)
    n, m = g.fabric.num_nodes, edges.nnz
    u, v, w = edges.row, edges.col, edges.data
    c = np.concatenate([np.zeros(n), w])
    rows = np.arange(m)
    # y_e - x_u + x_v >= 0 and y_e + x_u - x_v >= 0
    a1 = sp.coo_matrix((np.concatenate([np.ones(m), -np.ones(m), np.ones(m)]),
                        (np.concatenate([rows, rows, rows]), np.concatenate([n + rows, u, v]))), shape=(m, n + m))
    a2 = sp.coo_matrix((np.concatenate([np.ones(m), np.ones(m), -np.ones(m)]),
                        (np.concatenate([rows, rows, rows]), np.concatenate([n + rows, u, v]))), shape=(m, n + m))
    half = int(weight.sum()) // 2
    bal = sp.coo_matrix((weight.astype(float), (np.zeros(n, dtype=int), np.arange(n))), shape=(1, n + m))
    lo = np.zeros(n + m)
    hi = np.ones(n + m)
    first = int(np.flatnonzero(weight)[0])
    hi[first] = 0  # symmetry: the first endpoint stays on side 0
    cons = [LinearConstraint(sp.vstack([a1, a2]).tocsr(), 0, np.inf), LinearConstraint(bal.tocsr(), half, half)]
    integrality = np.concatenate([np.ones(n), np.zeros(m)])
    t0 = time.monotonic()
    res = milp(c, constraints=cons, integrality=integrality, bounds=Bounds(lo, hi),
               options={"time_limit": time_limit, "disp": False})
    if res.x is None:
        return None
    side = np.rint(res.x[:n]).astype(np.int8)
    value = cut_of(g, side)
    proven = res.status == 0
    out = {"links": value, "method": "exact (MILP, HiGHS)" if proven else "MILP stopped at its time limit",
           "exact": proven, "seconds": round(time.monotonic() - t0, 3)}
    if not proven and getattr(res, "mip_dual_bound", None) is not None:
        out["lower_bound"] = int(np.ceil(res.mip_dual_bound - 1e-6))
    return out


def heuristic(g: Graph, seeds: int = 4) -> dict:
    """METIS 2-way partition of the whole graph with endpoint weights, rebalanced to exactly
    half the endpoints on each side by the cheapest moves; the best of `seeds` runs."""
    import pymetis

    edges, weight = _full_graph(g)
    n = g.fabric.num_nodes
    sym = (edges + edges.T).tocsr()
    xadj, adjncy, ew = sym.indptr, sym.indices, sym.data.astype(np.int64)
    # METIS needs positive vertex weights: switches weigh 1 only when nothing else is an endpoint
    vw = weight if weight.sum() else np.ones(n, dtype=np.int64)
    best = None
    for seed in range(seeds):
        opts = pymetis.Options(seed=seed, ufactor=1)
        _, parts = pymetis.part_graph(2, pymetis.CSRAdjacency(xadj, adjncy), vweights=vw, eweights=ew,
                                      options=opts)
        side = _rebalance(sym, np.asarray(parts, dtype=np.int8), weight)
        cut = cut_of(g, side)
        if best is None or cut < best:
            best = cut
    return {"links": int(best), "method": "METIS (pymetis) + exact rebalancing: an upper bound", "exact": False}


def _rebalance(sym: sp.csr_matrix, side: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Move endpoints from the heavier side, each time the one whose move adds the fewest cut links."""
    half = int(weight.sum()) // 2
    heavy_w = lambda: int(weight[side == 1].sum())
    while heavy_w() != half:
        heavy = 1 if heavy_w() > half else 0
        cand = np.flatnonzero((side == heavy) & (weight > 0))
        # gain of moving v: links to its own side become cut, links to the other side uncut
        same = np.asarray([sym.data[sym.indptr[v]:sym.indptr[v + 1]][side[sym.indices[sym.indptr[v]:sym.indptr[v + 1]]]
                                                                      == heavy].sum() for v in cand])
        deg = np.asarray(sym.sum(axis=1)).ravel()[cand]
        delta = same - (deg - same)
        side[cand[int(np.argmin(delta))]] = 1 - heavy
    return side


def bisection(g: Graph, mode: str = "auto", time_limit: float = 60.0) -> dict:
    """mode: 'auto' (closed form, else exact when small, else heuristic), 'exact', 'heuristic'."""
    fam = g.fabric.params.get("topology")
    closed = getattr(TOPOLOGIES.find(str(fam)), "bisection", None) if fam else None  # @topology(bisection=...)
    if mode != "heuristic" and closed is not None:
        out = {"links": int(closed(g.fabric.params)), "method": f"closed form ({fam})", "exact": True}
    elif mode == "exact" or (mode == "auto" and g.fabric.num_nodes <= EXACT_MAX_VERTICES):
        out = exact(g, time_limit) or heuristic(g)
        if not out["exact"]:
            h = heuristic(g)
            if h["links"] < out["links"]:
                out = {**h, **({"lower_bound": out["lower_bound"]} if "lower_bound" in out else {})}
    else:
        out = heuristic(g)
    total = g.fabric.num_links
    inter = g.kinds["switch-switch"]
    out["b_r"] = round(out["links"] / total, 6) if total else None
    out["B_r"] = round(out["links"] / inter, 6) if inter else None
    out["cables"], out["inter_switch_cables"] = total, inter
    return out
