"""Topology metrics of a Fabric (and its Layout): counts, distances, path diversity, bisection,
Moore bound, cable totals, the paper 004 latency model and cost. Reads a fabric, never writes one.

    from ibtool.analyze import analyze
    report = analyze(fabric, layout, prices=None, bisection="auto")   # a JSON-ready dict
"""

from ibtool.analyze.latency import LatencyModel
from ibtool.analyze.report import analyze, text

__all__ = ["LatencyModel", "analyze", "text"]
