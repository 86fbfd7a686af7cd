"""Path diversity between switch pairs: the number of shortest paths (parallel links counted as
distinct paths, as routing sees them) and the number of edge-disjoint paths (max flow)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_flow

from ibtool.analyze.distances import hop_rows
from ibtool.analyze.graph import Graph


def shortest_path_counts(g: Graph, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hops, counts): for each source (rows) and switch (columns), the hop distance and the
    number of shortest paths, by BFS levels: sigma(level d) = A @ sigma(level d-1) on level d."""
    dist = hop_rows(g, sources)  # sources x n
    a = g.adj.astype(np.float64)
    sigma = np.zeros((g.n, len(sources)))
    sigma[sources, np.arange(len(sources))] = 1.0
    d_t = dist.T
    for level in range(1, int(dist.max()) + 1 if dist.size else 0):
        prev = np.where(d_t == level - 1, sigma, 0.0)
        nxt = a @ prev
        sigma = np.where(d_t == level, nxt, sigma)
    return dist, sigma.T


def edge_disjoint(g: Graph, pairs: list[tuple[int, int]]) -> list[int]:
    """Edge-disjoint paths between each pair (undirected links of capacity = multiplicity)."""
    cap = sp.csr_matrix(g.adj, dtype=np.int32)
    return [int(maximum_flow(cap, s, t).flow_value) if s != t else 0 for s, t in pairs]


def diversity(g: Graph, samples: int, seed: int, worst: list[tuple[int, int]]) -> dict:
    ends = g.endpoints
    rng = np.random.default_rng(seed)
    pairs: list[tuple[int, int]] = []
    self_pairs = repeated = 0
    if len(ends) >= 2:
        src = rng.choice(ends, size=samples)
        dst = rng.choice(ends, size=samples)
        seen = set()
        for s, t in zip(src.tolist(), dst.tolist()):
            if s == t:
                self_pairs += 1
            elif (s, t) in seen:
                repeated += 1
            else:
                seen.add((s, t))
                pairs.append((s, t))
    out = {"sampled": _pairs(g, pairs), "worst": _pairs(g, worst)}
    # drawn with replacement: say what was asked and why fewer pairs were measured
    out["sampled"].update(seed=seed, asked=samples if len(ends) >= 2 else 0, self_pairs=self_pairs,
                          repeated_pairs=repeated)
    return out


def _pairs(g: Graph, pairs: list[tuple[int, int]]) -> dict:
    if not pairs:
        return {"pairs": 0}
    sources = np.asarray(sorted({s for s, _ in pairs}))
    row = {int(s): i for i, s in enumerate(sources)}
    dist, sigma = shortest_path_counts(g, sources)
    counts = np.asarray([sigma[row[s], t] for s, t in pairs])
    hops = np.asarray([dist[row[s], t] for s, t in pairs])
    disjoint = np.asarray(edge_disjoint(g, pairs))
    names = g.fabric.names
    detail = [{"a": names[g.switches[s]], "b": names[g.switches[t]], "hops": int(h), "shortest_paths": int(c),
               "edge_disjoint": int(e)} for (s, t), h, c, e in zip(pairs, hops, counts, disjoint)]
    return {"pairs": len(pairs),
            "shortest_paths": {"min": int(counts.min()), "average": round(float(counts.mean()), 3),
                               "max": int(counts.max())},
            "edge_disjoint": {"min": int(disjoint.min()), "average": round(float(disjoint.mean()), 3),
                              "max": int(disjoint.max())},
            "detail": detail[:16]}
