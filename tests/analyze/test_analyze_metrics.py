"""Every metric of `ibtool analyze` on fabrics whose values are known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fabrics import complete, fat_tree, hypercube, k_ary_n_tree, ring, single_switch

from ibtool.analyze import analyze, text
from ibtool.analyze.bisection import bisection, exact, heuristic
from ibtool.analyze.graph import build
from ibtool.analyze.latency import LatencyModel, latency
from ibtool.layout import place


def test_complete_graph():
    n = 8
    r = analyze(complete(n), samples=16)
    d = r["distance"]["switch"]
    assert (d["diameter"], d["average"], d["pairs"]) == (1, 1.0, n * (n - 1))
    assert d["histogram"] == {"1": n * (n - 1)}
    pd = r["path_diversity"]["sampled"]
    assert pd["shortest_paths"] == {"min": 1, "average": 1.0, "max": 1}
    assert pd["edge_disjoint"]["min"] == pd["edge_disjoint"]["max"] == n - 1  # K_n is (n-1)-edge-connected
    b = r["bisection"]
    assert b["exact"] and b["links"] == n * n // 4
    assert b["B_r"] == pytest.approx(16 / 28) and b["b_r"] == pytest.approx(16 / 28)  # no endpoint links
    m = r["moore"]
    assert m["applies"] and (m["degree"], m["bound"], m["ratio"]) == (n - 1, n, 1.0)  # K_n meets the bound
    c = r["counts"]
    assert (c["switches"], c["hcas"], c["links"]) == (n, 0, n * (n - 1) // 2)
    assert c["degree"]["inter_switch_links"] == {str(n - 1): n}
    assert c["ports"]["free"] == 8 * n - n * (n - 1)
    assert c["ports"]["free_histogram"] == {"1": n}


@pytest.mark.parametrize("n", [10, 11])
def test_ring(n):
    r = analyze(ring(n), samples=16)
    d = r["distance"]["switch"]
    # from any node: 2 nodes at each distance 1..floor((n-1)/2), one more at n/2 when n is even
    total = 2 * sum(range(1, (n - 1) // 2 + 1)) + (n // 2 if n % 2 == 0 else 0)
    assert d["diameter"] == n // 2
    assert d["average"] == pytest.approx(total / (n - 1), abs=1e-6)
    assert r["bisection"]["links"] == 2 and r["bisection"]["exact"]
    assert r["path_diversity"]["sampled"]["edge_disjoint"] == {"min": 2, "average": 2.0, "max": 2}
    worst = r["path_diversity"]["worst"]
    # antipodal nodes of an even ring are joined by two shortest paths, of an odd ring by one
    assert worst["shortest_paths"]["max"] == (2 if n % 2 == 0 else 1)
    m = r["moore"]
    assert m["bound"] == 1 + 2 * (n // 2) and m["ratio"] == pytest.approx(n / (1 + 2 * (n // 2)), abs=1e-6)


def test_hypercube():
    dim = 4
    r = analyze(hypercube(dim), samples=16)
    d = r["distance"]["switch"]
    n = 2 ** dim
    assert d["diameter"] == dim
    assert d["average"] == pytest.approx(dim * 2 ** (dim - 1) / (n - 1), abs=1e-6)
    assert d["histogram"] == {str(k): math.comb(dim, k) * n for k in range(1, dim + 1)}
    worst = r["path_diversity"]["worst"]
    assert {p["hops"] for p in worst["detail"]} == {dim}
    assert worst["shortest_paths"] == {"min": math.factorial(dim), "average": float(math.factorial(dim)),
                                       "max": math.factorial(dim)}  # d! orders of flipping the d bits
    assert worst["edge_disjoint"]["min"] == dim
    assert r["bisection"]["links"] == 2 ** (dim - 1) and r["bisection"]["exact"]
    m = r["moore"]
    assert m["bound"] == 1 + dim * sum((dim - 1) ** i for i in range(dim))


def test_two_level_fat_tree():
    k = 4
    r = analyze(fat_tree(k), samples=16)
    c = r["counts"]
    assert (c["switches"], c["hcas"]) == (2 * k, k * k)
    assert c["links_by_kind"] == {"switch-switch": k * k, "switch-hca": k * k, "hca-hca": 0}
    d = r["distance"]["switch"]  # between leaves (the switches hosting HCAs): via any spine
    assert (d["diameter"], d["average"], d["pairs_of"]) == (2, 2.0, "endpoint switches")
    h = r["distance"]["hca"]
    same, other = k * k * (k - 1), k * k * (k * k - k)
    assert h["histogram"] == {"2": same, "4": other}
    assert h["average"] == pytest.approx((2 * same + 4 * other) / (same + other), abs=1e-6)
    pd = r["path_diversity"]["sampled"]
    assert pd["shortest_paths"]["min"] == k and pd["edge_disjoint"]["min"] == k  # one per spine
    b = r["bisection"]
    # paper 002 section 4.3: a two-tier fat tree has b_r = 1/4 (and B_r = 1/2 at full bisection)
    assert b["links"] == k * k // 2 and b["exact"]
    assert (b["b_r"], b["B_r"]) == (0.25, 0.5)
    assert not r["moore"]["applies"]


@pytest.mark.parametrize("n, b_r", [(2, 1 / 4), (3, 1 / 6)])
def test_fat_tree_bisection_ratio_by_tiers(n, b_r):
    # paper 002 section 4.3: b_r is 1/4 for a two-tier and 1/6 for a three-tier fat tree
    f = k_ary_n_tree(2, n)
    b = analyze(f, bisection="exact")["bisection"]
    assert b["exact"] and b["links"] == 2 ** n // 2 and b["b_r"] == pytest.approx(b_r, abs=1e-6)
    assert b["cables"] == n * 2 ** n


def test_single_switch_bisection_ratio_is_one_half():
    # paper 002 section 4.3: "the bisection ratio for this fully connected switch is half"
    r = analyze(single_switch(12))
    b = r["bisection"]
    assert (b["links"], b["b_r"]) == (6, 0.5) and b["B_r"] is None
    # no switch-to-switch links: B_r is said to be undefined, not printed as Python's None
    line = next(x for x in text(r).splitlines() if "bisection:" in x)
    assert line.endswith("b_r 0.5, B_r n/a (no switch-to-switch links)") and "None" not in text(r)


def test_moore_ratio_keeps_its_significant_digits():
    """A torus is a tiny fraction of its Moore bound (paper 004's 8 x 16 x 16 at diameter 20:
    2,048 of 1 + 6 (5^20 - 1)/4 switches); the ratio must not round to 0.0."""
    from ibtool.analyze.report import moore
    from ibtool.topologies.direct import torus
    g = build(torus(dims="8x16x16", hcas_per_switch=0))
    m = moore(g, 20)
    bound = 1 + 6 * (5 ** 20 - 1) // 4
    assert m["bound"] == bound and m["ratio"] == pytest.approx(2048 / bound, rel=1e-5) and m["ratio"] > 0
    r = analyze(ring(10), bisection="none")
    r["moore"] = m
    assert f"ratio {2048 / bound:.3g}" in text(r)


def test_sampled_pairs_say_how_many_were_asked_and_dropped():
    """Pairs are drawn with replacement: a switch drawn with itself or a pair drawn twice is
    dropped, and the report says so instead of printing fewer pairs than asked."""
    r = analyze(ring(6), samples=40, seed=3, bisection="none")
    p = r["path_diversity"]["sampled"]
    assert p["asked"] == 40 and p["self_pairs"] + p["repeated_pairs"] > 0  # 6 switches: collisions are sure
    assert p["pairs"] + p["self_pairs"] + p["repeated_pairs"] == 40
    assert len({(d["a"], d["b"]) for d in p["detail"]}) == len(p["detail"])
    line = next(x for x in text(r).splitlines() if "path diversity (sampled" in x)
    assert f"sampled, {p['pairs']} pairs of 40 asked; dropped:" in line and "drawn with itself" in line


def test_heuristic_bisection_is_an_upper_bound_and_labelled():
    g = build(hypercube(7))  # 128 switches: exact value 64
    h = heuristic(g)
    assert not h["exact"] and "upper bound" in h["method"] and h["links"] >= 64
    assert bisection(g, "heuristic")["links"] == h["links"]


def test_exact_bisection_balances_the_endpoints():
    g = build(fat_tree(3))  # 9 HCAs: the halves hold 4 and 5
    e = exact(g)
    assert e["exact"] and e["links"] == 4  # moving one HCA off is cheaper than splitting leaves


def test_latency_in_one_cabinet_is_closed_form():
    f = complete(4)
    lay = place(f, "cabinet-aware", site={"switches_per_cabinet": 4})
    la = latency(build(f), lay.length)
    # one hop, two switches, one 2 m intra-cabinet cable: 300 + 2 x 60 + 5 x 2 = 430 ns
    for k in ("NR", "FR"):
        assert la[k]["max_ns"] == la[k]["average_ns"] == 430.0 and la[k]["average_hops"] == 1.0
    assert la["pairs"] == 12


def test_fastest_routing_takes_the_shorter_cable_path():
    f = ring(3)  # triangle: s0-s1 direct, or s0-s2-s1
    lengths = np.array([100.0, 2.0, 2.0])  # links: s0-s1, s1-s2, s2-s0
    la = latency(build(f), lengths, LatencyModel())
    # NR s0->s1: 1 hop over 100 m = 300 + 120 + 500 = 920 ns; FR: 2 hops over 4 m = 300 + 180 + 20 = 500 ns
    assert la["NR"]["max_ns"] == 920.0 and la["FR"]["max_ns"] == 500.0
    assert la["FR"]["average_hops"] == pytest.approx((2 + 2 + 1 + 1 + 1 + 1) / 6, abs=1e-4)


def test_latency_model_refuses_negative_delays():
    from ibtool.errors import InputError
    with pytest.raises(InputError, match="switch_ns cannot be negative"):
        LatencyModel(switch_ns=-1)


def test_disconnected_fabric_reports_unreachable_pairs():
    from ibtool.fabric import Fabric
    f = Fabric("two")
    a, b, c, d = (f.add_switch(n, 4) for n in "abcd")
    f.add_link(a, b)
    f.add_link(c, d)
    r = analyze(f, bisection="none")
    assert r["distance"]["switch"]["unreachable_pairs"] == 8 and r["distance"]["switch"]["pairs"] == 4


def test_paper_002_equation_3_links_b_r_and_B_r():
    # b_r = B_r * K / (K + 2p): a ring (K = 2) with p = 1 HCA per router gives b_r = B_r / 2
    f = ring(10)
    for i in range(10):
        f.add_link(i, f.add_hca(f"h{i}"))
    b = analyze(f)["bisection"]
    assert b["links"] == 2 and b["B_r"] == pytest.approx(0.2) and b["b_r"] == pytest.approx(0.2 * 2 / (2 + 2))


def test_parallel_cables_count_by_the_shortest():
    from ibtool.fabric import Fabric
    f = Fabric("pair")
    a, b = f.add_switch("a", 4), f.add_switch("b", 4)
    f.add_link(a, b)
    f.add_link(a, b)
    la = latency(build(f), np.array([10.0, 3.0]))
    assert la["FR"]["max_ns"] == la["NR"]["max_ns"] == 300 + 2 * 60 + 5 * 3.0
    r = analyze(f, bisection="exact")
    assert r["bisection"]["links"] == 2 and r["path_diversity"]["sampled"]["shortest_paths"]["min"] == 2
