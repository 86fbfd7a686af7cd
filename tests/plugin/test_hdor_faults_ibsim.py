"""The fault-tolerant hdor C engine on real ibsim + OpenSM (docs/hdor.md section 6; marker `ibsim`).

One OpenSM (daemon, `qos TRUE` so that update_sl2vl is called) keeps running while cables,
indirect switches and routers go down through ibsim's console (Unlink) and come back (ReLink). At
every step the tables OpenSM programmed (opensm-lfts.dump), the coordinates dump, the SL2VL tables
(opensm-sl2vl.dump) and the path SLs the SA answers (saquery PathRecords) must equal the Python
reference's, `hdor.compute(now, baseline=(step 0, its result), vls=8)`, computed from the step's
ibnetdiscover; the engine is hdor at every step (no fallback) and restoring gives the original
tables back."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hdor_digests import check as check_digests, current_test, of_run
from hdor_walk import CONFIGURED, libhdor, settle  # noqa: F401
from support import ibtool

from ibtool.formats import ibnetdiscover, lft, pathrecord, sl2vl
from ibtool.routing import hdor
from ibtool.sim import faults
from ibtool.sim.live import LiveFabric
from ibtool.mad import path_sls

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("libhdor")]

ROUTED = re.compile(r"hdor: routed k=\d+ n=\d+ s=\d+: .*")
DECLINE = re.compile(r"hdor: declined \(HD[0-9A-F]{2}\): (.+?); OpenSM falls back")


class Scenario:
    """A live KNS under hdor; `step()` applies console commands and checks the new routing."""

    def __init__(self, tmp: Path, *kns_args: str, conf=()):
        out = tmp / "plan"
        ibtool("topo", "kns", *kns_args, "--out", out, check=0)
        self.net = out / "topology.net"
        self.plan = ibnetdiscover.read(self.net)
        self.ids = [ibnetdiscover.node_id(self.plan, i) for i in range(self.plan.num_nodes)]
        self.tmp = tmp
        self.lf = LiveFabric(self.net, tmp / "live", ["hdor"], timeout=180,
                             conf_options=[("qos", "TRUE"), ("sweep_interval", "1"), *conf],
                             opensm_args=["-D", "0x43"])
        self.n = 0

    def __enter__(self):
        self.lf.__enter__()
        assert self.lf.outcome.get("engine") == "hdor", self.lf.outcome
        self.settle(0)
        self.fab0 = self.discover()
        self.base = hdor.compute(self.fab0)
        self.tables0 = lft.read(self.osm / "opensm-lfts.dump")
        # a complete KNS with `qos TRUE` (and the SL hooks set): the tables of docs/hdor.md section 4
        assert hdor.compare_tables(self.tables0, self.base.tables) == []
        assert (self.osm / "opensm-hdor.dump").read_text().splitlines() == hdor.dump_lines(self.base, self.fab0)
        self.digests()
        return self

    def __exit__(self, *exc):
        self.lf.__exit__(*exc)

    @property
    def osm(self) -> Path:
        return self.lf.work / "osm"

    def log(self) -> str:
        return self.lf.opensm_log.read_text(errors="replace")

    def settle(self, before: int, timeout: float = 120):
        """Wait until OpenSM configured tables again (more than `before` times), reached SUBNET UP
        (the dumps are written just before) and stayed quiet for 3 s."""
        settle(self.log, before, timeout)

    def discover(self):
        self.n += 1
        out = self.tmp / f"step-{self.n}.ibnetdiscover"
        self.lf.client(["ibnetdiscover"], out)
        return ibnetdiscover.read(out)

    def target(self, spec: str) -> str:
        node, port = faults.target(self.plan, spec, "test")
        return f'"{self.ids[node]}"' + (f"[{port}]" if port else "")

    def apply(self, down=(), up=()):
        before = len(CONFIGURED.findall(self.log()))
        for spec in down:
            self.lf.console(f"Unlink {self.target(spec)}")
        for spec in up:
            self.lf.console(f"ReLink {self.target(spec)}")
        self.settle(before)

    def step(self, down=(), up=(), sls=True) -> hdor.HdorResult:
        self.apply(down, up)
        text = self.log()
        engines = CONFIGURED.findall(text)
        assert engines[-1] == "hdor", (engines[-5:], DECLINE.findall(text)[-3:])
        fab = self.discover()
        ref = hdor.compute(fab, baseline=(self.fab0, self.base), vls=8)
        got = lft.read(self.osm / "opensm-lfts.dump")
        assert hdor.compare_tables(got, ref.tables) == []
        assert (self.osm / "opensm-hdor.dump").read_text().splitlines() == hdor.dump_lines(ref, fab)
        self.check_sl2vl(ref)
        if sls:
            self.check_path_sls(ref, fab)
        self.digests()
        return ref

    def digests(self):
        """This step's tables, dump and SL2VL rows are what they were before issue 28."""
        check_digests(f"c/{current_test()}#{self.n}", of_run(self.osm))

    def check_sl2vl(self, ref: hdor.HdorResult):
        """Every SL2VL table OpenSM programmed is the reference's (rows it does not list: VL 0;
        on a complete KNS, VL 0 for SL 0, the only SL used)."""
        got = sl2vl.read(self.osm / "opensm-sl2vl.dump")
        assert got, "empty opensm-sl2vl.dump"
        want = ref.sl2vl or {}
        for g, rows in got.items():
            for (i, o), vls in rows.items():
                if ref.sl2vl is None:
                    assert vls[0] == 0, (hex(g), i, o, vls)
                elif got.kind[g] == "Switch":
                    assert tuple(vls) == tuple(want.get(g, {}).get((i, o), (0,) * 16)), (hex(g), i, o, vls)
                else:
                    assert tuple(vls) == (0,) * 16, (hex(g), i, o, vls)
        for g, rows in want.items():
            for (i, o) in rows:
                assert (i, o) in got.get(g, {}), f"SL2VL row {g:#x} {i}->{o} not programmed"

    def check_path_sls(self, ref: hdor.HdorResult, fab):
        out = self.tmp / f"step-{self.n}.saquery"
        path_sls(SimpleNamespace(work=self.lf.scratch, env=self.lf.env), out, fab, 120)
        got = pathrecord.read(out)
        want = ref.path_sls
        assert got, "no PathRecords"
        for pair, sl in got.items():
            if want is None:
                assert sl == 0, (pair, sl)
            elif pair in want:
                assert sl == want[pair], (pair, sl, want[pair])
        if want:  # saquery asked for every pair of HCA port base LIDs
            base = {lid for (node, _), (lid, _) in fab.port_lids.items() if not fab.is_switch(node)}
            missing = [p for p in want if p not in got and p[0] in base and p[1] in base]
            assert not missing, f"{len(missing)} pairs without a PathRecord, e.g. {missing[:3]}"

    def same_as_start(self):
        got = lft.read(self.osm / "opensm-lfts.dump")
        assert hdor.compare_tables(got, self.tables0) == []
        assert hdor.compare_tables(got, self.base.tables) == []


def router_links(plan, router: str) -> list[str]:
    node = plan.index(router)
    return [f"{router} {port}" for port, peer, _ in plan.neighbors(node) if plan.types[peer] == 2]


def test_kns_4_2_link_switch_router_failures_and_restore(tmp_path):
    with Scenario(tmp_path, "--k", "4", "--n", "2") as sc:
        links = router_links(sc.plan, "R[0,0]")
        r = sc.step(down=[links[0]])
        assert r.vls == 2 and r.extra_hops["detoured"] > 0
        assert ROUTED.findall(sc.log())[-1].count("degraded KNS")
        sc.step(up=[links[0]])
        sc.same_as_start()
        sc.step(down=["S[0,1]"])  # an indirect switch: a whole line loses its dimension-0 switch
        sc.step(down=[router_links(sc.plan, "R[2,3]")[1]])  # and a cable elsewhere
        sc.step(up=["S[0,1]", router_links(sc.plan, "R[2,3]")[1]])
        sc.same_as_start()
        sc.step(down=["R[1,2]"])  # a router: its HCA is gone, the rest stays routed
        sc.step(up=["R[1,2]"])
        sc.same_as_start()


def test_kns_3_3_failures_and_random_multi_fault(tmp_path):
    with Scenario(tmp_path, "--k", "3", "--n", "3") as sc:
        cable = router_links(sc.plan, "R[1,1,1]")[2]
        switch = sorted(n for n in sc.plan.names if n.startswith("S["))[7]
        sc.step(down=[cable], sls=False)
        sc.step(down=[switch], sls=False)
        sc.step(up=[cable, switch], sls=False)
        sc.same_as_start()
        # a random multi-fault step: 4 cables/switches at once (faults.random_scenario, seed 3)
        more = [spec for st in faults.random_scenario(sc.plan, 4, seed=3).steps for spec in st.down]
        r = sc.step(down=more)
        assert r.vls >= 2 and r.faults
        sc.step(up=more, sls=False)
        sc.same_as_start()
        sc.step(down=["R[2,0,1]"], sls=False)  # a router
        sc.step(up=["R[2,0,1]"], sls=False)
        sc.same_as_start()


def test_kns_4_2_s2_tree_failures(tmp_path):
    with Scenario(tmp_path, "--k", "4", "--n", "2", "--s", "2", "--radix", "8") as sc:
        sws = [sc.plan.names[i] for i in range(sc.plan.num_nodes)
               if sc.plan.types[i] == 2 and not sc.plan.names[i].startswith("R")]
        links = router_links(sc.plan, "R[0,1]")
        sc.step(down=[links[0]], sls=False)
        sc.step(down=[sorted(sws)[5]])  # a switch inside one dimension's tree
        sc.step(up=[links[0], sorted(sws)[5]], sls=False)
        sc.same_as_start()
        sc.step(down=["R[3,2]"], sls=False)  # a router
        more = [spec for st in faults.random_scenario(sc.plan, 3, seed=5).steps for spec in st.down]
        sc.step(down=more)  # and a random multi-fault step on top
        sc.step(up=["R[3,2]", *more], sls=False)
        sc.same_as_start()


def test_kns_8_2_remembered_tables_span_whole_tiles_and_a_remainder(tmp_path):
    """KNS 8^2: 80 switches and 145 LIDs. The engine remembers the fault-free tables LID-major,
    moved from OpenSM's switch-major ones by tiles of 64 switches x 64 LIDs (8 x 8 bytes at a
    time), so here by whole tiles and by the remainder's entry-by-entry path; every degraded step
    keeps its unaffected entries from them, and so equals the reference only if both are right."""
    with Scenario(tmp_path, "--k", "8", "--n", "2") as sc:
        assert (sc.plan.types.count(2), sc.base.lids) == (80, 144)
        down = [router_links(sc.plan, "R[5,6]")[0], router_links(sc.plan, "R[0,7]")[1], "S[1,3]"]
        r = sc.step(down=down, sls=False)
        assert r.vls >= 2 and r.extra_hops["detoured"] > 0
        sc.step(up=down, sls=False)
        sc.same_as_start()


def test_too_few_vls_declined_with_reason_then_hdor_again(tmp_path):
    """max_op_vls 1: the ports offer one VL, a cable failure needs 2: hdor declines with that reason
    rather than program a credit loop (OpenSM falls back), and routes again once it is restored."""
    with Scenario(tmp_path, "--k", "3", "--n", "2", conf=[("max_op_vls", "1")]) as sc:
        cable = router_links(sc.plan, "R[1,1]")[0]
        sc.apply(down=[cable])
        text = sc.log()
        assert CONFIGURED.findall(text)[-1] == "minhop"
        assert DECLINE.findall(text)[-1] == "the failures need 2 VLs, the ports offer 1"
        sc.step(up=[cable])
        sc.same_as_start()


def test_degraded_hop_matrices_equal_opensm_min_hop(tmp_path, monkeypatch):
    """On a degraded pass hdor fills OpenSM's hop matrices by BFS over the working links; they equal
    the ones OpenSM's min-hop relaxation builds (HDOR_OPENSM_HOPS=1), port by port, and the
    tables do not depend on who built them."""
    from test_hdor_ibsim import lid_matrix

    mats, lfts = [], []
    for who in ("own", "OpenSM's"):
        if who != "own":
            monkeypatch.setenv("HDOR_OPENSM_HOPS", "1")
        (tmp_path / who).mkdir()
        with Scenario(tmp_path / who, "--k", "4", "--n", "2", "--s", "2", "--radix", "8") as sc:
            sc.step(down=[router_links(sc.plan, "R[0,1]")[0], "S[0,0,1,1]"], sls=False)
            line = ROUTED.findall(sc.log())[-1]
            assert "degraded KNS" in line and f"{who} hop matrices" in line
            assert re.search(r"analysis and routing \d+ us: .*structure \d+ us, affected entries \d+ us, detours \d+ us, "
                             r"SL/VL \d+ us; .*LFT fill \d+ us, dump \d+ us.*; peak allocation [\d.]+ MiB\)$", line), line
            mats.append(lid_matrix(sc.osm / "opensm-lid-matrix.dump"))
            lfts.append((sc.osm / "opensm-lfts.dump").read_text())
    assert len(mats[0]) > 0 and mats[0] == mats[1]
    assert lfts[0] == lfts[1]


def test_parallel_links_and_lmc(tmp_path):
    """Parallel router-switch links, two HCAs per router and LMC 1: one of two parallel cables down
    still needs one VL (the other one carries the detour, spread as in section 4); then a switch."""
    with Scenario(tmp_path, "--k", "3", "--n", "2", "--multiplicity", "2", "--hcas-per-router", "2",
                  conf=[("lmc", "1")]) as sc:
        assert sc.base.lids > 15 + 18  # LMC 1: 9 routers + 6 switches, two LIDs per HCA port
        cable = router_links(sc.plan, "R[2,1]")[0]
        r = sc.step(down=[cable])
        assert r.vls == 1 and r.faults["links"]
        r = sc.step(down=["S[1,0]"])
        assert r.vls == 2
        sc.step(up=[cable, "S[1,0]"], sls=False)
        sc.same_as_start()
