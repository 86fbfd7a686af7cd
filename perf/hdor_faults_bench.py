"""hdor after faults (issue 16), on ibsim with one OpenSM running (`ibtool sim run --faults`):

(a) KNS 12-ary 3-direct with 1 % of its router-switch cables down (52 of 5,184, random, seed 0, all
    in one step): OpenSM's routing step (log line `building routing with` -> `tables configured on
    all switches`, as the engines section reads it) of hdor before the fault (step 0) and after it
    (step 1: hdor's degraded pass, or its decline plus the fallback) and once repaired (step 2, a
    re-sweep of the complete KNS) — target: degraded <= 2x fault-free; next to minhop and dfsssp on the same degraded fabric (one `sim run` each on step
    1's expected.net, capped as the engines section caps them), with minhop's credit loop as
    `ibtool verify routes` finds it in its discovered tables.
(b) KNS 8-ary 3-direct: seconds from a cable failure (ibsim's Unlink) to OpenSM logging new tables
    configured on every switch, hdor vs minhop, over 3 single cable failures (down, up, down ...).
(c) issue 22: KNS 12-ary 3-direct with the same 1 % of its cables down *from the first sweep*
    (fresh ibsim + `opensm -o` on the plan without them, `sim run`): hdor's routing step at first
    sight (no description, no remembered state) and with the plan's description (hdor.conf), next
    to the fault-free cold start (the complete plan) — target: degraded <= 2x fault-free — and
    next to the plan's safe fallback after hdor (nue, `routing_engine hdor,nue`) on the same
    degraded fabric, all in one run.

    .venv/bin/python perf/hdor_faults_bench.py [OUT] [--quick] [--only a|b|c]   # or: perf/run.py --only hdor_faults
--quick: KNS 6-ary 3-direct for (a) and (c), 4-ary 3-direct for (b).
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from ibtool.topologies.kns import kns

ROOT = Path(__file__).resolve().parents[1]
IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]
CAP = 300  # s per OpenSM routing, as the engines section


def _plan(out: Path, k: int, n: int) -> Path:
    d = out / f"kns-{k}-{n}"
    if not (d / "topology.net").exists():
        subprocess.run([*IBTOOL, "topo", "kns", "--k", str(k), "--n", str(n), "--out", str(d), "--force"],
                       check=True, capture_output=True, cwd=ROOT)
    return d / "topology.net"


def cables(k: int, n: int, count: int, seed: int) -> list[str]:
    """`count` random router-switch cables ("R[..] PORT"), never one of R[0..0] (the SM's router)."""
    f = kns(k, n)
    out = []
    for li in range(f.num_links):
        ends = [(f.link_a[li], f.link_pa[li]), (f.link_b[li], f.link_pb[li])]
        if {f.roles[x] for x, _ in ends} == {"router", "switch"}:
            x, p = next(e for e in ends if f.roles[e[0]] == "router")
            if x != 0:
                out.append(f"{f.names[x]} {p}")
    return sorted(random.Random(seed).sample(out, count))


def scenario_run(net: Path, engine: str, steps: list[dict], out: Path, path_sls: bool = False,
                 log_flags: str = "0x07") -> dict:
    sc = out.with_suffix(".yaml")
    out.parent.mkdir(parents=True, exist_ok=True)
    sc.write_text(yaml.safe_dump({"sweep_interval": 2, "settle": 900, "steps": steps}))
    p = subprocess.run([*IBTOOL, "sim", "run", str(net), "--engine", engine, "--faults", str(sc), "--out", str(out),
                        "--path-sls" if path_sls else "--no-path-sls", "--log-flags", log_flags, "--timeout", "1200",
                        "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=7200, check=False)
    try:
        return json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return {"error": p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"], "steps": []}


def one_shot(net: Path, engine: str, out: Path, discover: bool) -> dict:
    args = [*IBTOOL, "sim", "run", str(net), "--engine", engine, "--out", str(out), "--timeout", str(CAP),
            "--log-flags", "0x07", "--json"] + ([] if discover else ["--no-discover"])
    subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=CAP * 3 + 600, check=False)
    try:
        s = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        s = {}
    return {"engine_used": s.get("engine"), "routing_step_s": s.get("routing_step_s"),
            "timed_out": s.get("timed_out"), "fallback": s.get("fallback")}


def credit_loop(run: Path) -> dict:
    p = subprocess.run([*IBTOOL, "verify", "routes", "--fabric", str(run / "ibnetdiscover.out"), "--lfts",
                        str(run / "dump_fts.out"), "--no-balance", "--json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=3600, check=False)
    try:
        d = json.loads(p.stdout)["routes"]["deadlock"]
    except (ValueError, KeyError):
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return {"deadlock_free": d.get("free"), "cycle_channels": len(d.get("cycle") or [])}


def degraded_step(out: Path, k: int, n: int) -> dict:
    net = _plan(out, k, n)
    links = k ** n * n
    down = cables(k, n, max(1, round(links / 100)), seed=0)
    s = scenario_run(net, "hdor", [{"name": f"{len(down)} cables down", "down": down},
                                   {"name": "all repaired", "up": down}], out / "a" / "hdor")
    st = s.get("steps") or [{}, {}, {}]
    row = {"fabric": f"KNS {k}-ary {n}-direct", "cables_down": len(down), "router_switch_cables": links,
           "hdor_fault_free_s": st[0].get("routing_step_s"), "hdor_degraded_s": st[1].get("routing_step_s"),
           "hdor_repaired_s": st[2].get("routing_step_s"),  # a re-sweep of the complete KNS, as step 1 is one
           "degraded_engine": st[1].get("engine"), "degraded_fallback": st[1].get("fallback"),
           "seconds_to_tables": st[1].get("seconds_to_tables"), "error": s.get("error")}
    if row["hdor_fault_free_s"] and row["hdor_degraded_s"]:
        row["degraded_over_fault_free"] = round(row["hdor_degraded_s"] / row["hdor_fault_free_s"], 2)
    expected = out / "a" / "hdor" / "step-1" / "expected.net"
    if expected.is_file():  # the same degraded fabric, routed from scratch by the stock engines
        row["minhop"] = one_shot(expected, "minhop", out / "a" / "minhop", discover=True)
        row["minhop"].update(credit_loop(out / "a" / "minhop"))
        row["dfsssp"] = one_shot(expected, "dfsssp", out / "a" / "dfsssp", discover=False)
    print(row, flush=True)
    return row


def failover(out: Path, k: int, n: int) -> list[dict]:
    net = _plan(out, k, n)
    picked = cables(k, n, 3, seed=1)
    steps = []
    for i, c in enumerate(picked):
        steps.append({"down": [c]})
        if i + 1 < len(picked):
            steps.append({"up": [c]})
    rows = []
    for engine in ("hdor", "minhop"):
        s = scenario_run(net, engine, steps, out / "b" / engine)
        downs = [st for st in s.get("steps", []) if st["step"] and steps[st["step"] - 1].get("down")]
        secs = [st["seconds_to_tables"] for st in downs if st["seconds_to_tables"] is not None]
        rows.append({"fabric": f"KNS {k}-ary {n}-direct", "engine": engine, "failures": len(downs),
                     "engines_used": sorted({st["engine"] or "none" for st in downs}),
                     "seconds_to_tables": secs, "median_s": round(statistics.median(secs), 3) if secs else None,
                     "max_s": max(secs, default=None), "error": s.get("error")})
        print(rows[-1], flush=True)
    return rows


def cold_start(out: Path, k: int, n: int) -> dict:
    """(c): one fresh `sim run` each: the complete plan, the plan without 1 % of its cables at first
    sight and with the plan's description, and that degraded fabric with the plan's fallback."""
    from ibtool.formats import ibnetdiscover
    from ibtool.sim.faults import _expected, target
    net = _plan(out, k, n)
    plan = ibnetdiscover.read(net)
    down = cables(k, n, max(1, round(k ** n * n / 100)), seed=0)
    gone = set()
    for spec in down:
        node, port = target(plan, spec, "bench")
        gone.add(next(li for li in range(plan.num_links) if (plan.link_a[li], plan.link_pa[li]) == (node, port)
                      or (plan.link_b[li], plan.link_pb[li]) == (node, port)))
    deg = out / "c" / "degraded.net"
    deg.parent.mkdir(parents=True, exist_ok=True)
    ibnetdiscover.write(_expected(plan, gone, set()), deg)

    def cold(name: str, src: Path, engine: str, *extra: str) -> dict:
        run = out / "c" / name
        args = [*IBTOOL, "sim", "run", str(src), "--engine", engine, "--out", str(run), "--timeout", str(CAP),
                "--log-flags", "0x07", "--no-discover", "--json", "--conf", "qos=TRUE", *extra]
        subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=CAP * 3 + 600, check=False)
        try:
            s = json.loads((run / "summary.json").read_text())
        except (OSError, ValueError):
            s = {}
        log = (run / "opensm.log").read_text(errors="replace") if (run / "opensm.log").exists() else ""
        line = [ln.split("-> ", 1)[-1] for ln in log.splitlines() if "hdor: routed" in ln or "hdor: declined" in ln]
        return {"engine_used": s.get("engine"), "routing_step_s": s.get("routing_step_s"),
                "hdor": line[-1][:400] if line else None}
    row = {"fabric": f"KNS {k}-ary {n}-direct", "cables_down": len(down),
           "fault_free": cold("fault-free", net, "hdor,nue", "--hdor-conf", "none"),
           "first_sight": cold("first-sight", deg, "hdor,nue", "--hdor-conf", "none"),
           "described": cold("described", deg, "hdor,nue", "--hdor-conf", str(net.with_name("hdor.conf"))),
           "fallback_nue": cold("nue", deg, "nue")}
    ff = row["fault_free"]["routing_step_s"]
    for key in ("first_sight", "described"):
        if ff and row[key]["routing_step_s"]:
            row[key]["over_fault_free"] = round(row[key]["routing_step_s"] / ff, 2)
    print(row, flush=True)
    return row


def main(out: Path, quick: bool = False, parts: str = "abc") -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    a = degraded_step(out, *((6, 3) if quick else (12, 3))) if "a" in parts else None
    b = failover(out, *((4, 3) if quick else (8, 3))) if "b" in parts else None
    c = cold_start(out, *((6, 3) if quick else (12, 3))) if "c" in parts else None
    return [{"degraded_routing": a, "failover": b, "cold_start": c}]


if __name__ == "__main__":
    args = sys.argv[1:]
    pos = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--only")]
    only = args[args.index("--only") + 1] if "--only" in args else "abc"
    res = main(Path(pos[0]) if pos else ROOT / "perf" / "out" / "hdor_faults", "--quick" in args, only)
    print(json.dumps(res, indent=2))
