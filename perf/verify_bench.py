"""`make bench` items for `ibtool verify` (issue 4):

(a) KNS 12-ary 3-direct routed by minhop under ibsim: parse its dump_fts output (~549 MB) and
    verify every route, end to end (`ibtool verify routes`);
(b) a fabric at InfiniBand's scale limit (>= 40,000 LIDs, >= 2,000 switches): KNS 12-ary
    3-direct with 22 HCAs per router (2,160 switches, 40,176 LIDs), tables from the Python hdor
    reference: all-pairs tracing and the deadlock check;
(c) ibutils' ibdmchk on the same OpenSM dumps as (a), against `ibtool verify routes` on them:
    the same credit-loop verdict, and the speed-up;
(d) issue 8: (a)'s parsing (best of 3, beside the stock `wc -l` on the same file) and (b) measured again with the code before the rewrite (commit
    7288b72, extracted with `git archive`) in the same run, and the verdicts of both on every
    fixture of fixtures/ that has forwarding tables (they must be the same).

Every measured step runs in its own process; wall time and that process's peak RSS are recorded.

    python perf/verify_bench.py OUT_DIR [--k 12] [--skip-sim]

`main(out_dir)` returns the results as a dict (perf/run.py records them in BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from measure import measure  # perf/measure.py: this script's directory is on sys.path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


BASELINE = "7288b72"  # the verification code before issue 8 (certificates, faster parsing)

# every script takes the directory to import ibtool from as its first argument
_PATH = "import sys; sys.path.insert(0, sys.argv.pop(1))\n"

_PARSE = _PATH + """
import json, os, sys, time
from ibtool.formats import lft
c, t = time.process_time(), time.monotonic(); tb = lft.read(sys.argv[1]); dt = time.monotonic() - t
cpu = time.process_time() - c  # on a loaded machine: the parse's own work, without waiting for a core
size = os.path.getsize(sys.argv[1])
print(json.dumps({"seconds": round(dt, 2), "cpu_seconds": round(cpu, 2), "mb": round(size / 1e6, 1),
                  "mb_per_s": round(size / 1e6 / dt, 1),
                  "switches": len(tb.lft), "max_lid": tb.max_lid}))
"""

_SCALE = _PATH + """
import json, sys, time
from ibtool.topologies.kns import kns
from ibtool.routing import hdor
from ibtool.routing.lids import assign_lids
from ibtool.verify import routes
k, n, h = (int(x) for x in sys.argv[1:4])
t = time.monotonic(); f = kns(k, n, hcas_per_router=h, radix=36); top = assign_lids(f); t_build = time.monotonic() - t
t = time.monotonic(); ref = hdor.compute(f); t_ref = time.monotonic() - t
# the issue's item (b): all-pairs tracing and the deadlock check (link loads are measured in (a))
t = time.monotonic(); r = routes.verify(f, ref.tables, balance=False); t_ver = time.monotonic() - t
perm = int(sys.argv[4])  # -1: only the verification (the issue's target), no link loads
t = time.monotonic(); rb = routes.verify(f, ref.tables, permutations=perm) if perm >= 0 else None
t_bal = time.monotonic() - t
print(json.dumps({"switches": f.count(kind=2), "hcas": f.count(kind=1), "lids": int(top),
                  "pairs": r["pairs"], "build_s": round(t_build, 2), "reference_s": round(t_ref, 2),
                  "verify_s": round(t_ver, 2), "delivered_all": r["delivered"] == r["pairs"],
                  "minimal": r["minimal"], "certified_lids": r.get("certified_lids"),
                  "deadlock_free": r["deadlock"]["free"], "dependencies": r["deadlock"]["dependencies"],
                  "with_balance_s": round(t_bal, 2) if rb else None,
                  "max_link_load_all_to_all": rb["balance"]["all_to_all_max_link_load"] if rb else None}))
"""


_VERDICT = _PATH + """
import json, sys
from ibtool.cli.verify import read_fabric
from ibtool.formats import lft
from ibtool.verify import routes
r = routes.verify(read_fabric(sys.argv[1]), lft.read(sys.argv[2]), permutations=2)
print(json.dumps({"ok": r["ok"], "pairs": r["pairs"], "delivered": r["delivered"], "minimal": r["minimal"],
                  "deadlock_free": r["deadlock"]["free"], "dependencies": r["deadlock"]["dependencies"],
                  "undelivered": {k: v for k, v in r["undelivered"].items() if v}}))
"""


def _ibtool(*args) -> list[str]:
    return [PY, "-m", "ibtool.cli.main", *map(str, args)]


def baseline(out: Path) -> Path:
    """The ibtool package as of BASELINE, extracted beside the results (`git archive`)."""
    d = out / f"baseline-{BASELINE}"
    if not (d / "ibtool").is_dir():
        d.mkdir(parents=True, exist_ok=True)
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", BASELINE, "ibtool"], capture_output=True,
                             check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
            tf.extractall(d, filter="data")
    return d


def parse_runs(dump: Path, base: Path, rounds: int = 3) -> dict:
    """Parsing `dump` with today's code and the baseline, each in its own process, best of `rounds`
    (alternating, so a burst of load from other work hits both), and the stock `wc -l` reading the
    same file in the same rounds: the speed of just reading it and finding its lines. The file is
    read once first, so that no run pays for bringing it into the page cache."""
    with open(dump, "rb") as fh:
        res: dict = {"dump_fts_lines": sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 24), b""))}
    runs: dict = {}
    for _ in range(rounds):
        for key, path in (("parse", ROOT), (f"parse_{BASELINE}", base)):
            m = measure([PY, "-c", _PARSE, path, dump], cwd=ROOT)
            r = json.loads(m["stdout"]) if m["exit"] == 0 else {"error": m["stderr"], "seconds": float("inf")}
            runs.setdefault(key, []).append({**r, "peak_rss_mib": m["peak_rss_mib"]})
        m = measure(["wc", "-l", dump])
        runs.setdefault("wc_l", []).append({"seconds": m["seconds"], "mb_per_s": round(dump.stat().st_size / 1e6 /
                                                                                     max(m["seconds"], 1e-9), 1)})
    for key, rs in runs.items():
        res[key] = {**min(rs, key=lambda r: r["seconds"]), "all_seconds": [r["seconds"] for r in rs]}
    return res


def fixture_verdicts(base: Path) -> dict:
    """verify routes on every fixture pair (fabric, tables) with today's code and the baseline."""
    pairs = []
    for lfts in sorted((ROOT / "fixtures").rglob("*")):
        name = lfts.name
        if not lfts.is_file() or not ("dump_fts" in name or "lfts.dump" in name):
            continue
        d = lfts.parent
        for fab in (d / "ibnetdiscover.out", d / name.replace("dump_fts", "ibnetdiscover").replace(
                ".opensm-lfts.dump", ".ibnetdiscover"), ROOT / "fixtures" / "ibnetdiscover" / (name.split(".")[0] + ".out")):
            if fab.is_file() and fab != lfts:
                pairs.append((fab, lfts))
                break
    rows = []
    for fab, lfts in pairs:
        got = {}
        for who, path in (("now", ROOT), ("baseline", base)):
            m = measure([PY, "-c", _VERDICT, path, fab, lfts], cwd=ROOT)
            got[who] = json.loads(m["stdout"]) if m["exit"] == 0 else {"error": m["stderr"][-300:]}
        rows.append({"fabric": str(fab.relative_to(ROOT)), "lfts": str(lfts.relative_to(ROOT)), **got,
                     "same": got["now"] == got["baseline"]})
    return {"fixtures": rows, "all_same": all(r["same"] for r in rows)}


def _verify_routes(fabric: Path, lfts: Path) -> dict:
    """`ibtool verify routes --json` in its own process: time, peak RSS, and the verdict."""
    m = measure(_ibtool("verify", "routes", "--fabric", fabric, "--lfts", lfts, "--json"), cwd=ROOT)
    rep = json.loads(m["stdout"]) if m["stdout"].strip().startswith("{") else {}
    r = rep.get("routes", {})
    return {"seconds": m["seconds"], "peak_rss_mib": m["peak_rss_mib"], "exit": m["exit"],
            "pairs": r.get("pairs"), "delivered": r.get("delivered"),
            "credit_loop": (not r["deadlock"]["free"]) if r else None}


def bench_a_c(out: Path, k: int = 12, n: int = 3, skip_sim: bool = False) -> dict:
    plan = out / f"kns-{k}-{n}"
    run = out / f"kns-{k}-{n}-minhop"
    res: dict = {"fabric": f"KNS {k}-ary {n}-direct, minhop, ibsim"}
    if not (skip_sim and (run / "dump_fts.out").is_file()):
        m = measure(_ibtool("topo", "kns", "--k", k, "--n", n, "--radix", 36, "--out", plan, "--force"), cwd=ROOT)
        if m["exit"] != 0:
            return {**res, "error": "topo: " + m["stderr"]}
        # 0x43: OpenSM writes opensm.fdbs / opensm-subnet.lst for ibdmchk, and opensm-lfts.dump
        m = measure(_ibtool("sim", "run", plan / "topology.net", "--engine", "minhop", "--log-flags", "0x43",
                             "--timeout", 900, "--out", run), cwd=ROOT, timeout=3600)
        res["sim_seconds"] = m["seconds"]
        if m["exit"] != 0:
            return {**res, "error": "sim run: " + (m["stderr"] or m["stdout"])[-500:]}
    dump = run / "dump_fts.out"
    res["dump_fts_mb"] = round(dump.stat().st_size / 1e6, 1)
    # (a) parsing alone, then everything: ibtool verify routes on dump_fts
    res.update(parse_runs(dump, baseline(out)))
    res["verify_dump_fts"] = _verify_routes(run / "ibnetdiscover.out", dump)
    # (c) the same OpenSM dumps: ibdmchk vs ibtool verify routes on opensm.fdbs (ibdmchk's input)
    # and on opensm-lfts.dump
    osm = run / "osm"
    runs = {}
    for name, fabric in (("opensm.fdbs", run / "ibnetdiscover.out"), ("opensm-lfts.dump", run / "ibnetdiscover.out"),
                         ("subnet.lst+fdbs", osm / "opensm-subnet.lst")):
        lfts = osm / ("opensm.fdbs" if name == "subnet.lst+fdbs" else name)
        runs[name] = _verify_routes(fabric, lfts)
    ours = runs["opensm.fdbs"]
    exe = shutil.which("ibdmchk")
    if exe is None:
        res["ibdmchk"] = {"error": "ibdmchk not installed (Debian package ibutils)"}
    else:
        work = out / "ibdmchk"
        work.mkdir(exist_ok=True)
        m = measure([exe, "-s", osm / "opensm-subnet.lst", "-f", osm / "opensm.fdbs", "-m", osm / "opensm.mcfdbs"],
                     cwd=work, stdout=work / "ibdmchk.out")
        text = (work / "ibdmchk.out").read_text(errors="replace")
        found, none = "Found credit loop" in text, "no credit loops found" in text
        res["ibdmchk"] = {"seconds": m["seconds"], "peak_rss_mib": m["peak_rss_mib"], "exit": m["exit"],
                          "credit_loop": True if found else (False if none else None)}
        res["same_verdict"] = res["ibdmchk"]["credit_loop"] == ours["credit_loop"]
        if ours["seconds"]:
            res["speedup_vs_ibdmchk"] = round(m["seconds"] / ours["seconds"], 2)
    res["verify_opensm_fdbs"] = runs["opensm.fdbs"]
    res["verify_opensm_lfts"] = runs["opensm-lfts.dump"]
    res["verify_subnet_lst_fdbs"] = runs["subnet.lst+fdbs"]  # exactly ibdmchk's inputs
    return res


def bench_b(k: int = 12, n: int = 3, h: int = 22, permutations: int = 4, code: Path = ROOT) -> dict:
    m = measure([PY, "-c", _SCALE, code, k, n, h, permutations], cwd=ROOT, timeout=3600)
    if m["exit"] != 0:
        return {"error": m["stderr"]}
    res = json.loads(m["stdout"])
    res["process_seconds"] = m["seconds"]
    res["peak_rss_mib"] = m["peak_rss_mib"]
    res["fabric"] = f"KNS {k}-ary {n}-direct, {h} HCAs per router, hdor reference tables"
    return res


def main(out_dir: str | Path, k: int = 12, skip_sim: bool = False) -> dict:
    out = Path(out_dir).resolve()  # ibdmchk runs in its own directory: paths must be absolute
    out.mkdir(parents=True, exist_ok=True)
    base = baseline(out)
    results = {"a_c": bench_a_c(out, k=k, skip_sim=skip_sim), "b": bench_b(),
               f"b_{BASELINE}": bench_b(code=base), "verdicts": fixture_verdicts(base)}
    results["b_speedup"] = round(results[f"b_{BASELINE}"].get("verify_s", 0) / max(results["b"].get("verify_s", 0), 1e-9), 2)
    (out / "verify_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def repeat(out_dir: str | Path, k: int = 12) -> dict:
    """(d) alone, again: parsing (a)'s dump_fts and verifying (b) without link loads, today's code
    and the baseline back to back (to re-run figures that a loaded machine pushed past a target)."""
    out = Path(out_dir).resolve()
    base = baseline(out)
    dump = out / f"kns-{k}-3-minhop" / "dump_fts.out"
    res: dict = {"load_before": Path("/proc/loadavg").read_text().split()[:3]}
    if dump.is_file():
        res.update(parse_runs(dump, base))
    res["b"] = bench_b(permutations=-1)
    res[f"b_{BASELINE}"] = bench_b(permutations=-1, code=base)
    res["load_after"] = Path("/proc/loadavg").read_text().split()[:3]
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--k", type=int, default=12, help="KNS k for (a)/(c) (default 12)")
    ap.add_argument("--skip-sim", action="store_true", help="reuse OUT_DIR's earlier ibsim run if there is one")
    ap.add_argument("--repeat", action="store_true", help="only (d): parsing and (b) again, now vs the baseline")
    a = ap.parse_args()
    print(json.dumps(repeat(a.out_dir, a.k) if a.repeat else main(a.out_dir, a.k, a.skip_sim), indent=2))
