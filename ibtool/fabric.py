"""The one data model: a fabric of switches and HCAs joined by links between (node, port) pairs.

Builders (ibtool.topologies) produce a Fabric from parameters; readers (ibtool.formats) produce
one from what a real or emulated fabric reports. Verification compares two Fabric values.

Nodes are numbered 0..N-1 in the order they were added. Per-node data lives in parallel lists
while a fabric is built; `ports()` gives an array-backed adjacency (CSR over ports) for the
algorithms that walk large fabrics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ibtool.errors import InputError

CA = 1  # InfiniBand node types, as in NodeInfo.NodeType
SWITCH = 2

# Deterministic GUIDs: the Mellanox OUI in the top 24 bits, the node number above a port nibble,
# so a CA's port GUIDs (node GUID + port) never collide with another node.
GUID_BASE = 0x0002C9 << 40


def default_guid(index: int) -> int:
    return GUID_BASE | ((index + 1) << 4)


@dataclass(frozen=True)
class Ports:
    """Array-backed adjacency: for node i, ports 0..nports[i] sit at slots offset[i]..offset[i+1)-1."""

    offset: np.ndarray  # int64, N+1
    peer: np.ndarray  # int32 per slot: remote node or -1
    peer_port: np.ndarray  # int16 per slot: remote port or -1

    def slot(self, node: int, port: int) -> int:
        return int(self.offset[node]) + port


class Fabric:
    def __init__(self, name: str = "fabric"):
        self.name = name
        self.params: dict = {}
        # nodes
        self.types: list[int] = []
        self.nports: list[int] = []
        self.guids: list[int] = []
        self.names: list[str] = []
        self.roles: list[str] = []
        self.labels: list[dict] = []
        # per-port facts of discovered fabrics: (node, port) -> value
        self.port_guids: dict[tuple[int, int], int] = {}
        self.port_lids: dict[tuple[int, int], tuple[int, int]] = {}  # (lid, lmc)
        # links: ends a/b, and the rate as ibnetdiscover prints it (e.g. "4xQDR")
        self.link_a: list[int] = []
        self.link_pa: list[int] = []
        self.link_b: list[int] = []
        self.link_pb: list[int] = []
        self.link_rate: list[str | None] = []
        self._used: dict[int, int] = {}  # node << 8 | port -> link index
        self._next_port: list[int] = []
        self._by_name: dict[str, int] = {}
        self._by_guid: dict[int, int] = {}
        self._ports: Ports | None = None
        # what a reader noticed in a discovered fabric's dump (tool noise skipped, devices seen only
        # as peers, loopback cables, link ends that report different rates); empty for plans
        self.discovery: dict = {}

    # ----------------------------------------------------------------- building
    def add_node(self, kind: int, name: str, ports: int, role: str, labels: dict | None = None,
                 guid: int | None = None) -> int:
        if not 1 <= ports <= 254:
            raise InputError(f"{name}: {ports} ports is outside 1..254")
        if name in self._by_name:
            raise InputError(f"duplicate node name {name!r}")
        i = len(self.types)
        g = default_guid(i) if guid is None else guid
        if not 0 <= g < 1 << 64:
            raise InputError(f"{name}: GUID {g:#x} does not fit 64 bits")
        if g in self._by_guid:
            raise InputError(f"{name}: GUID {g:#018x} already used by {self.names[self._by_guid[g]]!r}")
        self.types.append(kind)
        self.nports.append(ports)
        self.guids.append(g)
        self.names.append(name)
        self.roles.append(role)
        self.labels.append(labels or {})
        self._next_port.append(1)
        self._by_name[name] = i
        self._by_guid[g] = i
        self._ports = None
        return i

    def add_nodes(self, kinds: list[int], names: list[str], ports: list[int], roles: list[str],
                  labels: list[dict | None]) -> range:
        """Add many nodes with default GUIDs, for builders of fabrics with a million nodes: the same
        result as add_node on each in turn; any fault re-runs them one by one, so the error is
        add_node's for the first faulty node. Returns the new node indices."""
        first, n = len(self.types), len(names)
        idx = range(first, first + n)
        guids = (GUID_BASE | ((np.arange(first, first + n, dtype=np.int64) + 1) << 4)).tolist()
        if len(set(names)) != n or not self._by_name.keys().isdisjoint(names) \
                or not self._by_guid.keys().isdisjoint(guids) or not all(1 <= p <= 254 for p in ports):
            for x in zip(kinds, names, ports, roles, labels):
                self.add_node(*x)
            return idx
        self.types += kinds
        self.nports += ports
        self.guids += guids
        self.names += names
        self.roles += roles
        self.labels += [lab or {} for lab in labels]
        self._next_port += [1] * n
        self._by_name.update(zip(names, idx))
        self._by_guid.update(zip(guids, idx))
        self._ports = None
        return idx

    def add_switch(self, name: str, ports: int, role: str = "switch", labels: dict | None = None,
                   guid: int | None = None) -> int:
        return self.add_node(SWITCH, name, ports, role, labels, guid)

    def add_hca(self, name: str, ports: int = 1, role: str = "hca", labels: dict | None = None,
                guid: int | None = None) -> int:
        return self.add_node(CA, name, ports, role, labels, guid)

    def _take_port(self, node: int, port: int | None) -> int:
        if port is None:
            port = self._next_port[node]
            while (node << 8 | port) in self._used:
                port += 1
        if not 1 <= port <= self.nports[node]:
            raise InputError(f"{self.names[node]} has {self.nports[node]} ports; port {port} does not exist")
        key = node << 8 | port
        if key in self._used:
            other = self._used[key]
            raise InputError(f"{self.names[node]} port {port} is already cabled "
                             f"(to {self.describe_end(other, node, port)})")
        if port == self._next_port[node]:
            self._next_port[node] = port + 1
        return port

    def add_link(self, a: int, b: int, port_a: int | None = None, port_b: int | None = None,
                 rate: str | None = None) -> int:
        """Cable a to b. Ports default to the lowest free port of each node."""
        if a == b:
            raise InputError(f"{self.names[a]}: a link from a node to itself")
        pa = self._take_port(a, port_a)
        pb = self._take_port(b, port_b)
        li = len(self.link_a)
        self._used[a << 8 | pa] = li
        self._used[b << 8 | pb] = li
        self.link_a.append(a)
        self.link_pa.append(pa)
        self.link_b.append(b)
        self.link_pb.append(pb)
        self.link_rate.append(rate)
        self._ports = None
        return li

    def add_links(self, a, b, port_a, port_b, rate: str | None = None) -> None:
        """Cable a[i]:port_a[i] to b[i]:port_b[i] for every i (arrays), for builders of fabrics with
        millions of links: the same result as add_link on each in turn, checked with numpy. Any
        fault re-runs the links one by one, so the error names the first faulty link as add_link does."""
        a, b, pa, pb = (np.asarray(x, dtype=np.int64) for x in (a, b, port_a, port_b))
        nports = np.asarray(self.nports, dtype=np.int64)
        keys = np.concatenate([a << 8 | pa, b << 8 | pb])
        klist = keys.tolist()
        ordered = np.sort(keys)  # sorting finds a port used twice far faster than np.unique's hash
        if ((a == b) | (pa < 1) | (pa > nports[a]) | (pb < 1) | (pb > nports[b])).any() \
                or (ordered[1:] == ordered[:-1]).any() or not self._used.keys().isdisjoint(klist):
            for x in zip(a.tolist(), b.tolist(), pa.tolist(), pb.tolist()):
                self.add_link(*x, rate=rate)
            return
        first = len(self.link_a)
        ids = range(first, first + len(a))
        self._used.update(zip(klist, [*ids, *ids]))
        self.link_a += a.tolist()
        self.link_pa += pa.tolist()
        self.link_b += b.tolist()
        self.link_pb += pb.tolist()
        self.link_rate += [rate] * len(a)
        self._ports = None
        # _next_port is only a lower bound for the lowest free port (add_link with port None skips
        # used ports from it), so leaving it alone keeps that meaning.

    def describe_end(self, link: int, node: int, port: int) -> str:
        """The far end of `link` seen from (node, port), as 'name[port]'."""
        if self.link_a[link] == node and self.link_pa[link] == port:
            return f"{self.names[self.link_b[link]]}[{self.link_pb[link]}]"
        return f"{self.names[self.link_a[link]]}[{self.link_pa[link]}]"

    # ----------------------------------------------------------------- reading
    @property
    def num_nodes(self) -> int:
        return len(self.types)

    @property
    def num_links(self) -> int:
        return len(self.link_a)

    def index(self, name: str) -> int:
        try:
            return self._by_name[name]
        except KeyError:
            raise InputError(f"no node named {name!r}") from None

    def by_guid(self, guid: int) -> int | None:
        return self._by_guid.get(guid)

    def is_switch(self, node: int) -> bool:
        return self.types[node] == SWITCH

    def count(self, role: str | None = None, kind: int | None = None) -> int:
        if role is not None:
            return sum(1 for r in self.roles if r == role)
        return sum(1 for t in self.types if t == kind)

    def port_guid(self, node: int, port: int) -> int:
        """A switch has one port GUID (its node GUID); a CA port defaults to node GUID + port."""
        if self.types[node] == SWITCH:
            return self.guids[node]
        return self.port_guids.get((node, port), self.guids[node] + port)

    def peer(self, node: int, port: int) -> tuple[int, int] | None:
        li = self._used.get(node << 8 | port)
        if li is None:
            return None
        if self.link_a[li] == node and self.link_pa[li] == port:
            return self.link_b[li], self.link_pb[li]
        return self.link_a[li], self.link_pa[li]

    def neighbors(self, node: int) -> list[tuple[int, int, int]]:
        """(local port, remote node, remote port) for every cabled port of `node`, by port."""
        out = []
        for port in range(1, self.nports[node] + 1):
            p = self.peer(node, port)
            if p is not None:
                out.append((port, p[0], p[1]))
        return out

    def ports(self) -> Ports:
        """Array-backed adjacency over all ports, built once and cached until the fabric changes."""
        if self._ports is None:
            nports = np.asarray(self.nports, dtype=np.int64)
            offset = np.zeros(len(nports) + 1, dtype=np.int64)
            np.cumsum(nports + 1, out=offset[1:])
            peer = np.full(int(offset[-1]), -1, dtype=np.int32)
            peer_port = np.full(int(offset[-1]), -1, dtype=np.int16)
            a = np.asarray(self.link_a, dtype=np.int64)
            pa = np.asarray(self.link_pa, dtype=np.int64)
            b = np.asarray(self.link_b, dtype=np.int64)
            pb = np.asarray(self.link_pb, dtype=np.int64)
            sa, sb = offset[a] + pa, offset[b] + pb
            peer[sa], peer_port[sa] = b, pb
            peer[sb], peer_port[sb] = a, pa
            self._ports = Ports(offset, peer, peer_port)
        return self._ports

    def lid_owners(self) -> dict[int, tuple[int, int]]:
        """Every assigned LID (each LID of an LMC range) -> (node, port). Port 0 for a switch."""
        out: dict[int, tuple[int, int]] = {}
        for (node, port), (lid, lmc) in self.port_lids.items():
            # readers check LIDs where they read them; this guards what else fills port_lids
            if not (0 <= lmc <= 7 and 1 <= lid and lid + (1 << lmc) - 1 <= 0xBFFF):
                raise InputError(f"{self.names[node]} port {port}: LID {lid} with LMC {lmc} is outside the "
                                 f"unicast LIDs 1..0xbfff (LMC 0..7)")
            for x in range(lid, lid + (1 << lmc)):
                out[x] = (node, port)
        return out

    def link_set(self) -> set[frozenset]:
        """Links as unordered pairs of (node name, port): the view that compares plans by name."""
        n = self.names
        return {frozenset(((n[a], pa), (n[b], pb)))
                for a, pa, b, pb in zip(self.link_a, self.link_pa, self.link_b, self.link_pb)}

    def summary(self) -> dict:
        roles: dict[str, int] = {}
        for r in self.roles:
            roles[r] = roles.get(r, 0) + 1
        return {
            "name": self.name,
            "switches": sum(1 for t in self.types if t == SWITCH),
            "hcas": sum(1 for t in self.types if t == CA),
            "links": self.num_links,
            "roles": roles,
            "params": self.params,
        }


def switch_stages(f: Fabric) -> dict[int, int]:
    """Stage of every switch from the wiring alone: hops from the nearest switch with an HCA
    (leaves 0, then upwards). Switches no HCA's switch reaches are left out."""
    from collections import deque
    stage: dict[int, int] = {}
    q = deque()
    for i in range(f.num_nodes):
        if f.types[i] == SWITCH and any(f.types[b] == CA for _, b, _ in f.neighbors(i)):
            stage[i] = 0
            q.append(i)
    while q:
        u = q.popleft()
        for _, v, _ in f.neighbors(u):
            if f.types[v] == SWITCH and v not in stage:
                stage[v] = stage[u] + 1
                q.append(v)
    return stage


def attached_switch(fabric: Fabric) -> np.ndarray:
    """For every node, the switch its first switch link goes to (itself for a switch, -1 if none)."""
    t = np.asarray(fabric.types)
    out = np.where(t == SWITCH, np.arange(fabric.num_nodes), -1)
    a = np.asarray(fabric.link_a, dtype=np.int64)
    b = np.asarray(fabric.link_b, dtype=np.int64)
    # reversed so the first link of a node wins the fancy assignment
    for x, y in ((a[::-1], b[::-1]), (b[::-1], a[::-1])):
        sel = (t[x] == CA) & (t[y] == SWITCH)
        out[x[sel]] = y[sel]
    return out


@dataclass(frozen=True)
class SwitchGraph:
    """Switches joined by their links, as the CSR neighbour lists ibtool.hops.bfs_hops walks:
    vertex v is fabric node nodes[v]; its neighbours are indices[indptr[v]:indptr[v + 1]], in port
    order, each link listed from both ends (a parallel link once per cable) and port[j] the port
    of nodes[v] that reaches indices[j]."""
    nodes: np.ndarray  # int64: fabric node of each vertex
    vertex: np.ndarray  # int64: fabric node -> vertex, -1 for a node that is not one
    indptr: np.ndarray  # int64
    indices: np.ndarray  # int64
    port: np.ndarray  # int64


def switch_graph(f: Fabric, nodes=None, working: np.ndarray | None = None) -> SwitchGraph:
    """The one switch adjacency: the links between `nodes` (default: every switch, in node order;
    the vertices in the order given) — analyze's graph, verify's distances, hdor's indirect
    networks, kantc's shortest paths. `working`: a bool per port slot of f.ports(); a link is
    left out where its slot is False (hdor's degraded pass: the remembered links that still work)."""
    P = f.ports()
    if nodes is None:
        nodes = np.flatnonzero(np.asarray(f.types, dtype=np.int64) == SWITCH)
    nodes = np.asarray(nodes, dtype=np.int64)
    vertex = np.full(f.num_nodes, -1, dtype=np.int64)
    vertex[nodes] = np.arange(len(nodes))
    first = P.offset[nodes] + 1  # port 1's slot (port 0 is the switch itself)
    count = P.offset[nodes + 1] - first
    owner = np.repeat(np.arange(len(nodes)), count)
    slots = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count) + first[owner]
    peer = P.peer[slots].astype(np.int64)
    keep = peer >= 0
    keep[keep] = vertex[peer[keep]] >= 0
    if working is not None:
        keep &= working[slots]
    indptr = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[keep], minlength=len(nodes)), out=indptr[1:])
    return SwitchGraph(nodes, vertex, indptr, vertex[peer[keep]], slots[keep] - P.offset[nodes][owner[keep]])
