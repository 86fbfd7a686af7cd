"""Routes traced hop by hop from the forwarding tables, over all (origin switch, LID) pairs at
once: one numpy step per hop over every pair still in flight, with the VL of each hop when SL2VL
tables are given. `path_of` walks one route for messages.
"""

from __future__ import annotations

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH
from ibtool.formats.lft import NO_ROUTE
from ibtool.verify.bound import K_CA, K_LOCAL, K_NOENTRY, K_SWITCH, Bound, lid_name, port_tables

ACTIVE, DELIVERED, NO_ENTRY, DEAD_PORT, LOOP, WRONG, NO_LID = 0, 1, 2, 3, 4, 5, 6
STATUS = {DELIVERED: "delivered", NO_ENTRY: "black hole (no LFT entry)",
          DEAD_PORT: "black hole (port not cabled or not present)", LOOP: "loop",
          WRONG: "delivered to the wrong port", NO_LID: "no LID (port not addressed)"}
NSTATUS = len(STATUS) + 1


class VLMap:
    """SL2VL as an array: table[sl, row, in_port, out_port] (switches) for SL 0 or, with path SLs,
    all 16; and each CA's VL for SL 0."""

    def __init__(self, b: Bound, sl2vl, all_sls: bool = False):
        f = b.fabric
        maxp = int(b.nports.max()) + 1
        nsl = 16 if all_sls else 1
        self.table = np.zeros((nsl, len(b.sw_nodes), maxp, maxp), dtype=np.int8)
        self.ca = np.zeros(f.num_nodes, dtype=np.int8)
        unknown = self.fill(b, sl2vl)
        if unknown and len(unknown) * 2 > len(sl2vl):
            g = unknown[0]
            raise InputError(f"node {g:#018x} is not in the fabric ({len(unknown)} of {len(sl2vl)} nodes are "
                             f"unknown): an SL2VL dump of another fabric?", path=sl2vl.path,
                             line=sl2vl.lines.get(g))
        self.nvl = int(max(self.table.max(initial=0), self.ca.max(initial=0))) + 1
        self.uniform = None  # the one VL every hop uses, if so (SL 0 only: with path SLs the VL varies by path)
        if not all_sls:
            used = np.union1d(np.unique(self.table), np.unique(self.ca[b.types == CA]))
            self.uniform = int(used[0]) if len(used) == 1 else None


    def fill(self, b: Bound, sl2vl) -> list[int]:
        """Set the rows `sl2vl` lists; returns the GUIDs it names that the fabric has not. `.set`:
        the (switch row, in, out) and CA nodes set, for whoever reuses the map."""
        f = b.fabric
        nsl, maxp = self.table.shape[0], self.table.shape[2]
        unknown, at, vals, cas = [], [], [], []
        by_port = None
        for g, rows in sl2vl.items():
            i = f.by_guid(g)
            if i is None:
                if by_port is None:  # OpenSM names a CA's block by its port GUID, a switch by its node GUID
                    by_port = {f.port_guid(c, p): c for (c, p) in f.port_lids if f.types[c] == CA}
                i = by_port.get(g)
            if i is None:
                unknown.append(g)
                continue
            if b.types[i] == SWITCH:
                r = int(b.row[i])
                for (pi, po), vls in rows.items():
                    if pi < maxp and po < maxp:
                        at.append((r, pi, po))
                        vals.append(vls[:nsl])
            else:
                for vls in rows.values():
                    self.ca[i] = vls[0]
                cas.append(i)
        r, pi, po = np.asarray(at, dtype=np.intp).reshape(-1, 3).T
        if at:  # one assignment for every row set
            self.table[:, r, pi, po] = np.asarray(vals, dtype=np.int8).T
        self.set = (r, pi, po, cas)
        return unknown


def trace(b: Bound, origins: np.ndarray, lids: np.ndarray, *, cap: int | None = None, hop_cb=None,
          vl: VLMap | None = None, dims: tuple | None = None, free_hops: int = 32, sl: np.ndarray | None = None):
    """Walk pairs (origin switch node, LID) to the end. Returns (status, hops, end node, dim_violation).

    hop_cb(idx, cur, slot, nxt, vl_in, vl_out, in_slot) is called after each hop between switches
    with the pair indices that made it; `in_slot` is -1 on the first hop.

    Loops: after `free_hops` hops the survivors are checked with Brent's cycle finding (a mark
    moved at powers of two); routing is by destination, so coming back to a switch is a loop.
    """
    kind_t, node_t, pport_t, slot_t = port_tables(b)
    width = b.lft.shape[1]
    lft_flat = b.lft.ravel()
    it = np.int32 if b.lft.size < 2**31 else np.int64
    rowW = np.where(b.row >= 0, b.row.astype(np.int64) * width, 0).astype(it)
    rowP = np.where(b.row >= 0, b.row.astype(np.int64) * 256, 0).astype(it)
    n = len(origins)
    status = np.zeros(n, dtype=np.int8)
    hops = np.zeros(n, dtype=np.int16)
    end = np.full(n, -1, dtype=np.int32)
    dviol = np.zeros(n, dtype=bool) if dims is not None else None
    cap = cap or (len(b.sw_nodes) + 2)
    idx = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    cur = np.asarray(origins, dtype=np.int32)
    L = np.asarray(lids, dtype=np.int32)
    need_in = hop_cb is not None or vl is not None
    in_slot = np.full(n, -1, dtype=slot_t.dtype) if need_in else None
    mark = None
    vlc = np.zeros(n, dtype=np.int8) if vl is not None else None
    last = None
    if dims is not None:
        dim, router = dims
        last = np.full(n, -1, dtype=np.int8)
    h = 0
    while len(idx):
        port = lft_flat[rowW[cur] + L]
        k = rowP[cur] + port
        kd = kind_t[k]
        fin = np.flatnonzero(kd)  # K_SWITCH is 0: anything else ends here
        if len(fin):
            fk, fcur, fL, fi = kd[fin], cur[fin], L[fin], idx[fin]
            fnode = node_t[k[fin]]
            st = np.full(len(fin), DEAD_PORT, dtype=np.int8)
            st[fk == K_NOENTRY] = NO_ENTRY
            loc = fk == K_LOCAL
            st[loc] = np.where(b.own_node[fL[loc]] == fcur[loc], DELIVERED, WRONG)
            ca = fk == K_CA
            okc = (b.own_node[fL[ca]] == fnode[ca]) & (b.own_port[fL[ca]] == pport_t[k[fin][ca]])
            st[ca] = np.where(okc, DELIVERED, WRONG)
            status[fi] = st
            end[fi] = np.where(ca, fnode, fcur)
            hops[fi] = h + ca
            if len(fin) == len(kd):
                break
            idx, cur, L, k, port, in_slot, vlc, last, mark = _keep(
                kd == K_SWITCH, idx, cur, L, k, port if vl is not None else None, in_slot, vlc, last, mark)
        nxt = node_t[k]
        slot = slot_t[k]
        if vl is not None:
            inport = np.where(in_slot >= 0, b.peer_port[np.maximum(in_slot, 0)], b.ca_in_port[cur])
            vout = vl.table[0 if sl is None else sl[idx], b.row[cur], inport, port]
        else:
            vout = None
        if dims is not None:
            entering = router[cur] & (dim[nxt] >= 0)
            dv = entering & (dim[nxt] <= last)
            if dv.any():
                dviol[idx[dv]] = True
            last = np.where(entering, dim[nxt], last).astype(np.int8)
        if hop_cb is not None:
            hop_cb(idx, cur, slot, nxt, vlc, vout, in_slot)
        h += 1
        cur = nxt
        if need_in:
            in_slot = slot
        if vl is not None:
            vlc = vout
        if h < free_hops:
            continue
        if mark is None:
            mark = cur.copy()
            continue
        looped = cur == mark
        if h & (h - 1) == 0:  # Brent: move the mark at powers of two
            mark = cur.copy()
        if looped.any() or h >= cap:
            stop = looped | (h >= cap)
            status[idx[stop]] = LOOP
            end[idx[stop]] = cur[stop]
            hops[idx[stop]] = h
            idx, cur, L, mark, in_slot, vlc, last = _keep(~stop, idx, cur, L, mark, in_slot, vlc, last)
    return status, hops, end, dviol


def _keep(keep: np.ndarray, *arrays):
    """The pairs still in flight: every per-pair array filtered by `keep` (None stays None)."""
    return tuple(None if a is None else a[keep] for a in arrays)


def path_of(b: Bound, origin: int, lid: int, limit: int = 64) -> tuple[list[tuple[int, int]], int]:
    """The hops of one route for printing: [(node, egress port)], and its status."""
    out = []
    cur = origin
    seen = set()
    for _ in range(limit):
        port = int(b.lft[b.row[cur], lid])
        out.append((cur, port))
        if port == NO_ROUTE:
            return out, NO_ENTRY
        if port == 0:
            return out, DELIVERED if b.own_node[lid] == cur else WRONG
        if port > b.nports[cur] or b.peer[b.offset[cur] + port] < 0:
            return out, DEAD_PORT
        slot = int(b.offset[cur] + port)
        nxt = int(b.peer[slot])
        if b.types[nxt] == CA:
            ok = b.own_node[lid] == nxt and b.own_port[lid] == b.peer_port[slot]
            out.append((nxt, int(b.peer_port[slot])))
            return out, DELIVERED if ok else WRONG
        if nxt in seen:
            out.append((nxt, -1))
            return out, LOOP
        seen.add(cur)
        cur = nxt
    return out, LOOP


def fmt_path(b: Bound, hops: list[tuple[int, int]]) -> str:
    names = b.fabric.names
    parts = []
    for node, port in hops:
        parts.append(f"{names[node]}" + (f"[{port}]" if port not in (-1, NO_ROUTE) else
                                          ("[no entry]" if port == NO_ROUTE else " (again)")))
    return " -> ".join(parts)


def route_example(b: Bound, origin: int, lid: int) -> str:
    hops, st = path_of(b, origin, lid)
    return f"{b.fabric.names[origin]} to {lid_name(b, lid)}: {fmt_path(b, hops)}"
