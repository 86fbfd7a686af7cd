"""Fastest / Nearest Routing on hand-made fabrics whose best paths and latencies are known."""

import numpy as np
import pytest

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.routing import fr
from ibtool.routing.lids import assign_lids


def triangle():
    """A, B, C with an HCA each on port 1; A-B 30 m, A-C 2 m, C-B 2 m."""
    f = Fabric("tri")
    s = [f.add_switch(n, 8) for n in "ABC"]
    for i, n in zip(s, "ABC"):
        f.add_link(i, f.add_hca("H" + n), 1, 1)
    f.add_link(s[0], s[1], 2, 2)  # A-B
    f.add_link(s[0], s[2], 3, 2)  # A-C
    f.add_link(s[2], s[1], 3, 3)  # C-B
    metres = np.array([1, 1, 1, 30.0, 2.0, 2.0])  # HCA cables are not counted
    assign_lids(f)
    return f, metres


def lid_of(f, name):
    i = f.index(name)
    return next(lid for lid, (n, p) in f.lid_owners().items() if n == i)


def test_fr_takes_two_short_cables_nr_the_long_one():
    f, m = triangle()
    hb = lid_of(f, "HB")
    t = fr.compute(f, m)
    a = f.guids[f.index("A")]
    assert t.lft[a][hb] == 3  # via C: 60 + 10 + 60 + 10 = 140 ns < 60 + 150 = 210 ns
    assert t.lft[f.guids[f.index("B")]][hb] == 1  # delivered to the HCA's port
    assert t.lft[f.guids[f.index("B")]][lid_of(f, "B")] == 0  # the switch's own LID
    assert fr.compute(f, m, nr=True).lft[a][hb] == 2  # NR: one hop
    assert fr.compute(f, m, switch_delay=200).lft[a][hb] == 2  # slow switches: one hop wins again


def test_latency_stats_by_hand():
    f, m = triangle()
    g = fr.graph(f, m, switch_delay=60, ns_per_m=5)
    s = fr.latency_stats(g)
    # A-C, C-B: 300 + 2*60 + 10 = 430; A-B via C: 300 + 3*60 + 20 = 500 (each both ways)
    assert s["max_ns"] == 500 and s["avg_ns"] == pytest.approx((430 * 4 + 500 * 2) / 6)
    n = fr.latency_stats(g, nr=True)
    assert n["max_ns"] == 300 + 120 + 150 and n["max_hops"] == 1 and n["avg_hops"] == 1


def test_equal_paths_share_the_lids():
    """A ring of 4 switches: the opposite switch has two equal paths; its 4 HCAs split 2 + 2."""
    f = Fabric("ring")
    s = [f.add_switch(f"S{i}", 8) for i in range(4)]
    for j in range(4):
        f.add_link(s[2], f.add_hca(f"H{j}"), j + 1, 1)
    for i in range(4):
        f.add_link(s[i], s[(i + 1) % 4], 6, 7)
    assign_lids(f)
    t = fr.compute(f, np.full(f.num_links, 3.0))
    lids = [lid_of(f, f"H{j}") for j in range(4)]
    ports = [int(t.lft[f.guids[s[0]]][lid]) for lid in lids]
    assert sorted(ports) == [6, 6, 7, 7]


def test_refusals():
    f, m = triangle()
    with pytest.raises(InputError, match="no cable length for the link A\\[2\\] - B\\[2\\]"):
        fr.compute(f, np.where(np.arange(6) == 3, np.nan, m))
    f.port_lids.clear()
    with pytest.raises(InputError, match="no LIDs"):
        fr.compute(f, m)
    g = Fabric("two")
    g.add_switch("A", 4), g.add_switch("B", 4)
    with pytest.raises(InputError, match="disconnected"):
        fr.latency_stats(fr.graph(g, np.zeros(0)))


@pytest.mark.parametrize("family,kw", [("torus", dict(dims="4x4")), ("skywalk", dict(z=4, c=16, di=3, do=2)),
                                       ("dragonfly", dict(z=4, c=5)), ("random", dict(n=16, d=3, c=4))])
def test_layers_make_every_vl_acyclic(family, kw):
    """The layering checked by another hand: routes traced by verify.trace.path_of, one channel
    dependency graph per layer in networkx."""
    import networkx as nx

    from ibtool.layout import place
    from ibtool.topologies import load_all
    from ibtool.verify import bound, trace
    f = load_all()[family].build(**kw)
    assign_lids(f)
    t = fr.compute(f, place(f, "cabinet-aware").length)
    layer, nvl = fr.layers(f, t)
    b = bound.bind(f, t)
    graphs = [nx.DiGraph() for _ in range(nvl)]
    whole = nx.DiGraph()
    for (s, lid), k in layer.items():
        hops, status = trace.path_of(b, s, lid)
        assert status == trace.DELIVERED
        chans = [(n, p) for n, p in hops if f.types[n] == 2 and p != 0 and f.types[f.peer(n, p)[0]] == 2]
        for a, c in zip(chans, chans[1:]):
            graphs[k].add_edge(a, c)
            whole.add_edge(a, c)
    assert all(nx.is_directed_acyclic_graph(g) for g in graphs)
    if not nx.is_directed_acyclic_graph(whole):
        assert nvl >= 2  # a cycle on one VL needs a second layer
    if family == "torus":  # FR on a ring closes a cycle: the layering is doing work
        assert not nx.is_directed_acyclic_graph(whole)
    print(family, "layers", nvl)
    assert len(layer) == sum(1 for _ in f.lid_owners()) * f.count(kind=2)


def test_layers_refuse_too_few_vls():
    from ibtool.layout import place
    from ibtool.topologies import load_all
    f = load_all()["torus"].build(dims="4x4")
    assign_lids(f)
    t = fr.compute(f, place(f, "cabinet-aware").length)
    with pytest.raises(InputError, match="more than 1 layers"):
        fr.layers(f, t, max_vls=1)


def test_latency_stats_is_the_analyze_model(monkeypatch):
    """One latency model: fr.latency_stats and `ibtool analyze`'s latency both go through
    ibtool.analyze.latency.pair_latency and agree to the picosecond, hops included."""
    from ibtool.analyze import latency as model
    from ibtool.analyze.graph import build
    from ibtool.layout import place
    from ibtool.topologies import load_all
    calls = []
    real = model.pair_latency
    monkeypatch.setattr(model, "pair_latency", lambda *a, **k: calls.append(a[3] if len(a) > 3 else "both")
                        or real(*a, **k))
    f = load_all()["skywalk"].build(z=4, c=16, di=3, do=2)
    lay = place(f, "cabinet-aware")
    a = model.latency(build(f), lay.length, model.LatencyModel(45.0, 4.0, 250.0))
    g = fr.graph(f, lay.length, switch_delay=45.0, ns_per_m=4.0)
    s, n = fr.latency_stats(g, injection=250.0), fr.latency_stats(g, nr=True, injection=250.0)
    assert calls == ["both", ("FR",), ("NR",)]
    assert (s["max_ns"], s["avg_ns"]) == (a["FR"]["max_ns"], a["FR"]["average_ns"])
    assert (n["max_ns"], n["avg_ns"], n["max_hops"], n["avg_hops"]) == \
        (a["NR"]["max_ns"], a["NR"]["average_ns"], a["NR"]["max_hops"], a["NR"]["average_hops"])
    assert s["pairs"] == a["pairs"] == 64 * 63


def test_forked_workers_give_the_same_numbers():
    """Above one chunk of sources the model may fork workers; their sums are the same."""
    from scipy.sparse import csr_matrix

    from ibtool.analyze.latency import CHUNK, pair_latency
    n = 2 * CHUNK + 77  # a ring of cables 1..n m
    i = np.arange(n)
    m = csr_matrix((np.r_[i + 1.0, i + 1.0], (np.r_[i, (i + 1) % n], np.r_[(i + 1) % n, i])), shape=(n, n))
    one, two = pair_latency(m, i, workers=1), pair_latency(m, i, workers=2)
    assert one == two and one["pairs"] == n * (n - 1)
    # NR: the far side of the ring, half way round (over 500 km of cable on the longest path)
    assert one["NR"]["max_hops"] == n // 2 and one["NR"]["average_hops"] == pytest.approx((n + 1) / 4)


def test_one_switch_has_no_pairs():
    f = Fabric("one")
    f.add_switch("A", 4)
    with pytest.raises(InputError, match="no switch pairs"):
        fr.latency_stats(fr.graph(f, np.zeros(0)))
