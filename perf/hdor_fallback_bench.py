"""Which stock OpenSM engine is a safe fallback after hdor (issue 22): a KNS that is already
degraded at OpenSM's first sweep, routed by each candidate, on ibsim:

* fabrics: KNS 4-ary, 8-ary and 12-ary 3-direct with 1 % of their router-switch cables (at least
  one) and one indirect switch down from the start (random, seeded; never R[0,0,0]'s cables);
* engines: updn with the plan's S[0,0] and R[0..0] as roots (`root_guid_file`; without roots updn
  finds none on a KNS, and with every indirect switch as a root it leaves most pairs without a
  route: rank 0 for all of them, and a KNS route must go down and up again), nue and dfsssp
  (deadlock-free with virtual lanes: `qos TRUE`), dor, and minhop as the reference that is known
  to make credit loops on a KNS;
* per run (`ibtool sim run DEGRADED.net --engine E --log-flags 0x07`, one fresh ibsim + OpenSM):
  did the subnet come up with E (not a fallback), OpenSM's routing step (log: `building routing
  with` -> `tables configured on all switches`), the VLs E says it needs, and `ibtool verify routes`
  on the discovered tables: delivery and deadlock freedom (per VL with the path SLs the SA hands
  out where the fabric is small enough to ask for every pair, `--path-sls-max` pairs; else VL 0
  only, which is the whole answer for updn, dor and minhop, and "not checked" for nue and dfsssp).

    .venv/bin/python perf/hdor_fallback_bench.py [OUT] [--sizes 4,8,12] [--engines updn,nue,...]
    # heavy (12^3): flock /tmp/ibtool-heavy.lock .venv/bin/python perf/hdor_fallback_bench.py
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ibtool.formats import ibnetdiscover  # noqa: E402
from ibtool.topologies.kns import coord_name, kns  # noqa: E402

IBTOOL = [sys.executable, "-m", "ibtool.cli.main"]
CAP = 600  # s for OpenSM's routing
ENGINES = ("updn", "nue", "dfsssp", "dor", "minhop")
VL_ENGINES = ("nue", "dfsssp")


def degraded(out: Path, k: int, n: int, seed: int = 0) -> tuple[Path, Path, dict]:
    """The plan's net without 1 % of the router-switch cables and one indirect switch; the roots."""
    f = kns(k, n)
    rnd = random.Random(seed)
    rs = [li for li in range(f.num_links) if {f.roles[f.link_a[li]], f.roles[f.link_b[li]]} == {"router", "switch"}
          and 0 not in (f.link_a[li], f.link_b[li])]
    cut = set(rnd.sample(rs, max(1, len(rs) // 100)))
    sws = [x for x in range(f.num_nodes) if f.roles[x] == "switch" and f.names[x] != "S[0,0]"]
    gone = rnd.choice(sws)
    from ibtool.fabric import Fabric
    g = Fabric(f.name + "-degraded")
    g.params = dict(f.params)
    new = {}
    for i in range(f.num_nodes):
        if i != gone:
            new[i] = g.add_node(f.types[i], f.names[i], f.nports[i], f.roles[i], dict(f.labels[i]), guid=f.guids[i])
    for li in range(f.num_links):
        a, b = f.link_a[li], f.link_b[li]
        if li in cut or gone in (a, b):
            continue
        g.add_link(new[a], new[b], f.link_pa[li], f.link_pb[li])
    d = out / f"kns-{k}-{n}"
    d.mkdir(parents=True, exist_ok=True)
    net = d / "degraded.net"
    ibnetdiscover.write(g, net)
    roots = d / "root-guids"
    roots.write_text("".join(f"{f.guids[f.index(x)]:#018x}\n" for x in ("S[0,0]", coord_name("R", (0,) * n))))
    return net, roots, {"cables_down": len(cut), "switch_down": f.names[gone], "switches": f.count(kind=2) - 1,
                        "hcas": f.count(kind=1)}


def run(net: Path, roots: Path, engine: str, out: Path, path_sls_max: int, hcas: int) -> dict:
    args = [*IBTOOL, "sim", "run", str(net), "--engine", engine, "--out", str(out), "--timeout", str(CAP),
            "--log-flags", "0x07", "--json"]
    if engine == "updn":
        args += ["--conf", f"root_guid_file={roots.resolve()}"]  # OpenSM runs in a scratch directory
    sls = engine in VL_ENGINES and hcas * (hcas - 1) <= path_sls_max
    if engine in VL_ENGINES:
        args += ["--conf", "qos=TRUE"] + (["--path-sls"] if sls else [])
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=CAP * 4 + 1200, check=False)
    wall = time.monotonic() - t0
    try:
        s = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return {"engine": engine, "error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]}
    from ibtool.sim.live import vls_needed
    log = (out / "opensm.log").read_text(errors="replace") if (out / "opensm.log").exists() else ""
    r = {"engine": engine, "configured_by": s.get("engine"), "subnet_up": s.get("subnet_up"),
         "fallback": s.get("fallback"), "timed_out": s.get("timed_out"), "routing_step_s": s.get("routing_step_s"),
         "opensm_s": s.get("timings", {}).get("opensm_s"), "wall_s": round(wall, 1), "vls_needed": vls_needed(log)}
    if s.get("subnet_up") and (out / "dump_fts.out").is_file():
        v = [*IBTOOL, "verify", "routes", "--fabric", str(out / "ibnetdiscover.out"), "--lfts",
             str(out / "dump_fts.out"), "--engine", s.get("engine") or engine, "--permutations", "0", "--json"]
        if sls and (out / "saquery-paths.out").is_file():
            v += ["--path-sls", str(out / "saquery-paths.out")]
            if (out / "osm" / "opensm-sl2vl.dump").is_file():
                v += ["--sl2vl", str(out / "osm" / "opensm-sl2vl.dump")]
        t1 = time.monotonic()
        q = subprocess.run(v, capture_output=True, text=True, cwd=ROOT, timeout=7200, check=False)
        r["verify_s"] = round(time.monotonic() - t1, 1)
        try:
            rep = json.loads(q.stdout)
            checks = {c["name"]: c for c in rep["checks"]}
            dl = rep["routes"]["deadlock"]
            r["delivered"] = checks["routes: delivery"]["ok"]
            r["delivery"] = checks["routes: delivery"]["summary"]
            r["deadlock_free"] = dl.get("free")
            r["deadlock"] = checks["routes: deadlock freedom"]["summary"]
            r["per_vl_with_sls"] = bool(sls)
        except (ValueError, KeyError, TypeError) as e:
            r["verify_error"] = f"{type(e).__name__}: {e}; {q.stderr.strip()[-300:]}"
    return r


def main(out: Path, quick: bool = False, sizes=(4, 8, 12), engines=ENGINES, path_sls_max: int = 5000) -> list[dict]:
    """The runs (perf/run.py calls it as the section hdor_fallback; --quick: KNS 4^3 only)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    res = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "runs": []}
    for k in ((4,) if quick else sizes):
        net, roots, what = degraded(out, k, 3)
        for e in engines:
            print(f"KNS {k}^3 degraded ({what['cables_down']} cables, {what['switch_down']}): {e} ...",
                  file=sys.stderr, flush=True)
            r = run(net, roots, e, out / f"kns-{k}-3" / e, path_sls_max, what["hcas"])
            r.update(k=k, n=3, **what)
            print("   ", json.dumps(r), file=sys.stderr, flush=True)
            res["runs"].append(r)
            (out / "results.json").write_text(json.dumps(res, indent=2) + "\n")
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (out / "results.json").write_text(json.dumps(res, indent=2) + "\n")
    return res["runs"]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", default=str(ROOT / "perf" / "out" / "hdor_fallback"))
    ap.add_argument("--sizes", default="4,8,12")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--path-sls-max", type=int, default=5000, help="HCA pairs up to which VL engines are checked "
                    "per VL with the SA's path SLs")
    a = ap.parse_args()
    print(json.dumps(main(Path(a.out), sizes=[int(x) for x in a.sizes.split(",")], engines=a.engines.split(","),
                          path_sls_max=a.path_sls_max), indent=2))
