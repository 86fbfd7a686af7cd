"""`make bench`: the measurements behind BENCHMARKS.md, each against the stock tool in the same run.

    .venv/bin/python perf/run.py [--only gen,sim,engines,verify] [--quick] [--out perf/out]

Sections:
  gen      generate + write large KNS plans (16-ary 3-direct; >= 100,000 HCAs), time and peak
           RSS of a fresh process each; ibsim loading the same file is the stock-tool reference
  sim      ibsim + OpenSM + ibnetdiscover + dump_fts of KNS 8-ary 3-direct (hdor and minhop)
  engines  OpenSM's routing step (-D 0x07: 'building routing with' -> 'tables configured') of
           hdor vs minhop, dor, updn (indirect switches as roots), dfsssp, lash, nue on KNS from
           36 to ~2,000+ switches, each capped at 300 s
  and one section per module perf/<name>_bench.py (found, not listed: a new benchmark is one
  module with a `main(out: Path[, quick: bool]) -> list[dict]`), e.g. verify (perf/verify_bench.py)
Results: OUT/results.json and OUT/results.md (tables pasted into BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import trees_bench
from measure import measure

from ibtool.formats import ibnetdiscover
from ibtool.sim.runner import ibsim
from ibtool.topologies.kns import kns

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
IBTOOL = [PY, "-m", "ibtool.cli.main"]


def machine() -> str:
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal"))) / 2**20
    return f"{os.cpu_count()} x {cpu}, {mem:.0f} GiB RAM, {platform.platform()}"


def bench_gen(out: Path) -> list[dict]:
    rows = []
    for label, args in [
        ("KNS 16-ary 3-direct (radix 36)", ["--k", "16", "--n", "3"]),
        ("KNS 32-ary 3-direct, 4 HCAs/router (131,072 HCAs)", ["--k", "32", "--n", "3", "--hcas-per-router", "4"]),
        ("KNS 47-ary 3-direct, radix 64 (103,823 HCAs)", ["--k", "47", "--n", "3", "--radix", "64"]),
    ]:
        d = out / "gen" / "_".join(args).replace("--", "")
        r = measure([*IBTOOL, "topo", "kns", *args, "--out", d, "--force", "--json"], cwd=ROOT)
        s = json.loads(r["stdout"]) if r["exit"] == 0 else {}
        net = d / "topology.net"
        # stock reference: ibsim loading the same file (started, then stopped once ready); beyond
        # ~20,000 switches ibsim takes many GB and minutes, so it is measured on the first size only
        ref = ibsim_load(net) if r["exit"] == 0 and s.get("switches", 0) < 20000 else None
        rows.append({"fabric": label, "switches": s.get("switches"), "hcas": s.get("hcas"),
                     "links": s.get("links"), "net_mib": round(net.stat().st_size / 2**20, 1) if net.exists() else None,
                     "ibtool_s": r["seconds"], "ibtool_rss_mib": r["peak_rss_mib"],
                     "ibsim_load_s": ref, "rc": r["exit"]})
        print(rows[-1], flush=True)
    return rows


def ibsim_load(net: Path) -> float | None:
    fabric = ibnetdiscover.read(net)  # read before the clock starts: ibsim's time alone
    t0 = time.monotonic()
    try:
        with ibsim(net, net.parent / ".ibsim", fabric, timeout=600):
            return round(time.monotonic() - t0, 3)
    except Exception as e:  # noqa: BLE001 - recorded, not fatal for the benchmark
        print(f"ibsim failed on {net}: {e}", flush=True)
        return None


def sim_run(net: Path, engine: str, out: Path, extra: list[str] = (), timeout: int = 300,
            discover: bool = False) -> dict:
    args = [*IBTOOL, "sim", "run", str(net), "--engine", engine, "--out", str(out), "--timeout", str(timeout),
            "--log-flags", "0x07", "--json", *extra]
    if not discover:
        args.append("--no-discover")
    r = measure(args, cwd=ROOT, timeout=timeout * 3 + 120)
    try:
        s = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        s = {}
    return {"engine_requested": engine, "engine_used": s.get("engine"), "subnet_up": s.get("subnet_up"),
            "timed_out": s.get("timed_out"), "routing_step_s": s.get("routing_step_s"),
            "opensm_s": s.get("timings", {}).get("opensm_s"), "wall_s": r["seconds"],
            "ibnetdiscover_s": s.get("timings", {}).get("ibnetdiscover_s"),
            "dump_fts_s": s.get("timings", {}).get("dump_fts_s")}


def plan(out: Path, k: int, n: int, radix: int = 36, hcas: int = 1) -> Path:
    d = out / "plans" / (f"kns-{k}-{n}" + (f"-h{hcas}" if hcas > 1 else ""))
    if not (d / "topology.net").exists():
        subprocess.run([*IBTOOL, "topo", "kns", "--k", str(k), "--n", str(n), "--radix", str(radix),
                        "--hcas-per-router", str(hcas), "--out", str(d), "--force"], check=True, cwd=ROOT,
                       capture_output=True)
    return d / "topology.net"


def roots_file(net: Path, k: int, n: int) -> Path:
    """updn needs root GUIDs on a KNS: all indirect-network switches (the builder's GUIDs are the plan's)."""
    f = kns(k, n)
    p = net.parent / "roots.guids"
    p.write_text("".join(f"{g:#018x}\n" for g, role in zip(f.guids, f.roles) if role == "switch"))
    return p


def bench_sim(out: Path) -> list[dict]:
    net = plan(out, 8, 3)
    rows = []
    for engine in ("hdor", "minhop"):
        r = sim_run(net, engine, out / "sim" / engine, discover=True)
        r["fabric"] = "KNS 8-ary 3-direct (704 switches, 512 HCAs)"
        rows.append(r)
        print(r, flush=True)
    return rows


def bench_engines(out: Path, sizes: list[tuple[int, int]], engines: list[str], cap: int) -> list[dict]:
    rows = []
    for k, n in sizes:
        net = plan(out, k, n)
        roots = roots_file(net, k, n)
        for engine in engines:
            extra = ["--conf", f"root_guid_file={roots.resolve()}"] if engine == "updn" else []
            r = sim_run(net, engine, out / "engines" / f"{k}-{n}-{engine}", extra, timeout=cap)
            sw = n * k ** (n - 1) + k ** n
            r.update({"fabric": f"KNS {k}-ary {n}-direct", "switches": sw, "hcas": k ** n})
            rows.append(r)
            print(r, flush=True)
    return rows


def markdown(results: dict) -> str:
    """Tables for BENCHMARKS.md."""
    md = [f"Machine: {results['machine']}; run {results['date']}.\n"]
    if results.get("gen"):
        md += ["| fabric | switches | HCAs | links | net file | ibtool topo kns (wall) | peak RSS | ibsim loading the same file |",
               "|---|---|---|---|---|---|---|---|"]
        for r in results["gen"]:
            ref = f"{r['ibsim_load_s']} s" if r["ibsim_load_s"] is not None else "not run"
            md.append(f"| {r['fabric']} | {r['switches']:,} | {r['hcas']:,} | {r['links']:,} | {r['net_mib']} MiB "
                      f"| {r['ibtool_s']} s | {r['ibtool_rss_mib']} MiB | {ref} |")
        md.append("")
    for key in ("sim", "engines"):
        if results.get(key):
            md += ["| fabric | engine requested | engine used | routing step | OpenSM start to exit | ibnetdiscover | dump_fts |",
                   "|---|---|---|---|---|---|---|"]
            for r in results[key]:
                step = "—" if r["routing_step_s"] is None else f"{r['routing_step_s']:.3f} s"
                if r.get("timed_out"):
                    step = "> cap (timed out)"
                md.append(f"| {r['fabric']} | {r['engine_requested']} | {r['engine_used'] or '—'} | {step} "
                          f"| {r['opensm_s']} s | {r['ibnetdiscover_s'] or '—'} | {r['dump_fts_s'] or '—'} |")
            md.append("")
    md += trees_bench.markdown(results.get("trees_gen") or [], results.get("trees_routing") or [])
    if results.get("analyze"):
        md.append("```json\n" + json.dumps(results["analyze"], indent=1) + "\n```\n")  # analyze_bench's figures
    return "\n".join(md) + "\n"


def sections() -> dict:
    """The benchmark modules beside this script (perf/<name>_bench.py), by name."""
    here = Path(__file__).resolve().parent  # on sys.path: this script lives there
    return {p.stem[:-len("_bench")]: importlib.import_module(p.stem) for p in sorted(here.glob("*_bench.py"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(["gen", "sim", "engines", *sections()]))
    ap.add_argument("--out", default=str(ROOT / "perf" / "out"))
    ap.add_argument("--quick", action="store_true", help="small engine sweep (no 16-ary 3-direct)")
    ap.add_argument("--cap", type=int, default=300, help="seconds per OpenSM run")
    a = ap.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    only = set(a.only.split(","))
    results = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if "gen" in only:
        results["gen"] = bench_gen(out)
    if "sim" in only:
        results["sim"] = bench_sim(out)
    if "engines" in only:
        sizes = [(6, 2), (4, 3), (8, 3), (12, 3)] + ([] if a.quick else [(16, 3)])
        engines = ["hdor", "minhop", "dor", "updn", "dfsssp", "lash", "nue"]
        results["engines"] = bench_engines(out, sizes, engines, a.cap)
    for name, mod in sections().items():
        if name in only:
            kw = {"quick": a.quick} if "quick" in inspect.signature(mod.main).parameters else {}
            results[name] = mod.main(out / name, **kw)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out / "results.md").write_text(markdown(results))
    print(f"results: {out / 'results.json'}")


if __name__ == "__main__":
    main()
