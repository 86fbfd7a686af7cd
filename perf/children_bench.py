"""What dying with ibtool costs a diags client (BENCHMARKS.md, "Child processes").

ibtool starts every child through ibtool.children: PR_SET_PDEATHSIG needs code in the child
before exec, so Python forks instead of using vfork. Against an emulated KNS 3-ary 2-direct (ibsim
+ OpenSM), in one run and interleaved (A B A B ...): `smpquery nodeinfo LID` of every switch,
started by `children.run` and by plain `subprocess.run` (the stock way, which a kill -9 of ibtool
leaves running). Reported: milliseconds per client, each way, and the ratio.

    .venv/bin/python perf/children_bench.py [OUT] [--rounds 8]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from ibtool import children
from ibtool.fabric import SWITCH
from ibtool.formats import ibnetdiscover
from ibtool.sim.live import LiveFabric

ROOT = Path(__file__).resolve().parents[1]


def main(out: Path, rounds: int = 8) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    plan = out / "kns-3-2"
    if not (plan / "topology.net").exists():
        subprocess.run([sys.executable, "-m", "ibtool.cli.main", "topo", "kns", "--k", "3", "--n", "2",
                        "--out", str(plan), "--force"], check=True, capture_output=True)
    with LiveFabric(plan / "topology.net", out / "live", ["minhop"], timeout=300) as lf:
        lf.client(["ibnetdiscover"], out / "ibnetdiscover.out")
        f = ibnetdiscover.read(out / "ibnetdiscover.out")
        lids = [f.port_lids[n, 0][0] for n in range(f.num_nodes) if f.types[n] == SWITCH]
        kw = {"cwd": lf.scratch, "env": lf.env(), "capture_output": True, "timeout": 60}
        ways = {"children.run": children.run, "subprocess.run": subprocess.run}
        per: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(rounds):
            for way, run in ways.items():
                t0 = time.monotonic()
                for lid in lids:
                    p = run(["smpquery", "nodeinfo", str(lid)], **kw)
                    assert p.returncode == 0, p.stderr
                per[way].append((time.monotonic() - t0) / len(lids) * 1000)
    mine, stock = statistics.median(per["children.run"]), statistics.median(per["subprocess.run"])
    row = {"fabric": "KNS 3-ary 2-direct", "clients_per_way": rounds * len(lids),
           "children_run_ms": round(mine, 2), "subprocess_run_ms": round(stock, 2),
           "ratio": round(mine / stock, 2),
           "spread_ms": {w: [round(min(v), 2), round(max(v), 2)] for w, v in per.items()}}
    print(row, flush=True)
    return [row]


if __name__ == "__main__":
    args = sys.argv[1:]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 8
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--rounds")]
    main(Path(pos[0]) if pos else ROOT / "perf" / "out" / "children", rounds)
