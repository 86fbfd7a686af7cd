"""Checks of a routed fabric, independent of the engine: walk the dump_fts tables over the links
ibnetdiscover found, for every HCA pair (every LID of the destination's LMC range) and every
switch-to-switch pair, and check delivery, minimality, one dimension order and an acyclic channel
dependency graph. Used by the hdor plugin tests; knows nothing about hdor's code."""

from __future__ import annotations

import random
import re
import subprocess
import time
from collections import deque
from pathlib import Path

import pytest

from ibtool.fabric import Fabric
from ibtool.formats import hdor_dump, ibnetdiscover, lft

CA, SWITCH = 1, 2
NO_ROUTE = 255
ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "opensm_plugin"
# the engine's files: its internal header, the core's units and the OpenSM adapter (docs/plugin.md)
ENGINE_FILES = [PLUGIN / "osm_hdor.h", *sorted(PLUGIN.glob("osm_hdor_*.c")), PLUGIN / "osm_ucast_hdor.c"]


@pytest.fixture(scope="session")
def libhdor() -> Path:
    """opensm_plugin/libhdor.so, built (make is a no-op when it is up to date)."""
    p = subprocess.run(["make", "-s", "-C", str(PLUGIN), "libhdor.so"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    so = PLUGIN / "libhdor.so"
    assert so.is_file()
    return so


CONFIGURED = re.compile(r"(\S+) tables configured on all switches")


def settle(read_log, before: int, timeout: float = 120, quiet: float = 2) -> str:
    """Wait until OpenSM (its log text from `read_log()`) configured tables more than `before`
    times, reached SUBNET UP (its dumps are written just before) and stayed quiet for `quiet` s
    (two of the tests' 1 s sweep intervals: a change a sweep missed is swept again within one);
    the engine that configured the last tables."""
    deadline = time.monotonic() + timeout
    while True:
        text = read_log()
        found = CONFIGURED.findall(text)
        last = max(m.end() for m in CONFIGURED.finditer(text)) if found else 0
        if len(found) > before and "SUBNET UP" in text[last:]:
            time.sleep(quiet)
            if len(CONFIGURED.findall(read_log())) == len(found):
                return found[-1]
            continue
        assert time.monotonic() < deadline, f"no new tables within {timeout} s:\n{text[-3000:]}"
        time.sleep(0.2)


def read_hdor_dump(path: Path) -> dict:
    """opensm-hdor.dump, read by ibtool.formats.hdor_dump, as {'header': {...}, 'router': {guid: coords},
    'switch': {guid: (dim, coords)}, 'hca': {guid: coords}, 'spread': [(guid, dim, {port: count})],
    'names': {guid: desc}}"""
    d = hdor_dump.read(path)
    out = {"header": d.header, "router": {}, "switch": {}, "hca": {}, "names": d.names,
           "spread": [(g, dim, ports) for (g, dim), ports in d.spread.items()]}
    for g, role in d.role.items():
        out[role][g] = (d.dim[g], d.coords[g]) if role == "switch" else d.coords[g]
    return out


class Routed:
    """A discovered fabric plus its tables (from a run directory of `ibtool sim run`)."""

    def __init__(self, run: Path):
        self.run = Path(run)
        self.f: Fabric = ibnetdiscover.read(self.run / "ibnetdiscover.out")
        # Walk OpenSM's own view of the programmed tables (opensm-lfts.dump, from new_lft), and
        # check that the switches hold the same (dump_fts reads them back over MADs). dump_fts
        # omits the top LID when it opens a new 64-LID block (0x40, 0x80, ...; minhop too).
        self.t = lft.read(self.run / "osm" / "opensm-lfts.dump")
        hw = lft.read(self.run / "dump_fts.out")
        assert set(hw.lft) == set(self.t.lft), "dump_fts and opensm-lfts.dump list different switches"
        for g, a in self.t.lft.items():
            b = hw.lft[g]
            top = len(a) - 1
            n = min(len(a), len(b))
            assert (a[:n] == b[:n]).all(), f"switch {g:#x}: dump_fts differs from opensm-lfts.dump"
            assert len(b) == len(a) or (len(b) == top and top % 64 == 0), \
                f"switch {g:#x}: dump_fts has LIDs up to {len(b) - 1}, OpenSM up to {top}"
        f = self.f
        self.switches = [i for i in range(f.num_nodes) if f.types[i] == SWITCH]
        self.nbrs = {i: f.neighbors(i) for i in range(f.num_nodes)}
        self.routers = {i for i in self.switches if any(f.types[r] == CA for _, r, _ in self.nbrs[i])}
        self.owner = f.lid_owners()  # lid -> (node, port)
        self.lids_of: dict[tuple[int, int], list[int]] = {}
        for lid, np_ in self.owner.items():
            self.lids_of.setdefault(np_, []).append(lid)
        self._dist: dict[int, dict[int, int]] = {}

    def table(self, sw: int):
        g = self.f.guids[sw]
        assert g in self.t.lft, f"no LFT for switch {self.f.names[sw]}"
        return self.t.lft[g]

    def dist_from(self, sw: int) -> dict[int, int]:
        """switch-to-switch link hops from `sw` (BFS over switch links)."""
        d = self._dist.get(sw)
        if d is None:
            d = {sw: 0}
            q = deque([sw])
            while q:
                x = q.popleft()
                for _, y, _ in self.nbrs[x]:
                    # router-router cables are no part of a KNS; hdor never uses them (hdor.md)
                    if x in self.routers and y in self.routers:
                        continue
                    if self.f.types[y] == SWITCH and y not in d:
                        d[y] = d[x] + 1
                        q.append(y)
            self._dist[sw] = d
        return d

    def walk(self, start: int, lid: int, limit: int = 64):
        """Follow the tables from switch `start` toward `lid`; returns (channels, end node, end port,
        switch hops). A channel is (switch, egress port)."""
        cur, hops, chans = start, 0, []
        while True:
            tab = self.table(cur)
            port = int(tab[lid]) if lid < len(tab) else NO_ROUTE
            assert port != NO_ROUTE, f"{self.f.names[cur]}: no route to LID {lid}"
            if port == 0:
                return chans, cur, 0, hops
            peer = self.f.peer(cur, port)
            assert peer is not None, f"{self.f.names[cur]}: LID {lid} routed to uncabled port {port}"
            chans.append((cur, port))
            nxt, nport = peer
            if self.f.types[nxt] == CA:
                return chans, nxt, nport, hops
            cur, hops = nxt, hops + 1
            assert hops <= limit, f"LID {lid}: loop from {self.f.names[start]}"


def check_routes(run: Path, sample: int | None = None, seed: int = 1) -> dict:
    """Assert every HCA pair is delivered on a minimal path that crosses dimensions in one global
    order (dimensions from opensm-hdor.dump, checked against the plan's S[d,...] names), that every
    switch reaches every switch LID minimally, and that the CA-to-CA channel dependency graph is
    acyclic. Returns counts."""
    R = Routed(run)
    f = R.f
    dump = read_hdor_dump(run / "osm" / "opensm-hdor.dump")
    guid_idx = {f.guids[i]: i for i in range(f.num_nodes)}
    # roles agree with the engine's
    assert {guid_idx[g] for g in dump["router"]} == R.routers
    indirect = set(R.switches) - R.routers
    assert {guid_idx[g] for g in dump["switch"]} == indirect
    dim_of = {guid_idx[g]: d for g, (d, _) in dump["switch"].items()}
    coords = {guid_idx[g]: c for g, c in dump["router"].items()}
    # hdor's dimensions are one relabelling of the plan's (names S[d,...] from the KNS builder)
    plan_dim = {}
    for i in indirect:
        m = re.match(r"S\[(\d+),", f.names[i])
        if m:
            plan_dim.setdefault(dim_of[i], set()).add(int(m.group(1)))
    assert all(len(v) == 1 for v in plan_dim.values()), f"hdor dims mix plan dims: {plan_dim}"
    # an indirect switch's routers differ only in its dimension
    n = dump["header"]["n"]
    for i in indirect:
        for _, r, _ in R.nbrs[i]:
            if r in R.routers:
                d = dim_of[i]
                c = coords[r]
                # coordinates are printed most significant first: index n-1-d is dimension d
                key = tuple(x for j, x in enumerate(c) if j != n - 1 - d)
                assert key == dump["switch"][f.guids[i]][1], f"{f.names[i]} linked to {f.names[r]} {c}"

    hca_ports = [(i, p) for i in range(f.num_nodes) if f.types[i] == CA for p, _, _ in R.nbrs[i]]
    pairs = [(a, b) for a in hca_ports for b in hca_ports if a != b]
    if sample is not None and len(pairs) > sample:
        pairs = random.Random(seed).sample(pairs, sample)
    edges: dict[tuple, set] = {}
    npaths = 0
    for (sn, sp), (dn, dp) in pairs:
        src_sw, _ = f.peer(sn, sp)
        dst_sw, _ = f.peer(dn, dp)
        lids = R.lids_of.get((dn, dp))
        assert lids, f"{f.names[dn]} port {dp} has no LID"
        for lid in lids:
            chans, end, eport, hops = R.walk(src_sw, lid)
            assert (end, eport) == (dn, dp), (f"LID {lid} from {f.names[sn]} ends at {f.names[end]} "
                                               f"port {eport}, not {f.names[dn]}")
            assert hops == R.dist_from(src_sw)[dst_sw], (f"{f.names[sn]} -> {f.names[dn]}: {hops} switch "
                                                          f"hops, minimum {R.dist_from(src_sw)[dst_sw]}")
            dims = [dim_of[s] for s, _ in chans if s in indirect]
            crossed = [d for j, d in enumerate(dims) if j == 0 or dims[j - 1] != d]
            assert crossed == sorted(set(crossed)), f"{f.names[sn]} -> {f.names[dn]}: dimension order {crossed}"
            cs, cd = coords[src_sw], coords[dst_sw]
            assert set(crossed) == {n - 1 - j for j in range(n) if cs[j] != cd[j]}
            for a, b in zip(chans, chans[1:]):
                edges.setdefault(a, set()).add(b)
            npaths += 1
    assert_acyclic(edges)
    # management routes: every switch reaches every switch LID minimally
    nsw = 0
    for w in R.switches:
        for d in R.switches:
            for lid in R.lids_of.get((d, 0), []):
                chans, end, eport, hops = R.walk(w, lid)
                assert (end, eport) == (d, 0), f"{f.names[w]} -> switch {f.names[d]} ends at {f.names[end]}"
                assert hops == R.dist_from(w)[d], f"{f.names[w]} -> {f.names[d]}: {hops} hops, min {R.dist_from(w)[d]}"
                nsw += 1
    return {"hca_paths": npaths, "switch_paths": nsw, "cdg_channels": len(edges), "dump": dump}


def assert_acyclic(edges: dict) -> None:
    """Kahn's algorithm on the channel dependency graph."""
    indeg: dict = {}
    for a, bs in edges.items():
        indeg.setdefault(a, 0)
        for b in bs:
            indeg[b] = indeg.get(b, 0) + 1
    q = deque(c for c, k in indeg.items() if k == 0)
    seen = 0
    while q:
        c = q.popleft()
        seen += 1
        for b in edges.get(c, ()):
            indeg[b] -= 1
            if indeg[b] == 0:
                q.append(b)
    assert seen == len(indeg), f"channel dependency graph has a cycle ({len(indeg) - seen} channels on cycles)"


def rebuild(f: Fabric, seed: int | None = None, drop_link=None, guids: bool = False) -> Fabric:
    """A copy of `f` with the same names, GUIDs and cables; with `seed`, node order and every
    switch's port numbers shuffled (and with `guids`, the GUIDs dealt anew, as a real fabric's
    would be); `drop_link(name_a, name_b)` -> True leaves that cable out."""
    rnd = random.Random(seed)
    order = list(range(f.num_nodes))
    pmap = {}
    if seed is not None:
        rnd.shuffle(order)
        for i in range(f.num_nodes):
            ports = list(range(1, f.nports[i] + 1))
            if f.types[i] == SWITCH:
                rnd.shuffle(ports)
            pmap[i] = dict(zip(range(1, f.nports[i] + 1), ports))
    dealt = list(f.guids)
    if guids and seed is not None:
        rnd.shuffle(dealt)
    g = Fabric(f.name + ("-shuffled" if seed is not None else "-copy"))
    g.params = dict(f.params)
    new = {}
    for i in order:
        new[i] = g.add_node(f.types[i], f.names[i], f.nports[i], f.roles[i], dict(f.labels[i]), guid=dealt[i])
    links = list(range(f.num_links))
    if seed is not None:
        rnd.shuffle(links)
    for li in links:
        a, pa, b, pb = f.link_a[li], f.link_pa[li], f.link_b[li], f.link_pb[li]
        if drop_link and drop_link(f.names[a], f.names[b]):
            continue
        g.add_link(new[a], new[b], pmap.get(a, {}).get(pa, pa), pmap.get(b, {}).get(pb, pb))
    return g


def fat_tree(leaves: int = 4, spines: int = 2, hcas: int = 2, radix: int = 8) -> Fabric:
    f = Fabric("fat-tree")
    sp = [f.add_switch(f"spine{j}", radix) for j in range(spines)]
    for i in range(leaves):
        lf = f.add_switch(f"leaf{i}", radix)
        for j in range(hcas):
            h = f.add_hca(f"host{i}-{j}", 1)
            f.add_link(lf, h)
        for s in sp:
            f.add_link(lf, s)
    return f


def run_opensm(net: Path, run: Path, opensm: str, conf: str, args=(), env=None, wrap=(),
               discover: bool = True, timeout: float = 300):
    """One `opensm -o` sweep of `net` under a fresh ibsim, laid out like `ibtool sim run`:
    run/opensm.log, run/osm/ (dump files), run/ibnetdiscover.out, run/dump_fts.out. `wrap` prefixes
    the command (e.g. valgrind). Returns (returncode, log text)."""
    from ibtool.sim.runner import ibsim

    run.mkdir(parents=True, exist_ok=True)
    osm = run / "osm"
    osm.mkdir(exist_ok=True)
    (run / "opensm.conf").write_text(conf)
    log = run / "opensm.log"
    fab = ibnetdiscover.read(net)
    with ibsim(net, run / ".work", fab) as sim:
        e = sim.env(OSM_TMP_DIR=str(osm), OSM_CACHE_DIR=str(osm), **(env or {}))
        p = subprocess.run([*wrap, opensm, "-o", "-F", str(run / "opensm.conf"), "-f", str(log), "-D", "0x43",
                            *args], cwd=sim.work, env=e, capture_output=True, timeout=timeout)
        if discover:
            sim.client(["ibnetdiscover"], run / "ibnetdiscover.out", timeout)
            sim.client(["dump_fts"], run / "dump_fts.out", timeout)
    return p.returncode, log.read_text(errors="replace"), p
