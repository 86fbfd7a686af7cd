"""Hop distances between switches: the one breadth-first search that `analyze` (diameter, path
diversity), `verify routes` (shortest lengths, the certificate of minimal routes) and hdor (the
hops inside each indirect network, docs/hdor.md section 4) use.

The graph comes as neighbour lists in CSR form (`indptr`, `indices`: the neighbours of vertex v
are indices[indptr[v]:indptr[v + 1]], every link listed from both ends, as
`scipy.sparse.csr_matrix` keeps a symmetric adjacency). All sources advance together, one numpy
step per BFS level, their frontiers bit-packed (8 sources a byte), so all pairs of 20,000
switches fit in memory and a level costs one gather and one OR-reduction over the links.
"""

from __future__ import annotations

import numpy as np


def bfs_hops(indptr: np.ndarray, indices: np.ndarray, sources: np.ndarray | None = None) -> np.ndarray:
    """Hops from each of `sources` (default: every vertex) to every vertex: int16 array
    [source, vertex], -1 where unreachable."""
    n = len(indptr) - 1
    src_v = np.arange(n) if sources is None else np.asarray(sources, dtype=np.int64)
    k = len(src_v)
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    dist = np.full((n, k), -1, dtype=np.int16)  # dist[vertex, source]
    nbytes = (k + 7) // 8
    cols = np.arange(k)
    front = np.zeros((n, nbytes), dtype=np.uint8)  # bit j of row v: source j reached v last level
    np.bitwise_or.at(front, (src_v, cols >> 3), (0x80 >> (cols & 7)).astype(np.uint8))
    seen = front.copy()
    dist[src_v, cols] = 0
    has = np.diff(indptr) > 0
    starts = indptr[:-1][has]
    level = 0
    while len(indices):
        level += 1
        nxt = np.zeros((n, nbytes), dtype=np.uint8)
        nxt[has] = np.bitwise_or.reduceat(front[indices], starts, axis=0)
        nxt &= ~seen
        if not nxt.any():
            break
        seen |= nxt
        dist[np.unpackbits(nxt, axis=1, count=k).astype(bool)] = level
        front = nxt
    return dist.T.copy()


def upstream(table: np.ndarray, nxt: np.ndarray, adj_ptr: np.ndarray, adj_idx: np.ndarray, alive: np.ndarray,
             rows: np.ndarray, lids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries of forwarding tables whose route passes one of the given entries (rows, lids),
    those included: a breadth-first search backwards over the routes, from an entry (r, L) to the
    switches next to r (`adj_ptr`, `adj_idx`: CSR, as above) whose next hop for L is r.

    table[row, LID]: the port; nxt[row, port]: the row of the switch behind it, -1 for none; only
    `alive` rows are entered. Returns (rows, LIDs), the given entries first. What-if asks it which
    routes a failure touches: the cost is the number of entries found, not the size of the tables."""
    R, NL = table.shape
    seen = np.zeros(R * NL, dtype=bool)
    fr, fl = np.asarray(rows, dtype=np.int64), np.asarray(lids, dtype=np.int64)
    seen[fr * NL + fl] = True
    out_r, out_l = [fr], [fl]
    tf, nf = table.ravel(), nxt.ravel()
    width = nxt.shape[1]
    while len(fr):
        deg = adj_ptr[fr + 1] - adj_ptr[fr]
        at = np.repeat(adj_ptr[fr] - np.cumsum(deg) + deg, deg) + np.arange(int(deg.sum()))
        cx, cl, cr = adj_idx[at], np.repeat(fl, deg), np.repeat(fr, deg)
        hit = (nf[cx * width + tf[cx * NL + cl]] == cr) & alive[cx]
        cx, cl = cx[hit], cl[hit]
        new = ~seen[cx * NL + cl]
        fr, fl = cx[new], cl[new]
        seen[fr * NL + fl] = True
        out_r.append(fr)
        out_l.append(fl)
    return np.concatenate(out_r), np.concatenate(out_l)


def cut_off(n: int, link_a, link_b, nodes, links, keep: int) -> tuple[set[int], set[int]]:
    """(nodes, links) that fail with the given ones: the nodes no longer connected to node `keep`
    (the subnet manager's: what its discovery finds is the rest) and every link of a failed node.
    n: the number of nodes; link_a, link_b: each link's ends."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    a, b = np.asarray(link_a, dtype=np.int64), np.asarray(link_b, dtype=np.int64)
    live = np.ones(len(a), dtype=bool)
    live[list(links)] = False
    dead = np.zeros(n, dtype=bool)
    dead[list(nodes)] = True
    live &= ~dead[a] & ~dead[b]
    g = coo_matrix((np.ones(int(live.sum())), (a[live], b[live])), shape=(n, n))
    comp = connected_components(g, directed=False)[1]
    dead |= comp != comp[keep]
    return set(np.flatnonzero(dead).tolist()), set(links) | set(np.flatnonzero(dead[a] | dead[b]).tolist())
