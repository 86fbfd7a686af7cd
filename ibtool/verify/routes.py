"""Every route of a fabric, traced from its forwarding tables: delivery, length, dimension order,
deadlock freedom (channel dependency graph per VL) and balance.

Routing in InfiniBand is by destination: a packet for LID L at switch W leaves by LFT_W[L], so
the route from any source port to L is the route from the switch it is cabled to. We trace
(origin switch, destination LID) pairs for every switch and every assigned LID (each LID of an
LMC range) at once, one hop per numpy step over all pairs still in flight, and weigh each pair
by the source ports behind it (the switch's own port 0 and the CA ports cabled to it). So the
counts are over (source port, destination LID) pairs, as a per-pair trace would give them.

Channels are directed links, named by the egress slot of `Fabric.ports()`. The channel
dependency graph (Dally & Seitz) gets an edge (c_in, vl_in) -> (c_out, vl_out) wherever a CA-to-CA
route arrives on c_in and leaves on c_out; the VL on each hop comes from the SL2VL dump when given
(SL 0, the SL every path uses without a path-SL engine), else VL 0. The fabric is free of credit
loops when this graph is acyclic; otherwise a concrete cycle is printed. As ibdmchk does, traffic
to switch LIDs (management) is left out of the deadlock analysis.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats.lft import NO_ROUTE, Tables

ACTIVE, DELIVERED, NO_ENTRY, DEAD_PORT, LOOP, WRONG, NO_LID = 0, 1, 2, 3, 4, 5, 6
STATUS = {DELIVERED: "delivered", NO_ENTRY: "black hole (no LFT entry)",
          DEAD_PORT: "black hole (port not cabled or not present)", LOOP: "loop",
          WRONG: "delivered to the wrong port", NO_LID: "no LID (port not addressed)"}
NSTATUS = len(STATUS) + 1
EXAMPLES = 5
PAIRS_PER_CHUNK = 1_000_000  # small enough for the temporaries to stay in cache


@dataclass
class Bound:
    """The fabric and its tables as arrays: what the tracer walks."""

    fabric: Fabric
    sw_nodes: np.ndarray  # switch node indices, row order of `lft`
    row: np.ndarray  # node -> row in lft (-1 for CAs)
    lft: np.ndarray  # (switches, max_lid + 1) uint8
    offset: np.ndarray
    peer: np.ndarray
    peer_port: np.ndarray
    types: np.ndarray
    nports: np.ndarray
    own_node: np.ndarray  # LID -> node (-1 unassigned)
    own_port: np.ndarray  # LID -> port
    base: np.ndarray  # LID -> is the base LID of its port
    lids: np.ndarray  # every assigned LID, ascending
    att_sw: np.ndarray  # LID -> the switch a CA port is cabled to (-1 for switch LIDs / uncabled)
    ca_ports: np.ndarray  # per switch node: CA ports (with LIDs) cabled to it
    ca_in_port: np.ndarray  # per switch node: the lowest switch port facing such a CA (0 if none)
    att_port: np.ndarray  # LID -> the switch port a CA port is cabled to (0 for switch LIDs / uncabled)
    missing_tables: list[int] = field(default_factory=list)
    top_missing: int = 0  # the top LID, left out of every switch's table by dump_fts (0: not so)
    unaddressed: list[tuple[int, int]] = field(default_factory=list)  # cabled ports without a LID
    _ptab: tuple | None = None  # _port_tables(), built once


def bind(fabric: Fabric, tables: Tables) -> Bound:
    """Check that tables and fabric belong together and build the arrays; InputError if they do not."""
    path = tables.path or "LFT dump"
    if not fabric.port_lids:
        raise InputError("the fabric has no LIDs (a plan, not an ibnetdiscover dump of a running fabric?)",
                         path=None)
    unknown = [g for g in tables.lft if fabric.by_guid(g) is None or not fabric.is_switch(fabric.by_guid(g))]
    if unknown:
        g = min(unknown, key=lambda x: tables.lines.get(x, 0))
        raise InputError(f"switch {g:#018x} {tables.names.get(g, '')!r} is not a switch of the fabric "
                         f"({len(unknown)} of {len(tables.lft)} tables are unknown): forwarding tables of "
                         f"another fabric?", path=path, line=tables.lines.get(g))
    sw_nodes = np.asarray([i for i in range(fabric.num_nodes) if fabric.types[i] == SWITCH], dtype=np.int32)
    owners = fabric.lid_owners()
    if len(owners) != sum(1 << lmc for _, lmc in fabric.port_lids.values()):
        _duplicate_lid(fabric)
    top = max(owners)
    guids = [fabric.guids[i] for i in sw_nodes]
    lft = tables.matrix(guids, top)
    missing = [int(i) for i, g in zip(sw_nodes, guids) if g not in tables.lft]
    row = np.full(fabric.num_nodes, -1, dtype=np.int32)
    row[sw_nodes] = np.arange(len(sw_nodes), dtype=np.int32)
    # Each switch routes its own LID to port 0: if most do not, the tables are of another run.
    own_bad = []
    for i in sw_nodes:
        lp = fabric.port_lids.get((int(i), 0))
        g = fabric.guids[i]
        if lp and g in tables.lft and lft[row[i], lp[0]] not in (0,):
            own_bad.append(int(i))
    have = sum(1 for i in sw_nodes if fabric.guids[i] in tables.lft and (int(i), 0) in fabric.port_lids)
    if have and len(own_bad) * 2 > have:
        i = own_bad[0]
        g = fabric.guids[i]
        lid = fabric.port_lids[(i, 0)][0]
        raise InputError(f"switch {fabric.names[i]!r} ({g:#018x}) has LID {lid} in the fabric but its table "
                         f"does not route that LID to port 0 (nor do {len(own_bad) - 1} other switches): the tables "
                         f"and the fabric dump are from different runs", path=path, line=tables.lines.get(g))
    ports = fabric.ports()
    own_node = np.full(top + 1, -1, dtype=np.int32)
    own_port = np.full(top + 1, -1, dtype=np.int32)
    base = np.zeros(top + 1, dtype=bool)
    for (node, port), (lid, lmc) in fabric.port_lids.items():
        own_node[lid:lid + (1 << lmc)] = node
        own_port[lid:lid + (1 << lmc)] = port
        base[lid] = True
    lids = np.flatnonzero(own_node >= 0).astype(np.int32)
    types = np.asarray(fabric.types, dtype=np.int8)
    att = np.full(top + 1, -1, dtype=np.int32)
    att_port = np.zeros(top + 1, dtype=np.int16)
    ca_ports = np.zeros(fabric.num_nodes, dtype=np.int64)
    ca_in = np.zeros(fabric.num_nodes, dtype=np.int32)
    for (node, port), (lid, lmc) in fabric.port_lids.items():
        if types[node] != CA:
            continue
        p = fabric.peer(node, port)
        if p is None or types[p[0]] != SWITCH:
            continue
        att[lid:lid + (1 << lmc)] = p[0]
        att_port[lid:lid + (1 << lmc)] = p[1]
        ca_ports[p[0]] += 1
        if ca_in[p[0]] == 0 or p[1] < ca_in[p[0]]:
            ca_in[p[0]] = p[1]
    return Bound(fabric, sw_nodes, row, lft, ports.offset, ports.peer, ports.peer_port, types,
                 np.asarray(fabric.nports, dtype=np.int32), own_node, own_port, base, lids, att, ca_ports,
                 ca_in, att_port, missing, _top_missing(tables, lft, top), _unaddressed(fabric))


def _top_missing(tables: Tables, lft: np.ndarray, top: int) -> int:
    """The top LID when it is a multiple of 64 and no table has it although every table reaches the
    LID below: dump_fts and ibroute (infiniband-diags) leave that LID out (docs/verify.md)."""
    if top % 64 or not tables.lft or tables.max_lid >= top:
        return 0
    present = lft[:, top - 1] != NO_ROUTE
    return top if present.sum() * 2 > len(tables.lft) else 0


def _unaddressed(fabric: Fabric) -> list[tuple[int, int]]:
    """Cabled ports that own no LID: switches (port 0) and HCA ports of a discovered fabric."""
    out = []
    for i in range(fabric.num_nodes):
        if fabric.types[i] == SWITCH:
            if (i, 0) not in fabric.port_lids:
                out.append((i, 0))
        else:
            out += [(i, p) for p in range(1, fabric.nports[i] + 1)
                    if fabric.peer(i, p) is not None and (i, p) not in fabric.port_lids]
    return out


def _duplicate_lid(fabric: Fabric):
    """Two ports own the same LID: route checks would give one of them the other's routes."""
    def port(node: int, p: int) -> str:
        return fabric.names[node] + (f" port {p}" if fabric.types[node] == CA else "")
    first: dict[int, tuple[int, int]] = {}
    for (node, p), (lid, lmc) in sorted(fabric.port_lids.items(), key=lambda x: x[1]):
        for x in range(lid, lid + (1 << lmc)):
            if x in first:
                raise InputError(f"LID {x} is assigned to both {port(*first[x])} and {port(node, p)}: the fabric "
                                 f"dump is inconsistent (or the subnet manager assigned a LID twice)")
            first[x] = (node, p)


# ------------------------------------------------------------------------------------ distances

def switch_distances(b: Bound) -> np.ndarray:
    """Hops between switches over cabled switch-switch links (int16, -1 unreachable): multi-source
    BFS over bit-packed frontiers, one numpy step per BFS level."""
    ns = len(b.sw_nodes)
    src, dst = [], []
    for r, i in enumerate(b.sw_nodes):
        lo, hi = int(b.offset[i]) + 1, int(b.offset[i + 1])
        pe = b.peer[lo:hi]
        pe = pe[(pe >= 0)]
        pe = pe[b.types[pe] == SWITCH]
        src.append(np.full(len(pe), r, dtype=np.int32))
        dst.append(b.row[pe])
    src = np.concatenate(src) if src else np.zeros(0, np.int32)
    dst = np.concatenate(dst) if dst else np.zeros(0, np.int32)
    order = np.argsort(dst, kind="stable")
    src, dst = src[order], dst[order]
    if ns > 20000:
        raise InputError(f"{ns} switches: too many for the all-pairs distance table")
    dist = np.full((ns, ns), -1, dtype=np.int16)  # dist[target, source]
    nbytes = (ns + 7) // 8
    eye = np.zeros((ns, nbytes), dtype=np.uint8)  # bit-packed identity, without an ns x ns bool matrix
    ar = np.arange(ns)
    eye[ar, ar >> 3] = (0x80 >> (ar & 7)).astype(np.uint8)
    seen = eye.copy()
    front = eye
    np.fill_diagonal(dist, 0)
    starts = np.searchsorted(dst, np.arange(ns))
    has = np.bincount(dst, minlength=ns) > 0
    level = 0
    while front.any():
        level += 1
        nxt = np.zeros((ns, nbytes), dtype=np.uint8)
        if len(src):
            red = np.bitwise_or.reduceat(front[src], starts[has], axis=0)
            nxt[has] = red
        nxt &= ~seen
        if not nxt.any():
            break
        seen |= nxt
        newly = np.unpackbits(nxt, axis=1, count=ns).astype(bool)
        dist[newly] = level
        front = nxt
    return dist.T.copy()  # dist[source, target]


# ------------------------------------------------------------------------------------ tracing

class VLMap:
    """SL2VL as an array: table[sl, row, in_port, out_port] (switches) for SL 0 or, with path SLs,
    all 16; and each CA's VL for SL 0."""

    def __init__(self, b: Bound, sl2vl, all_sls: bool = False):
        f = b.fabric
        maxp = int(b.nports.max()) + 1
        nsl = 16 if all_sls else 1
        self.table = np.zeros((nsl, len(b.sw_nodes), maxp, maxp), dtype=np.int8)
        self.ca = np.zeros(f.num_nodes, dtype=np.int8)
        unknown = []
        # OpenSM names a CA's block by its port GUID (one block per port), a switch by its node GUID
        by_port = {f.port_guid(c, p): c for (c, p) in f.port_lids if f.types[c] == CA}
        for g, rows in sl2vl.items():
            i = f.by_guid(g)
            if i is None:
                i = by_port.get(g)
            if i is None:
                unknown.append(g)
                continue
            for (pi, po), vls in rows.items():
                if b.types[i] == SWITCH and pi < maxp and po < maxp:
                    self.table[:, b.row[i], pi, po] = vls[:nsl]
                elif b.types[i] == CA:
                    self.ca[i] = vls[0]
        if unknown and len(unknown) * 2 > len(sl2vl):
            g = unknown[0]
            raise InputError(f"node {g:#018x} is not in the fabric ({len(unknown)} of {len(sl2vl)} nodes are "
                             f"unknown): an SL2VL dump of another fabric?", path=sl2vl.path,
                             line=sl2vl.lines.get(g))
        self.nvl = int(max(self.table.max(initial=0), self.ca.max(initial=0))) + 1
        used = np.union1d(np.unique(self.table), np.unique(self.ca[b.types == CA]))
        # the one VL every hop uses, if so (SL 0 only: with path SLs the VL varies by path)
        self.uniform = int(used[0]) if len(used) == 1 and not all_sls else None


K_SWITCH, K_CA, K_LOCAL, K_NOENTRY, K_DEAD = 0, 1, 2, 3, 4


def _port_tables(b: Bound):
    """Per (switch row, port 0..255): what is behind that port. One gather per hop instead of
    a chain of checks: kind (switch, CA, local delivery, no LFT entry, dead port), the node, the
    port on the far side, and the channel (the egress slot)."""
    if b._ptab is not None:
        return b._ptab
    ns = len(b.sw_nodes)
    kind = np.full((ns, 256), K_DEAD, dtype=np.int8)
    node = np.full((ns, 256), -1, dtype=np.int32)
    pport = np.full((ns, 256), -1, dtype=np.int16)
    slot = np.zeros((ns, 256), dtype=np.int32 if b.offset[-1] < 2**31 else np.int64)
    kind[:, 0] = K_LOCAL
    kind[:, NO_ROUTE] = K_NOENTRY
    for r, i in enumerate(b.sw_nodes):
        lo, hi = int(b.offset[i]), int(b.offset[i + 1])
        np_ = hi - lo  # ports 0..nports
        pe = b.peer[lo + 1:hi]
        ports = np.arange(1, np_, dtype=np.int64)
        ok = pe >= 0
        kind[r, ports[ok]] = np.where(b.types[pe[ok]] == CA, K_CA, K_SWITCH)
        node[r, ports[ok]] = pe[ok]
        pport[r, ports[ok]] = b.peer_port[lo + 1:hi][ok]
        slot[r, ports] = lo + ports
    b._ptab = (kind.ravel(), node.ravel(), pport.ravel(), slot.ravel())
    return b._ptab


def trace(b: Bound, origins: np.ndarray, lids: np.ndarray, *, cap: int | None = None, hop_cb=None,
          vl: VLMap | None = None, dims: tuple | None = None, free_hops: int = 32, sl: np.ndarray | None = None):
    """Walk pairs (origin switch node, LID) to the end. Returns (status, hops, end node, dim_violation).

    hop_cb(idx, cur, slot, nxt, vl_in, vl_out, in_slot) is called after each hop between switches
    with the pair indices that made it; `in_slot` is -1 on the first hop.

    Loops: after `free_hops` hops the survivors are checked with Brent's cycle finding (a mark
    moved at powers of two); routing is by destination, so coming back to a switch is a loop.
    """
    kind_t, node_t, pport_t, slot_t = _port_tables(b)
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


def lid_name(b: Bound, lid: int) -> str:
    node, port = int(b.own_node[lid]), int(b.own_port[lid])
    n = b.fabric.names[node]
    return f"LID {lid} ({n}" + (f" port {port})" if b.types[node] == CA else ")")


def chan_name(b: Bound, slot: int) -> str:
    """A directed link by its egress slot: 'A[p] -> B[q]'."""
    node = int(np.searchsorted(b.offset, slot, side="right") - 1)
    port = int(slot - b.offset[node])
    nb, pb = int(b.peer[slot]), int(b.peer_port[slot])
    names = b.fabric.names
    return f"{names[node]}[{port}] -> {names[nb]}[{pb}]"


# ------------------------------------------------------------------------------------ checks

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


CHUNK_CELLS = 1 << 20  # (LID, switch) cells per certification chunk: the temporaries stay in cache


@dataclass
class Tally:
    """What the delivery check counts, by (source port, LID) pair weight."""

    status: np.ndarray = field(default_factory=lambda: np.zeros(NSTATUS, dtype=np.int64))
    status_ss: np.ndarray = field(default_factory=lambda: np.zeros(NSTATUS, dtype=np.int64))  # switch to switch LID
    hist_len: dict = field(default_factory=dict)
    hist_extra: dict = field(default_factory=dict)
    examples: dict = field(default_factory=lambda: {k: [] for k in STATUS if k != DELIVERED})
    pairs: int = 0
    certified_lids: int = 0

    def add_hist(self, hist: dict, counts: np.ndarray, shift: int = 0) -> None:
        for val in np.flatnonzero(counts):
            hist[int(val) + shift] = hist.get(int(val) + shift, 0) + int(counts[val])


def _targets(b: Bound):
    """Per LID: the switch row that must deliver it (-1: none) and the port it must leave by there
    (0 for a switch's own LID, the port cabled to the HCA port otherwise)."""
    n = len(b.own_node)
    dsw = np.full(n, -1, dtype=np.int32)
    dport = np.zeros(n, dtype=np.int16)
    sw = (b.own_node >= 0) & (b.types[np.maximum(b.own_node, 0)] == SWITCH)
    dsw[sw] = b.row[b.own_node[sw]]
    ca = b.att_sw >= 0
    dsw[ca] = b.row[b.att_sw[ca]]
    dport[ca] = b.att_port[ca]
    return dsw, dport


def _certify(b: Bound, dist: np.ndarray, t: Tally, seen: np.ndarray | None, pw: int, say) -> np.ndarray:
    """The LIDs whose routes are all delivered on shortest paths, proved without tracing a pair.

    Per destination LID the tables form a forwarding graph over switches. If every switch either
    is the one that delivers the LID (and its entry is the right port) or forwards it to a switch
    one hop closer (by the all-pairs distance table), then by induction every route arrives, with
    exactly the shortest length: one gather per (switch, LID) cell instead of a walk per pair.
    Such LIDs are tallied here (delivered, lengths, and, with `seen`, the channel dependencies of
    the HCA-to-HCA routes); the rest are traced pair by pair. Returns the certified mask by LID."""
    ns = len(b.sw_nodes)
    kind, node, _, _ = _port_tables(b)
    # (row * 256 + port) -> the next switch's row; ns (a column of -9 distances) for anything else
    nxt_t = np.where(kind == K_SWITCH, b.row[np.maximum(node, 0)], ns).astype(np.int32)
    lft_t = np.ascontiguousarray(b.lft.T)  # LID-major: one row of switches per LID
    dist_t = np.full((ns, ns + 1), -9, dtype=np.int16)
    dist_t[:, :ns] = dist.T  # dist_t[target, source]
    dsw, dport = _targets(b)
    sw256 = (np.arange(ns, dtype=np.int32) * 256)[None, :]
    # route lengths depend only on the delivering switch: histograms per target switch, once
    nl = int(dist.max()) + 3
    ca_w = b.ca_ports[b.sw_nodes]
    keys = (np.arange(ns, dtype=np.int64)[:, None] * nl + np.maximum(dist_t[:, :ns], 0)).ravel()
    h_sw = np.bincount(keys, minlength=ns * nl).reshape(ns, nl)
    h_ca = np.bincount(keys, weights=np.tile(ca_w, ns), minlength=ns * nl).reshape(ns, nl).astype(np.int64)
    width = lft_t.shape[0]
    cert = np.zeros(width, dtype=bool)
    # switches without HCAs cabled to each other: carrying HCA traffic may take several steps to spread
    bare = np.flatnonzero(ca_w == 0)
    chains = bool(len(bare)) and bool(np.isin(nxt_t.reshape(ns, 256)[bare], bare).any())
    c = max(1, CHUNK_CELLS // max(ns, 1))
    it = np.int32 if c * (ns + 1) < 2**31 else np.int64
    last_say = time.monotonic()
    for a in range(1, width, c):
        e = min(width, a + c)
        D = np.maximum(dsw[a:e], 0)
        P = lft_t[a:e]
        N = nxt_t[sw256 + P]
        H = dist_t[D]
        Hn = H.ravel()[(np.arange(e - a, dtype=it) * (ns + 1))[:, None] + N]
        closer = np.count_nonzero(Hn == H[:, :ns] - 1, axis=1)
        good = (closer == ns - 1) & (P[np.arange(e - a), D] == dport[a:e]) & (dsw[a:e] >= 0) \
            & (b.own_node[a:e] >= 0)
        if not good.any():
            continue
        cert[a:e] = good
        g = np.flatnonzero(good)
        cadest = b.att_sw[a:e][g] >= 0
        Dg = D[g]
        # switch sources (each LID's own switch excluded), HCA sources one link longer (each HCA
        # port to its own LID excluded); an HCA destination adds the last link
        hs = h_sw[Dg[~cadest]].sum(axis=0)
        hs[0] -= int((~cadest).sum())
        hs_ca = h_sw[Dg[cadest]].sum(axis=0)
        hc = h_ca[Dg[~cadest]].sum(axis=0)
        hc_ca = h_ca[Dg[cadest]].sum(axis=0)
        hc_ca[0] -= int(cadest.sum())
        t.add_hist(t.hist_len, hs)
        t.add_hist(t.hist_len, hs_ca + hc, shift=1)
        t.add_hist(t.hist_len, hc_ca, shift=2)
        npairs = int(hs.sum() + hs_ca.sum() + hc.sum() + hc_ca.sum())
        t.status[DELIVERED] += npairs
        t.hist_extra[0] = t.hist_extra.get(0, 0) + npairs
        t.pairs += npairs
        t.certified_lids += len(g)
        if seen is not None and cadest.any():
            sel = g[cadest]
            _dependencies(b, seen, pw, P[sel], N[sel], H[sel], D[sel], ca_w, chains)
        if time.monotonic() - last_say > 2:
            say(f"  {e}/{width} LIDs checked")
            last_say = time.monotonic()
    return cert


def _dependencies(b, seen, pw, P, N, H, D, ca_w, chains: bool = True) -> None:
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


@dataclass
class Loads:
    """Per channel (egress slot): routes (all pairs) and all-to-all flows (HCA base LIDs)."""

    routes: np.ndarray
    a2a: np.ndarray


def _walk(b: Bound, lids: np.ndarray, dist, t: Tally | None, seen, pw, edges: list, vl: VLMap | None,
          loads: Loads | None, dims, dimt: dict, say) -> None:
    """Trace (every switch, each of `lids`) pair hop by hop: the general check, for LIDs the
    certificate could not prove (non-minimal or broken routes, VLs that change along a path), and
    for what needs each route's links (loads, dimension order). Tallies into `t` when given."""
    ns = len(b.sw_nodes)
    nslots = int(b.offset[-1])
    nvl = vl.nvl if vl is not None else 1
    nch = nslots * nvl
    w_sw = b.ca_ports[b.sw_nodes]
    chunk = max(1, PAIRS_PER_CHUNK // max(ns, 1))
    last_say = time.monotonic()
    for c0 in range(0, len(lids), chunk):
        cl = lids[c0:c0 + chunk]
        o = np.repeat(b.sw_nodes, len(cl))
        L = np.tile(cl, ns)
        # source ports behind each pair: the switch itself, plus its CAs (not the destination itself)
        attL = b.att_sw[L]
        wca = (np.repeat(w_sw, len(cl)) - (attL == o)).astype(np.int32)
        wsw = (b.own_node[L] != o).astype(np.int32)
        cadest = attL >= 0
        wt = wsw + wca
        a2w = np.where(cadest & b.base[L], wca, 0)  # all-to-all: CA ports to CA base LIDs
        depf = cadest & (wca > 0)  # CA-to-CA routes: the ones the deadlock analysis follows

        def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
            if loads is not None:
                loads.routes[:] += np.bincount(gslot, weights=wt[gi], minlength=nslots).astype(np.int64)
                loads.a2a[:] += np.bincount(gslot, weights=a2w[gi], minlength=nslots).astype(np.int64)
            if t is None:
                return
            dep = depf[gi] & (gin >= 0)
            if not dep.any():
                return
            if vl is None or vl.uniform is not None:  # one VL per route: (channel in, port out) bitmap
                seen[gin[dep].astype(np.int64) * pw + (gslot[dep] - b.offset[gcur[dep]])] = True
                return
            ci = gin[dep].astype(np.int64) * nvl + vin[dep]
            co = gslot[dep].astype(np.int64) * nvl + vout[dep]
            edges.append(np.unique(ci * nch + co))

        cb = on_hop if (loads is not None or t is not None) else None
        vary = t is not None and vl is not None and vl.uniform is None  # VLs change along paths
        st, hp, _, dv = trace(b, o, L, hop_cb=cb, vl=vl if vary else None, dims=dims)
        if dims is not None:
            _, router = dims
            ok = st == DELIVERED
            chk = router[o] & ok & ((b.types[b.own_node[L]] == CA) | router[b.own_node[L]])
            dimt["checked"] += int(wt[chk].sum())
            bad = chk & dv
            if dimt.get("detoured") is not None:  # a fault step: the scheme's detours may turn back
                acc = bad & dimt["detoured"][b.row[o], L]
                if dimt.get("sls") is not None:  # and the CA pairs behind it are not left on SL 0 (VL 0)
                    for j in np.flatnonzero(acc & (b.types[b.own_node[L]] == CA)):
                        srcs = dimt["cas"].get(int(o[j]), ())
                        if any(dimt["sls"].get((s, int(L[j])), 0) == 0 for s in srcs if s != L[j]):
                            acc[j] = False
                dimt["accepted"] += int(wt[acc].sum())
                bad &= ~acc
            dimt["violations"] += int(wt[bad].sum())
            if dimt["example"] is None and bad.any():
                j = int(np.flatnonzero(bad)[0])
                dimt["example"] = (int(o[j]), int(L[j]))
        if t is None:
            continue
        t.pairs += int(wt.sum())
        t.status += np.bincount(st, weights=wt, minlength=NSTATUS).astype(np.int64)
        sw_only = ~cadest  # switch source (weight wsw) to a switch LID: management traffic only
        t.status_ss += np.bincount(st[sw_only], weights=wsw[sw_only], minlength=NSTATUS).astype(np.int64)
        ok = st == DELIVERED
        lens = hp.astype(np.int32)
        if ok.any():
            # length counted from the source port: CA sources add their own link
            t.add_hist(t.hist_len, np.bincount(lens[ok], weights=wsw[ok]).astype(np.int64))
            t.add_hist(t.hist_len, np.bincount(lens[ok] + 1, weights=wca[ok]).astype(np.int64))
            if dist is not None:
                tgt = np.where(cadest, attL, b.own_node[L])
                sp = dist[b.row[o], b.row[np.maximum(tgt, 0)]].astype(np.int32) + cadest
                extra = (lens - sp)[ok]
                base_ex = int(extra.min())
                t.add_hist(t.hist_extra, np.bincount(extra - base_ex, weights=wt[ok]).astype(np.int64), base_ex)
        if t.status[DELIVERED] != t.status.sum():
            for k in t.examples:
                if len(t.examples[k]) < EXAMPLES:
                    for j in np.flatnonzero((st == k) & (wt > 0))[:EXAMPLES - len(t.examples[k])]:
                        t.examples[k].append((int(o[j]), int(L[j])))
        if time.monotonic() - last_say > 2:
            say(f"  {min(c0 + chunk, len(lids))}/{len(lids)} LIDs traced")
            last_say = time.monotonic()


def _hdor_dims(fabric: Fabric, reference):
    dim = np.full(fabric.num_nodes, -1, dtype=np.int8)
    router = np.zeros(fabric.num_nodes, dtype=bool)
    for i, r in enumerate(reference.role):
        if r == "router":
            router[i] = True
    for i, d in reference.dim.items():
        dim[i] = d
    return dim, router


def verify(fabric: Fabric, tables: Tables, sl2vl=None, expect: str | None = None, reference=None,
           permutations: int = 16, seed: int = 1, progress=None, balance: bool = True, path_sls=None,
           engine: str | None = None, baseline: tuple[Fabric, Tables] | None = None) -> dict:
    """All route checks; returns the 'routes' section of the report (see docs/verify.md).

    balance=False skips the link loads (routes per link, all-to-all, permutations): delivery,
    lengths, dimension order and deadlock freedom only. path_sls ((SLID, DLID) -> SL, e.g. from
    `saquery -p`) gives each HCA-to-HCA route its SL, and with sl2vl the VL of each hop; `engine`
    names the engine that made the tables, so that one known to spread routes over VLs without
    path SLs gets "VL0 only: SLs not available" instead of a credit loop it may not have.
    baseline: (fabric, tables) before a fault (step 0 of `sim run --faults`): routes that touch
    no failed element must be unchanged (ibtool.verify.unaffected), and with expect="hdor" a
    dimension-order violation is accepted on a detoured route (the scheme moves it to a higher VL:
    the per-VL deadlock check is what proves that safe), not on any other."""
    say = progress or (lambda m: None)
    t0 = time.monotonic()
    b = bind(fabric, tables)
    vl = VLMap(b, sl2vl) if sl2vl is not None and path_sls is None else None
    ns = len(b.sw_nodes)
    nslots = int(b.offset[-1])
    dist = switch_distances(b) if ns <= 20000 else None
    pw = int(b.nports.max()) + 1
    uniform = vl is None or vl.uniform is not None
    seen = np.zeros(nslots * pw, dtype=bool) if uniform else None
    edges: list[np.ndarray] = []
    t = Tally()
    lids = b.lids[b.lids != b.top_missing] if b.top_missing else b.lids
    todo = lids
    if dist is not None and uniform:
        say(f"checking {ns} switches x {len(lids)} LIDs")
        cert = _certify(b, dist, t, seen, pw, say)
        todo = lids[~cert[lids]]
    if not uniform:  # the VL changes along paths: dependencies of every route from the tracer
        todo = lids
    if len(todo):
        say(f"tracing {ns} switch origins x {len(todo)} LIDs")
        _walk(b, todo, dist, t, seen, pw, edges, vl, None, None, {}, say)
    if path_sls is not None:
        say("channel dependencies per VL from the path SLs")
        vl, edges, seen, nosl = _sl_dependencies(b, sl2vl, path_sls)
    deadlock = _deadlock(b, seen, pw, edges, vl, sl2vl is not None, say)
    if path_sls is not None:
        deadlock["path_sls"] = {"file": path_sls.path, "pairs_without_record": nosl}
    elif engine in VL_ENGINES and not deadlock["free"]:
        # the cycle may be split across VLs by the engine's SLs, which we do not have
        deadlock.update(free=None, checked=False, note=f"VL0 only: SLs not available ({engine} spreads routes "
                        f"over virtual lanes; `ibtool sim run --path-sls` collects them)")
    dims = _hdor_dims(fabric, reference) if expect == "hdor" and reference is not None else None
    dimt = {"checked": 0, "violations": 0, "example": None, "accepted": 0, "detoured": None}
    unaffected = None
    if baseline is not None:
        from ibtool.verify import unaffected as unaff
        say("routes a fault did not touch, against the tables before it")
        unaffected, dimt["detoured"] = unaff.compare(bind(*baseline), b)
        if path_sls is not None:
            dimt["sls"] = path_sls
            dimt["cas"] = {}
            for (c, p), (lid, _) in fabric.port_lids.items():
                peer = fabric.peer(c, p)
                if fabric.types[c] == CA and peer is not None:
                    dimt["cas"].setdefault(peer[0], []).append(lid)
    bal = None
    if balance or dims is not None:
        say("link loads" if balance else "dimension order")
        loads = Loads(np.zeros(nslots, dtype=np.int64), np.zeros(nslots, dtype=np.int64)) if balance else None
        _walk(b, lids, None, None, None, pw, [], None, loads, dims, dimt, say)
        if balance:
            bal = _balance(b, loads, permutations, seed)
    res = _delivery_section(b, t, dist is not None)
    res["deadlock"] = deadlock
    res["balance"] = bal
    res["seconds"] = round(time.monotonic() - t0, 3)
    if expect == "hdor":
        res["expect"] = _expect_hdor(fabric, tables, b, reference, dimt["checked"], dimt["violations"],
                                     dimt["example"])
        if baseline is not None:
            res["expect"]["dimension_order"]["accepted_on_detours"] = dimt["accepted"]
    if unaffected is not None:
        res["unaffected"] = unaffected
    res["ok"] = bool(delivery_ok(res) and deadlock["free"] is not False and not b.missing_tables
                     and (expect != "hdor" or res["expect"]["ok"]) and (unaffected is None or unaffected["ok"]))
    return res


VL_ENGINES = {"dfsssp", "lash", "nue", "torus-2QoS"}  # OpenSM engines that give paths their own SLs


def _sl_dependencies(b: Bound, sl2vl, path_sls):
    """Every HCA-to-HCA route traced from its own source port with its own SL (from the path
    SLs), the VL of each hop from the SL2VL tables (the SL itself, 0..7, where there are none):
    the dependencies between (channel, VL) pairs. Returns (VLMap, edges, None, pairs without a
    PathRecord, which use SL 0)."""
    vl = VLMap(b, sl2vl if sl2vl is not None else {}, all_sls=True)
    if sl2vl is None:  # no tables: a switch maps SL to VL one to one, as OpenSM's default SL2VL does
        vl.table[:] = (np.arange(16) & 7).astype(np.int8)[:, None, None, None]
        vl.nvl = 8
    vl.nvl = max(vl.nvl, int(vl.table.max()) + 1)
    src = np.flatnonzero(b.base & (b.att_sw >= 0)).astype(np.int32)  # HCA port base LIDs
    dst = np.flatnonzero(b.att_sw >= 0).astype(np.int32)
    S = np.repeat(src, len(dst))
    L = np.tile(dst, len(src))
    keep = (b.own_node[S] != b.own_node[L]) | (b.own_port[S] != b.own_port[L])
    S, L = S[keep], L[keep]
    sl = np.zeros(len(S), dtype=np.int8)
    nosl = 0
    for j, (a, d) in enumerate(zip(S.tolist(), L.tolist())):
        v = path_sls.get((a, d))
        if v is None:
            nosl += 1
        else:
            sl[j] = v
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


def _deadlock(b: Bound, seen, pw, edges, vl, have_sl2vl, say) -> dict:
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


def _balance(b: Bound, loads: Loads, permutations: int, seed: int) -> dict:
    nslots = int(b.offset[-1])
    isl = np.zeros(nslots, dtype=bool)
    for i in b.sw_nodes:
        lo, hi = int(b.offset[i]) + 1, int(b.offset[i + 1])
        pe = b.peer[lo:hi]
        isl[lo:hi] = (pe >= 0) & (b.types[np.maximum(pe, 0)] == SWITCH)
    rpl = loads.routes[isl]
    perm = permutation_load(b, isl, permutations, seed) if permutations else None
    names = b.fabric.names
    chans = np.flatnonzero(isl)
    node = np.searchsorted(b.offset, chans, side="right") - 1
    return {
        "inter_switch_channels": int(isl.sum()),
        # per directed inter-switch channel: [from end, to end, routes, all-to-all load] (the heat
        # map of the HTML report)
        "links": [[f"{names[n]}[{c - b.offset[n]}]", f"{names[b.peer[c]]}[{b.peer_port[c]}]", int(loads.routes[c]),
                   int(loads.a2a[c])] for n, c in zip(node.tolist(), chans.tolist())],
        "routes_per_link": _mmm(rpl),
        "all_to_all_max_link_load": int(loads.a2a[isl].max(initial=0)),
        "all_to_all_links": _mmm(loads.a2a[isl]),
        "permutations": perm,
    }


def _delivery_section(b: Bound, t: Tally, have_dist: bool) -> dict:
    fabric = b.fabric
    ns = len(b.sw_nodes)
    n_src = ns + int(b.ca_ports.sum())
    # a port without a LID can neither be reached nor send: its pairs count, as undelivered
    u_ca = sum(1 for i, _ in b.unaddressed if b.types[i] == CA)
    u = len(b.unaddressed)
    if u:
        t.status[NO_LID] += u * (n_src + u_ca - 1) + u_ca * len(b.lids)
    top = None
    if b.top_missing:
        top = {"lid": b.top_missing, "owner": _port_name(b, int(b.own_node[b.top_missing]),
                                                          int(b.own_port[b.top_missing])), "pairs_not_checked": n_src - 1,
               "reason": f"the tables list LIDs up to {b.top_missing - 1} on every switch but not the top LID "
                         f"{b.top_missing}, a multiple of 64: dump_fts and ibroute (infiniband-diags) leave it out. "
                         f"Not checked; `ibtool sim run` collects it, or verify OpenSM's opensm-lfts.dump"}
    res = {
        "pairs": int(t.status.sum()),
        "source_ports": n_src,
        "lids": int(len(b.lids)),
        "switches": ns,
        "switches_without_table": [fabric.names[i] for i in b.missing_tables],
        "delivered": int(t.status[DELIVERED]),
        "undelivered": {STATUS[k]: int(t.status[k]) for k in STATUS if k != DELIVERED},
        "undelivered_switch_to_switch": {STATUS[k]: int(t.status_ss[k]) for k in STATUS if k != DELIVERED},
        "undelivered_examples": {STATUS[k]: [_example(b, o, L) for o, L in v] for k, v in t.examples.items() if v},
        "unaddressed": [_port_name(b, i, p) + " has no LID" for i, p in b.unaddressed],
        "top_lid_not_in_dump": top,
        "length_histogram": {str(k): v for k, v in sorted(t.hist_len.items())},
        "extra_hops_histogram": {str(k): v for k, v in sorted(t.hist_extra.items())} if have_dist else None,
        "minimal": (have_dist and all(k <= 0 for k in t.hist_extra)),
        "certified_lids": t.certified_lids,
    }
    return res


def delivery_ok(res: dict) -> bool:
    """Every pair with an HCA at either end is delivered, and no pair loops or ends at a wrong or
    dead port. Switch-to-switch pairs without an LFT entry are reported but do not fail the check:
    up/down engines (updn, ftree) do not route between their roots."""
    ss = res["undelivered_switch_to_switch"]
    hole = STATUS[NO_ENTRY]
    return all(v == (ss[k] if k == hole else 0) for k, v in res["undelivered"].items()) \
        and not res["switches_without_table"]


def _port_name(b: Bound, node: int, port: int) -> str:
    return b.fabric.names[node] + (f" port {port}" if b.types[node] == CA and b.fabric.nports[node] > 1 else "")


def _example(b: Bound, origin: int, lid: int) -> str:
    hops, st = path_of(b, origin, lid)
    return f"{b.fabric.names[origin]} to {lid_name(b, lid)}: {fmt_path(b, hops)}"


def _mmm(a: np.ndarray) -> dict:
    if not len(a):
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": int(a.min()), "mean": round(float(a.mean()), 2), "max": int(a.max())}


def _expect_hdor(fabric, tables, b, reference, checked, viol, example) -> dict:
    if reference is None:
        return {"ok": False, "error": "no hdor reference available (ibtool.routing.hdor missing or fabric not KNS)"}
    from ibtool.routing import hdor as hd
    want = reference.tables
    if b.top_missing:  # not in the dump: not compared either (said in the delivery section)
        want = Tables({g: a[:b.top_missing] for g, a in want.lft.items()}, want.names)
    diffs = hd.compare_tables(want, tables)
    out = {
        "k": reference.k, "n": reference.n, "s": reference.s,
        "tables_equal": not diffs,
        "table_differences": len(diffs),
        "table_difference_examples": diffs[:10],
        "dimension_order": {"checked_pairs": checked, "violations": viol,
                            "example": _example(b, *example) if example else None},
    }
    out["ok"] = not diffs and viol == 0
    return out


def permutation_load(b: Bound, isl: np.ndarray, count: int, seed: int) -> dict | None:
    """Random permutations of the CA ports (base LIDs): each flow's route, the most loaded link per
    permutation, and the mean over flows of 1 / (the highest load on its route): a static estimate
    of the effective bisection bandwidth that Netgauge's ebb measures (fraction of link speed)."""
    ca_l = np.flatnonzero(b.base & (b.att_sw >= 0)).astype(np.int32)
    if len(ca_l) < 2:
        return None
    rng = np.random.default_rng(seed)
    nslots = len(isl)
    maxes, ebbs = [], []
    for _ in range(count):
        dst = rng.permutation(ca_l)
        keep = dst != ca_l
        src_l, dst_l = ca_l[keep], dst[keep]
        origins = b.att_sw[src_l]
        rec_f, rec_s = [], []

        def on_hop(gi, gcur, gslot, gnxt, vin, vout, gin):
            rec_f.append(gi)
            rec_s.append(gslot)

        st, _, _, _ = trace(b, origins, dst_l, hop_cb=on_hop)
        if not rec_f:
            maxes.append(0)
            ebbs.append(1.0)
            continue
        fl = np.concatenate(rec_f)
        sl = np.concatenate(rec_s)
        load = np.bincount(sl, minlength=nslots)
        worst = np.ones(len(src_l))
        np.maximum.at(worst, fl, load[sl].astype(float))
        bw = np.where(st == DELIVERED, 1.0 / worst, 0.0)
        maxes.append(int(load[isl].max(initial=0)))
        ebbs.append(float(bw.mean()))
    return {"count": count, "seed": seed, "max_link_load": {"min": min(maxes), "mean": round(float(np.mean(maxes)), 2),
                                                           "max": max(maxes)},
            "ebb_estimate": round(float(np.mean(ebbs)), 4)}
