"""The fabric and its forwarding tables bound together as arrays: what every route check walks.

`bind` checks that the tables belong to the fabric (their switches are its switches, each switch
routes its own LID to port 0, no LID owned twice) and builds per-LID and per-port arrays; the
port tables say what is behind each (switch, port) in one gather. Names of LIDs, ports and
channels for messages come from here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric, switch_graph
from ibtool.formats.ibnetdiscover import partial
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.hops import bfs_hops


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
    _ptab: tuple | None = None  # port_tables(), built once


def bind(fabric: Fabric, tables: Tables) -> Bound:
    """Check that tables and fabric belong together and build the arrays; InputError if they do not."""
    path = tables.path or "LFT dump"
    if not fabric.port_lids:
        raise InputError("the fabric has no LIDs (a plan, not an ibnetdiscover dump of a running fabric?)",
                         path=None)
    unknown = [g for g in tables.lft if fabric.by_guid(g) is None or not fabric.is_switch(fabric.by_guid(g))]
    if unknown:
        g = min(unknown, key=lambda x: tables.lines.get(x, 0))
        cut = partial(fabric, 5)
        if cut:  # the discovery was cut short (a truncated file): the tables are not what is wrong
            raise InputError(f"{cut}; {len(unknown)} of {len(tables.lft)} tables of {path} are of switches this "
                             f"discovery does not hold (e.g. {g:#018x} {tables.names.get(g, '')!r}): run "
                             "ibnetdiscover again", path=None)
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


def switch_distances(b: Bound) -> np.ndarray:
    """Hops between switches (rows of `lft`) over cabled switch-switch links: int16
    [source, target], -1 unreachable."""
    ns = len(b.sw_nodes)
    if ns > 20000:
        raise InputError(f"{ns} switches: too many for the all-pairs distance table")
    g = switch_graph(b.fabric)  # its vertices are the rows: every switch in node order
    return bfs_hops(g.indptr, g.indices)


K_SWITCH, K_CA, K_LOCAL, K_NOENTRY, K_DEAD = 0, 1, 2, 3, 4


def port_tables(b: Bound):
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


def port_name(b: Bound, node: int, port: int) -> str:
    return b.fabric.names[node] + (f" port {port}" if b.types[node] == CA and b.fabric.nports[node] > 1 else "")
