"""`ibtool collect`: everything `ibtool verify` needs, gathered from a live fabric by the diags.

Run on any host attached to the fabric (under ibsim: with LD_PRELOAD=umad2sim and IBSIM_SOCKNAME
set, like any diags client). Writes, in the run layout `ibtool verify all` reads:

    ibnetdiscover.out   the topology (ibnetdiscover)
    dump_fts.out        every switch's forwarding table (dump_fts; the top block dump_fts leaves
                        out when the top LID is a multiple of 64 is read (smpdump's query, all switches at once) and merged,
                        the tool's own output kept as dump_fts.raw.out)
    sl2vl.dump          every switch port's SL-to-VL table (smpquery sl2vl), in OpenSM's
                        opensm-sl2vl.dump layout
    perfquery.out       the port counters of every cabled port (perfquery LID PORT,PORT,...: one
                        query per device, several devices at once)
    saquery-paths.out   the SA's PathRecord of every HCA-to-HCA pair (ibtool.mad: the query of
                        `saquery -p --slid S --dlid D`, all pairs from one process), for the SL
                        the routing engine gives each path (the per-VL deadlock check needs it)
    summary.json        what was collected and what failed, per item; tool versions; the time

A device or port that does not answer is recorded, not fatal; only a failed ibnetdiscover is (the
rest needs the topology). Path SLs take one SA query per pair of HCA ports: `auto` asks them up to
AUTO_PATH_PAIRS pairs (1,024 HCA ports, about a minute) and says so when it does not; `on` asks
them on any size.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ibtool import rundir
from ibtool.errors import EnvironmentProblem
from ibtool.fabric import SWITCH, Fabric
from ibtool.formats import atomic_write, ibnetdiscover, output_dir
from ibtool.mad import path_sls
from ibtool.sim.clients import Clients, port_counters, why
from ibtool.sim.runner import complete_top_lid, require

AUTO_PATH_PAIRS = 1024 * 1023  # --path-sls auto asks the SA for at most this many pairs
TOOLS = {"ibnetdiscover": "infiniband-diags", "dump_fts": "infiniband-diags", "smpquery": "infiniband-diags",
         "smpdump": "infiniband-diags", "perfquery": "infiniband-diags"}


def _version(c: Clients, tool: str) -> str | None:
    p = c.run(tool, "--version")
    m = re.search(r"VERSION:\s*(\S+)", p.stdout + p.stderr)
    return m.group(1) if m else None


def _sl2vl(c: Clients, f: Fabric, parallel: int, item: dict) -> str:
    """Every switch's table for each of its cabled ports (all input ports at once per query)."""
    jobs = []
    for node in range(f.num_nodes):
        if f.types[node] != SWITCH:
            continue
        lid = f.port_lids.get((node, 0), (0, 0))[0]
        if lid:
            jobs += [(node, lid, port) for port, _, _ in f.neighbors(node)]
    row = re.compile(r"ports: in\s+(\d+), out\s+(\d+):\s*\|([\d|\s]+)\|")

    def one(job):
        node, lid, port = job
        p = c.run("smpquery", "sl2vl", lid, port)
        rows = row.findall(p.stdout) if p.returncode == 0 else []
        return job, rows, None if rows else why(p)

    tables: dict[int, list[str]] = {}
    failed = []
    with ThreadPoolExecutor(parallel) as pool:
        for (node, lid, port), rows, err in pool.map(one, jobs):
            if err:
                failed.append({"device": f.names[node], "lid": lid, "port": port, "error": err})
                continue
            for i, o, vls in rows:
                vals = " ".join(f"{int(v):<2}" for v in vls.split("|"))
                tables.setdefault(node, []).append(f"{int(i):<3} {int(o):<3} : {vals}".rstrip())
    item.update({"queries": len(jobs), "failed": failed, "ok": not failed})
    out = []
    for node in sorted(tables):
        lid = f.port_lids.get((node, 0), (0, 0))[0]
        out.append(f'Switch {f.guids[node]:#018x}, base LID {lid}, "{f.names[node]}"\n'
                   "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n")
        out.extend(r + "\n" for r in sorted(tables[node], key=lambda s: tuple(int(x) for x in s.split()[:2])))
    return "".join(out)


def _path_sls(c: Clients, f: Fabric, out: Path, mode: str, say) -> dict:
    """The SL of every HCA-to-HCA path, asked of the SA (ibtool.mad). An SA that does not answer
    is recorded, not fatal: the per-VL deadlock check then puts every route on SL 0."""
    hcas = sum(1 for node, _ in f.port_lids if not f.is_switch(node))
    pairs = hcas * (hcas - 1)
    if mode == "off" or (mode == "auto" and pairs > AUTO_PATH_PAIRS):
        why = "--path-sls off" if mode == "off" else (
            f"{pairs} HCA pairs, more than the {AUTO_PATH_PAIRS} --path-sls auto asks; use --path-sls on")
        if mode == "auto":
            say(f"path SLs not collected: {why}")
        (out / rundir.PATH_SLS).unlink(missing_ok=True)  # an earlier collection's is not this fabric's
        return {"ok": True, "collected": False, "why": why}
    say(f"path SLs (the SA's PathRecord of each of {pairs} HCA pairs)")
    try:
        item = path_sls(c, out / rundir.PATH_SLS, f, c.timeout, tuple(c.local()), say)
    except EnvironmentProblem as e:  # no SA on this fabric (no SM running), or it stopped answering
        (out / rundir.PATH_SLS).unlink(missing_ok=True)
        return {"ok": True, "collected": False, "why": f"the SA did not answer: {e}"}
    return {"ok": True, "collected": True, **item}


def collect(out: str | Path, ca: str | None = None, port: int | None = None, timeout: float = 60.0,
            parallel: int = 8, progress=None, path_sls: str = "auto") -> dict:
    say = progress or (lambda m: None)
    for tool, pkg in TOOLS.items():
        require(tool, pkg)
    out = output_dir(out)
    work = out / ".work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    c = Clients(work, ca, port, timeout)
    items: dict[str, dict] = {}
    summary = {"kind": "collect", "net": None, "ca": ca, "port": port,
               "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "epoch": time.time(),
               "tools": {}, "items": items, "timings": {}}
    t_all = time.monotonic()
    try:
        say("ibnetdiscover")
        t0 = time.monotonic()
        p = c.run("ibnetdiscover")
        if p.returncode != 0 or not p.stdout.strip():
            items["ibnetdiscover"] = {"ok": False, "error": why(p)}
            raise EnvironmentProblem(f"ibnetdiscover failed ({why(p)}): is this host on a fabric "
                                     f"(for ibsim: LD_PRELOAD=umad2sim and IBSIM_SOCKNAME)?")
        with atomic_write(rundir.fabric(out)) as fh:
            fh.write(p.stdout)
        f = ibnetdiscover.read(rundir.fabric(out))
        items["ibnetdiscover"] = {"ok": True, "switches": f.count(kind=SWITCH), "hcas": f.num_nodes - f.count(kind=SWITCH),
                                  "links": f.num_links, "seconds": round(time.monotonic() - t0, 3)}
        say(f"dump_fts ({f.count(kind=SWITCH)} switches)")
        t0 = time.monotonic()
        p = c.run("dump_fts")
        if p.returncode == 0 and p.stdout.strip():
            with atomic_write(out / rundir.LFTS) as fh:
                fh.write(p.stdout)
            item = {"ok": True, "seconds": None}
            top = complete_top_lid(c, out / rundir.LFTS, f, timeout, say)
            if top:
                item["top_lid"] = top
            item["seconds"] = round(time.monotonic() - t0, 3)
        else:
            item = {"ok": False, "error": why(p)}
        items["dump_fts"] = item
        say("SL-to-VL tables (smpquery sl2vl)")
        t0 = time.monotonic()
        item = {}
        text = _sl2vl(c, f, parallel, item)
        if text:
            with atomic_write(out / rundir.SL2VL) as fh:
                fh.write(text)
        else:
            (out / rundir.SL2VL).unlink(missing_ok=True)
        item["seconds"] = round(time.monotonic() - t0, 3)
        items["sl2vl"] = item
        say("port counters (perfquery)")
        t0 = time.monotonic()
        item = {}
        text = port_counters(c, f, parallel, item)
        with atomic_write(out / rundir.PERFQUERY) as fh:
            fh.write(text)
        item["seconds"] = round(time.monotonic() - t0, 3)
        items["counters"] = item
        items["path_sls"] = _path_sls(c, f, out, path_sls, say)
        summary["tools"] = {t: _version(c, t) for t in ("ibnetdiscover", "dump_fts", "smpquery", "perfquery")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
        summary["timings"]["total_s"] = round(time.monotonic() - t_all, 3)
        summary["ok"] = bool(items) and all(v.get("ok") for v in items.values())
        summary["subnet_up"] = bool(items.get("ibnetdiscover", {}).get("ok"))
        with atomic_write(out / rundir.SUMMARY) as fh:
            json.dump(summary, fh, indent=2)
            fh.write("\n")
    return summary
