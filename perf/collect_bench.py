"""`ibtool collect` on emulated KNS (BENCHMARKS.md, "Collection"): ibsim + a long-running OpenSM
(hdor), then, against the same live fabric in one run:

* `ibtool collect` (ibnetdiscover, dump_fts + the top LID, SL2VL of every switch port, counters of
  every cabled port, 8 queries at once);
* the same tools run one after another by hand: ibnetdiscover, dump_fts, `smpquery sl2vl LID PORT`
  per switch port, `perfquery LID PORT` per cabled port;
* the counter sweep alone: ibtool's (one perfquery per device, 8 at once) vs sequential per port.

    .venv/bin/python perf/collect_bench.py [OUT] [--k 12]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ibtool.sim.clients import Clients, port_counters
from ibtool.fabric import SWITCH
from ibtool.formats import ibnetdiscover
from ibtool.sim.live import LiveFabric

ROOT = Path(__file__).resolve().parents[1]


def by_hand(lf, f) -> dict:
    env, cwd = lf.env(), lf.scratch
    t = {}

    def run(*argv):
        subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True, timeout=3600)

    t0 = time.monotonic()
    run("ibnetdiscover")
    t["ibnetdiscover_s"] = round(time.monotonic() - t0, 2)
    t0 = time.monotonic()
    run("dump_fts")
    t["dump_fts_s"] = round(time.monotonic() - t0, 2)
    t0 = time.monotonic()
    for node in range(f.num_nodes):
        if f.types[node] == SWITCH:
            for port, _, _ in f.neighbors(node):
                run("smpquery", "sl2vl", f.port_lids[node, 0][0], port)
    t["sl2vl_s"] = round(time.monotonic() - t0, 2)
    t0 = time.monotonic()
    n = 0
    for node in range(f.num_nodes):
        for port, _, _ in f.neighbors(node):
            lid = f.port_lids.get((node, 0 if f.types[node] == SWITCH else port), (0, 0))[0]
            run("perfquery", lid, port)
            n += 1
    t["counters_s"] = round(time.monotonic() - t0, 2)
    t["counter_ports"] = n
    t["total_s"] = round(sum(v for k, v in t.items() if k.endswith("_s")), 2)
    return t


def main(out: Path, k: int = 12) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    plan = out / f"kns-{k}-3"
    if not (plan / "topology.net").exists():
        subprocess.run([sys.executable, "-m", "ibtool.cli.main", "topo", "kns", "--k", str(k), "--n", "3",
                        "--out", str(plan), "--force"], check=True, capture_output=True)
    rows = []
    with LiveFabric(plan / "topology.net", out / "live", ["hdor"], timeout=1200) as lf:
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "ibtool.cli.main", "collect", "-o", str(out / "run"), "--json"],
                           env=lf.env(), cwd=lf.scratch, capture_output=True, text=True, timeout=7200)
        s = json.loads(r.stdout) if r.returncode in (0, 1) and r.stdout else {}
        mine = {"ibtool_collect_s": round(time.monotonic() - t0, 2), "exit": r.returncode,
                "items": {k2: v.get("seconds") for k2, v in s.get("items", {}).items()}}
        f = ibnetdiscover.read(out / "run" / "ibnetdiscover.out")
        hand = by_hand(lf, f)
        c = Clients(lf.scratch, environ=lf.env())  # the live fabric's client environment
        t0 = time.monotonic()
        item: dict = {}
        port_counters(c, f, 8, item)
        sweep = round(time.monotonic() - t0, 2)
    rows.append({"fabric": f"KNS {k}-ary 3-direct", "switches": f.count(kind=SWITCH), **mine,
                 "by_hand": hand, "counter_sweep_s": sweep, "counter_ports": item.get("ports"),
                 "sequential_perfquery_s": hand["counters_s"],
                 "sweep_speedup": round(hand["counters_s"] / sweep, 2) if sweep else None,
                 "collect_vs_by_hand": round(hand["total_s"] / mine["ibtool_collect_s"], 2)})
    print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]
    k = int(args[args.index("--k") + 1]) if "--k" in args else 12
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--k")]
    main(Path(pos[0]) if pos else ROOT / "perf" / "out" / "collect", k)
