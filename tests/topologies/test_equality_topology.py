"""Equality networks (paper 002): construction, notation, Eq. 1, the symmetric evaluation, the
genetic search, and the plan brought up by real ibsim + OpenSM with the engine it names."""

import itertools
import json
import re

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path
from support import ibtool

from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.formats import ibnetdiscover
from ibtool.topologies import equality_net as eq
from ibtool.topologies.equality_search import search

FIG1 = "N14K6[-1,1,3,9](4)"


def router_graph(f):
    """Router-to-router adjacency of a built fabric, by router index (independent of Remark 2)."""
    idx = {node: f.labels[node]["index"] for node in range(f.num_nodes) if f.types[node] == SWITCH}
    rows, cols = [], []
    for a, b in zip(f.link_a, f.link_b):
        if a in idx and b in idx:
            rows += [idx[a], idx[b]]
            cols += [idx[b], idx[a]]
    n = len(idx)
    return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


def test_fig1_k_links_diameter_average():
    sp = eq.parse_spec(FIG1)
    assert (sp.n, sp.k, sp.sa, sp.sb) == (14, 6, (-1, 1, 3, 9), (4,))
    assert eq.eq1(14, sp.sa, sp.sb) == 6  # 4 odd + 2 for the even 4
    f = eq.build(14, sp.sa, sp.sb, 4, 12)
    g = router_graph(f)
    assert g.nnz // 2 == 14 * 6 // 2 == 42  # inter-router links
    assert f.num_links == 42 + 14 * 4
    # r_0's links (the bold lines of Fig. 1): +1, -1 (13), +3, +9, +4, -4 (10)
    assert sorted(g[0].indices.tolist()) == [1, 3, 4, 9, 10, 13]
    # r_1 is odd: 1-1=0, 1+1=2, 1-3=12, 1-9=6, 1-4=11, 1+4=5
    assert sorted(g[1].indices.tolist()) == [0, 2, 5, 6, 11, 12]
    assert (np.asarray(g.sum(axis=1)).ravel() == 6).all()
    d, a = eq.metrics(14, sp.sa, sp.sb)
    full = shortest_path(g, unweighted=True)
    assert d == full.max() == 2
    assert a == pytest.approx(full.sum() / (14 * 13)) == pytest.approx(20 / 13)


@pytest.mark.parametrize("n,sa,sb", [
    (14, (-1, 1, 3, 9), (4,)),
    (14, (-1, 1, 7), (2, 6)),  # 7 = N/2 odd
    (20, (-1, 1, 5), (10,)),  # 10 = N/2 even: one port
    (64, (-1, 1, 13, 29), (6, 20, 32)),
    (200, (-1, 1, 17, 45, 91), (8, 38, 72, 100)),
])
def test_symmetric_evaluation_equals_plain_bfs(n, sa, sb):
    f = eq.build(n, sa, sb, 1, 36)
    g = router_graph(f)
    assert (np.asarray(g.sum(axis=1)).ravel() == eq.eq1(n, sa, sb)).all()  # Eq. 1 per router
    full = shortest_path(g, unweighted=True)
    d0 = eq.distances(n, sa, sb)
    assert (full[0] == d0).all()
    # Remark 2: r_1's view is r_0's reversed; and every router's by Eq. 2
    assert (full[1] == d0[(1 - np.arange(n)) % n]).all()
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    assert (full == np.where(i % 2 == 0, d0[(j - i) % n], d0[(i - j) % n])).all()
    d, a = eq.metrics(n, sa, sb)
    assert d == full.max() and a == pytest.approx(full.sum() / (n * (n - 1)))


def test_bisection_is_the_fewest_links_cut_by_a_semicircle_split():
    for n, sa, sb in [(14, (-1, 1, 3, 9), (4,)), (20, (-1, 1, 5), (10,)), (30, (-1, 1, 7, 11), (4, 14))]:
        f = eq.build(n, sa, sb, 1, 36)
        g = router_graph(f).tocoo()
        cuts = []
        for t in range(n):
            inside = np.zeros(n, bool)
            inside[(t + np.arange(n // 2)) % n] = True
            cuts.append(int((inside[g.row] != inside[g.col]).sum()) // 2)
        b, br = eq.semicircle_bisection(n, sa, sb)
        assert b == min(cuts)
        assert br == pytest.approx(b / (n * eq.eq1(n, sa, sb) / 2))


def test_ports_follow_the_labels():
    """Port p+1+l is label l at every router: +s meets -s, odd lengths and N/2 meet themselves."""
    n, sa, sb, p = 20, (-1, 1, 5), (4, 10), 2
    f = eq.build(n, sa, sb, p, 16)
    offs = eq.labels(n, sa, sb)
    assert offs == [-1, 1, 5, 4, -4, 10]
    for i in range(n):
        r = f.index(f"R[{i}]")
        assert [f.peer(r, j + 1) for j in range(p)] == [(f.index(f"H[{i}]-{j}"), 1) for j in range(p)]
        for l, o in enumerate(offs):
            peer, pport = f.peer(r, p + 1 + l)
            assert f.names[peer] == f"R[{(i + o) % n if i % 2 == 0 else (i - o) % n}]"
            back = l if (o % 2 or o == n // 2) else offs.index(-o)
            assert pport == p + 1 + back


@pytest.mark.parametrize("text", [FIG1, "n14k6[-1,1,3,9](4)", "N14K6P4[-1,1,3,9](4)", "n14k6p3", "N1840K17P8"])
def test_notation_round_trip(text):
    sp = eq.parse_spec(text)
    if sp.sa is None:
        assert sp.short().lower() == text.lower()
        return
    assert eq.parse_spec(sp.full()) == eq.Spec(sp.n, sp.k, None, sp.sa, sp.sb)
    assert sp.full() == FIG1


def test_plan_records_the_spec(tmp_path):
    out = tmp_path / "eq"
    r = ibtool("topo", "equality", "--spec", FIG1.lower(), "--hcas-per-router", "4", "--radix", "12",
               "--out", out, "--json", check=0)
    s = json.loads(r.stdout)
    assert s["switches"] == 14 and s["hcas"] == 56 and s["links"] == 98
    params = json.loads((out / "fabric.json").read_text())["params"]
    assert params["spec"] == FIG1 and params["class"] == "n14k6p4"
    assert (params["diameter"], params["average_distance"]) == (2, round(20 / 13, 6))
    assert "routing_engine nue" in (out / "opensm.conf").read_text()
    # the same network from the separate options
    out2 = tmp_path / "eq2"
    ibtool("topo", "equality", "--n", "14", "--sa=-1,1,3,9", "--sb", "4", "--hcas-per-router", "4",
           "--radix", "12", "--out", out2, check=0)
    assert (out / "topology.net").read_text() == (out2 / "topology.net").read_text()
    back = ibnetdiscover.read(out / "topology.net")
    assert back.num_links == 98 and back.count(kind=SWITCH) == 14


@pytest.mark.parametrize("args,needle", [
    (["--spec", "N15K6[-1,1,3,9](4)"], "N = 15: an Equality network needs an even number of routers"),
    (["--spec", "N14K6[-1,1,3,13](4)"], "S_A: 13 is not in C = 2..11 without even numbers above N/2 = 7"),
    (["--spec", "N14K6[-1,1,3,9](8)"], "S_B: 8 is not in C = 2..11 without even numbers above N/2 = 7"),
    (["--spec", "N14K6[-1,1,3,4](9)"], "S_A: 4 is even"),
    (["--spec", "N14K6[1,3,9,11](4)"], "S_A: the ring link -1 is missing"),
    (["--spec", "N14K6[-1,1,3,3](4)"], "S_A: 3 is listed twice"),
    (["--spec", "N14K7[-1,1,3,9](4)"], "K7 in 'N14K7[-1,1,3,9](4)' disagrees with Eq. 1"),
    (["--spec", "N14K6[-1,1,3,9(4)"], "unbalanced brackets"),
    (["--spec", "N14K6[-1,1,3,9](4))"], "unbalanced brackets"),
    (["--spec", "N14K6[-1,1,x,9](4)"], "S_A in 'N14K6[-1,1,x,9](4)': 'x' is not an integer"),
    (["--spec", "X14K6"], "expected N<routers>K<radix>"),
    (["--spec", FIG1, "--hcas-per-router", "7", "--radix", "12"], "K + p = 6 + 7 = 13 ports is more than --radix 12"),
    (["--spec", "n14k6p4", "--hcas-per-router", "3"], "--hcas-per-router 3 contradicts p = 4"),
    (["--search", FIG1], "give the short notation"),
    (["--search", "n14k20p1", "--radix", "64"], "K = 20 is more ports than N = 14 routers offer (at most 13 with"),
    (["--search", "n14k6p1", "--fixed-sb", "2,4,6"], "--fixed-sb 2,4,6 takes 6 ports, more than K - 2 = 4"),
    (["--n", "14", "--sa=-1,1,3", "--sb", "5"], "S_B: 5 is odd"),
    ([], "give --spec, --search, or --n with --sa and --sb"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, needle):
    out = tmp_path / "out"
    r = ibtool("topo", "equality", *args, "--out", out)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_search_is_reproducible_and_reports_each_generation(tmp_path):
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        r = ibtool("topo", "equality", "--search", "n200k8p2", "--seed", "7", "--generations", "6",
                   "--population", "12", "--out", out, "--json", check=0)
        gens = [ln for ln in r.stderr.splitlines() if "generation" in ln]
        assert [ln.split(":")[0].strip() for ln in gens] == [f"generation {g}/6" for g in range(7)]
        runs.append(json.loads((out / "fabric.json").read_text())["params"])
    assert runs[0] == runs[1]
    p = runs[0]
    assert p["k"] == 8 and p["p"] == 2 and p["search"]["seed"] == 7 and p["search"]["class"] == "n200k8p2"
    sp = eq.parse_spec(p["spec"])
    d, a = eq.metrics(200, sp.sa, sp.sb)
    assert p["search"]["best_ad"] == pytest.approx(d * a, abs=1e-6)
    other = ibtool("topo", "equality", "--search", "n200k8p2", "--seed", "8", "--generations", "6",
                   "--population", "12", "--out", tmp_path / "c", check=0)
    assert other.returncode == 0


def test_search_improves_and_keeps_fixed_sb():
    r = search(400, 10, seed=3, generations=15, population=16)
    ads = [h[0] for h in r.history]
    assert all(x >= y for x, y in itertools.pairwise(ads))  # elitism: never worse
    assert ads[-1] == pytest.approx(r.ad) and r.ad <= ads[0]
    assert eq.eq1(400, r.sa, r.sb) == 10 and r.sa[:2] == (-1, 1)
    eq.check_sets(400, r.sa, r.sb)
    f = search(400, 10, seed=3, generations=5, population=8, fixed_sb=(6, 200))
    assert f.sb == (6, 200) and eq.eq1(400, f.sa, f.sb) == 10


def test_write_round_trip_keeps_rates_and_port_guids(tmp_path):
    """ibnetdiscover.write walks Fabric.ports(): what it writes reads back as the same fabric,
    real dumps (rates per link, CA port GUIDs) included."""
    from support import FIXTURES

    def links(f):
        return {frozenset(((f.guids[a], pa), (f.guids[b], pb))): r or "4xQDR"
                for a, pa, b, pb, r in zip(f.link_a, f.link_pa, f.link_b, f.link_pb, f.link_rate)}

    for f in [eq.build(14, (-1, 1, 3, 9), (4,), 4, 12), ibnetdiscover.read(FIXTURES / "ibnetdiscover" / "cellia-minhop.out"),
              ibnetdiscover.read(FIXTURES / "real" / "ndr-2sw.ibnetdiscover")]:
        ibnetdiscover.write(f, tmp_path / "x.net")
        g = ibnetdiscover.read(tmp_path / "x.net")
        assert links(g) == links(f) and len(links(f)) == f.num_links
        assert g.guids == f.guids and g.types == f.types and g.nports == f.nports
        assert {(g.guids[n], p): v for (n, p), v in g.port_guids.items()} == \
            {(f.guids[n], p): f.port_guid(n, p) for n in range(f.num_nodes) if f.types[n] != SWITCH
             for p, _, _ in f.neighbors(n)}


@pytest.mark.ibsim
def test_fig1_comes_up_with_the_plans_engine_and_verifies(tmp_path):
    plan = tmp_path / "eq"
    ibtool("topo", "equality", "--spec", FIG1, "--hcas-per-router", "4", "--radix", "12", "--out", plan, check=0)
    run = tmp_path / "run"
    r = ibtool("sim", "run", plan / "topology.net", "--out", run, check=0)  # no --engine: the plan's
    s = json.loads((run / "summary.json").read_text())
    assert s["engines"] == ["nue"] and s["engine"] == "nue" and s["ok"] and not s["fallback"], r.stdout
    r = ibtool("verify", "all", run, "--plan", plan / "topology.net", "--json")
    assert r.returncode == 0, r.stdout[-3000:]
    rep = json.loads(r.stdout)
    assert rep["ok"] and rep["routes"]["delivered"] == rep["routes"]["pairs"] == 70 * 69
    assert rep["routes"]["deadlock"]["free"]


def test_add_links_equals_add_link_one_by_one():
    """Fabric.add_links (the bulk path the builder uses) leaves the fabric add_link would, and a
    fault gives add_link's error for the first faulty link."""
    from ibtool.fabric import Fabric

    def fresh():
        f = Fabric("t")
        for i in range(4):
            f.add_switch(f"S{i}", 4)
        return f
    ends = ([0, 1, 2, 0], [1, 2, 3, 3], [1, 2, 3, 2], [1, 1, 1, 4])
    one, bulk = fresh(), fresh()
    for x in zip(*ends):
        one.add_link(*x)
    bulk.add_links(*ends)
    assert (bulk.link_a, bulk.link_pa, bulk.link_b, bulk.link_pb, bulk.link_rate) == \
        (one.link_a, one.link_pa, one.link_b, one.link_pb, one.link_rate)
    assert [bulk.peer(i, p) for i in range(4) for p in range(1, 5)] == [one.peer(i, p) for i in range(4) for p in range(1, 5)]
    assert (bulk.ports().peer == one.ports().peer).all()
    # the next default port is the lowest free one either way
    assert bulk.add_link(0, 2) == one.add_link(0, 2) and bulk.link_pa[-1] == one.link_pa[-1] == 3
    for bad, msg in [(([0], [1], [1], [2]), "S0 port 1 is already cabled (to S1[1])"),
                     (([2], [2], [4], [4]), "S2: a link from a node to itself"),
                     (([1], [3], [5], [2]), "S1 has 4 ports; port 5 does not exist"),
                     (([1, 1], [3, 3], [3, 3], [2, 2]), "S1 port 3 is already cabled (to S3[2])")]:
        f = fresh()
        f.add_links(*ends)
        with pytest.raises(InputError, match=re.escape(msg)):
            f.add_links(*bad)


def test_analyze_covers_an_equality_plan(tmp_path):
    """`ibtool analyze` (issue 11) on Fig. 1's plan, placed by the paper's cabinet model (the
    "sequential" policy, the family's default): d and a as Remark 2 gives them, the exact
    bisection against the paper's semicircle count, and every cable placed and priced by medium."""
    plan = tmp_path / "eq"
    ibtool("topo", "equality", "--spec", FIG1, "--hcas-per-router", "4", "--radix", "12", "--out", plan, check=0)
    lay = tmp_path / "layout.json"
    r = ibtool("analyze", plan, "--layout", "default", "--save-layout", lay, "--json", check=0)
    rep = json.loads(r.stdout)
    d, a = eq.metrics(14, (-1, 1, 3, 9), (4,))
    assert (rep["distance"]["switch"]["diameter"], rep["distance"]["switch"]["average"]) == (d, round(a, 6))
    # the paper's B: the fewest links cut by a semicircle split; the true bisection can be lower
    b_semi, br_semi = eq.semicircle_bisection(14, (-1, 1, 3, 9), (4,))
    u, v, _, _ = eq.links(14, (-1, 1, 3, 9), (4,))
    best = min(int((np.isin(u, (0,) + s) != np.isin(v, (0,) + s)).sum())
               for s in itertools.combinations(range(1, 14), 6))  # every split of the routers 7 / 7
    bis = rep["bisection"]
    assert bis["exact"] and bis["links"] == best == 14 and b_semi == 18 > best
    assert bis["B_r"] == pytest.approx(14 / 42, abs=1e-6) and br_semi == pytest.approx(18 / 42)
    assert bis["b_r"] == pytest.approx(bis["B_r"] * 6 / (6 + 2 * 4), abs=1e-6)  # Eq. 3
    # both, labelled: paper 002's own measure (Fig. 4 uses it) beside the true minimum
    pb = bis["paper"]
    assert pb["measure"].startswith("semicircle split") and pb["source"] == "paper 002"
    assert (pb["links"], pb["B_r"]) == (18, round(18 / 42, 6)) and pb["b_r"] == round(18 / 42 * 6 / 14, 6)
    text = ibtool("analyze", plan, "--layout", "default", check=0).stdout
    assert "bisection (true minimum): 14 links (exact" in text
    assert ("bisection as paper 002 measures it (semicircle split, section 4.3): 18 links; B_r 0.428571, "
            "b_r 0.183673") in text
    L = rep["layout"]
    assert L["policy"] == "sequential" and L["cabinets"] == 2  # 70 U in 42U cabinets
    assert L["cables"] == 98 and L["unplaced_cables"] == 0
    assert L["per_medium"]["copper"]["cables"] + L["per_medium"]["fiber"]["cables"] == 98
    assert L["longest_m"] <= 8.0 and L["per_medium"]["fiber"]["cables"] == 0  # all within copper reach
    # routers at the top of their cabinet, their HCAs below
    nodes = {name: (cab, u_) for name, cab, u_, _ in json.loads(lay.read_text())["nodes"]}
    for cab in (0, 1):
        ru = [u_ for name, (c, u_) in nodes.items() if c == cab and name.startswith("R[")]
        hu = [u_ for name, (c, u_) in nodes.items() if c == cab and name.startswith("H[")]
        assert ru and min(ru) > max(hu, default=0) and max(ru) == 42


def test_add_nodes_equals_add_node_one_by_one():
    from ibtool.fabric import CA, Fabric
    spec = [(SWITCH, "R[0]", 8, "router", {"index": 0}), (CA, "H[0]", 1, "hca", None), (SWITCH, "R[1]", 8, "router", None)]
    one, bulk = Fabric("t"), Fabric("t")
    one.add_switch("first", 4)
    bulk.add_switch("first", 4)
    for x in spec:
        one.add_node(*x)
    assert list(bulk.add_nodes(*map(list, zip(*spec)))) == [1, 2, 3]
    for attr in ("types", "nports", "guids", "names", "roles", "labels"):
        assert getattr(bulk, attr) == getattr(one, attr), attr
    assert bulk.index("H[0]") == 2 and bulk.by_guid(one.guids[3]) == 3
    for bad, msg in [([(CA, "first", 1, "hca", None)], "duplicate node name 'first'"),
                     ([(CA, "a", 1, "hca", None), (CA, "a", 1, "hca", None)], "duplicate node name 'a'"),
                     ([(SWITCH, "big", 300, "switch", None)], "big: 300 ports is outside 1..254")]:
        f = Fabric("t")
        f.add_switch("first", 4)
        with pytest.raises(InputError, match=re.escape(msg)):
            f.add_nodes(*map(list, zip(*bad)))


@pytest.mark.ibsim
@pytest.mark.slow
@pytest.mark.parametrize("spec,p,engine,up,vl0_free", [
    (FIG1, 4, "dfsssp", "dfsssp", None),
    (FIG1, 4, "lash", "lash", None),
    ("N200K10[-1,1,55,77,83,113,129,189](40)", 2, "nue", "nue", True),
    # dfsssp needs 9 VLs on this one and ibsim's ports have 8: OpenSM falls back to minhop
    ("N200K10[-1,1,55,77,83,113,129,189](40)", 2, "dfsssp", "minhop", False),
], ids=["fig1-dfsssp", "fig1-lash", "n200-nue", "n200-dfsssp"])
def test_why_the_plan_names_nue(tmp_path, spec, p, engine, up, vl0_free):
    """The evidence behind `routing_engine nue` (docs/topologies.md): on Fig. 1's network all of
    nue, dfsssp and lash come up; on a 200-router network dfsssp falls back, nue does not, and
    nue's routes are VL0 deadlock-free (verify all passes)."""
    plan = tmp_path / "eq"
    ibtool("topo", "equality", "--spec", spec, "--hcas-per-router", p, "--out", plan, check=0)
    run = tmp_path / "run"
    ibtool("sim", "run", plan / "topology.net", "--engine", engine, "--out", run)
    s = json.loads((run / "summary.json").read_text())
    assert s["engine"] == up and s["fallback"] == (up != engine)
    if vl0_free is not None:
        r = ibtool("verify", "all", run, "--plan", plan / "topology.net", "--json")
        rep = json.loads(r.stdout)
        assert rep["routes"]["delivered"] == rep["routes"]["pairs"]
        assert rep["routes"]["deadlock"]["free"] is vl0_free
        assert (r.returncode == 0) is (vl0_free and up == engine)
