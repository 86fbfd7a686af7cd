"""Slim Fly (MMS graphs) and the canonical Dragonfly of Kim et al., the comparison networks of
paper 002: the closed forms of Besta & Hoefler and Kim et al. against the generated graphs for
several sizes, the field arithmetic, the generator sets others publish, ports, layout and the
plan's engine, one-line errors; under real ibsim + OpenSM (dfsssp, QoS on) both come up without
fallback and pass `ibtool verify all` per VL with the path SLs and SL2VL tables."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path
from support import ibtool

from ibtool.fabric import SWITCH
from ibtool.topologies import load_all
from ibtool.topologies.dragonfly_canonical import channel_to, dragonfly_canonical, group_of_channel
from ibtool.topologies.dragonfly_canonical import closed_forms as df_forms
from ibtool.topologies.slimfly import GF, generators, prime_power, slimfly
from ibtool.topologies.slimfly import closed_forms as sf_forms

REG = load_all()


def router_graph(f):
    """The switch graph as a dense 0/1 matrix (the fabrics here are small) and the HCAs per switch."""
    t = np.asarray(f.types)
    a, b = np.asarray(f.link_a), np.asarray(f.link_b)
    sw = np.flatnonzero(t == SWITCH)
    idx = {int(s): i for i, s in enumerate(sw)}
    ss = (t[a] == SWITCH) & (t[b] == SWITCH)
    m = np.zeros((len(sw), len(sw)), dtype=np.int64)
    for x, y in zip(a[ss], b[ss]):
        m[idx[int(x)], idx[int(y)]] += 1
        m[idx[int(y)], idx[int(x)]] += 1
    return m, len(sw)


def diameter(m):
    return int(shortest_path(sp.csr_matrix(m), unweighted=True).max())


@pytest.mark.parametrize("q", [4, 8, 9, 16, 25, 27])
def test_gf_is_a_field(q):
    f = GF(q)
    e = np.arange(q)
    assert (f.add[0] == e).all() and (f.mul[1] == e).all()
    assert (f.add == f.add.T).all() and (f.mul == f.mul.T).all()
    for a in range(q):  # associativity and distributivity, every triple
        assert (f.mul[f.mul[a][:, None], e[None, :]] == f.mul[a][f.mul]).all()
        assert (f.mul[a][f.add] == f.add[f.mul[a][:, None], f.mul[a][None, :]]).all()
    assert all(sorted(f.mul[a, 1:].tolist()) == list(range(1, q)) for a in range(1, q))  # inverses exist
    assert len({f.power(i) for i in range(q - 1)}) == q - 1  # xi is primitive


def test_generator_sets_as_codes_publishes_them():
    """CODES' Slim Fly model lists X = {1, 4}, X' = {2, 3} for q = 5 and X = {1,10,9,12,3,4},
    X' = {6,8,2,7,5,11} for q = 13; for delta = 1, X is the nonzero squares of GF(q) (q = 29)."""
    assert generators(GF(5))[:2] == ([1, 4], [2, 3])
    assert generators(GF(13))[:2] == (sorted([1, 10, 9, 12, 3, 4]), sorted([6, 8, 2, 7, 5, 11]))
    x29, xp29, d = generators(GF(29))
    assert d == 1 and x29 == sorted({i * i % 29 for i in range(1, 29)})
    assert sorted(x29 + xp29) == list(range(1, 29))
    assert prime_power(27) == (3, 3) and prime_power(12) is None


@pytest.mark.parametrize("q", [3, 4, 5, 7, 8, 9, 11, 13])
def test_slimfly_closed_forms(q):
    f = slimfly(q, hcas_per_router=1, radix=64)
    cf = sf_forms(q)
    m, n = router_graph(f)
    assert n == cf["routers"] == 2 * q * q
    assert (m.sum(axis=1) == cf["network_radix"]).all() and m.max() == 1  # regular, no parallel links
    assert m.sum() // 2 == cf["router_links"] == q * q * (3 * q - cf["delta"]) // 2
    assert diameter(m) == 2
    X, Xp, _ = generators(GF(q))
    assert len(X) == len(Xp) == (q - cf["delta"]) // 2  # inside a group; q more across


def test_slimfly_q5_is_the_hoffman_singleton_graph():
    m, n = router_graph(slimfly(5, hcas_per_router=1))
    m2 = m @ m
    np.fill_diagonal(m2, 0)
    assert n == 50 and (m.sum(axis=1) == 7).all() and np.trace(m @ m @ m) == 0 and m2.max() == 1  # girth 5
    assert sf_forms(5)["moore_bound_d2"] == 50  # a Moore graph


def test_slimfly_ports_names_and_plan(tmp_path):
    f = slimfly(5)  # p = ceil(7/2) = 4
    assert f.params["hcas_per_router"] == 4 and f.params["X"] == [1, 4]
    r = f.index("R[0,2,3]")
    # group links: port p+1+i reaches y + X[i]; across: port p+3+m reaches (1, m, y - m x)
    assert f.names[f.peer(r, 5)[0]] == "R[0,2,4]" and f.names[f.peer(r, 6)[0]] == "R[0,2,2]"
    for mm in range(5):
        assert f.names[f.peer(r, 7 + mm)[0]] == f"R[1,{mm},{(3 - mm * 2) % 5}]"
    assert f.names[f.peer(r, 1)[0]] == "H[0,2,3]-0"
    assert f.labels[r]["cabinet"] == 4 and f.labels[f.index("R[1,2,0]")]["cabinet"] == 5
    out = tmp_path / "sf"
    s = json.loads(ibtool("topo", "slimfly", "--q", 5, "--out", out, "--json", check=0).stdout)
    assert (s["switches"], s["hcas"]) == (50, 200)
    conf = (out / "opensm.conf").read_text()
    assert "routing_engine dfsssp" in conf and "qos TRUE" in conf
    lay = json.loads((out / "layout.json").read_text())
    assert lay["policy"] == "cabinet-aware" and len(lay["cabinets"]) == 10


@pytest.mark.parametrize("a,p,h,g", [(2, 1, 1, 0), (4, 2, 2, 0), (6, 3, 3, 0), (8, 4, 4, 0), (4, 2, 2, 5),
                                     (3, 1, 2, 4)])
def test_dragonfly_closed_forms(a, p, h, g):
    f = dragonfly_canonical(a, p, h, g)
    cf = df_forms(a, p, h, g)
    m, n = router_graph(f)
    G = cf["groups"]
    assert n == cf["routers"] == a * G and f.count(kind=1) == cf["endpoints"] == a * p * G
    assert m.max() == 1 and m.sum() // 2 == cf["router_links"]
    assert diameter(m) == cf["diameter"] == 3
    grp = np.arange(n) // a
    local = m * (grp[:, None] == grp[None, :])
    assert (local.sum(axis=1) == a - 1).all()  # groups fully connected
    glob = m - local
    between = np.zeros((G, G), dtype=np.int64)
    np.add.at(between, (grp[:, None].repeat(n, 1), grp[None, :].repeat(n, 0)), glob)
    assert (between + np.eye(G, dtype=np.int64) == 1).all()  # every pair of groups exactly once
    if G == a * h + 1:
        assert (glob.sum(axis=1) == h).all()


def test_dragonfly_arrangement_and_ports():
    """The documented arrangement: group G's channel c = r h + j leads to group c (c < G) or c + 1."""
    a, p, h = 4, 2, 2
    f = dragonfly_canonical(a, p, h)
    for G in range(9):
        for c in range(8):
            D = group_of_channel(G, c)
            assert D != G and channel_to(D, G) == (G if G < D else G - 1)
            peer = f.peer(f.index(f"R[{G},{c // h}]"), p + a + c % h)
            c2 = channel_to(D, G)
            assert f.names[peer[0]] == f"R[{D},{c2 // h}]" and peer[1] == p + a + c2 % h
    r = f.index("R[3,2]")  # local: router 2 reaches router t through port p+1+(t if t < 2 else t-1)
    assert [f.names[f.peer(r, p + 1 + i)[0]] for i in range(3)] == ["R[3,0]", "R[3,1]", "R[3,3]"]
    assert f.labels[r]["cabinet"] == 3 and f.labels[r]["slot"] == 2


def test_paper_002_points_counts():
    """Paper 002's Fig. 4 points: SF N = 1058 (q = 23, p = 18) and DF N = 2064, K = 23, p = 8."""
    sf = sf_forms(23)
    assert (sf["routers"], sf["endpoints_per_router"], sf["network_radix"]) == (1058, 18, 35)  # paper: K = 34
    df = df_forms(16, 8, 8)
    assert (df["routers"], df["network_radix"], df["groups"]) == (2064, 23, 129)
    assert 2064 * 10 * (23 / 2 + 8) == 402480  # the paper's Phi for DF, to the Gb/s
    assert 1058 * 10 * (34 / 2 + 18) == 370300 != 1058 * 10 * (35 / 2 + 18)  # the paper's Phi takes K = 34
    r = json.loads(ibtool("analyze", "--figures", "slimfly(q=23)", "--json", check=0).stdout)
    fig = {x["name"]: x["value"] for x in r["figures"]}
    assert fig["network radix K"] == 35 and fig["paper 002 Fig. 4: b_r = B / Phi"] == pytest.approx(0.16402, abs=1e-5)
    assert fig["the same B over this plan's Phi"] == pytest.approx(60736 / 375590)


@pytest.mark.parametrize("args,words", [
    (("slimfly", "--q", 6), "--q 6: not a prime power"),
    (("slimfly", "--q", 2), "3 <= q <= 181"),
    (("slimfly", "--q", 23, "--radix", 48), "needs 53 ports"),
    (("dragonfly-canonical", "--a", 4, "--p", 2, "--h", 2, "--g", 10), "--g 10: between 2 and a*h + 1 = 9"),
    (("dragonfly-canonical", "--a", 16, "--p", 8, "--h", 8, "--radix", 30), "needs 31 ports"),
    (("dragonfly-canonical", "--a", 0, "--p", 2, "--h", 2), "--a must be >= 1"),
])
def test_impossible_parameters_one_line_exit_2(tmp_path, args, words):
    r = ibtool("topo", *args, "--out", tmp_path / "p")
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").iterdir())


def sim_verify(tmp_path, family, args, *extra):
    plan = tmp_path / "plan"
    ibtool("topo", family, *args, "--out", plan, check=0)
    run = tmp_path / "run"
    r = ibtool("sim", "run", plan / "topology.net", "--path-sls", *extra, "--out", run, check=0)
    s = json.loads((run / "summary.json").read_text())
    assert s["engine"] == "dfsssp" and not s["fallback"] and s["subnet_up"], r.stdout
    v = json.loads(ibtool("verify", "all", run, "--json", check=0).stdout)
    assert v["ok"], v
    return s, v


@pytest.mark.ibsim
@pytest.mark.parametrize("family,args", [
    ("slimfly", ("--q", 5, "--hcas-per-router", 2)),
    ("dragonfly-canonical", ("--a", 4, "--p", 2, "--h", 2)),
])
def test_small_instances_come_up_deadlock_free_per_vl(tmp_path, family, args):
    """MMS q = 5 (50 routers) and Dragonfly a = 4, p = 2, h = 2 (9 groups, 36 routers): the plan's
    engine (dfsssp, QoS on) with no fallback; every route delivered and minimal, and the channel
    dependency graph acyclic on every VL, from the SA's path SLs and OpenSM's SL2VL dump."""
    s, v = sim_verify(tmp_path, family, args)
    assert s["path_sls"]["records"] == s["path_sls"]["pairs"] > 0
    rt = v["routes"]
    assert rt["delivered"] == rt["pairs"] > 0 and not any(rt["undelivered"].values())
    assert rt["minimal"] and set(rt["extra_hops_histogram"]) == {"0"}
    d = rt["deadlock"]
    assert d["free"] and d["sl2vl"] and d["path_sls"]["pairs_without_record"] == 0
    assert len(d["dependencies_per_vl"]) > 1  # the layers really are on several VLs


@pytest.mark.ibsim
def test_lmc_multipath_routes_each_lid_deadlock_free(tmp_path):
    """LMC 2: dfsssp routes each of a port's 4 LIDs on its own (minimal) path with its own SL, the
    multipath Slim Fly's users take from LMC; every LID's PathRecord is collected and verified."""
    from ibtool.formats import ibnetdiscover, lft
    s, v = sim_verify(tmp_path, "dragonfly-canonical", ("--a", 4, "--p", 2, "--h", 2), "--conf", "lmc=2")
    assert s["path_sls"]["pairs"] == 72 * 71 * 4
    d = v["routes"]["deadlock"]
    assert d["free"] and d["path_sls"]["pairs_without_record"] == 0
    # multipath: at some switch the 4 LIDs of one HCA port leave through different ports
    f = ibnetdiscover.read(tmp_path / "run" / "ibnetdiscover.out")
    tables = lft.read(tmp_path / "run" / "dump_fts.out")
    ranges = [(lid, lmc) for (n, _), (lid, lmc) in f.port_lids.items() if not f.is_switch(n)]
    assert all(lmc == 2 for _, lmc in ranges)
    spread = sum(len(set(row[lid:lid + 4].tolist())) > 1 for row in tables.lft.values() for lid, _ in ranges)
    assert spread > 0


def test_dragonfly_fig4_point_by_its_group_split():
    """Paper 002's DF point, B ~ 41,666 Gb/s of Phi = 402,480: cutting the 129 groups 64.5 / 64.5
    (groups 0..63 and routers 0..7 of group 64, with their HCAs: 8,256 HCAs a side) cuts 64 x 64
    global links and 8 x 8 local ones, 4,160 cables = 41,600 Gb/s at 10 Gb/s, b_r 0.1034 (paper
    0.1035); the arrangement sends routers 0..7's global links of group 64 to groups 0..63.
    METIS finds 4,248 (perf/paper002_bench.py), so this split is the better upper bound."""
    from ibtool.analyze.bisection import cut_of
    from ibtool.analyze.graph import build
    f = dragonfly_canonical(16, 8, 8)
    side = np.asarray([0 if lab["cabinet"] < 64 or (lab["cabinet"] == 64 and lab["slot"] < 8) else 1
                       for lab in f.labels], dtype=np.int8)
    hca = np.asarray(f.types) != SWITCH
    assert hca[side == 0].sum() == hca[side == 1].sum() == 8256
    links = cut_of(build(f), side)
    assert links == 64 * 64 + 8 * 8 == 4160
    phi = 10 * f.num_links
    assert phi == 402480 and links * 10 / phi == pytest.approx(41666 / 402480, rel=0.002)


def test_paper_002_section_2_2_sizes(tmp_path):
    """Section 2.2's Slim Fly sizes for 80-port routers, by Besta & Hoefler's closed forms."""
    m35, m32, m33 = sf_forms(35, 80 - 53 - 1), sf_forms(32), sf_forms(33, 24)
    assert (m35["delta"], m35["network_radix"], m35["routers"], m35["endpoints"]) == (-1, 53, 2450, 63700)
    assert (m32["delta"], m32["routers"], m32["network_radix"], m32["endpoints"]) == (0, 2048, 48, 49152)
    assert (m33["delta"], m33["routers"], m33["network_radix"], m33["endpoints"]) == (1, 2178, 49, 52272)
    assert prime_power(35) is None and prime_power(33) is None and prime_power(32) == (2, 5)
    assert all(2 * q * q != 2402 for q in range(1, 50))
    r = ibtool("topo", "slimfly", "--q", 35, "--radix", 80, "--out", tmp_path / "p")
    assert r.returncode == 2 and "--q 35: not a prime power" in r.stderr


def test_cabling_plans_for_both(tmp_path):
    """`ibtool cabling` on both plans: every link a cable of the list, in stages, with a length."""
    import csv
    for fam, args, links in (("slimfly", ("--q", 3, "--hcas-per-router", 1), 45 + 18),
                             ("dragonfly-canonical", ("--a", 2, "--p", 1, "--h", 1), 6 + 6)):
        plan = tmp_path / fam
        ibtool("topo", fam, *args, "--out", plan, check=0)
        ibtool("cabling", plan, "--out", tmp_path / f"{fam}-cab", check=0)
        rows = list(csv.DictReader(open(tmp_path / f"{fam}-cab" / "cables.csv")))
        assert len(rows) == links and all(float(r["length_m"]) > 0 for r in rows)
        assert {r["stage_name"] for r in rows} >= {"node cables (switch to HCA)"}
