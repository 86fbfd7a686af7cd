"""hdor's C engine without OpenSM (issue 38): `ibtool route hdor --implementation c` against the
Python reference (`--implementation python`) on the same discovery, in the same run, end to end.

(a) KNS 16-ary 3-direct (`--quick`: 8^3), complete: the discovery (an ibnetdiscover dump with the
    LIDs OpenSM's lid manager would give, made from the plan once and kept in OUT), then
    `ibtool route hdor --fabric D --out X.lft` in a fresh process, the two implementations in turn
    (A B A B ...), `--reps` each: wall, CPU, peak RSS; the two LFT files must be byte-identical.
    The LFT file (OpenSM's file engine, with ` portguid` on every entry: 43 M lines, 1.7 GB on 16^3)
    is most of either command's output; both write it to OUT (on disk) and, once each, to
    /dev/shm, to separate the disk from the command.
(b) What-if (issue 39's entry point): one `hdor_c.Engine` with the complete KNS 16^3 (`--quick`: 8^3)
    loaded and routed once, then single router-switch cable failures one after the other
    (`route_failures`: no parsing, no reloading): seconds per failure set, against the Python
    reference's degraded pass (`hdor.compute(..., baseline=...)`) of the same failure.

    .venv/bin/python perf/hdor_c_bench.py OUT [--quick] [--reps 3] [--only a,b]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import sys
import time
from pathlib import Path

from measure import measure

from ibtool.formats import ibnetdiscover
from ibtool.routing.lids import assign_lids
from ibtool.topologies.kns import kns

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def discovery(out: Path, k: int, n: int) -> Path:
    """An ibnetdiscover dump of the KNS with LIDs (switches by GUID from 1, then every CA port, as
    ibtool.routing.lids numbers them): the plan's file with its `lid 0` filled in."""
    path = out / f"kns-{k}-{n}.ibnetdiscover"
    if path.is_file():
        return path
    f = kns(k, n)
    assign_lids(f)
    plan = out / f"kns-{k}-{n}.net"
    ibnetdiscover.write(f, plan)
    by_id = {ibnetdiscover.node_id(f, i): i for i in range(f.num_nodes)}
    lid = {x: f.port_lids[(x, 0)][0] for x in range(f.num_nodes) if f.is_switch(x)}
    lines, cur = [], None
    for ln in plan.read_text().splitlines():
        m = re.match(r'^(Switch|Ca)\t\d+ "([^"]+)"', ln)
        if m:
            cur = by_id[m.group(2)]
            if m.group(1) == "Switch":
                ln = ln.replace("lid 0 lmc 0", f"lid {lid[cur]} lmc 0")
        elif ln.startswith("[") and cur is not None:
            m = re.match(r'^\[(\d+)\]\S*\s+"([^"]+)"\[(\d+)\]', ln)
            peer, pport = by_id[m.group(2)], int(m.group(3))
            far = lid[peer] if f.is_switch(peer) else f.port_lids[(peer, pport)][0]
            if f.is_switch(cur):
                ln = ln.replace("# ", "# ", 1).rsplit(" lid 0 ", 1)
                ln = f"{ln[0]} lid {far} {ln[1]}"
            else:
                own = f.port_lids[(cur, int(m.group(1)))][0]
                ln = ln.replace("# lid 0 lmc 0", f"# lid {own} lmc 0", 1).rsplit(" lid 0 ", 1)
                ln = f"{ln[0]} lid {far} {ln[1]}"
        lines.append(ln)
    path.write_text("\n".join(lines) + "\n")
    plan.unlink()
    back = ibnetdiscover.read(path)
    assert back.port_lids == f.port_lids, "the discovery's LIDs are not the plan's"
    return path


def part_a(out: Path, quick: bool, reps: int) -> dict:
    k = 8 if quick else 16
    d = discovery(out, k, 3)
    row = {"fabric": f"KNS {k}-ary 3-direct", "discovery": str(d), "load_before": load(), "runs": {}}
    for rep in range(reps):
        for impl in ("c", "python"):
            lft = out / f"{impl}.lft"
            r = measure([*IBTOOL, "route", "hdor", "--fabric", d, "--out", lft, "--implementation", impl], cwd=ROOT)
            row["runs"].setdefault(impl, []).append({k_: r[k_] for k_ in ("seconds", "cpu_seconds", "peak_rss_mib",
                                                                          "exit")})
            print(json.dumps({"impl": impl, "rep": rep, **row["runs"][impl][-1]}), flush=True)
    row["identical"] = filecmp.cmp(out / "c.lft", out / "python.lft", shallow=False)
    row["lft_bytes"] = (out / "c.lft").stat().st_size
    for impl in ("c", "python"):
        shm = Path("/dev/shm") / f"hdor-bench-{impl}.lft"
        r = measure([*IBTOOL, "route", "hdor", "--fabric", d, "--out", shm, "--implementation", impl], cwd=ROOT)
        row["runs"][f"{impl}, --out on /dev/shm"] = [{k_: r[k_] for k_ in ("seconds", "cpu_seconds", "peak_rss_mib",
                                                                           "exit")}]
        shm.unlink(missing_ok=True)
    for impl in ("c", "python"):
        (out / f"{impl}.lft").unlink(missing_ok=True)
    row["median_s"] = {impl: sorted(x["seconds"] for x in runs)[len(runs) // 2] for impl, runs in row["runs"].items()}
    row["load_after"] = load()
    print(json.dumps(row["median_s"]), flush=True)
    return row


def part_b(out: Path, quick: bool, sets: int = 10) -> dict:
    from ibtool.routing import hdor, hdor_c
    k = 8 if quick else 16
    f = kns(k, 3)
    assign_lids(f)
    cables = [li for li in range(f.num_links) if {f.roles[f.link_a[li]], f.roles[f.link_b[li]]} == {"router", "switch"}]
    picks = cables[:: max(1, len(cables) // sets)][:sets]
    row = {"fabric": f"KNS {k}-ary 3-direct", "load_before": load()}
    with hdor_c.Engine() as e:
        t = time.perf_counter()
        e.load(f)
        e.route()
        row["c_load_and_complete_s"] = round(time.perf_counter() - t, 3)
        each = []
        for li in picks:
            t = time.perf_counter()
            r = e.route_failures(links=[(f.link_a[li], f.link_pa[li])])
            each.append(round(time.perf_counter() - t, 3))
            assert r.degraded
        row["c_per_failure_set_s"] = each
    t = time.perf_counter()
    base = (f, hdor.compute(f))
    row["python_complete_s"] = round(time.perf_counter() - t, 3)
    from ibtool.fabric import Fabric  # noqa: F401  (the reference's degraded pass wants the fabric of now)
    li = picks[0]
    g = _without(f, li)
    t = time.perf_counter()
    hdor.compute(g, baseline=base)
    row["python_one_failure_set_s"] = round(time.perf_counter() - t, 3)
    row["load_after"] = load()
    print(json.dumps(row), flush=True)
    return row


def _without(f, li):
    """f with link li gone (LIDs kept), as discovery sees a cable that is down."""
    from ibtool.fabric import Fabric
    g = Fabric(f.name)
    for x in range(f.num_nodes):
        g.add_node(f.types[x], f.names[x], f.nports[x], f.roles[x], guid=f.guids[x])
    for j in range(f.num_links):
        if j != li:
            g.add_link(f.link_a[j], f.link_b[j], f.link_pa[j], f.link_pb[j])
    g.port_lids = dict(f.port_lids)
    g.port_guids = dict(f.port_guids)
    return g


def main(out: Path, quick: bool = False, reps: int = 3, parts: str = "a,b") -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    if "a" in parts:
        rows.append({"part": "a", **part_a(out, quick, reps)})
    if "b" in parts:
        rows.append({"part": "b", **part_b(out, quick)})
    (out / "hdor_c.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="a,b")
    a = ap.parse_args()
    main(a.out, a.quick, a.reps, a.only)
