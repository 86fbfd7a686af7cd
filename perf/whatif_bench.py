"""What-if (issue 39): every failure of a fabric routed and ranked, beside the operator's way today,
one `sim run --fail` + `verify all` per failure, measured on a sample in the same run and
extrapolated to the whole set.

(a) KNS 12-ary 3-direct (2,160 switches: 5,184 router-switch cables, 432 indirect switches, 1,728
    routers): every single failure with hdor offline (its C core, libhdorcore.so), 2 local
    workers — target: at most 10 minutes on this 2-core machine. Per failure, the engine's and the
    measuring CPU seconds and each worker's resident memory after every failure (from the
    workers' logs, OUT/timings.json): memory bounded by one degraded pass per worker.
(b) KNS 16-ary 3-direct (12,288 router-switch cables): every single cable — target: at most 30
    minutes locally (and the same over the Slurm job array: not measured here, where no Slurm
    runs outside the tests; tests/whatif/test_ways.py shows an array gives the same results). Every
    cable is routed (with the Python reference that was hours: a sample was routed and the whole
    extrapolated; `--implementation python` is still there).
(c) The operator's way on the same fabrics: `ibtool sim run PLAN --engine hdor --fail X` (ibsim,
    OpenSM with the hdor plugin, discovery, the tables, every pair's path SL) and `ibtool verify
    all RUN`, for one cable, in fresh processes; that time per failure times the set. On KNS 16^3
    without the path SLs (`--no-path-sls`: 16.7 M PathRecords a step would take hours): a lower
    bound of the operator's way.

    .venv/bin/python perf/whatif_bench.py [OUT] [--quick] [--only a|b|c]   # or: perf/run.py --only whatif
--quick: KNS 6-ary 3-direct for (a) and (c), 8-ary for (b).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from measure import measure

from ibtool.topologies.kns import kns

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]


def _plan(out: Path, k: int, n: int = 3) -> Path:
    d = out / f"kns-{k}-{n}"
    if not (d / "topology.net").exists():
        r = measure([*IBTOOL, "topo", "kns", "--k", str(k), "--n", str(n), "--out", d, "--force"], cwd=ROOT)
        assert r["exit"] == 0, r["stderr"]
    return d


def _load() -> float:
    return float(open("/proc/loadavg").read().split()[0])


def whole(out: Path, k: int, workers: int = 2, kind: str | None = None, tag: str = "") -> dict:
    """`ibtool whatif run` of KNS k^3 (every single failure, or every one of `kind`), measured."""
    plan = _plan(out, k)
    wi = out / f"whatif-{k}{tag}"
    argv = [*IBTOOL, "whatif", "run", plan, "--out", wi, "--workers", str(workers), "--chunks", str(8 * workers),
            "--force", "--top", "0"]
    if kind:
        argv += ["--kind", kind]
    load0 = _load()
    r = measure(argv, cwd=ROOT, timeout=6 * 3600)
    t = json.loads((wi / "timings.json").read_text()) if (wi / "timings.json").is_file() else {}
    res = json.loads((wi / "results.json").read_text()) if (wi / "results.json").is_file() else {}
    n = res.get("failures", {}).get("routed", 0)
    growth = []  # a worker's memory from its 10th failure to its last (the first ones load the fabric)
    for log in sorted((wi / "chunks").glob("*.log")):
        rss = [float(ln.split("\t")[4]) for ln in log.read_text().splitlines() if ln.count("\t") == 4]
        if len(rss) > 10:
            growth.append(round(rss[-1] - rss[9], 1))
    return {"fabric": f"KNS {k}^3", "failures": n, "workers": workers, "seconds": r["seconds"], "exit": r["exit"],
            "load": [load0, _load()], "engine_cpu_s": t.get("engine_s"), "measure_cpu_s": t.get("measure_s"),
            "cpu_s_per_failure": round((t.get("engine_s", 0) + t.get("measure_s", 0)) / max(n, 1), 4),
            "worker_rss_mib_max": t.get("rss_mib_max"), "worker_rss_growth_mib_max": max(growth, default=None),
            "classes": res.get("classes"), "stderr": r["stderr"][-400:] if r["exit"] else ""}


def operators_way(out: Path, k: int, fails: list[str], path_sls: bool = True) -> dict:
    """`sim run --fail X` + `verify all` per failure, each timed. path_sls False: without every
    pair's PathRecord (`--no-path-sls`), a lower bound where they would take hours (KNS 16^3: 16.7 M
    pairs a step; 164 us each on KNS 8^3, BENCHMARKS.md "Path SLs in bulk")."""
    plan = _plan(out, k)
    runs = []
    for x in fails:
        run = out / f"op-{k}-{x.replace(' ', '_').replace('[', '').replace(']', '').replace(',', '-')}"
        a = measure([*IBTOOL, "sim", "run", plan, "--engine", "hdor", "--fail", x, "--out", run, "--timeout", "3600",
                     "--path-sls" if path_sls else "--no-path-sls", "--json"],
                    cwd=ROOT, timeout=4 * 3600)
        b = measure([*IBTOOL, "verify", "all", run], cwd=ROOT, timeout=4 * 3600)
        try:  # OpenSM's routing step before the failure and of the degraded pass (the C engine's)
            steps = json.loads((run / "summary.json").read_text())["steps"]
            routing = [s.get("routing_step_s") for s in steps]
        except (OSError, ValueError, KeyError):
            routing = None
        runs.append({"failure": x, "sim_run_s": a["seconds"], "verify_all_s": b["seconds"], "exit": [a["exit"], b["exit"]],
                     "total_s": round(a["seconds"] + b["seconds"], 2), "load": _load(), "routing_step_s": routing})
    mean = sum(r["total_s"] for r in runs) / len(runs)
    return {"fabric": f"KNS {k}^3", "runs": runs, "mean_s_per_failure": round(mean, 2), "path_sls": path_sls}


def main(out: Path, quick: bool = False, only: str | None = None) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    k_a, k_b = (6, 8) if quick else (12, 16)
    rows = []
    if only in (None, "a"):
        a = whole(out, k_a)
        rows.append({"section": "a", **a})
    if only in (None, "b"):
        f = kns(k_b, 3)
        cables = [f"{f.names[f.link_a[li]]} {f.link_pa[li]}" for li in range(f.num_links)
                  if {f.roles[f.link_a[li]], f.roles[f.link_b[li]]} == {"router", "switch"}]
        b = whole(out, k_b, kind="cable", tag="-cables")
        b["every_cable"] = len(cables)
        rows.append({"section": "b", **b})
    if only in (None, "c"):
        for k in (k_a, k_b):
            f = kns(k, 3)
            fails = [f"{f.names[f.link_a[li]]} {f.link_pa[li]}" for li in range(f.num_links)
                     if {f.roles[f.link_a[li]], f.roles[f.link_b[li]]} == {"router", "switch"}][k * 7 + 1:k * 7 + 2]
            fails.append(next(f.names[x] for x in range(f.num_nodes) if f.roles[x] == "switch"))
            c = operators_way(out, k, fails[:1], path_sls=k == k_a)
            n = len([li for li in range(f.num_links) if {f.roles[f.link_a[li]], f.roles[f.link_b[li]]} <=
                     {"router", "switch"}]) + sum(1 for x in range(f.num_nodes) if f.roles[x] in ("router", "switch"))
            c["every_single_failure"] = n
            c["extrapolated_s"] = round(c["mean_s_per_failure"] * n, 1)
            rows.append({"section": "c", **c})
    (out / "whatif.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    if only in args:
        args.remove(only)
    res = main(Path(args[0]) if args else Path("perf/out/whatif"), "--quick" in sys.argv, only)
    print(json.dumps(res, indent=1))
