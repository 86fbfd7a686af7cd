"""`make bench` items for `ibtool analyze` (issue 11):

(a) `ibtool analyze` of the KNS 16-ary 3-direct plan (4,864 switches, 4,096 HCAs), every metric
    but exact bisection (METIS upper bound instead), in a fresh process: wall time and peak RSS
    (target < 10 s, < 2 GiB); the same with a cabinet-aware layout (adds cables and latency).
    Reference: networkx's all_pairs_shortest_path_length on the same switch graph (the distance
    stage).
(b) all-pairs NR and FR latency (paper 004 model) of Hypercube(2048, 11) laid out 8 switches per
    cabinet in 256 cabinets, as paper 004 does (target < 10 s), against networkx's
    all_pairs_dijkstra_path_length computing the same two routings on the same weighted graph
    (target: ibtool >= 10x faster).

    python perf/analyze_bench.py OUT_DIR
    python perf/analyze_bench.py --networkx-distances NET      # reference steps, run as
    python perf/analyze_bench.py --networkx-latency NET LAYOUT #   their own processes

`main(out_dir)` returns the results as a dict (perf/run.py records them in BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from measure import measure  # perf/measure.py: this script's directory is on sys.path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
IBTOOL = [PY, "-m", "ibtool.cli.main"]


def hypercube_net(out: Path, dim: int = 11) -> Path:
    """Hypercube(2^dim, dim) of switches only (paper 004 leaves compute nodes out)."""
    from ibtool.fabric import Fabric
    from ibtool.formats import ibnetdiscover

    f = Fabric(f"hypercube-{2 ** dim}")
    s = [f.add_switch(f"Q[{i}]", dim) for i in range(2 ** dim)]
    for i in range(2 ** dim):
        for bit in range(dim):
            j = i ^ (1 << bit)
            if i < j:
                f.add_link(s[i], s[j], bit + 1, bit + 1)
    net = out / "hypercube-2048.net"
    ibnetdiscover.write(f, net)
    return net


def networkx_distances(net: Path) -> dict:
    import networkx as nx

    from ibtool.analyze.graph import build
    from ibtool.formats import ibnetdiscover

    g = build(ibnetdiscover.read(net))
    G = nx.from_scipy_sparse_array(g.adj)
    t0 = time.monotonic()
    ends = set(g.endpoints.tolist())
    total = pairs = diameter = 0
    for s, lengths in nx.all_pairs_shortest_path_length(G):
        if s in ends:
            for t, d in lengths.items():
                if t in ends and t != s:
                    total, pairs, diameter = total + d, pairs + 1, max(diameter, d)
    return {"seconds": round(time.monotonic() - t0, 3), "diameter": diameter, "average": total / pairs}


def networkx_latency(net: Path, layout: Path) -> dict:
    """The same NR and FR keys as ibtool.analyze.latency, through networkx's Dijkstra."""
    import networkx as nx

    from ibtool.analyze import latency as lat
    from ibtool.analyze.graph import build
    from ibtool.formats import ibnetdiscover
    from ibtool.layout import Layout

    fabric = ibnetdiscover.read(net)
    g = build(fabric)
    cg = lat.cable_graph(g, Layout.read(layout, fabric).length).tocoo()
    m = lat.LatencyModel()
    G = nx.Graph()
    for a, b, ln in zip(cg.row.tolist(), cg.col.tolist(), cg.data.tolist()):
        G.add_edge(a, b, fr=round((m.switch_ns + m.cable_ns_per_m * ln) * 1000) * lat.FR_HOP + 1,
                   nr=lat.NR_HOP + round(ln * lat.NR_UNIT))
    t0 = time.monotonic()
    out = {}
    for key in ("NR", "FR"):
        worst = 0.0
        for s, dist in nx.all_pairs_dijkstra_path_length(G, weight=key.lower()):
            for t, k in dist.items():
                if t == s:
                    continue
                if key == "FR":
                    ns = m.endpoint_ns + m.switch_ns + (k - k % lat.FR_HOP) / lat.FR_HOP / 1000
                else:
                    hops = k // lat.NR_HOP
                    ns = m.endpoint_ns + m.switch_ns * (hops + 1) + m.cable_ns_per_m * (k - hops * lat.NR_HOP) / lat.NR_UNIT
                worst = max(worst, ns)
        out[key] = {"max_ns": round(worst, 3)}
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def run_json(argv, **kw) -> tuple[dict, dict]:
    r = measure(argv, cwd=ROOT, **kw)
    try:
        data = json.loads(r["stdout"]) if r["exit"] == 0 else {}
    except json.JSONDecodeError:
        data = {}
    if r["exit"] != 0:
        print(f"FAILED ({r['exit']}): {' '.join(map(str, argv))}\n{r['stderr']}", flush=True)
    return r, data


def bench_kns(out: Path) -> dict:
    plan = out / "kns-16-3"
    measure([*IBTOOL, "topo", "kns", "--k", "16", "--n", "3", "--out", plan, "--force"], cwd=ROOT)
    row = {"fabric": "KNS 16-ary 3-direct (radix 36)"}
    r, rep = run_json([*IBTOOL, "analyze", plan, "--bisection", "heuristic", "--json"])
    row["plan"] = {"seconds": r["seconds"], "peak_rss_mib": r["peak_rss_mib"], "exit": r["exit"],
                   "timings": rep.get("timings"), "switches": rep.get("counts", {}).get("switches"),
                   "hcas": rep.get("counts", {}).get("hcas"), "diameter": rep.get("distance", {}).get("switch", {}).get("diameter"),
                   "average": rep.get("distance", {}).get("switch", {}).get("average"),
                   "bisection": rep.get("bisection", {}).get("links")}
    print("kns plan", row["plan"], flush=True)
    r, rep = run_json([*IBTOOL, "analyze", plan, "--layout", "cabinet-aware", "--bisection", "heuristic", "--json"])
    row["with_layout"] = {"seconds": r["seconds"], "peak_rss_mib": r["peak_rss_mib"], "exit": r["exit"],
                          "timings": rep.get("timings"), "latency": {k: rep.get("latency", {}).get(k) for k in ("NR", "FR")}}
    print("kns with layout", row["with_layout"], flush=True)
    r, ref = run_json([PY, Path(__file__), "--networkx-distances", plan / "topology.net"])
    row["networkx_distances"] = {"seconds": ref.get("seconds"), "process_seconds": r["seconds"],
                                 "peak_rss_mib": r["peak_rss_mib"], "diameter": ref.get("diameter"),
                                 "average": ref.get("average")}
    print("networkx distances", row["networkx_distances"], flush=True)
    return row


def bench_latency(out: Path) -> dict:
    net = hypercube_net(out)
    site = out / "z8.yaml"
    site.write_text("switches_per_cabinet: 8\n")
    layout = out / "hypercube-2048.layout.json"
    r, rep = run_json([*IBTOOL, "analyze", net, "--layout", "cabinet-aware", "--site", site, "--save-layout", layout,
                       "--bisection", "none", "--samples", "1", "--json"])
    row = {"fabric": "Hypercube(2048, 11), 8 switches x 256 cabinets (16 x 16)",
           "ibtool": {"latency_s": (rep.get("timings") or {}).get("latency"), "process_seconds": r["seconds"],
                      "peak_rss_mib": r["peak_rss_mib"], "NR": rep.get("latency", {}).get("NR"),
                      "FR": rep.get("latency", {}).get("FR"), "total_cable_m": rep.get("layout", {}).get("total_length_m")}}
    print("ibtool latency", row["ibtool"], flush=True)
    r, ref = run_json([PY, Path(__file__), "--networkx-latency", net, layout], timeout=3600)
    row["networkx"] = {"seconds": ref.get("seconds"), "process_seconds": r["seconds"], "peak_rss_mib": r["peak_rss_mib"],
                       "NR": ref.get("NR"), "FR": ref.get("FR")}
    print("networkx latency", row["networkx"], flush=True)
    if row["ibtool"]["latency_s"] and ref.get("seconds"):
        row["speedup"] = round(ref["seconds"] / row["ibtool"]["latency_s"], 1)
    return row


def main(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    return {"kns": bench_kns(out), "latency": bench_latency(out)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", type=Path)
    ap.add_argument("--networkx-distances", type=Path)
    ap.add_argument("--networkx-latency", nargs=2, type=Path)
    a = ap.parse_args()
    if a.networkx_distances:
        print(json.dumps(networkx_distances(a.networkx_distances)))
    elif a.networkx_latency:
        print(json.dumps(networkx_latency(*a.networkx_latency)))
    else:
        print(json.dumps(main(a.out or ROOT / "perf" / "out" / "analyze"), indent=2))
