"""Paper 002's comparison networks at the paper's scale: Slim Fly q = 23 (1,058 routers, 18 HCAs
each) and the canonical Dragonfly a = 16, p = 8, h = 8 (2,064 routers, 16,512 HCAs).

    flock /tmp/ibtool-heavy.lock .venv/bin/python perf/paper002_bench.py [--out perf/out/paper002]

(a) `ibtool topo slimfly --q 23` and `ibtool topo dragonfly-canonical --a 16 --p 8 --h 8`, one
    fresh process each: wall time and peak RSS;
(b) `ibtool analyze PLAN --bisection heuristic --json`, fresh process: wall, peak RSS, each stage's
    seconds; beside it, in the same run, networkx's all_pairs_shortest_path_length on the same
    router graph (perf/analyze_bench.py --networkx-distances, its own process) for the distance
    stage, whose diameter and average distance must agree;
(c) paper 002's Fig. 4 points: b_r = B / Phi from analyze's bisection (METIS, an upper bound of
    the minimum) against the caption's B / Phi (SF: 60,736 of 370,300 Gb/s; DF: 41,666 of
    402,480), within 5 % or the difference explained in docs/papers.md.
Results: OUT/paper002.json and OUT/paper002.md; exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analyze_bench import run_json  # noqa: E402  (one fresh process, its JSON)

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
IBTOOL = [PY, "-m", "ibtool.cli.main"]
PHI = 10.0  # Gb/s per cable, as paper 002's caption
POINTS = {  # label: (family, args, paper's B in Gb/s, paper's Phi in Gb/s)
    "Slim Fly q = 23": ("slimfly", ["--q", "23"], 60736, 370300),
    "Dragonfly a = 16, p = 8, h = 8": ("dragonfly-canonical", ["--a", "16", "--p", "8", "--h", "8"], 41666, 402480),
}


def bench_point(out: Path, label: str, family: str, args: list[str], paper_b: float, paper_phi: float) -> dict:
    plan = out / family
    r, s = run_json([*IBTOOL, "topo", family, *args, "--out", plan, "--force", "--json"])
    row = {"fabric": label, "generate": {"seconds": r["seconds"], "peak_rss_mib": r["peak_rss_mib"],
                                         "in_process_s": s.get("seconds"), "switches": s.get("switches"),
                                         "hcas": s.get("hcas"), "links": s.get("links")}}
    print(label, "generate", row["generate"], flush=True)
    r, rep = run_json([*IBTOOL, "analyze", plan, "--bisection", "heuristic", "--json"], timeout=7200)
    d = rep.get("distance", {}).get("switch", {})
    b = rep.get("bisection", {})
    row["analyze"] = {"seconds": r["seconds"], "peak_rss_mib": r["peak_rss_mib"], "timings": rep.get("timings"),
                      "diameter": d.get("diameter"), "average": d.get("average"), "bisection_links": b.get("links"),
                      "bisection_method": b.get("method"), "b_r": b.get("b_r"), "B_r": b.get("B_r"),
                      "cables": b.get("cables"), "inter_switch_cables": b.get("inter_switch_cables")}
    print(label, "analyze", row["analyze"], flush=True)
    r, ref = run_json([PY, ROOT / "perf" / "analyze_bench.py", "--networkx-distances", plan / "topology.net"],
                      timeout=7200)
    row["networkx_distances"] = {"seconds": ref.get("seconds"), "process_seconds": r["seconds"],
                                 "peak_rss_mib": r["peak_rss_mib"], "diameter": ref.get("diameter"),
                                 "average": ref.get("average")}
    print(label, "networkx", row["networkx_distances"], flush=True)
    ours = (rep.get("timings") or {}).get("distances")
    if ours and ref.get("seconds"):
        row["distance_speedup"] = round(ref["seconds"] / ours, 1)
    if b.get("links"):
        cables = b["cables"]
        ours_b = b["links"] * PHI
        row["fig4"] = {"paper_B_gbps": paper_b, "paper_Phi_gbps": paper_phi, "paper_b_r": round(paper_b / paper_phi, 4),
                       "B_gbps": ours_b, "Phi_gbps": cables * PHI, "b_r": round(ours_b / (cables * PHI), 4),
                       "B_r": b.get("B_r"),
                       "b_r_vs_paper_pct": round(100 * (ours_b / (cables * PHI) / (paper_b / paper_phi) - 1), 1),
                       "B_vs_paper_pct": round(100 * (ours_b / paper_b - 1), 1)}
        print(label, "fig4", row["fig4"], flush=True)
    row["checks"] = {
        "distances agree with networkx": (d.get("diameter") == ref.get("diameter")
                                          and abs((d.get("average") or 0) - (ref.get("average") or -1)) < 1e-6),
        "b_r within 5 % of the paper's": bool(row.get("fig4")) and abs(row["fig4"]["b_r_vs_paper_pct"]) <= 5.0,
    }
    return row


def markdown(res: dict) -> str:
    md = [f"Machine: {res['machine']}; run {res['date']}.\n",
          "| fabric | routers / HCAs | `ibtool topo` wall, peak RSS | `ibtool analyze` wall, peak RSS | distances (ibtool) | "
          "networkx all-pairs BFS | diameter, average | bisection (METIS) |",
          "|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        g, a, n = r["generate"], r["analyze"], r["networkx_distances"]
        t = a.get("timings") or {}
        md.append(f"| {r['fabric']} | {g['switches']:,} / {g['hcas']:,} | {g['seconds']} s, {g['peak_rss_mib']:.0f} MiB | "
                  f"{a['seconds']} s, {a['peak_rss_mib']:.0f} MiB | {t.get('distances')} s | {n['seconds']} s "
                  f"({r.get('distance_speedup')}x) | {a['diameter']}, {a['average']} (networkx {n['diameter']}, "
                  f"{n['average']:.6f}) | {a['bisection_links']:,} links |")
    md += ["", "| Fig. 4 point | paper B / Phi (Gb/s) | paper b_r | ibtool B / Phi (Gb/s, 10 Gb/s cables) | ibtool b_r | "
           "B_r | b_r vs paper |", "|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        f = r.get("fig4")
        if f:
            md.append(f"| {r['fabric']} | {f['paper_B_gbps']:,} / {f['paper_Phi_gbps']:,} | {f['paper_b_r']} | "
                      f"{f['B_gbps']:,.0f} / {f['Phi_gbps']:,.0f} | {f['b_r']} | {f['B_r']} | "
                      f"{f['b_r_vs_paper_pct']:+.1f} % |")
    md += ["", "checks: " + "; ".join(f"{r['fabric']}: {r['checks']}" for r in res["rows"])]
    return "\n".join(md) + "\n"


def main(out: Path, quick: bool = False) -> dict:
    import time

    import run  # machine() lives there
    out.mkdir(parents=True, exist_ok=True)
    res = {"machine": run.machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "load_average": open("/proc/loadavg").read().split()[:3], "rows": []}
    for label, (fam, args, b, phi) in POINTS.items():
        res["rows"].append(bench_point(out, label, fam, args, b, phi))
    res["load_average_after"] = open("/proc/loadavg").read().split()[:3]
    res["ok"] = all(all(r["checks"].values()) for r in res["rows"])
    (out / "paper002.json").write_text(json.dumps(res, indent=2) + "\n")
    (out / "paper002.md").write_text(markdown(res))
    print(markdown(res), flush=True)
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "perf" / "out" / "paper002"))
    a = ap.parse_args()
    sys.exit(0 if main(Path(a.out).resolve())["ok"] else 1)
