"""Path SLs in bulk (BENCHMARKS.md, "Path SLs in bulk"; issue 22): the SL of every HCA pair's
path, asked of the SA by `ibtool.mad` (one process, saquery's per-pair GetTable, WINDOW in
flight) against the stock way, one `saquery -p --slid S --dlid D` per pair (4 at once, as ibtool
did before), in the same run on the same live fabric: ibsim + a long-running OpenSM with hdor
(qos TRUE) and one router-switch cable down, so hdor's detours put paths on SLs above 0.

* KNS 3-ary 3-direct (27 HCAs, 702 pairs, a fault step of the fault matrix): both methods on every
  pair; the two answers compared pair for pair.
* KNS 8-ary 3-direct (512 HCAs, 261,632 pairs): the bulk method on every pair (windows 16, 64,
  256), saquery on a sample of SAMPLE pairs (its time for all pairs extrapolated from it: it would
  take hours), the sample's answers compared with the bulk's.

    .venv/bin/python perf/path_sls_bench.py [OUT] [--quick]     # --quick: KNS 3^3 only
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

from ibtool import mad
from ibtool.formats import ibnetdiscover, pathrecord
from ibtool.sim.live import LiveFabric

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = 2000


def per_pair(lf, pairs, parallel: int = 4) -> tuple[dict, float]:
    """The stock method: one `saquery -p --slid S --dlid D` process per pair, `parallel` at once."""
    def one(pair):
        p = subprocess.run(["saquery", "-p", "--slid", str(pair[0]), "--dlid", str(pair[1])], env=lf.env(),
                           cwd=lf.scratch, capture_output=True, text=True, timeout=120)
        return pair, int(p.stdout.split("sl......................")[1].split()[0], 16) if "sl...." in p.stdout else None

    t0 = time.monotonic()
    with ThreadPoolExecutor(parallel) as pool:
        got = dict(pool.map(one, pairs))
    return got, time.monotonic() - t0


def cpu_s(lf) -> dict:
    """CPU seconds so far of OpenSM (the SA), ibsim and this process's finished children (the client)."""
    import resource

    def of(pid):
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"opensm": of(lf.sms[0].pid), "ibsim": of(lf.ibsim_pid), "client": ch.ru_utime + ch.ru_stime}


def fabric(out: Path, k: int, n: int):
    plan = out / f"kns-{k}-{n}"
    if not (plan / "topology.net").exists():
        subprocess.run([sys.executable, "-m", "ibtool.cli.main", "topo", "kns", "--k", str(k), "--n", str(n),
                        "--out", str(plan), "--force"], check=True, capture_output=True)
    return plan / "topology.net"


def one_fabric(out: Path, k: int, n: int, windows=(64,), sample: int | None = None) -> dict:
    net = fabric(out, k, n)
    plan = ibnetdiscover.read(net)
    r = next(i for i in range(plan.num_nodes) if plan.names[i] == "R[" + ",".join(["1"] * n) + "]")
    port = next(p for p, peer, _ in plan.neighbors(r) if plan.names[peer].startswith("S["))
    ids = [ibnetdiscover.node_id(plan, i) for i in range(plan.num_nodes)]
    row: dict = {"fabric": f"KNS {k}-ary {n}-direct", "cable_down": f"{plan.names[r]} {port}",
                 "load_before": round(os.getloadavg()[0], 1), "utc": time.strftime("%H:%M", time.gmtime())}
    with LiveFabric(net, out / f"live-{k}-{n}", ["hdor"], timeout=600, conf_options=[("qos", "TRUE")]) as lf:
        before = lf.configured_count(1)
        lf.console(f'Unlink "{ids[r]}"[{port}]')
        o = lf.wait_routed(1, before, 300)
        row["engine_after_fault"] = o.get("engine")
        lf.client(["ibnetdiscover"], out / f"ibnetdiscover-{k}-{n}.out")
        f = ibnetdiscover.read(out / f"ibnetdiscover-{k}-{n}.out")
        clients = SimpleNamespace(work=lf.scratch, env=lf.env)
        bulk, cpu = {}, {}
        for w in windows:
            before = cpu_s(lf)
            t0 = time.monotonic()
            item = mad.path_sls(clients, out / f"paths-{k}-{n}-w{w}.out", f, 600, window=w)
            bulk[w] = round(time.monotonic() - t0, 2)
            cpu[w] = {key: round(v - before[key], 2) for key, v in cpu_s(lf).items()}
            row["pairs"], row["records"] = item["pairs"], item["records"]
        row["bulk_s"] = bulk
        # CPU seconds of the three processes a query passes (the SA's OpenSM, ibsim, the client):
        # what the bulk method costs whatever the load; on a quiet 2-core machine its wall time is
        # about max(sum / 2, largest)
        row["bulk_cpu_s"] = cpu
        got = pathrecord.read(out / f"paths-{k}-{n}-w{windows[0]}.out")
        row["sls_used"] = sorted(set(got.values()))
        pairs = sorted(got)
        if sample and sample < len(pairs):
            pairs = random.Random(0).sample(pairs, sample)
        stock, secs = per_pair(lf, pairs)
        row["saquery_pairs"] = len(pairs)
        row["saquery_s"] = round(secs, 2)
        row["saquery_all_pairs_s"] = round(secs * row["pairs"] / len(pairs), 1)
        row["answers_equal"] = all(stock[p] == got[p] for p in pairs)
        best = min(bulk.values())
        row["ratio"] = round(row["saquery_all_pairs_s"] / best, 1)
        row["load_after"] = round(os.getloadavg()[0], 1)
    return row


def main(out: Path, quick: bool = False) -> list[dict]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [one_fabric(out, 3, 3)]
    if not quick:
        rows.append(one_fabric(out, 8, 3, windows=(64, 16, 256), sample=SAMPLE))
    (out / "path_sls.json").write_text(json.dumps(rows, indent=2) + "\n")
    return rows


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    for row in main(Path(args[0]) if args else ROOT / "perf" / "out" / "path_sls", quick="--quick" in sys.argv):
        print(json.dumps(row))
