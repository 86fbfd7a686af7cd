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

(c) The degraded pass for one failure, incremental (issue 39), against the full degraded pass (every
    LID and pair looked at, tables written whole: `Engine(incremental=False)`, the pass before issue
    39) in the same run: KNS 16^3 (`--quick`: 8^3) loaded once in each engine, then router-switch
    cables (`--cables`), indirect switches and routers (`--nodes` each) failed one at a time, what
    the SM's HCA no longer reaches going too, each routed by both: the engine's time (the C call
    hdor_off_route: wall, and its thread's CPU, which the machine's load does not inflate) and its phases (the summary line), the tables of the two compared; what-if's
    `route_failures` end to end; the fault-free pass (the complete KNS routed again) beside it; 1 %
    of the cables down at once (issue 28's degraded pass against the fault-free one); and memory:
    the process's RSS after the 10th and the last of `--long` failures routed one after another.
    `--loop N [--full]` is one process doing the load and N cable failures, for farm-bench.

    .venv/bin/python perf/hdor_c_bench.py OUT [--quick] [--reps 3] [--only a,b,c] [--cables 100]
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


def _rss_mib() -> float:
    return int(next(ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmRSS"))) / 1024


def _phases(log: str) -> dict:
    """The phases of the engine's summary line (docs/plugin.md "Log lines"), in ms, and its total."""
    line = next((ln for ln in log.splitlines() if "hdor: routed" in ln), "")
    out = {name.strip(): int(us) / 1000 for name, us in re.findall(r"([a-zA-Z'/ -]+?) (\d+) us", line)}
    m = re.search(r"LIDs, (\d+) us \(pass", line)
    if m:
        out["total"] = int(m.group(1)) / 1000
    return out


class _Timed:
    """An engine whose C pass is timed: a failure set masked, routed (no dump), repaired."""

    def __init__(self, f, incremental: bool):
        import numpy as np

        from ibtool.routing import hdor_c
        self.np, self.c = np, hdor_c
        self.f, self.e = f, hdor_c.Engine(incremental=incremental)
        self.e.load(f)
        self.e.route(dump=False)

    def once(self, nodes=(), links=(), sm=None) -> tuple[float, int]:
        np, c, lib, h = self.np, self.c, self.e._lib, self.e._h
        nn = np.asarray(nodes, dtype=np.uint32)
        ln = np.asarray([x for x, _ in links], dtype=np.uint32)
        lp = np.asarray([p for _, p in links], dtype=np.uint8)
        if nodes or links:
            lib.hdor_off_fail(h, 0xFFFFFFFF if sm is None else sm, len(nn), nn.ctypes.data_as(c._U32), len(ln),
                              ln.ctypes.data_as(c._U32), lp.ctypes.data_as(c._U8))
        t, cpu = time.perf_counter(), time.thread_time()
        rc = lib.hdor_off_route(h, None)
        dt = time.perf_counter() - t
        self.cpu = time.thread_time() - cpu  # the pass is one thread: its CPU, whatever the load
        lib.hdor_off_repair(h)
        return dt, rc

    def table(self):
        stride = self.c.ctypes.c_uint32(0)
        p = self.e._lib.hdor_off_lft(self.e._h, self.c.ctypes.byref(stride))
        nsw = sum(1 for t in self.f.types if t == 2)
        return self.np.ctypeslib.as_array(p, shape=(nsw * stride.value,))


def _single_failures(f, cables: int, nodes: int):
    role = f.roles
    rs = [li for li in range(f.num_links) if {role[f.link_a[li]], role[f.link_b[li]]} == {"router", "switch"}]
    sws = [x for x in range(f.num_nodes) if role[x] == "switch"]
    rts = [x for x in range(f.num_nodes) if role[x] == "router"]
    out = [("cable", (), ((f.link_a[li], f.link_pa[li]),)) for li in rs[:: max(1, len(rs) // cables)][:cables]]
    out += [("switch", (x,), ()) for x in sws[:: max(1, len(sws) // max(nodes, 1))][:nodes]]
    out += [("router", (x,), ()) for x in rts[1:: max(1, len(rts) // max(nodes, 1))][:nodes]]
    return out, rs


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def part_c(quick: bool, cables: int = 100, nodes: int = 20, long: int = 1000) -> dict:
    import random

    import numpy as np
    k = 8 if quick else 16
    f = kns(k, 3)
    assign_lids(f)
    sm = max(x for x in range(f.num_nodes) if f.roles[x] == "hca")
    sets, rs = _single_failures(f, cables, nodes)
    row = {"fabric": f"KNS {k}-ary 3-direct", "load_before": load(), "sets": len(sets)}
    inc, full = _Timed(f, True), _Timed(f, False)
    # the fault-free pass: the complete KNS routed again (a re-sweep with nothing failed)
    row["fault_free_ms"] = [round(1e3 * inc.once()[0], 1) for _ in range(5)]
    per = {}
    same = 0
    for kind, nodes_, links in sets:
        a, rca = inc.once(nodes_, links, sm)
        pa = _phases(inc.e.log)
        b, rcb = full.once(nodes_, links, sm)
        pb = _phases(full.e.log)
        assert rca == rcb, (kind, nodes_, links)
        if rca == 0:
            assert np.array_equal(inc.table(), full.table()), (kind, nodes_, links)
            same += 1
        d = per.setdefault(kind, {"incremental_ms": [], "full_ms": [], "incremental_cpu_ms": [], "full_cpu_ms": [],
                                  "phases_incremental": [], "phases_full": []})
        d["incremental_ms"].append(round(1e3 * a, 2))
        d["full_ms"].append(round(1e3 * b, 2))
        d["incremental_cpu_ms"].append(round(1e3 * inc.cpu, 2))
        d["full_cpu_ms"].append(round(1e3 * full.cpu, 2))
        d["phases_incremental"].append(pa)
        d["phases_full"].append(pb)
    row["tables_identical"] = same
    for kind, d in per.items():
        d["median_incremental_ms"] = _median(d["incremental_ms"])
        d["median_full_ms"] = _median(d["full_ms"])
        d["median_incremental_cpu_ms"] = _median(d["incremental_cpu_ms"])
        d["median_full_cpu_ms"] = _median(d["full_cpu_ms"])
        d["median_ratio_cpu"] = _median([y / x for x, y in zip(d["incremental_cpu_ms"], d["full_cpu_ms"]) if x])
        for which in ("incremental", "full"):
            ph = d.pop(f"phases_{which}")
            d[f"median_phases_{which}"] = {name: _median([p.get(name, 0) for p in ph]) for name in ph[0]}
    row["single"] = per
    # what-if's call end to end (the result objects, the dump or not), on the cables
    ends = {None: ([], []), False: ([], [])}  # dump (a temporary file, none): (wall, CPU) per call
    for kind, nodes_, links in sets[:cables]:
        for dump in ends:
            t, cpu = time.perf_counter(), time.thread_time()
            inc.e.route_failures(nodes_, links, sm=sm, dump=dump)
            ends[dump][0].append(round(1e3 * (time.perf_counter() - t), 1))
            ends[dump][1].append(round(1e3 * (time.thread_time() - cpu), 1))
    row["route_failures_ms"] = {"median": _median(ends[None][0]), "median_dump_false": _median(ends[False][0]),
                                "median_cpu": _median(ends[None][1]), "median_cpu_dump_false": _median(ends[False][1])}
    # 1 % of the router-switch cables down at once (issue 28's degraded pass), seed 0
    pick = random.Random(0).sample(rs, max(1, len(rs) // 100))
    ends = tuple((f.link_a[li], f.link_pa[li]) for li in pick)
    row["one_percent"] = {"cables": len(pick)}
    for name, e in (("incremental", inc), ("full", full)):
        ts = [e.once((), ends)[0] for _ in range(3)]
        row["one_percent"][f"{name}_ms"] = [round(1e3 * t, 1) for t in ts]
        row["one_percent"][f"phases_{name}"] = _phases(e.e.log)
    row["one_percent"]["fault_free_ms"] = [round(1e3 * full.once()[0], 1) for _ in range(3)]
    del full
    # memory: one failure after another, the RSS after the 10th and after the last
    rss = {}
    for i in range(long):
        li = rs[(i * 7919) % len(rs)]
        inc.once((), ((f.link_a[li], f.link_pa[li]),), sm)
        if i + 1 in (10, 100, long):
            rss[i + 1] = round(_rss_mib(), 1)
    row["rss_mib_after"] = rss
    row["load_after"] = load()
    print(json.dumps(row), flush=True)
    return row


def loop(quick: bool, n: int, full: bool) -> None:
    """One process: KNS 16^3 (8^3) loaded and routed, then n single cable failures (farm-bench)."""
    k = 8 if quick else 16
    f = kns(k, 3)
    assign_lids(f)
    sets, _ = _single_failures(f, n, 0)
    e = _Timed(f, not full)
    for _, nodes_, links in sets[:n]:
        e.once(nodes_, links)


def main(out: Path, quick: bool = False, reps: int = 3, parts: str = "a,b,c", cables: int = 100) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    if "a" in parts:
        rows.append({"part": "a", **part_a(out, quick, reps)})
    if "b" in parts:
        rows.append({"part": "b", **part_b(out, quick)})
    if "c" in parts:
        rows.append({"part": "c", **part_c(quick, cables)})
    (out / "hdor_c.json").write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="a,b,c")
    ap.add_argument("--cables", type=int, default=100)
    ap.add_argument("--loop", type=int, default=0, help="only load and route N cable failures (farm-bench)")
    ap.add_argument("--full", action="store_true", help="with --loop: the full degraded pass")
    a = ap.parse_args()
    if a.loop:
        loop(a.quick, a.loop, a.full)
    else:
        main(a.out, a.quick, a.reps, a.only, a.cables)
