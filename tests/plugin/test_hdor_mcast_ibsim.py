"""hdor's multicast spanning trees (opensm_plugin/osm_hdor_mcast.c, docs/hdor.md section 8) on
real ibsim + OpenSM with the plugin, its routing dumps off (`-D 0x07`, as a production OpenSM runs):
so hdor leaves no hop matrix at all and OpenSM's own multicast tree, which is built on them,
cannot be what programs the switches (and the SA still answers every PathRecord).

HCAs join two groups through OpenSM's SA (SubnAdmSet(MCMemberRecord), ibtool.mad): the IPoIB
broadcast group of the default partition (OpenSM creates it) with some of them, and the IPv6
all-nodes group (created by the first join) with all. The switches' multicast forwarding tables
are read back with `dump_fts -M` and each group's must be a tree: every switch-to-switch entry
matched by the other end of its cable, connected, one link fewer than switches, every member HCA
(and no other) reached, no branch without a member; and its links are hdor's unicast routes
toward one switch (the tree is the union of those routes). Then a cable of the tree fails: hdor
routes the degraded KNS and the trees, rebuilt on its new routes, avoid the cable."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hdor_walk import CONFIGURED, libhdor, settle  # noqa: F401
from support import ibtool

from ibtool import mad
from ibtool.formats import ibnetdiscover, lft
from ibtool.sim.clients import Clients, why
from ibtool.sim.live import LiveFabric

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("libhdor")]

IPOIB_BROADCAST = "ff12:401b:ffff::ffff:ffff"
IPV6_ALL_NODES = "ff12:601b:ffff::1"
ROUTED = re.compile(r"hdor: routed k=.*$", re.M)


def mfts(text: str) -> dict[int, dict[int, set[int]]]:
    """`dump_fts -M` / `ibroute -M` output -> {switch GUID: {MLID: ports}} (a port's column is
    where its number's last digit stands in the "Ports:" line)."""
    out: dict[int, dict[int, set[int]]] = {}
    guid, cols = None, []
    for ln in text.splitlines():
        if ln.startswith("Multicast mlids"):
            guid = int(re.search(r" guid (0x[0-9a-f]+)", ln).group(1), 16)
            out[guid] = {}
        elif "Ports:" in ln:
            start = ln.index("Ports:") + len("Ports:")
            cols = [i for i in range(start, len(ln)) if ln[i].isdigit()]
        elif guid is not None and re.match(r"0x[0-9a-f]{4}\s", ln):
            out[guid][int(ln[:6], 16)] = {p for p, c in enumerate(cols) if c < len(ln) and ln[c] == "x"}
    return out


def check_tree(f, mft: dict, lfts: lft.Tables, mlid: int, members: set[int]) -> dict:
    """The group's forwarding entries form a tree of hdor's routes; what it is (for messages)."""
    on = {i: mft[f.guids[i]][mlid] for i in range(f.num_nodes)
          if f.is_switch(i) and mlid in mft.get(f.guids[i], {})}
    assert on, f"no switch forwards MLID {mlid:#x}"
    adj: dict[int, dict[int, int]] = {i: {} for i in on}  # tree neighbour -> the port toward it
    reached = set()
    for i, ports in on.items():
        for p in ports - {0}:
            peer = f.peer(i, p)
            assert peer, f"{f.names[i]} forwards MLID {mlid:#x} to port {p}, which has no working cable"
            j, q = peer
            if f.is_switch(j):
                assert q in on.get(j, set()), f"{f.names[i]}/{p} -> {f.names[j]}/{q}: not forwarded back"
                adj[i][j] = p
            else:
                reached.add(f.port_guid(j, q))
    assert reached == members, f"MLID {mlid:#x} reaches {len(reached)} HCA ports, the group has {len(members)}"
    edges = sum(len(a) for a in adj.values()) // 2
    seen, todo = {next(iter(on))}, [next(iter(on))]
    while todo:
        for j in adj[todo.pop()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    assert seen == set(on) and edges == len(on) - 1, f"MLID {mlid:#x}: {len(on)} switches, {edges} links, " \
        f"{len(seen)} connected: not a tree"
    hca_ports = {i: [p for p in on[i] - {0} if not f.is_switch(f.peer(i, p)[0])] for i in on}
    assert all(hca_ports[i] for i in on if len(adj[i]) <= 1) or len(on) == 1, "a branch without a member"
    # the union of hdor's routes toward one switch r: every tree switch but the tree's root sends
    # r's LID up the tree (r itself may be above the root: the root moves down a single branch)
    lids = {i: f.port_lids[(i, 0)][0] for i in range(f.num_nodes) if f.is_switch(i)}
    for root in on:
        up, todo = {}, [root]
        while todo:
            x = todo.pop()
            for y, _ in adj[x].items():
                if y != root and y not in up:
                    up[y] = adj[y][x]
                    todo.append(y)
        for r, lid in lids.items():
            if all(int(lfts.lft[f.guids[x]][lid]) == p for x, p in up.items()):
                return {"switches": len(on), "root": f.names[root], "toward": f.names[r]}
    raise AssertionError(f"MLID {mlid:#x}: the tree's links are not hdor's routes toward any one switch")


def wait_trees(lf: LiveFabric, groups: dict[int, set[int]], after: int = 0, timeout: float = 60) -> str:
    """SM 1's log once hdor has built a tree of every group with all its members (after log
    offset `after`), and OpenSM has had a moment to send the tables."""
    deadline = time.monotonic() + timeout
    while True:
        log = lf.opensm_log.read_text(errors="replace")
        built = {int(m, 16): int(n) for m, n in
                 re.findall(r"hdor: multicast group 0x([0-9A-F]+): (\d+) member port", log[after:])}
        if all(built.get(m) == len(v) for m, v in groups.items()):
            time.sleep(2)
            return lf.opensm_log.read_text(errors="replace")
        assert time.monotonic() < deadline, f"hdor built no tree of every group in {timeout:g} s: {built}"
        time.sleep(0.2)


class Readback:
    def __init__(self, tmp: Path, lf: LiveFabric):
        self.tmp, self.lf, self.n = tmp, lf, 0
        self.clients = Clients(lf.scratch, timeout=60, environ=lf.env())

    def read(self):
        """The fabric discovered, its unicast and multicast tables as the switches hold them."""
        self.n += 1
        disc = self.tmp / f"disc-{self.n}.out"
        self.lf.client(["ibnetdiscover"], disc)
        uni = self.tmp / f"fts-{self.n}.out"
        self.lf.client(["dump_fts"], uni)
        p = self.clients.run("dump_fts", "-M")
        assert p.returncode == 0, why(p)
        return ibnetdiscover.read(disc), lft.read(uni), mfts(p.stdout)


def test_multicast_trees_follow_hdor_routes_without_hop_matrices(tmp_path):
    ibtool("topo", "kns", "--k", "4", "--n", "2", "--out", tmp_path / "plan", check=0)
    net = tmp_path / "plan" / "topology.net"
    plan = ibnetdiscover.read(net)
    hcas = sorted(plan.port_guid(i, p) for i in range(plan.num_nodes) if not plan.is_switch(i)
                  for p, _, _ in plan.neighbors(i))
    with LiveFabric(net, tmp_path / "live", ["hdor", "nue"], timeout=180, opensm_args=["-D", "0x07"],
                    conf_options=[("qos", "TRUE"), ("sweep_interval", "1")]) as lf:
        assert lf.outcome["engine"] == "hdor" and not lf.outcome["fallback"], lf.outcome
        fab = Readback(tmp_path, lf)
        some = hcas[::3]
        groups = {}
        for mgid, who in ((IPOIB_BROADCAST, some), (IPV6_ALL_NODES, hcas)):
            got = mad.mcast_join(fab.clients, mgid, who, 60)
            assert set(got) == set(who) and len(set(got.values())) == 1, got
            groups[next(iter(got.values()))] = set(who)
        assert len(groups) == 2
        log = wait_trees(lf, groups)
        assert "no hop matrices" in ROUTED.findall(log)[-1]
        f, lfts, mft = fab.read()
        trees = {mlid: check_tree(f, mft, lfts, mlid, members) for mlid, members in groups.items()}
        assert len(re.findall(r"hdor: multicast group 0x[0-9A-F]+: \d+ member port", log)) >= 2
        # the SA needs no hop matrix either: a PathRecord for every HCA pair
        paths = mad.path_sls(SimpleNamespace(work=lf.scratch, env=lf.env), tmp_path / "paths.out", f, 60)
        assert paths["records"] == paths["pairs"] == 16 * 15, paths
        assert "ERR 0A17" not in log and "ERR HD40" not in log

        # a cable of the IPv6 group's tree fails: the degraded KNS's routes, and trees on them
        mlid = max(groups)
        x = next(i for i in range(f.num_nodes) if f.is_switch(i) and mlid in mft[f.guids[i]]
                 and f.names[i].startswith("R[") and any(f.is_switch(f.peer(i, p)[0])
                                                          for p in mft[f.guids[i]][mlid] - {0}))
        port = next(p for p in sorted(mft[f.guids[x]][mlid] - {0}) if f.is_switch(f.peer(x, p)[0]))
        mark = lf.opensm_log.read_text(errors="replace")
        before = len(CONFIGURED.findall(mark))
        lf.console(f'Unlink "{ibnetdiscover.node_id(plan, plan.index(f.names[x]))}"[{port}]')
        settle(lambda: lf.opensm_log.read_text(errors="replace"), before)
        log = lf.opensm_log.read_text()
        line = ROUTED.findall(log)[-1]
        assert "degraded KNS: 1 failed link(s)" in line and "no hop matrices" in line, line
        wait_trees(lf, groups, after=len(mark))
        f2, lfts2, mft2 = fab.read()
        assert f2.peer(f2.index(f.names[x]), port) is None  # the cable is gone from the discovered fabric
        for m, members in groups.items():
            check_tree(f2, mft2, lfts2, m, members)
        assert "ERR 0A17" not in log and "ERR HD40" not in log
        assert trees[mlid]["switches"] > 1
