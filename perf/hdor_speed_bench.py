"""hdor at memory speed (issue 28): where the C engine's time goes, phase by phase, beside OpenSM's
stock engines in the same run; the degraded pass against the fault-free one; the Python reference.

(a) Per fabric (KNS 8^3, 12^3, 16^3 and 16^3 with 8 HCAs per router, 37,632 LIDs): one ibsim and one
    OpenSM daemon (`-D 0x07`, `qos TRUE`) with hdor; the first routing pass, then two re-sweeps
    (SIGHUP to OpenSM), then (one HCA per router) every HCA joined to one multicast group (SA proxy
    joins) and one more re-sweep, which rebuilds hdor's tree of the group (its time from hdor's log line). For each
    pass: OpenSM's routing step
    (log `building routing with` -> `tables configured on all switches`) and hdor's summary line,
    split into its phases. minhop and updn (indirect switches as roots) route the same plan, one
    fresh `ibtool sim run` each, capped.
(b) KNS 16^3 (`--quick`: 8^3) with 1 % of its router-switch cables down (random, seed 0, never
    R[0,0,0]'s): in the same OpenSM, a fault-free re-sweep, then every cable unlinked in ibsim and,
    once OpenSM settled, one more re-sweep (--degraded-resweeps N: N, the fastest reported): the
    degraded pass over exactly those faults, against the fault-free re-sweep and the first pass;
    then minhop and updn, each in its own OpenSM, over the same faults (the pass after the unlinking).
(c) The Python reference: `hdor.compute` of the complete KNS 16^3 (`--quick`: 8^3), and of KNS
    12^3 (`--quick`: 6^3) with 1 % of its cables down against its complete self (`ibtool route hdor
    --baseline`), and `ibtool verify all` of that fault step end to end (a `sim run --faults` run with
    OpenSM's dumps and every HCA pair's path SL, as a user's has: written by the reference, or with
    --sa-path-sls collected from OpenSM's SA, ~30 min a step at 12^3; made once, reused in the same OUT):
    its wall time and its report's seconds per stage (`timings`), verdicts and check lines.

    .venv/bin/python perf/hdor_speed_bench.py OUT [--quick] [--only a,b,c] [--plugin-dir DIR]
            [--fabrics 8,12,16,16h8] [--stock minhop,updn] [--sa-path-sls]   # or: perf/run.py --only hdor_speed
Heavy runs take /tmp/ibtool-heavy.lock (the machine is shared).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from hdor_faults_bench import cables, one_shot, scenario_run
from measure import measure
from run import plan

from ibtool import mad
from ibtool.formats import ibnetdiscover
from ibtool.sim import faults, opensm
from ibtool.sim.clients import Clients
from ibtool.sim.live import LiveFabric
from ibtool.topologies.kns import kns

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]
CAP = 300  # s per stock-engine routing, as the engines section
LOCK = "/tmp/ibtool-heavy.lock"
# fabric id -> (k, n, HCAs per router)
FABRICS = {"8": (8, 3, 1), "10": (10, 3, 1), "12": (12, 3, 1), "16": (16, 3, 1), "16h8": (16, 3, 8), "12h22": (12, 3, 22),
           "6": (6, 3, 1), "4": (4, 3, 1)}
ROUTED = re.compile(r"hdor: routed k=\d+ n=\d+ s=\d+: (\d+) switches, (\d+) LIDs, (\d+) us \(pass (\d+); (.*)\)\s*$")


@contextmanager
def heavy(big: bool = True):
    """One heavy run (KNS 12^3 and up) at a time on the shared machine."""
    if not big:
        yield
        return
    with open(LOCK, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def phases(text: str) -> dict:
    """hdor's summary line (inside its parentheses) -> {phase: us} for every `name N us` part
    (docs/plugin.md "Log lines"), `hops by` (own / OpenSM's) and `peak MiB`."""
    out = {}
    for part in re.split(r"[;,:]", text):
        m = re.fullmatch(r"\s*(.+?) (\d+) us\s*", part)
        if m:
            name = m.group(1)
            if name.endswith("hop matrices"):
                out["hops by"] = name.split()[0]
                name = "hop matrices"
            out[name] = int(m.group(2))
    m = re.search(r"peak allocation ([\d.]+) MiB", text)
    if m:
        out["peak MiB"] = float(m.group(1))
    return out


def passes(log_text: str) -> list[dict]:
    """Every routing pass of an OpenSM log: the routing step and hdor's line."""
    out, start, line = [], None, None
    for ln in log_text.splitlines():
        if opensm._BUILDING.search(ln):
            start = start if start is not None else opensm._seconds(ln)
            continue
        m = ROUTED.search(ln)
        if m:
            line = m
            continue
        m = opensm._CONFIGURED.search(ln)
        if m:
            t = opensm._seconds(ln)
            row = {"engine": m.group(1), "step_s": round((t - start) % 86400, 3) if start is not None else None}
            if line is not None:
                row.update({"switches": int(line.group(1)), "lids": int(line.group(2)),
                            "engine_us": int(line.group(3)), "pass": int(line.group(4)),
                            "degraded": "degraded KNS" in line.group(5), "phases": phases(line.group(5)),
                            "line": line.group(0)})
            out.append(row)
            start, line = None, None
    return out


def wait_passes(lf: LiveFabric, count: int, timeout: float = 1800, quiet: float = 5.0) -> list[dict]:
    """Wait until the log holds `count` configured passes and nothing new for `quiet` s."""
    deadline = time.monotonic() + timeout
    seen, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        got = passes(lf.opensm_log.read_text(errors="replace"))
        if len(got) != seen:
            seen, since = len(got), time.monotonic()
        if len(got) >= count and time.monotonic() - since >= quiet:
            return got
        time.sleep(0.5)
    raise TimeoutError(f"{count} routing passes not seen within {timeout:.0f} s")


def resweep(lf: LiveFabric, have: int) -> list[dict]:
    os.kill(lf._opensm.pid, signal.SIGHUP)  # a heavy sweep that re-routes the unchanged fabric
    return wait_passes(lf, have + 1)


TREE = re.compile(r"hdor: multicast group 0x[0-9A-F]+: (\d+) member port\(s\), a tree of (\d+) switch\(es\) "
                  r"rooted at \S+, depth (\d+), (\d+) us")


def multicast(lf: LiveFabric, net: Path, have: int) -> dict:
    """Every HCA joins one multicast group through the SA (proxy joins from SM 1's port), then a
    re-sweep rebuilds its tree after routing: hdor's tree times from its log (`-D 0x07`)."""
    f = ibnetdiscover.read(net)
    hcas = [f.port_guid(i, p) for i in range(f.num_nodes) if not f.is_switch(i) for p, _, _ in f.neighbors(i)]
    t0 = time.monotonic()
    mad.mcast_join(Clients(lf.scratch, timeout=600, environ=lf.env()), "ff12:601b:ffff::1", hcas, 600)
    joined = time.monotonic() - t0
    lf.wait_quiet(secs=5, timeout=600)
    mark = len(lf.opensm_log.read_text(errors="replace"))
    got = resweep(lf, have)
    lf.wait_quiet(secs=5, timeout=600)
    after = TREE.findall(lf.opensm_log.read_text(errors="replace")[mark:])
    full = [int(us) for m, _, _, us in after if int(m) == len(hcas)]
    return {"members": len(hcas), "joins_s": round(joined, 3), "trees_after_resweep": len(after),
            "tree_us": full, "tree_switches": [int(sw) for m, sw, _, _ in after if int(m) == len(hcas)],
            "depth": [int(d) for m, _, d, _ in after if int(m) == len(hcas)], "resweep": got[-1]}


def live(net: Path, work: Path, plugin_dir: Path, resweeps: int = 2, down: list[str] = (),
         mcast: dict | None = None, degraded_resweeps: int = 1, engine: str = "hdor",
         conf: tuple = ()) -> list[dict]:
    """An engine's passes on `net` (hdor unless told): the first, `resweeps` re-sweeps, then with
    `down` unlinked the pass that follows and `degraded_resweeps` re-sweeps; with `mcast` (a dict,
    filled), then every HCA joined to a group and one more re-sweep."""
    with LiveFabric(net, work, [engine], timeout=1800, conf_options=[("qos", "TRUE"), *conf],
                    opensm_args=["-D", "0x07"], plugin_dir=plugin_dir) as lf:
        if not lf.outcome.get("engine") == engine:
            raise RuntimeError(f"{engine} did not route: {lf.outcome}")
        got = wait_passes(lf, 1)
        for _ in range(resweeps):
            got = resweep(lf, len(got))
        if down:
            plan_f = ibnetdiscover.read(net)
            ids = [ibnetdiscover.node_id(plan_f, i) for i in range(plan_f.num_nodes)]
            for spec in down:
                node, port = faults.target(plan_f, spec, "bench")
                lf.console(f'Unlink "{ids[node]}"' + (f"[{port}]" if port else ""))
            got = wait_passes(lf, len(got) + 1, quiet=15)
            for _ in range(degraded_resweeps):
                got = resweep(lf, len(got))
        if mcast is not None:
            mcast.update(multicast(lf, net, len(got)))
        return got


def stock_conf(out: Path, engine: str, k: int, n: int) -> list[tuple[str, str]]:
    """opensm.conf options a stock engine needs here: updn's roots are the indirect switches."""
    if engine != "updn":
        return []
    f = kns(k, n)
    roots = out / "roots.guids"
    out.mkdir(parents=True, exist_ok=True)
    roots.write_text("".join(f"{g:#018x}\n" for g, role in zip(f.guids, f.roles) if role == "switch"))
    return [("root_guid_file", str(roots.resolve()))]


def stock(net: Path, out: Path, engine: str, k: int, n: int) -> dict:
    extra = [a for key, v in stock_conf(out, engine, k, n) for a in ("--conf", f"{key}={v}")]
    args = [*IBTOOL, "sim", "run", str(net), "--engine", engine, "--out", str(out / engine), "--timeout", str(CAP),
            "--log-flags", "0x07", "--no-discover", "--json", *extra]
    r = measure(args, cwd=ROOT, timeout=CAP * 3 + 600)
    try:
        s = json.loads((out / engine / "summary.json").read_text())
    except (OSError, ValueError):
        s = {}
    return {"engine_used": s.get("engine"), "routing_step_s": s.get("routing_step_s"), "wall_s": r["seconds"]}


def part_a(out: Path, plugin_dir: Path, fabrics: list[str], stock_engines: list[str]) -> list[dict]:
    rows = []
    for fid in fabrics:
        k, n, h = FABRICS[fid]
        net = plan(out, k, n, hcas=h)
        with heavy(k >= 12):
            mc: dict = {}
            row = {"fabric": f"KNS {k}-ary {n}-direct" + (f", {h} HCAs/router" if h > 1 else ""), "load_before": load(),
                   "hdor": live(net, out / "a" / fid / "hdor", plugin_dir, mcast=mc if h == 1 else None),
                   "multicast": mc}
            for e in stock_engines:
                row[e] = stock(net, out / "a" / fid, e, k, n)
            row["load_after"] = load()
        rows.append(row)
        print(json.dumps({x: v for x, v in row.items() if x not in ("hdor", "multicast")}), flush=True)
        print("   multicast:", json.dumps({x: v for x, v in mc.items() if x != "resweep"}), flush=True)
        for p in row["hdor"]:
            print("  ", p.get("step_s"), p.get("line", ""), flush=True)
    return rows


def part_b(out: Path, plugin_dir: Path, quick: bool, degraded_resweeps: int = 1,
           stock_engines: tuple = ("minhop", "updn")) -> dict:
    degraded_resweeps = max(1, degraded_resweeps)  # the degraded pass measured is a re-sweep's
    k, n = (8, 3) if quick else (16, 3)
    net = plan(out, k, n)
    down = cables(k, n, max(1, round(k ** n * n / 100)), seed=0)
    with heavy(not quick):
        got = live(net, out / "b" / f"{k}-{n}", plugin_dir, resweeps=1, down=down,
                   degraded_resweeps=degraded_resweeps)
        row = {"fabric": f"KNS {k}-ary {n}-direct", "cables_down": len(down), "router_switch_cables": k ** n * n,
               "load": load(), "passes": got}
        # the stock engines over the same failures, each in its own OpenSM: the first pass, then the
        # pass that follows the unlinking (a re-sweep of a stock engine routes the same way again)
        for e in stock_engines:
            w = out / "b" / f"{k}-{n}-{e}"
            sp = live(net, w, plugin_dir, resweeps=0, down=down, degraded_resweeps=0, engine=e,
                      conf=tuple(stock_conf(w, e, k, n)))
            row[e] = {"first_step_s": sp[0]["step_s"], "degraded_step_s": sp[-1]["step_s"], "passes": len(sp)}
    # the degraded re-sweep of the least disturbed step (the machine is shared): the fastest
    first, fault_free = got[0], got[1]
    degraded = min(got[-degraded_resweeps:], key=lambda p: p["step_s"] or float("inf"))
    row["summary"] = {"first_step_s": first["step_s"], "fault_free_resweep_step_s": fault_free["step_s"],
                      "degraded_resweep_step_s": degraded["step_s"],
                      "degraded_over_fault_free": round(degraded["step_s"] / fault_free["step_s"], 2),
                      "degraded_over_first": round(degraded["step_s"] / first["step_s"], 2),
                      "engine_us": [first.get("engine_us"), fault_free.get("engine_us"), degraded.get("engine_us")],
                      "degraded_line": degraded.get("line"),
                      **{f"{e}_degraded_over_hdor": round(row[e]["degraded_step_s"] / degraded["step_s"], 1)
                         for e in stock_engines}}
    print(json.dumps(row["summary"]), flush=True)
    return row


def part_c(out: Path, quick: bool, sa_sls: bool = False) -> dict:
    k = 8 if quick else 16
    net = plan(out, k, 3)
    row = {"load_before": load()}
    code = ("import sys, time; from ibtool.formats import ibnetdiscover; from ibtool.routing import hdor; "
            "from ibtool.routing.lids import assign_lids; f = ibnetdiscover.read(sys.argv[1]); assign_lids(f); "
            "t = time.perf_counter(); r = hdor.compute(f); print(time.perf_counter() - t)")
    with heavy(not quick):
        r = measure([sys.executable, "-c", code, net], cwd=ROOT)
    row["complete"] = {"fabric": f"KNS {k}-ary 3-direct", "compute_s": float(r["stdout"] or "nan"),
                       "process_wall_s": r["seconds"], "process_cpu_s": r["cpu_seconds"], "peak_rss_mib": r["peak_rss_mib"]}
    print(json.dumps(row["complete"]), flush=True)
    k = 6 if quick else 12
    net = plan(out, k, 3)
    down = cables(k, 3, max(1, round(k ** 3 * 3 / 100)), seed=0)
    run = out / "c" / (f"faults-{k}" + ("-sa" if sa_sls else ""))
    with heavy(not quick):
        if not (run / "step-1" / "ibnetdiscover.out").exists():
            # OpenSM's dumps (SL2VL) and every HCA pair's path SL: verify's per-VL deadlock check.
            # From the SA (sa_sls) that is ~1,700 PathRecords/s here, ~30 min a step of KNS 12^3; else
            # the Python reference writes them (its SLs are the C engine's: tests/plugin), as the SA's
            # collection would (pathrecord.write): the same file for verify to read
            scenario_run(net, "hdor", [{"name": f"{len(down)} cables down", "down": down}], run, path_sls=sa_sls,
                         log_flags="0x47")
        if not (sa_sls or (run / "step-1" / "saquery-paths.out").exists()):
            for st, base in (("step-0", []), ("step-1", ["--baseline", run / "step-0" / "ibnetdiscover.out"])):
                measure([*IBTOOL, "route", "hdor", "--fabric", run / st / "ibnetdiscover.out", *base, "--out",
                         out / "c" / f"{st}.lft", "--path-sls", run / st / "saquery-paths.out"], cwd=ROOT)
        ref = measure([*IBTOOL, "route", "hdor", "--fabric", run / "step-1" / "ibnetdiscover.out", "--baseline",
                       run / "step-0" / "ibnetdiscover.out", "--out", out / "c" / "degraded.lft", "--json"], cwd=ROOT)
        ver = measure([*IBTOOL, "verify", "all", run, "--json"], cwd=ROOT, timeout=7200, stdout=out / "c" / "verify.json")
    row["path_sls_from"] = "the SA" if sa_sls else "the Python reference (ibtool route hdor --path-sls)"
    row["degraded"] = {"fabric": f"KNS {k}-ary 3-direct, {len(down)} cables down", "route_hdor_s": ref["seconds"],
                       "route_hdor_cpu_s": ref["cpu_seconds"], "route_hdor_rss_mib": ref["peak_rss_mib"], "exit": ref["exit"]}
    row["verify_all"] = {"seconds": ver["seconds"], "cpu_s": ver["cpu_seconds"], "peak_rss_mib": ver["peak_rss_mib"],
                         "exit": ver["exit"], **verdicts(out / "c" / "verify.json")}
    row["load_after"] = load()
    print(json.dumps(row), flush=True)
    return row


def verdicts(report: Path) -> dict:
    """`verify all --json`'s verdict, its seconds per stage (each step's `timings`) and each step's
    check lines (the hdor tables against the reference among them)."""
    try:
        rep = json.loads(report.read_text())
    except (OSError, ValueError):
        return {"report": None}
    return {"ok": rep.get("ok"), "timings": rep.get("timings"),
            "steps": {name: {"ok": st.get("ok"), "timings": st.get("timings"),
                             "checks": [f"{c['name']}: {'ok' if c['ok'] else 'FAIL'}  {c.get('summary', '')}"
                                        for c in st.get("checks", [])]}
                      for name, st in (rep.get("steps") or {}).items()}}


def main(out: Path, quick: bool = False, parts: str = "a,b,c", plugin_dir: Path = opensm.PLUGIN_DIR,
         fabrics: list[str] | None = None, sa_sls: bool = False, degraded_resweeps: int = 1,
         stock_engines: tuple = ("minhop", "updn")) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    fabrics = fabrics or (["8", "6"] if quick else ["8", "12", "16", "16h8"])
    res = {}
    if "a" in parts:
        res["phases"] = part_a(out, plugin_dir, fabrics, list(stock_engines))
    if "b" in parts:
        res["degraded"] = part_b(out, plugin_dir, quick, degraded_resweeps, stock_engines)
    if "c" in parts:
        res["reference"] = part_c(out, quick, sa_sls)
    (out / "hdor_speed.json").write_text(json.dumps(res, indent=1) + "\n")
    return [res]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", default=str(ROOT / "perf" / "out" / "hdor_speed"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="a,b,c")
    ap.add_argument("--plugin-dir", default=str(opensm.PLUGIN_DIR))
    ap.add_argument("--fabrics", default=None)
    ap.add_argument("--stock", default="minhop,updn", help="stock engines of (a) and (b), '' for none")
    ap.add_argument("--sa-path-sls", action="store_true",
                    help="(c): the fault step's path SLs from OpenSM's SA (~30 min a step at 12^3), not the reference")
    ap.add_argument("--degraded-resweeps", type=int, default=1,
                    help="(b): re-sweeps of the degraded fabric, the fastest one reported (default 1)")
    a = ap.parse_args()
    o = Path(a.out).resolve()
    fab = a.fabrics.split(",") if a.fabrics else None
    if a.only == "a":  # ad-hoc profiling: the stock engines only when asked
        o.mkdir(parents=True, exist_ok=True)
        rows = part_a(o, Path(a.plugin_dir), fab or ["8"], [e for e in a.stock.split(",") if e])
        (o / "phases.json").write_text(json.dumps(rows, indent=1) + "\n")
    else:
        main(o, a.quick, a.only, Path(a.plugin_dir), fab, a.sa_path_sls, a.degraded_resweeps,
             tuple(e for e in a.stock.split(",") if e))
