"""Cabling package benchmark (BENCHMARKS.md, "Cabling"): `ibtool cabling` of KNS 16-ary 3-direct
(4,864 switches, 4,096 HCAs, 16,384 cables: CSV, every HTML sheet, SVGs, BOM, labels, NetBox) and
`ibtool cabling import` of its CSV, each a fresh process (wall time, peak RSS). No stock tool
writes cabling plans; the reference in the same run is `ibtool topo kns` writing the same
fabric's plan files.

Then KNS 12^3 (issue 23's done-when, too big for `make test`): its package, checked as the tests
check every family (tests/cabling/ordercheck.py): every cable's rate is the plan's, no copper cable
longer than its rate's copper limit, every cable at least the straight line between its ports;
every label three lines of at most 20 characters; and a re-plan after a port swap in cables.csv
keeps every cable ID and stage.

    .venv/bin/python perf/cabling_bench.py [OUT]
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

from measure import measure

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]
sys.path.insert(0, str(ROOT / "tests" / "cabling"))


def package(out: Path, name: str, topo_args: list[str]) -> tuple[list[dict], Path, Path]:
    plan, pkg, back = out / name, out / f"{name}-cabling", out / f"{name}-imported"
    for d in (plan, pkg, back):
        shutil.rmtree(d, ignore_errors=True)
    topo = measure([*IBTOOL, "topo", "kns", *topo_args, "--out", str(plan)], cwd=ROOT)
    cab = measure([*IBTOOL, "cabling", str(plan), "--out", str(pkg), "--json"], cwd=ROOT)
    s = json.loads(cab["stdout"]) if cab["exit"] == 0 else {}
    imp = measure([*IBTOOL, "cabling", "import", str(pkg / "cables.csv"), "--out", str(back)], cwd=ROOT)
    same = (back / "topology.net").read_bytes() == (plan / "topology.net").read_bytes() if imp["exit"] == 0 else False
    files = sum(1 for _ in pkg.rglob("*") if _.is_file())
    mib = round(sum(p.stat().st_size for p in pkg.rglob("*") if p.is_file()) / 2**20, 1)
    rows = [{"what": f"{name}: ibtool cabling (package)", "cables": s.get("cables"), "stages": len(s.get("stages", [])),
             "files": files, "mib": mib, "wall_s": cab["seconds"], "cpu_s": cab["cpu_seconds"],
             "peak_rss_mib": cab["peak_rss_mib"], "exit": cab["exit"]},
            {"what": f"{name}: ibtool cabling import (CSV -> plan)", "same_topology_net": same,
             "wall_s": imp["seconds"], "cpu_s": imp["cpu_seconds"], "peak_rss_mib": imp["peak_rss_mib"],
             "exit": imp["exit"]},
            {"what": f"{name}: reference: ibtool topo kns (plan files)", "wall_s": topo["seconds"],
             "cpu_s": topo["cpu_seconds"], "peak_rss_mib": topo["peak_rss_mib"], "exit": topo["exit"]}]
    return rows, plan, pkg


def checks(out: Path, plan: Path, pkg: Path) -> dict:
    """The done-when checks of issue 23 on one package (KNS 12^3)."""
    from ordercheck import check_order, rows
    order = check_order(pkg, plan)  # asserts: the plan's rates, copper within reach, cables that reach
    cab = rows(pkg / "cables.csv")
    lab = rows(pkg / "labels.csv")
    lines = [x[k] for x in lab for k in ("line1", "line2", "line3")]
    assert len(lab) == 2 * len(cab) and max(map(len, lines)) <= 20, max(lines, key=len)
    # a port swap on one switch in the sheet, re-planned: every ID and stage kept
    s = next(r["b_device"] for r in cab if r["b_device"].startswith("S["))
    two = [r for r in cab if s in (r["a_device"], r["b_device"])][:2]
    ends = ["a" if r["a_device"] == s else "b" for r in two]
    two[0][f"{ends[0]}_port"], two[1][f"{ends[1]}_port"] = two[1][f"{ends[1]}_port"], two[0][f"{ends[0]}_port"]
    edit = out / "kns-12-3-edit"
    shutil.rmtree(edit, ignore_errors=True)
    edit.mkdir()
    with open(edit / "cables.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(cab[0]))
        w.writeheader()
        w.writerows(cab)
    shutil.copy(pkg / "cabling.json", edit / "cabling.json")
    again, pkg2 = out / "kns-12-3-replanned", out / "kns-12-3-replanned-cabling"
    for d in (again, pkg2):
        shutil.rmtree(d, ignore_errors=True)
    r1 = measure([*IBTOOL, "cabling", "import", str(edit / "cables.csv"), "--out", str(again)], cwd=ROOT)
    r2 = measure([*IBTOOL, "cabling", str(again), "--out", str(pkg2), "--json"], cwd=ROOT)
    assert r1["exit"] == 0 and r2["exit"] == 0, (r1["stderr"], r2["stderr"])
    after = {r["cable_id"]: r["stage"] for r in rows(pkg2 / "cables.csv")}
    kept = sum(1 for r in cab if after.get(r["cable_id"]) == r["stage"])
    assert kept == len(cab) == len(after) and json.loads(r2["stdout"])["new_ids"] == []
    return {"what": "kns-12-3: done-when checks", "cables": len(cab), "placed": order["placed"],
            "copper": order["copper"], "rate_filled": True, "reach_ok": True, "copper_within_limit": True,
            "label_lines_max_chars": max(map(len, lines)), "ids_and_stages_kept_after_port_swap": kept}


def main(out: Path) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows, _, _ = package(out, "kns-16-3", ["--k", "16", "--n", "3"])
    rows12, plan12, pkg12 = package(out, "kns-12-3", ["--k", "12", "--n", "3"])
    rows += rows12
    rows.append(checks(out, plan12, pkg12))
    for r in rows:
        print(r, flush=True)
    return rows


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "perf" / "out" / "cabling"))
