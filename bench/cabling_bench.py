"""Cabling package benchmark (BENCHMARKS.md, "Cabling"): `ibtool cabling` of KNS 16-ary 3-direct
(4,864 switches, 4,096 HCAs, 16,384 cables: CSV, every HTML sheet, SVGs, BOM) and `ibtool cabling
import` of its CSV, each a fresh process (wall time, peak RSS). No stock tool writes cabling plans;
the reference in the same run is `ibtool topo kns` writing the same fabric's plan files.

    .venv/bin/python bench/cabling_bench.py [OUT]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from measure import measure

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]


def main(out: Path) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    plan, pkg, back = out / "kns-16-3", out / "kns-16-3-cabling", out / "kns-16-3-imported"
    for d in (plan, pkg, back):
        shutil.rmtree(d, ignore_errors=True)
    topo = measure([*IBTOOL, "topo", "kns", "--k", "16", "--n", "3", "--out", str(plan)], cwd=ROOT)
    cab = measure([*IBTOOL, "cabling", str(plan), "--out", str(pkg), "--json"], cwd=ROOT)
    s = json.loads(cab["stdout"]) if cab["exit"] == 0 else {}
    imp = measure([*IBTOOL, "cabling", "import", str(pkg / "cables.csv"), "--out", str(back)], cwd=ROOT)
    same = (back / "topology.net").read_bytes() == (plan / "topology.net").read_bytes() if imp["exit"] == 0 else False
    files = sum(1 for _ in pkg.rglob("*") if _.is_file())
    mib = round(sum(p.stat().st_size for p in pkg.rglob("*") if p.is_file()) / 2**20, 1)
    rows = [{"what": "ibtool cabling (package)", "cables": s.get("cables"), "files": files, "mib": mib,
             "wall_s": cab["seconds"], "peak_rss_mib": cab["peak_rss_mib"], "exit": cab["exit"]},
            {"what": "ibtool cabling import (CSV -> plan)", "same_topology_net": same,
             "wall_s": imp["seconds"], "peak_rss_mib": imp["peak_rss_mib"], "exit": imp["exit"]},
            {"what": "reference: ibtool topo kns (plan files)", "wall_s": topo["seconds"],
             "peak_rss_mib": topo["peak_rss_mib"], "exit": topo["exit"]}]
    for r in rows:
        print(r, flush=True)
    return rows


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "bench" / "out" / "cabling"))
