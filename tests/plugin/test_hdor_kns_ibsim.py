"""hdor in production (issue 22, docs/hdor.md section 7) on real ibsim + OpenSM with the plugin.

KNS 4^2, 3^3 and 4^2 s=2, with their GUIDs dealt anew and every switch's ports shuffled (as a real
fabric's would be). One ibsim per shape and one OpenSM restarted on it (LiveFabric keeps ibsim, so
the LIDs stay), for a router-switch cable, an indirect switch and a router:

* the long-running hdor: the KNS complete at start, then the fault (its tables T);
* (b) OpenSM restarted with the fault still there and its cache directory kept: the remembered
  KNS (OSM_CACHE_DIR/hdor-kns.conf) gives T again, the same SL2VL tables and coordinates dump;
* (a) OpenSM restarted with an empty cache and no description: identified at first sight, the
  tables of the Python reference (the same rule, ibtool/routing/hdor_first_sight.py); T itself where the
  missing element decides no coordinate and no spreading (s = 1); `ibtool verify all` passes per VL
  with the SA's path SLs;
* (a) OpenSM restarted with an empty cache and the description (`ibtool route hdor --kns-conf`
  from the complete discovery, beside opensm.conf): exactly T;
* the element back: the tables of the complete KNS again.

Also: (d) a switch and a router with new GUIDs at the places of the originals — routed, the same
routes by destination port, the description updated (was=); (e) a description of another fabric —
declined with the reason, nue (the safe fallback of the plans) brings the subnet up without a
credit loop, and `verify all` fails the run with "hdor declined: HD20: <reason>; tables by nue".

`make test` runs every fault on 4^2 and the cable on 3^3 and 4^2 s=2 (with the per-VL `verify all`
on 4^2 and 4^2 s=2); IBTOOL_FAULT_MATRIX=full runs every fault of every shape, each verified."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from hdor_walk import CONFIGURED, libhdor, rebuild, settle  # noqa: F401
from support import ibtool

from ibtool import mad
from ibtool.fabric import Fabric
from ibtool.formats import hdor_conf, ibnetdiscover, lft
from ibtool.routing import hdor, hdor_description
from ibtool.sim import faults, opensm
from ibtool.sim.live import LiveFabric
from ibtool.sim.runner import complete_top_lid

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("libhdor")]

FULL = os.environ.get("IBTOOL_FAULT_MATRIX") == "full"
SHAPES = {"k4n2": (4, 2, 1), "k3n3": (3, 3, 1), "k4n2s2": (4, 2, 2)}
KINDS = ("cable", "switch", "router")
ENGINES = ["hdor", "nue"]  # the plans' routing_engine (docs/plugin.md "The fallback")
DECLINE = re.compile(r"hdor: declined \((HD[0-9A-F]{2})\): (.+); OpenSM falls back to the next routing engine")


def kns_plan(tmp: Path, k: int, n: int, s: int, seed: int = 7) -> tuple[Path, object]:
    """`ibtool topo kns`'s plan, its GUIDs dealt anew and its switch ports shuffled."""
    plan = tmp / "plan"
    ibtool("topo", "kns", "--k", k, "--n", n, "--s", s, "--radix", 8, "--out", plan, check=0)
    f = rebuild(ibnetdiscover.read(plan / "topology.net"), seed=seed, guids=True)
    net = tmp / "shuffled.net"
    ibnetdiscover.write(f, net)
    return net, ibnetdiscover.read(net)


def targets(f, kind: str) -> str:
    """A fault of `kind` (a spec for faults.target), far from R[0..0] (the SM's router)."""
    routers = sorted(x for x in f.names if x.startswith("R["))  # the plan's names (a net file has no roles)
    if kind == "cable":
        x = f.index(routers[len(routers) // 2])
        port = next(p for p, y, _ in f.neighbors(x) if f.names[y].startswith("S["))
        return f"{f.names[x]} {port}"
    if kind == "switch":
        return sorted(x for x in f.names if x.startswith("S["))[-2]
    return routers[-2]


class Live:
    """One ibsim with OpenSM restarted on it; what OpenSM programmed, read back."""

    def __init__(self, tmp: Path, net: Path, plan):
        self.tmp, self.net, self.plan = tmp, net, plan
        self.ids = [ibnetdiscover.node_id(plan, i) for i in range(plan.num_nodes)]
        self.lf = LiveFabric(net, tmp / "live", ENGINES, timeout=180, opensm_args=["-D", "0x43"],
                             conf_options=[("qos", "TRUE"), ("sweep_interval", "1")])
        self.down: set[str] = set()
        self.n = 0

    @property
    def osm(self) -> Path:
        return self.lf.work / "osm"

    def log(self) -> str:
        return self.lf.opensm_log.read_text(errors="replace")

    def settle(self, before: int, timeout: float = 120) -> str:
        return settle(self.log, before, timeout)

    def fault(self, spec: str, up: bool = False):
        before = len(CONFIGURED.findall(self.log()))
        node, port = faults.target(self.plan, spec, "test")
        self.lf.console(f'{"ReLink" if up else "Unlink"} "{self.ids[node]}"' + (f"[{port}]" if port else ""))
        (self.down.discard if up else self.down.add)(spec)
        return self.settle(before)

    def restart(self, cache: bool, conf: Path | None = None) -> str:
        """OpenSM again: its cache directory kept or emptied; hdor.conf beside its opensm.conf or none."""
        (self.lf.work / "hdor.conf").unlink(missing_ok=True)
        if conf is not None:
            shutil.copyfile(conf, self.lf.work / "hdor.conf")
        if not cache:
            for x in (self.osm / "cache").iterdir():
                x.unlink()
        out = self.lf.restart_opensm(ENGINES)
        assert out["subnet_up"], out
        return self.settle(0)

    def now(self) -> SimpleNamespace:
        """The tables, SL2VL tables and coordinates dump OpenSM wrote, and the fabric discovered."""
        self.n += 1
        disc = self.tmp / f"disc-{self.n}.out"
        self.lf.client(["ibnetdiscover"], disc)
        return SimpleNamespace(fabric=ibnetdiscover.read(disc), disc=disc, lfts=lft.read(self.osm / "opensm-lfts.dump"),
                               sl2vl=(self.osm / "opensm-sl2vl.dump").read_text(),
                               dump=(self.osm / "opensm-hdor.dump").read_text().splitlines(), log=self.log())

    def verify(self, name: str, conf: Path | None = None) -> dict:
        """The run's files as `sim run` lays them out, and `ibtool verify all` on them."""
        d = self.tmp / name
        (d / "osm").mkdir(parents=True)
        for x in ("opensm-lfts.dump", "opensm-sl2vl.dump", "opensm-hdor.dump"):
            shutil.copyfile(self.osm / x, d / "osm" / x)
        self.lf.client(["ibnetdiscover"], d / "ibnetdiscover.out")
        self.lf.client(["dump_fts"], d / "dump_fts.out")
        found = ibnetdiscover.read(d / "ibnetdiscover.out")
        sim = SimpleNamespace(work=self.lf.scratch, env=self.lf.env)
        complete_top_lid(sim, d / "dump_fts.out", found, 120)  # dump_fts leaves out a top LID of 64, 128 ...
        mad.path_sls(sim, d / "saquery-paths.out", found, 120)  # every HCA pair's SL, in bulk
        down_links, down_nodes = set(), set()
        for spec in self.down:
            node, port = faults.target(self.plan, spec, "test")
            if port:
                down_links.add(next(li for li in range(self.plan.num_links)
                                    if (self.plan.link_a[li], self.plan.link_pa[li]) == (node, port)
                                    or (self.plan.link_b[li], self.plan.link_pb[li]) == (node, port)))
            else:
                down_nodes.add(node)
        ibnetdiscover.write(faults._expected(self.plan, down_links, down_nodes), d / "expected.net")
        if conf is not None:
            shutil.copyfile(conf, d / "hdor.conf")
        summary = {"net": "expected.net", **opensm.routing_outcome(self.log(), ENGINES).as_dict()}
        (d / "summary.json").write_text(json.dumps(summary))
        rep = json.loads(ibtool("verify", "all", d, "--json", "--permutations", "0").stdout)
        return rep


def assert_verified(rep: dict, what: str):
    bad = [c for c in rep["checks"] if not c["ok"]]
    assert rep["ok"], f"{what}: verify all: {bad[0]['name']}: {bad[0]['summary'][:300]}" if bad else rep
    dl = next(c for c in rep["checks"] if c["name"] == "routes: deadlock freedom")
    assert "path SLs + SL2VL dump" in dl["summary"] and re.search(r"\b[2-8] VLs\b", dl["summary"]), dl


@pytest.mark.parametrize("shape", list(SHAPES))
def test_degraded_from_the_start_and_restarts(shape, tmp_path):
    k, n, s = SHAPES[shape]
    net, plan = kns_plan(tmp_path, k, n, s)
    kinds = KINDS if FULL or shape == "k4n2" else ("cable",)
    verify_kinds = kinds if FULL else (("cable", "router") if shape == "k4n2" else ("cable",) if s > 1 else ())
    live = Live(tmp_path, net, plan)
    with live.lf:
        assert live.settle(0) == "hdor"
        full = live.now()
        assert "degraded" not in full.log and "first sight" not in full.log
        desc = tmp_path / "hdor.conf"  # the description of the complete discovery, with its LIDs
        ibtool("route", "hdor", "--fabric", full.disc, "--out", tmp_path / "x.lft", "--kns-conf", desc, check=0)
        state = (live.osm / "cache" / "hdor-kns.conf").read_text()
        assert hdor_conf.lines(hdor_conf.read(desc)) == [x for x in state.splitlines() if not x.startswith("#")], \
            "the engine remembers the KNS in the format ibtool writes"
        for kind in kinds:
            spec = targets(plan, kind)
            assert live.fault(spec) == "hdor"
            long = live.now()  # the long-running hdor
            assert "degraded KNS" in long.log[long.log.rfind("hdor: routed"):], kind

            # (b) a restart, the fault still there: the remembered KNS, the same routing
            if kind == "cable" or FULL:
                assert live.restart(cache=True) == "hdor"
                got = live.now()
                assert "hdor: remembered KNS read from" in got.log and not DECLINE.search(got.log)
                assert hdor.compare_tables(got.lfts, long.lfts) == [], (kind, "restart")
                assert got.sl2vl == long.sl2vl and got.dump == long.dump, (kind, "restart")

            # (a) at first sight: no remembered KNS, no description
            assert live.restart(cache=False) == "hdor", DECLINE.findall(live.log())
            got = live.now()
            line = got.log[got.log.rfind("hdor: routed"):].splitlines()[0]
            if s > 1 and kind == "switch":  # a tree that stays whole without it: a complete KNS (section 7)
                assert "identified at first sight" in line or "(pass 1; analysis" in line, line
            else:
                assert "identified at first sight" in line, line
            ref = hdor.compute(got.fabric)
            assert hdor.compare_tables(got.lfts, ref.tables) == [], (kind, "first sight vs reference")
            assert got.dump == hdor.dump_lines(ref, got.fabric), (kind, "first sight dump")
            lr = hdor.compute(got.fabric, baseline=(full.fabric, hdor.compute(full.fabric)))
            if kind == "cable":
                assert ref.coords == lr.coords, "a cable decides no coordinate"
            if ref.coords == lr.coords and s == 1:
                assert hdor.compare_tables(got.lfts, long.lfts) == [], (kind, "first sight vs long-running")
            if kind in verify_kinds:
                assert_verified(live.verify(f"{kind}-first-sight"), f"{kind} at first sight")

            # (a) with the description: exactly the long-running routing
            assert live.restart(cache=False, conf=desc) == "hdor", DECLINE.findall(live.log())
            got = live.now()
            assert "the KNS of" in got.log[got.log.rfind("hdor: routed"):].splitlines()[0]
            assert hdor.compare_tables(got.lfts, long.lfts) == [], (kind, "description vs long-running")
            assert got.sl2vl == long.sl2vl and got.dump == long.dump, (kind, "description")
            if kind in verify_kinds and FULL:
                assert_verified(live.verify(f"{kind}-description", desc), f"{kind} with the description")

            # the element back: the complete KNS's tables
            assert live.fault(spec, up=True) == "hdor"
            assert hdor.compare_tables(live.now().lfts, full.lfts) == [], (kind, "repaired")


def test_cold_start_of_a_fabric_never_complete(tmp_path):
    """`sim run` of a KNS 4^2 whose cable was never seated (a fresh ibsim): hdor at first sight,
    `verify all` per VL with the SA's path SLs; the plan's own description (`topo kns`) gives the
    same routing, since a cable decides no coordinate."""
    net, plan = kns_plan(tmp_path, 4, 2, 1)
    spec = targets(plan, "cable")
    node, port = faults.target(plan, spec, "test")
    li = next(i for i in range(plan.num_links) if (plan.link_a[i], plan.link_pa[i]) == (node, port)
              or (plan.link_b[i], plan.link_pb[i]) == (node, port))
    ibnetdiscover.write(faults._expected(plan, {li}, set()), tmp_path / "seated.net")
    conf = tmp_path / "plan.conf"
    hdor_conf.write(hdor_description.plan_description(plan), conf)
    runs = {}
    for name, extra in (("first", ["--hdor-conf", "none", "--path-sls"]), ("described", ["--hdor-conf", conf])):
        run = tmp_path / name
        ibtool("sim", "run", tmp_path / "seated.net", "--engine", ",".join(ENGINES), "--conf", "qos=TRUE",
               *extra, "--out", run, check=0)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["engine"] == "hdor" and not summary["declined"], summary
        if name == "first" or FULL:
            rep = json.loads(ibtool("verify", "all", run, "--json", "--permutations", "0").stdout)
            assert_verified(rep, name)
        runs[name] = lft.read(run / "osm" / "opensm-lfts.dump")
    log = (tmp_path / "first" / "opensm.log").read_text()
    assert "identified at first sight: 0 router(s), 0 indirect switch(es), 1 router cable(s) missing" in log
    assert hdor.compare_tables(runs["first"], runs["described"]) == []


def test_replaced_switch_and_router(tmp_path):
    """(d) New GUIDs at exactly the places of a switch and a router (a fresh ibsim, the
    description of the original): routed, the routes of the original by destination port (the
    new devices get new LIDs); the description updated with was=, and the remembered state."""
    net, plan = kns_plan(tmp_path, 4, 2, 1)
    conf = tmp_path / "plan.conf"
    hdor_conf.write(hdor_description.plan_description(plan), conf)
    new = {"S[0,1]": 0x0008F10500001230, "R[2,2]": 0x0008F10500004560}
    swapped = Fabric("replaced")  # the same devices and cables; two of them with other GUIDs
    for i in range(plan.num_nodes):
        swapped.add_node(plan.types[i], plan.names[i], plan.nports[i], plan.roles[i],
                         guid=new.get(plan.names[i], plan.guids[i]))
    for li in range(plan.num_links):
        swapped.add_link(plan.link_a[li], plan.link_b[li], plan.link_pa[li], plan.link_pb[li])
    ibnetdiscover.write(swapped, tmp_path / "replaced.net")
    routes = {}
    for name, src in (("original", net), ("replaced", tmp_path / "replaced.net")):
        run = tmp_path / name
        ibtool("sim", "run", src, "--engine", ",".join(ENGINES), "--conf", "qos=TRUE", "--hdor-conf", conf,
               "--out", run, check=0)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["engine"] == "hdor" and not summary["declined"], summary
        f = ibnetdiscover.read(run / "ibnetdiscover.out")
        t = lft.read(run / "osm" / "opensm-lfts.dump")
        own = f.lid_owners()
        routes[name] = {(f.names[f.by_guid(g)], f.names[own[lid][0]], own[lid][1]): int(row[lid])
                        for g, row in t.lft.items() for lid in own if lid < len(row)}
        assert hdor.compare_tables(t, hdor.compute(f, description=hdor_conf.read(conf)).tables) == []
    assert routes["replaced"] == routes["original"]
    log = (tmp_path / "replaced" / "opensm.log").read_text()
    for name, guid in new.items():
        assert re.search(rf"hdor: (switch|hca) 0x{guid:016x} '{re.escape(name)}' takes the place of 0x{plan.guids[plan.index(name)]:016x}", log), name
        for path in (tmp_path / "replaced" / "hdor.conf", tmp_path / "replaced" / "osm" / "cache" / "hdor-kns.conf"):
            assert f"0x{guid:016x} was=0x{plan.guids[plan.index(name)]:016x} " in path.read_text(), (name, path)
    assert "hdor.conf updated (a replaced device)" in log


def test_description_of_another_fabric_falls_back_safely(tmp_path):
    """(e) hdor.conf of another KNS: hdor declines with the reason (one INFO line, HD20), nue
    (the plans' fallback) routes it without a credit loop, and `verify all` fails the run for it."""
    net, plan = kns_plan(tmp_path, 4, 2, 1)
    other = rebuild(plan, seed=99, guids=True)
    conf = tmp_path / "other.conf"
    hdor_conf.write(hdor_description.plan_description(other), conf)
    run = tmp_path / "run"
    ibtool("sim", "run", net, "--engine", ",".join(ENGINES), "--conf", "qos=TRUE", "--hdor-conf", conf, "--out", run)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["subnet_up"] and summary["engine"] == "nue" and summary["declined"] == ["hdor"], summary
    m = DECLINE.search((run / "opensm.log").read_text())
    assert m and m.group(1) == "HD20" and m.group(2).startswith(f"the fabric is not the KNS of {run / 'hdor.conf'}: ")
    assert summary["hdor_declined"] == f"HD20: {m.group(2)}"
    v = ibtool("verify", "all", run, "--json", "--permutations", "0", check=1)
    rep = json.loads(v.stdout)
    checks = {c["name"]: c for c in rep["checks"]}
    assert checks["routes: deadlock freedom"]["ok"] and checks["routes: delivery"]["ok"]
    assert not checks["run"]["ok"] and checks["run"]["summary"] == (
        f"subnet up, tables configured by nue; FALLBACK: the first engine hdor did not route (HD20: {m.group(2)}); "
        f"a later engine of the list passes only with --accept-fallback")


def test_a_broken_description_is_an_error_and_every_pass_declines(tmp_path):
    """hdor.conf that is not of the format (a coordinate beyond k): ERR HD05 with the file and
    line, then every pass declines with the same code (HD05) to the fallback — a broken description
    is not ignored;
    fixed (OpenSM restarted) hdor routes again. The remembered state written then reads back."""
    net, plan = kns_plan(tmp_path, 3, 2, 1)
    good = tmp_path / "plan.conf"
    hdor_conf.write(hdor_description.plan_description(plan), good)
    bad = tmp_path / "bad.conf"
    lines = good.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("router "))
    lines[at] = lines[at].replace(" [0,", " [5,", 1)
    bad.write_text("\n".join(lines) + "\n")
    live = Live(tmp_path, net, plan)
    with live.lf:
        assert live.settle(0) == "hdor"
        assert live.restart(cache=False, conf=bad) == "nue"
        log = live.log()
        assert re.search(rf"ERR HD05: hdor: {re.escape(str(live.lf.work / 'hdor.conf'))} line {at + 1}: "
                         r"coordinate 5 is not below k = 3; hdor declines until it is fixed or removed", log), log[-2000:]
        m = DECLINE.search(log)
        assert m and m.group(1) == "HD05" and "is not usable: " in m.group(2)
        assert live.restart(cache=False, conf=good) == "hdor"
        state = live.osm / "cache" / "hdor-kns.conf"
        assert hdor_conf.read(state).k == 3 and len(hdor_conf.read(state).nodes) == plan.num_nodes
