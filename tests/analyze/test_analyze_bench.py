"""The benchmark's networkx reference computes the same latencies as ibtool (perf/analyze_bench.py)."""

from __future__ import annotations

import sys

import pytest
from support import ROOT

sys.path.insert(0, str(ROOT / "perf"))
import analyze_bench

from ibtool.analyze import analyze
from ibtool.formats import ibnetdiscover
from ibtool.layout import place


def test_networkx_reference_agrees_with_ibtool(tmp_path):
    net = analyze_bench.hypercube_net(tmp_path, dim=6)
    f = ibnetdiscover.read(net)
    lay = place(f, "cabinet-aware", site={"switches_per_cabinet": 4})
    lay.write(tmp_path / "layout.json")
    ours = analyze(f, lay, bisection="none", samples=1)["latency"]
    ref = analyze_bench.networkx_latency(net, tmp_path / "layout.json")
    for key in ("NR", "FR"):
        assert ref[key]["max_ns"] == pytest.approx(ours[key]["max_ns"])
    d = analyze_bench.networkx_distances(net)
    assert d["diameter"] == 6 and d["average"] == pytest.approx(6 * 32 / 63)
