"""End-to-end latency model of paper 004 (Skywalk), sections II-E and III.

latency(s, t) = injection + reception (300 ns) + switch delay (60 ns) x switches on the path
              + 5 ns/m x cable length along the path,
over switch-to-switch cables only (switch-to-node cables are left out, as in the paper), for every
ordered pair of distinct endpoint switches.

* NR (Nearest Routing): shortest-hop paths; among equal-hop paths the one with the least cable
  (the most favourable NR can be).
* FR (Fastest Routing): latency-weighted shortest paths (Dijkstra on 60 ns + 5 ns/m per cable).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ibtool.analyze.graph import Graph
from ibtool.errors import InputError

CHUNK = 512
# Both routings run as one Dijkstra each on an integer key that orders paths lexicographically:
#   NR: hops first, then cable length   key = hops * 2**32 + length in 0.1 mm
#   FR: latency first, then hops        key = latency in ps * 1024 + hops
# so hop count and latency come out of a single pass (all keys stay far below 2**53).
NR_HOP = float(2 ** 32)
NR_UNIT = 1e4  # 0.1 mm per metre
FR_HOP = 1024.0

@dataclass(frozen=True)
class LatencyModel:
    switch_ns: float = 60.0  # paper 004: "we set the switch delay to 60 ns"
    cable_ns_per_m: float = 5.0  # 5 ns/m
    endpoint_ns: float = 300.0  # injection + reception, 150 ns at each end

    def __post_init__(self):
        for k, v in asdict(self).items():
            if v < 0:
                raise InputError(f"latency model: {k} cannot be negative, got {v}")


DEFAULT_MODEL = LatencyModel()


def cable_graph(g: Graph, lengths: np.ndarray) -> sp.csr_matrix:
    """Switch graph weighted by cable length; parallel cables keep the shortest. NaN lengths
    (an end on the floor) are refused: the model needs every switch cable."""
    links = g.sw_links
    ln = lengths[links]
    if np.isnan(ln).any():
        li = int(links[np.flatnonzero(np.isnan(ln))[0]])
        f = g.fabric
        raise InputError(f"latency: cable {f.names[f.link_a[li]]} - {f.names[f.link_b[li]]} has no length "
                         f"(an end is not placed in the layout)")
    f = g.fabric
    a = g.vertex[np.asarray(f.link_a)[links]]
    b = g.vertex[np.asarray(f.link_b)[links]]
    r, c = np.minimum(a, b), np.maximum(a, b)
    # the shortest of parallel cables: sort by (pair, length) and keep each pair's first
    order = np.lexsort((ln, c, r))
    r, c, ln = r[order], c[order], ln[order]
    first = np.ones(len(r), dtype=bool)
    first[1:] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    r, c, ln = r[first], c[first], ln[first]
    return sp.coo_matrix((np.concatenate([ln, ln]), (np.concatenate([r, c]), np.concatenate([c, r]))),
                         shape=(g.n, g.n)).tocsr()


def latency(g: Graph, lengths: np.ndarray, model: LatencyModel | None = None, progress=None) -> dict:
    """Max and average latency (ns) over ordered pairs of distinct endpoint switches, NR and FR."""
    model = model or DEFAULT_MODEL
    lg = cable_graph(g, lengths)
    ends = g.endpoints
    fr_w = lg.copy()
    fr_w.data = np.rint((model.switch_ns + model.cable_ns_per_m * fr_w.data) * 1000.0) * FR_HOP + 1.0
    nr_w = lg.copy()
    nr_w.data = NR_HOP + np.rint(nr_w.data * NR_UNIT)
    acc = {"NR": [0.0, -1.0, 0, 0.0], "FR": [0.0, -1.0, 0, 0.0]}  # sum, max, pairs, hops-sum
    for lo in range(0, len(ends), CHUNK):
        src = ends[lo:lo + CHUNK]
        off = np.ones((len(src), len(ends)), dtype=bool)
        off[np.arange(len(src)), lo + np.arange(len(src))] = False
        # the matrices are symmetric, so directed=True walks both directions and is faster
        k_fr = csgraph.dijkstra(fr_w, directed=True, indices=src)[:, ends][off]
        k_nr = csgraph.dijkstra(nr_w, directed=True, indices=src)[:, ends][off]
        if np.isinf(k_fr).any():
            raise InputError("latency: the switch graph is not connected")
        hops_fr = np.mod(k_fr, FR_HOP)
        lat_fr = model.endpoint_ns + model.switch_ns + (k_fr - hops_fr) / FR_HOP / 1000.0
        hops_nr = np.floor(k_nr / NR_HOP)
        metres_nr = (k_nr - hops_nr * NR_HOP) / NR_UNIT
        lat_nr = model.endpoint_ns + model.switch_ns * (hops_nr + 1) + model.cable_ns_per_m * metres_nr
        for key, lat, hops in (("NR", lat_nr, hops_nr), ("FR", lat_fr, hops_fr)):
            acc[key][0] += float(lat.sum())
            acc[key][1] = max(acc[key][1], float(lat.max()) if lat.size else 0.0)
            acc[key][2] += int(lat.size)
            acc[key][3] += float(hops.sum())
        if progress and len(ends) > 4 * CHUNK:
            progress(f"latency: {min(lo + CHUNK, len(ends)):,}/{len(ends):,} sources")
    out = {"model": asdict(model), "pairs": acc["NR"][2], "excluded": "switch-to-node cables (paper 004)"}
    for key, (s, mx, n, hs) in acc.items():
        out[key] = {"max_ns": round(mx, 3), "average_ns": round(s / n, 3) if n else 0.0,
                    "average_hops": round(hs / n, 4) if n else 0.0}
    return out
