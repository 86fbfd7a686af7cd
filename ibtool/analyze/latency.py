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

import multiprocessing
import os
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ibtool.analyze.graph import Graph
from ibtool.errors import InputError

CHUNK = 512
# Both routings run as one Dijkstra each on an integer key that orders paths lexicographically:
#   NR: hops first, then cable length   key = hops * 2**36 + length in 0.1 mm
#   FR: latency first, then hops        key = latency in ps * 1024 + hops
# so hop count and latency come out of a single pass (all keys stay far below 2**53).
NR_HOP = float(2 ** 36)  # room for 6,871 km of cable on a path and 131,072 hops
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
    out = {"model": asdict(model)}
    out.update(pair_latency(cable_graph(g, lengths), g.endpoints, model, progress=progress))
    out["excluded"] = "switch-to-node cables (paper 004)"
    return out


def pair_latency(cables: sp.csr_matrix, ends: np.ndarray, model: LatencyModel = DEFAULT_MODEL,
                 routings: tuple[str, ...] = ("NR", "FR"), workers: int | None = None, progress=None) -> dict:
    """The one implementation of the model: max and average latency (ns) and hops over ordered
    pairs of distinct switches in `ends`, for each of `routings` ("NR", "FR").

    `cables` is the symmetric switch x switch matrix of cable lengths in metres (one entry per
    adjacent pair: the shortest of parallel cables). Sources go in chunks to `workers` forked
    processes (default: one per CPU above 4,096 endpoints; scipy's Dijkstra holds the GIL, so
    threads would not help). `progress(msg)` hears of each chunk on big graphs."""
    bad = set(routings) - {"NR", "FR"}
    if bad or not routings:
        raise InputError(f"latency: routing must be NR or FR, got {', '.join(sorted(bad)) or 'none'}")
    weights = {}
    if "FR" in routings:
        w = cables.copy()
        w.data = np.rint((model.switch_ns + model.cable_ns_per_m * w.data) * 1000.0) * FR_HOP + 1.0
        weights["FR"] = w
    if "NR" in routings:
        w = cables.copy()
        w.data = NR_HOP + np.rint(w.data * NR_UNIT)
        weights["NR"] = w
    ends = np.asarray(ends, dtype=np.int64)
    chunks = [(lo, min(lo + CHUNK, len(ends))) for lo in range(0, len(ends), CHUNK)]
    if workers is None:
        workers = (os.cpu_count() or 1) if len(ends) > 4096 else 1
    _SHARED.update(weights=weights, ends=ends, model=model, every=np.array_equal(ends, np.arange(cables.shape[0])))
    acc = {k: [0.0, -1.0, 0, 0.0, 0.0] for k in weights}  # latency sum, max, pairs, hops sum, max
    pool = multiprocessing.get_context("fork").Pool(min(workers, len(chunks))) if workers > 1 and len(chunks) > 1 \
        else None
    try:
        for k, part in enumerate(pool.imap(_chunk, chunks) if pool else map(_chunk, chunks)):
            if part is None:
                raise InputError("latency: the switch graph is disconnected: some pairs have no path")
            for key, (s, mx, n, hs, hm) in part.items():
                a = acc[key]
                a[0] += s
                a[1] = max(a[1], mx)
                a[2] += n
                a[3] += hs
                a[4] = max(a[4], hm)
            if progress and len(chunks) > 4:
                progress(f"latency: {chunks[k][1]:,}/{len(ends):,} sources")
    finally:
        if pool:
            pool.terminate()
        _SHARED.clear()
    out = {"pairs": len(ends) * (len(ends) - 1)}
    for key in routings:
        s, mx, n, hs, hm = acc[key]
        out[key] = {"max_ns": round(max(mx, 0.0), 3), "average_ns": round(s / n, 3) if n else 0.0,
                    "max_hops": int(hm) if n else 0, "average_hops": round(hs / n, 4) if n else 0.0}
    return out


_SHARED: dict = {}  # what a forked worker reads (inherited, not pickled)


def _chunk(bounds: tuple[int, int]) -> dict | None:
    lo, hi = bounds
    ends, model = _SHARED["ends"], _SHARED["model"]
    src = ends[lo:hi]
    every = _SHARED["every"]  # all switches, in order: no column copy
    self_ns = model.endpoint_ns + model.switch_ns  # a source to itself: key 0; taken out of the sums below
    out = {}
    for key, w in _SHARED["weights"].items():
        # the matrices are symmetric, so directed=True walks both directions and is faster
        k = csgraph.dijkstra(w, directed=True, indices=src)
        if not every:
            k = k[:, ends]
        if np.isinf(k).any():
            return None  # raised by the caller: an exception from a forked worker may not pickle
        # in place on the (sources x endpoints) block: it is the biggest array here
        if key == "FR":
            hops = np.mod(k, FR_HOP)
            k -= hops
            k *= 1.0 / (FR_HOP * 1000.0)  # ns of switch and cable delay beyond the first switch
        else:
            hops = np.floor(k / NR_HOP)
            k -= hops * NR_HOP  # 0.1 mm of cable
            k *= model.cable_ns_per_m / NR_UNIT
            k += model.switch_ns * hops
        # lat = self_ns + k. The (source, source) entries are the least latency (k = 0, 0 hops):
        # they change no max and add exactly self_ns each to the sum
        pairs = k.size - len(src)
        out[key] = (float(k.sum()) + pairs * self_ns, float(k.max()) + self_ns if pairs else -1.0, pairs,
                    float(hops.sum()), float(hops.max()) if pairs else 0.0)
    return out
