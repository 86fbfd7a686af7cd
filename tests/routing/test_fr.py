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
