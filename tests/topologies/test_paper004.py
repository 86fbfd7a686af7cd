"""Paper 004's families: constructions, degrees, Fig. 5 cable totals, seeds, and refused parameters."""

import json

import numpy as np
import pytest
from support import ibtool

from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.layout import place
from ibtool.topologies import load_all

REG = load_all()


def switch_degrees(f):
    t = np.asarray(f.types)
    a, b = np.asarray(f.link_a), np.asarray(f.link_b)
    sw = (t[a] == SWITCH) & (t[b] == SWITCH)
    return np.bincount(np.concatenate([a[sw], b[sw]]), minlength=f.num_nodes)[t == SWITCH]


def total_km(name, **kw):
    f = REG[name].build(**kw)
    return place(f, REG[name].layout).summary(exclude_hca_links=True)["total_length_m"] / 1000, f


# Fig. 5 of paper 004 (2,048 switches, 256 cabinets): deterministic families, to the km
@pytest.mark.parametrize("name,kw,km,degree", [
    ("torus", dict(z=8, c=256, n=3), 31, 6),
    ("hypercube", dict(n=2048, c=256), 80, 11),
    ("hyperx", dict(z=8, c=256), 372, 37),
    ("dragonfly", dict(z=8, c=256), 615, 39),
])
def test_fig5_cable_totals(name, kw, km, degree):
    total, f = total_km(name, **kw)
    assert round(total) == km
    d = switch_degrees(f)
    assert d.max() == degree and len(d) == 2048


def test_fig5_random_families_near_the_paper():
    sky, f = total_km("skywalk", z=8, c=256, di=7, do=4)
    rnd, g = total_km("random", n=2048, d=11, c=256)
    assert 55 < sky < 62 and switch_degrees(f).max() <= 11  # paper: ~59 km
    assert 200 < rnd < 215 and switch_degrees(g).max() <= 11  # paper: ~207 km


def test_torus_shape_ports_and_cabinets():
    f = REG["torus"].build(z=8, c=16, n=3)  # 8 x 4 x 4
    assert f.params["dims"] == [8, 4, 4] and all(switch_degrees(f) == 6)
    s = f.index("S[1,2,3]")
    # + port of dimension 1 (h + 2*1 + 1 = 4) reaches x1 + 1; - port of dimension 0 reaches x0 - 1
    assert f.names[f.peer(s, 4)[0]] == "S[1,3,3]" and f.names[f.peer(s, 3)[0]] == "S[0,2,3]"
    assert f.names[f.peer(f.index("S[7,0,0]"), 2)[0]] == "S[0,0,0]"  # the ring closes
    assert f.labels[s]["cabinet"] == 2 + 4 * 3 and f.labels[s]["slot"] == 1
    m = REG["mesh"].build(dims="3x3")
    assert sorted(switch_degrees(m).tolist()) == [2, 2, 2, 2, 3, 3, 3, 3, 4]


def test_hyperx_dragonfly_hypercube_structure():
    hx = REG["hyperx"].build(z=4, c=16)  # 4 x 4 cabinets: degree 4 + 4 + 4 - 3
    assert all(switch_degrees(hx) == 9)
    s = hx.index("S[5,2]")  # cabinet 5 = row 1, column 1
    # row port for column 3: h + z + (3 - 1) = 1 + 4 + 2; column port for row 0: h + z + y - 1 + 0
    assert hx.names[hx.peer(s, 7)[0]] == "S[7,2]" and hx.names[hx.peer(s, 8)[0]] == "S[1,2]"
    df = REG["dragonfly"].build(z=4, c=5)  # degree 3 + ceil(4/4)
    assert all(switch_degrees(df) == 4)
    cab = [df.labels[i].get("cabinet") for i in range(df.num_nodes)]
    pairs = {frozenset((cab[a], cab[b])) for a, b in zip(df.link_a, df.link_b) if cab[a] != cab[b]
             and df.types[a] == df.types[b] == SWITCH}
    assert len(pairs) == 10  # every pair of the 5 groups once
    hc = REG["hypercube"].build(n=16, c=4)
    assert all(switch_degrees(hc) == 4) and hc.names[hc.peer(hc.index("S[5]"), 1 + 2 + 1)[0]] == "S[1]"


def test_skywalk_straight_first_bounds_and_links():
    f = REG["skywalk"].build(z=4, c=16, di=3, do=2)
    p = f.params
    assert (p["ds"], p["dd"]) == (2, 0)  # d_smax = ceil((4 + 4 - 2) / 4) = 2
    assert switch_degrees(f).max() <= 5
    cab = {i: f.labels[i]["cabinet"] for i in range(f.num_nodes)}
    for a, b in zip(f.link_a, f.link_b):
        if f.types[a] == f.types[b] == SWITCH and cab[a] != cab[b]:
            (ra, ca), (rb, cb) = divmod(cab[a], 4), divmod(cab[b], 4)
            assert ra == rb or ca == cb  # no diagonal link with d_d = 0
    g = REG["skywalk"].build(z=4, c=16, di=1, do=4)  # 2 straight, then 2 diagonal
    assert (g.params["ds"], g.params["dd"]) == (2, 2)
    assert p["chosen_seed"] in range(1, 11) and len(p["instances"]) == 10
    best = max(i["links"] for i in p["instances"] if i["connected"])
    assert sum(1 for a, b in zip(f.link_a, f.link_b) if f.types[a] == f.types[b] == SWITCH) == best


def test_skywalk_complete_is_the_papers_59_km():
    """Skywalk(8,256,7,4) with its intra-cabinet and straight layers complete (--complete): every
    pair of switches in a cabinet and every pair of cabinets in a row or column linked once,
    11,008 links and 59.07 km (paper 004 Fig. 5: 59 km); II-C's literal random matching leaves
    pairs unlinked (57.6 km). FR latency at paper scale: perf/paper004_bench.py --only complete."""
    km, f = total_km("skywalk", z=8, c=256, di=7, do=4, complete=True)
    assert f.params["complete"] == ["intra", "straight"] and len(f.params["instances"]) == 1
    assert round(km, 2) == 59.07 and f.name == "skywalk-z8-c256-di7-do4-complete"
    t = np.asarray(f.types)
    a, b = np.asarray(f.link_a), np.asarray(f.link_b)
    sw = (t[a] == SWITCH) & (t[b] == SWITCH)
    assert sw.sum() == 256 * 28 + 256 * 30 // 2  # C(8,2) per cabinet + one per straight cabinet pair
    assert switch_degrees(f).max() == 11
    cab = np.asarray([lab.get("cabinet", -1) for lab in f.labels])
    ca, cb = cab[a[sw]], cab[b[sw]]
    inter = ca != cb
    pairs = {(min(x, y), max(x, y)) for x, y in zip(ca[inter].tolist(), cb[inter].tolist())}
    assert len(pairs) == inter.sum() == 3840  # each straight pair exactly once
    assert all(x // 16 == y // 16 or x % 16 == y % 16 for x, y in pairs)
    literal, g = total_km("skywalk", z=8, c=256, di=7, do=4)
    assert literal < km and switch_degrees(g).sum() // 2 < 11008  # pairs left out


def test_skywalk_complete_layers_at_their_bound_only(tmp_path):
    f = REG["skywalk"].build(z=4, c=16, di=3, do=5, complete=True)  # d_smax 2, d_dmax 3: all three full
    assert f.params["complete"] == ["intra", "straight", "diagonal"]
    cab = [lab.get("cabinet") for lab in f.labels]
    inter = {frozenset((cab[a], cab[b])) for a, b in zip(f.link_a, f.link_b)
             if f.types[a] == f.types[b] == SWITCH and cab[a] != cab[b]}
    assert len(inter) == 16 * 15 // 2  # every pair of cabinets: Skywalk at its bounds is the Dragonfly
    # like Skywalk(8,256,7,12): d_d below its bound, so the diagonal layer stays random
    g = REG["skywalk"].build(z=4, c=16, di=3, do=3, complete=True)  # d_s 2, d_d 1
    assert g.params["complete"] == ["intra", "straight"] and len(g.params["instances"]) == 10
    r = ibtool("topo", "skywalk", "--z", 4, "--c", 16, "--di", 2, "--do", 1, "--complete", "--out", tmp_path / "p")
    assert r.returncode == 2 and "--complete: no sub-topology is at its bound" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_same_seed_same_plan_byte_for_byte(tmp_path):
    outs = []
    for run, seed in (("a", 7), ("b", 7), ("c", 8)):
        ibtool("topo", "skywalk", "--z", 4, "--c", 16, "--di", 3, "--do", 2, "--seed", seed,
               "--out", tmp_path / run, check=0)
        outs.append({p.name: p.read_bytes() for p in (tmp_path / run).iterdir()
                     if p.name not in ("opensm.conf",)})
    assert outs[0] == outs[1]
    assert outs[0]["topology.net"] != outs[2]["topology.net"]
    fj = json.loads(outs[0]["fabric.json"])
    assert fj["params"]["seed"] == 7 and fj["params"]["chosen_seed"] in range(7, 17)
    lay = json.loads(outs[0]["layout.json"])
    assert lay["grid"] == [4, 4] and lay["policy"] == "cabinet-aware"


@pytest.mark.parametrize("args,words", [
    (("skywalk", "--z", 8, "--c", 256, "--di", 8, "--do", 4), "--di 8 exceeds its bound d_imax"),
    (("skywalk", "--z", 8, "--c", 256, "--di", 7, "--do", 40), "--dd 36 exceeds its bound d_dmax"),
    (("skywalk", "--z", 8, "--c", 256, "--di", 7, "--do", 6, "--ds", 5), "--ds 5 exceeds its bound d_smax"),
    (("skywalk", "--z", 8, "--c", 256, "--di", 7, "--do", 12, "--radix", 16), "radix is 16"),
    (("skywalk", "--z", 4, "--c", 16, "--di", 3, "--do", 2, "--ds", 3), "must add up to --do 2"),
    (("random", "--N", 64, "--d", 1, "--c", 8), "all 10 instances from seeds 1..10 are disconnected"),
    (("random", "--N", 8, "--d", 9, "--c", 2), "--d 9 exceeds N-1 = 7"),
    (("dragonfly", "--z", 8, "--c", 256, "--radix", 36), "needs 40 ports"),
    (("hyperx", "--z", 4, "--c", 5), "HyperX needs a full grid"),
    (("torus", "--z", 8, "--c", 200), "--c 200 is not a perfect (2)th power"),
    (("hypercube", "--N", 100, "--c", 4), "a power of 2"),
    (("mesh", "--dims", "4xq"), "expected sizes joined by x"),
])
def test_impossible_parameters_one_line_exit_2(tmp_path, args, words):
    r = ibtool("topo", *args, "--out", tmp_path / "p")
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").iterdir())


def test_torus_plan_names_torus_2qos_with_qos(tmp_path):
    ibtool("topo", "torus", "--dims", "4x4", "--out", tmp_path, check=0)
    conf = (tmp_path / "opensm.conf").read_text()
    assert "routing_engine torus-2QoS" in conf and "\nqos TRUE" in conf
    assert "\ntorus_config torus-2QoS.conf\n" in conf  # relative to the plan
    t = (tmp_path / "torus-2QoS.conf").read_text()
    assert "torus 4 4 1" in t and "xp_link" in t and "xm_link" in t and "ym_link" in t
    with pytest.raises(InputError):
        REG["torus"].build(dims="1")


def test_analyze_reports_the_plans_cable_total_and_fr_latency(tmp_path):
    """`ibtool analyze PLAN --json` reads the family's layout.json; its FR latency (analyze's own
    Dijkstra) agrees with ibtool.routing.fr's on the same plan."""
    from ibtool.routing import fr
    ibtool("topo", "skywalk", "--z", 4, "--c", 16, "--di", 3, "--do", 2, "--out", tmp_path, check=0)
    r = json.loads(ibtool("analyze", tmp_path, "--json", "--bisection", "none", check=0).stdout)
    f = REG["skywalk"].build(z=4, c=16, di=3, do=2)
    lay = place(f, "cabinet-aware")
    want = lay.summary(exclude_hca_links=True)["total_length_m"]
    # analyze counts the 64 HCA cables too (2 m each, in the switch's cabinet); the paper does not
    assert r["layout"]["total_length_m"] == pytest.approx(want + 64 * 2.0)
    s = fr.latency_stats(fr.graph(f, lay.length))
    assert r["latency"]["FR"]["max_ns"] == pytest.approx(s["max_ns"])
    assert r["latency"]["FR"]["average_ns"] == pytest.approx(s["avg_ns"], abs=1e-3)
    n = fr.latency_stats(fr.graph(f, lay.length), nr=True)
    assert r["latency"]["NR"]["max_ns"] == pytest.approx(n["max_ns"])


def test_uniform_random_rounds_and_constraint():
    """II-C: each round links a vertex at most once, never twice to the same vertex, and only to
    vertices the constraint allows; the same seed draws the same links."""
    import random

    from ibtool.topologies.skywalk import uniform_random
    n, rounds = 40, 5
    even = [[w for w in range(n) if w % 2 == v % 2 and w != v] for v in range(n)]
    for kw in ({}, {"choices": even}, {"allowed": lambda a, b: a % 2 == b % 2}):
        links = uniform_random(random.Random(3), n, rounds, [set() for _ in range(n)], **kw)
        deg = np.bincount(np.asarray(links).ravel(), minlength=n)
        assert deg.max() <= rounds and len({frozenset(x) for x in links}) == len(links)
        if kw:
            assert all(a % 2 == b % 2 for a, b in links)
        assert links == uniform_random(random.Random(3), n, rounds, [set() for _ in range(n)], **kw)
    assert len(links) > rounds * n // 2 * 0.8  # most vertices find a partner in most rounds


def test_hyperx_with_one_switch_per_cabinet_is_a_flattened_butterfly():
    f = REG["hyperx"].build(z=1, c=16)  # 4 x 4 cabinets: every row and column a clique
    assert all(switch_degrees(f) == 6)
