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


class Pieces:
    """What failing nodes and links cut off from one node (the subnet manager's: what its discovery
    finds is the rest), for many failures of one graph: its links as CSR, built once.
    n: the number of nodes; link_a, link_b: each link's ends."""

    def __init__(self, n: int, link_a, link_b):
        a, b = np.asarray(link_a, dtype=np.int64), np.asarray(link_b, dtype=np.int64)
        self.n, self.a, self.b = n, a, b
        ends = np.concatenate([a, b])
        order = np.argsort(ends, kind="stable")
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(ends, minlength=n))]).astype(np.int64)
        self.nbr = np.concatenate([b, a])[order]  # the node at the other end
        self.via = np.concatenate([np.arange(len(a)), np.arange(len(a))])[order]  # by which link

    def cut_off(self, nodes, links, keep: int) -> tuple[set[int], set[int]]:
        """(nodes, links) that fail with the given ones: the nodes no longer connected to `keep`
        and every link of a failed node (a breadth-first search from `keep`, one numpy step a level)."""
        dead_link = np.zeros(len(self.a), dtype=bool)
        dead_link[list(links)] = True
        seen = np.zeros(self.n, dtype=bool)
        seen[list(nodes)] = True  # never entered
        alive_keep = not seen[keep]
        front = np.asarray([keep] if alive_keep else [], dtype=np.int64)
        seen[keep] = True
        reached = np.zeros(self.n, dtype=bool)
        reached[front] = True
        while len(front):
            deg = self.ptr[front + 1] - self.ptr[front]
            at = np.repeat(self.ptr[front] - np.cumsum(deg) + deg, deg) + np.arange(int(deg.sum()))
            nxt = self.nbr[at][~dead_link[self.via[at]]]
            nxt = np.unique(nxt[~seen[nxt]])
            seen[nxt] = True
            reached[nxt] = True
            front = nxt
        dead = ~reached
        return set(np.flatnonzero(dead).tolist()), set(links) | set(np.flatnonzero(dead[self.a] | dead[self.b]).tolist())
