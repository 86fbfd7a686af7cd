"""Hop distances: switch graph and HCA to HCA, by sparse BFS over chunks of sources (scipy
csgraph), so memory stays at one chunk of rows whatever the fabric size."""

from __future__ import annotations

import numpy as np

from ibtool.analyze.graph import Graph
from ibtool.hops import bfs_hops

CHUNK = 256


def hop_rows(g: Graph, sources: np.ndarray) -> np.ndarray:
    """Hop distances from `sources` (switch vertices) to every switch; -1 = unreachable."""
    return bfs_hops(g.adj.indptr, g.adj.indices, sources)


def distances(g: Graph, progress=None) -> dict:
    """Diameter, average distance and histogram of the switch graph (ordered pairs of distinct
    endpoint switches) and of HCA pairs (hops counted in links, the two HCA links included)."""
    ends = g.endpoints
    n_end = len(ends)
    w = g.hcas_on[ends].astype(np.float64)  # HCAs per endpoint switch
    sw_hist = np.zeros(1, dtype=np.int64)
    hca_hist = np.zeros(1, dtype=np.float64)
    unreachable = 0
    worst: list[tuple[int, int]] = []
    diameter = -1
    for lo in range(0, n_end, CHUNK):
        src = ends[lo:lo + CHUNK]
        d = hop_rows(g, src)[:, ends]  # chunk x endpoints
        unreachable += int((d < 0).sum())
        ok = d >= 0
        sw_hist = _add(sw_hist, np.bincount(d[ok], minlength=1))
        if w.sum():
            ww = np.outer(w[lo:lo + CHUNK], w)
            rows = np.arange(len(src))
            ww[rows, lo + rows] = w[lo:lo + CHUNK] * (w[lo:lo + CHUNK] - 1)  # same switch: distinct HCAs
            hca_hist = _add(hca_hist, np.bincount(d[ok] + 2, weights=ww[ok]))
        m = int(d.max())
        if m > diameter:
            diameter, worst = m, []
        if m == diameter and len(worst) < 8:
            r, c = np.nonzero(d == m)
            worst += [(int(src[i]), int(ends[j])) for i, j in zip(r[:8], c[:8])]
        if progress and n_end > 4 * CHUNK:
            progress(f"distances: {min(lo + CHUNK, n_end):,}/{n_end:,} sources")
    sw_hist[0] -= n_end  # the pairs (s, s)
    out = {"switch": _stats(sw_hist, unreachable), "worst_pairs": worst[:8]}
    out["switch"]["pairs_of"] = "endpoint switches" if len(ends) < g.n else "all switches"
    if w.sum():
        hist = np.rint(hca_hist).astype(np.int64)
        out["hca"] = _stats(hist, 0)
    return out


def _add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if len(b) > len(a):
        a = np.concatenate([a, np.zeros(len(b) - len(a), dtype=a.dtype)])
    a[:len(b)] += b
    return a


def _stats(hist: np.ndarray, unreachable: int) -> dict:
    hist = np.trim_zeros(hist, "b")
    pairs = int(hist.sum())
    hops = np.arange(len(hist))
    return {"diameter": int(len(hist) - 1) if pairs else 0,
            "average": round(float((hops * hist).sum() / pairs), 6) if pairs else 0.0,
            "pairs": pairs, "unreachable_pairs": unreachable,
            "histogram": {str(h): int(c) for h, c in enumerate(hist) if c}}
