"""The universal routing table of Equality networks (paper 002, Eq. 2): router numbering from the
wiring, delivery of every pair on shortest paths, spreading, and the tables loaded into a real
OpenSM by its `file` engine under ibsim, with the VL0 deadlock status from `ibtool verify routes`."""

import json
import random

import numpy as np
import pytest
from support import ibtool

from ibtool.errors import NotFamily
from ibtool.fabric import SWITCH, Fabric
from ibtool.routing import equality as eqr
from ibtool.routing.lids import assign_lids
from ibtool.topologies import equality_net as eq
from ibtool.verify import routes

CASES = [(14, (-1, 1, 3, 9), (4,), 4), (20, (-1, 1, 5), (10,), 2), (30, (-1, 1, 7, 11), (4, 14), 1),
         (64, (-1, 1, 13, 29), (6, 20, 32), 1)]


def scrambled(f: Fabric, seed: int) -> Fabric:
    """The same wiring under other names, GUIDs and node order: what a numbering from names or
    GUID order would get wrong."""
    rng = random.Random(seed)
    order = list(range(f.num_nodes))
    rng.shuffle(order)
    g = Fabric("scrambled")
    new = {}
    for k, old in enumerate(order):
        new[old] = g.add_node(f.types[old], f"node-{k}", f.nports[old], f.roles[old],
                              guid=0x0002C90000000000 | rng.getrandbits(32) << 4)
    for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb):
        g.add_link(new[a], new[b], pa, pb)
    return g


@pytest.mark.parametrize("n,sa,sb,p", CASES)
def test_universal_table_delivers_every_pair_on_shortest_paths(n, sa, sb, p):
    f = scrambled(eq.build(n, sa, sb, p, 36), seed=n)
    assign_lids(f)
    r = eqr.compute(f, n, sa, sb)
    # the numbering is a graph isomorphism: r_i's label-l port reaches r_{i +- o_l}
    offs = eq.labels(n, sa, sb)
    for i, node in enumerate(r.router):
        for l, o in enumerate(offs):
            peer, _ = f.peer(node, int(r.port[i, l]))
            assert peer == r.router[(i + o) % n if i % 2 == 0 else (i - o) % n]
    res = routes.verify(f, r.tables, balance=False)
    assert res["delivered"] == res["pairs"] == f.num_nodes * (f.num_nodes - 1)  # one LID per node
    assert res["minimal"] and set(res["extra_hops_histogram"]) == {"0"}
    # CA-to-CA route lengths are router distances + 2 (Remark 2 distances)
    hops = np.bincount(eq.distances(n, sa, sb), minlength=8)
    for d, count in enumerate(hops):
        pairs = count * n * p * p if d else n * p * (p - 1)
        if pairs:
            assert res["length_histogram"][str(d + 2)] >= pairs


def test_one_table_serves_every_router_by_eq2():
    n, sa, sb, p = 30, (-1, 1, 7, 11), (4, 14), 2
    f = eq.build(n, sa, sb, p, 36)
    assign_lids(f)
    r = eqr.compute(f, n, sa, sb)
    _, table = eqr.universal_table(n, sa, sb)
    assert table[0] == () and all(len(t) >= 1 for t in table[1:])
    lid_of = {f.peer(*x)[0] if f.types[x[0]] != SWITCH else x[0]: lid for lid, x in f.lid_owners().items()
              if f.types[x[0]] == SWITCH}
    for i, node in enumerate(r.router):
        arr = r.tables.lft[f.guids[node]]
        for t, tnode in enumerate(r.router):
            if t == i:
                assert arr[lid_of[tnode]] == 0
                continue
            j = (t - i) % n if i % 2 == 0 else (i - t) % n
            allowed = {int(r.port[i, l]) for l in table[j]}
            assert arr[lid_of[tnode]] in allowed
    # spreading: a destination router with several shortest first hops gets its p HCA LIDs + own
    # LID sent over more than one of them from somewhere
    multi = [j for j in range(1, n) if len(table[j]) > 1]
    assert multi
    spread = 0
    for i, node in enumerate(r.router):
        arr = r.tables.lft[f.guids[node]]
        for j in multi:
            t = (i + j) % n if i % 2 == 0 else (i - j) % n
            lids = [lid for lid, (x, port) in f.lid_owners().items()
                    if x == r.router[t] or (f.types[x] != SWITCH and f.peer(x, port)[0] == r.router[t])]
            spread += len({int(arr[lid]) for lid in lids}) > 1
    assert spread >= n * len(multi) // 2


def test_miswired_fabric_is_refused():
    n, sa, sb = 14, (-1, 1, 3, 9), (4,)
    f = eq.build(n, sa, sb, 1, 12)
    # re-cable R[0]-R[9] and R[2]-R[11] (both label 9) as R[0]-R[11] and R[2]-R[9]: every
    # router keeps K = 6 neighbours, but the wiring is no longer these link sets
    g = Fabric("miswired")
    for i in range(f.num_nodes):
        g.add_node(f.types[i], f.names[i], f.nports[i], f.roles[i], guid=f.guids[i])
    r0, r2, r9, r11 = (f.index(f"R[{i}]") for i in (0, 2, 9, 11))
    ends = {}
    for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb):
        if {a, b} in ({r0, r9}, {r2, r11}):
            ends[a if a in (r0, r2) else b] = (pa if a in (r0, r2) else pb, pb if a in (r0, r2) else pa)
            continue
        g.add_link(a, b, pa, pb)
    g.add_link(r0, r11, ends[r0][0], ends[r2][1])
    g.add_link(r2, r9, ends[r2][0], ends[r0][1])
    with pytest.raises(NotFamily, match="^equality: the fabric does not match the link sets: no numbering of the "
                                        "switches fits the link sets") as e:
        eqr.compute(g, n, sa, sb)
    assert (e.value.routing, e.value.family, e.value.exit_code) == ("equality", "Equality", 1)
    with pytest.raises(NotFamily, match="has 6 switch neighbours, K = 13"):
        eqr.compute(eq.build(n, sa, sb, 1, 16), n, (-1, 1, 3, 5, 9, 11, 7), (2, 4, 6))


def test_route_cli_bad_input(tmp_path):
    r = ibtool("route", "equality", "--fabric", tmp_path / "none.out", "--out", tmp_path / "x.lft",
               "--spec", "n14k6p3")
    assert r.returncode == 2 and "give the link sets (the full notation" in r.stderr
    r = ibtool("route", "equality", "--fabric", tmp_path / "none.out", "--out", tmp_path / "x.lft")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--plan PLAN_DIR" in r.stderr
    r = ibtool("route", "equality", "--fabric", tmp_path / "none.out", "--out", tmp_path / "x.lft",
               "--spec", "N14K6[-1,1,3,9](4)")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "none.out: cannot read" in r.stderr
    assert not (tmp_path / "x.lft").exists()


@pytest.mark.ibsim
def test_file_engine_delivers_every_pair_and_vl0_deadlock_is_reported(tmp_path):
    plan = tmp_path / "eq"
    ibtool("topo", "equality", "--spec", "N14K6[-1,1,3,9](4)", "--hcas-per-router", "4", "--radix", "12",
           "--out", plan, check=0)
    run1 = tmp_path / "run1"
    ibtool("sim", "run", plan / "topology.net", "--out", run1, check=0)
    lfts = (tmp_path / "eq.lft").resolve()
    r = ibtool("route", "equality", "--fabric", run1 / "ibnetdiscover.out", "--plan", plan, "--out", lfts,
               "--json", check=0)
    s = json.loads(r.stdout)
    assert (s["routers"], s["k"], s["lids"], s["diameter"]) == (14, 6, 70, 2)
    run2 = tmp_path / "run2"
    r = ibtool("sim", "run", plan / "topology.net", "--engine", "file", "--conf", f"lfts_file={lfts}",
               "--out", run2, check=0)
    summary = json.loads((run2 / "summary.json").read_text())
    assert summary["engine"] == "file" and summary["ok"] and not summary["fallback"]
    # what the switches hold (dump_fts through ibsim) delivers every pair on shortest paths ...
    r = ibtool("verify", "routes", "--fabric", run2 / "ibnetdiscover.out", "--lfts", run2 / "dump_fts.out",
               "--json")
    rep = json.loads(r.stdout)["routes"]
    assert rep["delivered"] == rep["pairs"] == 70 * 69 and rep["minimal"]
    # ... on VL0 only, where shortest paths around the ring close a credit loop: reported, with it
    assert r.returncode == 1
    assert rep["deadlock"]["vls"] == 1 and rep["deadlock"]["free"] is False
    cyc = rep["deadlock"]["cycle"]
    assert len(cyc) >= 2 and all(c.endswith("(VL0)") for c in cyc)
    text = ibtool("verify", "routes", "--fabric", run2 / "ibnetdiscover.out", "--lfts", run2 / "dump_fts.out").stdout
    assert "credit loop" in text and cyc[0] in text
