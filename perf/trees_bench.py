"""The tree families' measurements (issue 13), run by `perf/run.py --only trees`.

  gen      `ibtool topo fattree --k 18 --n 4` (104,976 HCAs) and `ibtool topo kantc --k 8 --n 4`
           (126,976 HCAs): build + write in a fresh process, wall time and peak RSS (target:
           < 10 s and < 2 GiB each)
  routing  OpenSM's routing step under ibsim on the 16-ary 3-tree (768 switches, 4,096 HCAs):
           ftree (root and compute-node GUID files of the plan) and updn (the top level as
           roots) against minhop, the stock default, in the same run
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from measure import measure

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]

GEN = [("k-ary n-tree 18-ary 4-tree", ["fattree", "--k", "18", "--n", "4"]),
       ("KANTC(8,4)", ["kantc", "--k", "8", "--n", "4"])]


def bench_gen(out: Path) -> list[dict]:
    rows = []
    for label, args in GEN:
        d = out / "trees" / "gen" / args[0]
        r = measure([*IBTOOL, "topo", *args, "--out", d, "--force", "--json"], cwd=ROOT)
        s = json.loads(r["stdout"]) if r["exit"] == 0 else {}
        net = d / "topology.net"
        rows.append({"fabric": label, "command": "ibtool topo " + " ".join(args), "switches": s.get("switches"),
                     "hcas": s.get("hcas"), "links": s.get("links"),
                     "net_mib": round(net.stat().st_size / 2**20, 1) if net.exists() else None,
                     "ibtool_s": r["seconds"], "ibtool_rss_mib": r["peak_rss_mib"], "rc": r["exit"]})
        print(rows[-1], flush=True)
    return rows


def bench_routing(out: Path, sim_run, cap: int = 600) -> list[dict]:
    plan = out / "trees" / "plans" / "fattree-16-3"
    if not (plan / "topology.net").exists():
        measure([*IBTOOL, "topo", "fattree", "--k", "16", "--n", "3", "--out", plan, "--force"], cwd=ROOT)
    net = plan / "topology.net"
    roots, cns = (plan / "root-guids").resolve(), (plan / "cn-guids").resolve()
    rows = []
    for engine, extra in [("ftree", ["--conf", f"root_guid_file={roots}", "--conf", f"cn_guid_file={cns}"]),
                          ("updn", ["--conf", f"root_guid_file={roots}"]),
                          ("minhop", [])]:
        r = sim_run(net, engine, out / "trees" / "routing" / engine, extra, timeout=cap)
        r.update({"fabric": "16-ary 3-tree (768 switches, 4,096 HCAs)"})
        rows.append(r)
        print(r, flush=True)
    return rows


def markdown(gen: list[dict], routing: list[dict]) -> list[str]:
    md = []
    if gen:
        md += ["| fabric | command | switches | HCAs | links | net file | wall | peak RSS |", "|---|---|---|---|---|---|---|---|"]
        for r in gen:
            md.append(f"| {r['fabric']} | `{r['command']}` | {r['switches']:,} | {r['hcas']:,} | {r['links']:,} "
                      f"| {r['net_mib']} MiB | {r['ibtool_s']} s | {r['ibtool_rss_mib']} MiB |")
        md.append("")
    if routing:
        base = next((r["routing_step_s"] for r in routing if r["engine_requested"] == "minhop"), None)
        md += ["| fabric | engine requested | engine used | routing step | minhop / engine | OpenSM start to exit |",
               "|---|---|---|---|---|---|"]
        for r in routing:
            step = r["routing_step_s"]
            ratio = f"{base / step:.1f}x" if base and step else "—"
            md.append(f"| {r['fabric']} | {r['engine_requested']} | {r['engine_used'] or '—'} "
                      f"| {'—' if step is None else f'{step:.3f} s'} | {ratio} | {r['opensm_s']} s |")
        md.append("")
    return md
