"""The hdor OpenSM plugin under ibsim with Debian's real /usr/sbin/opensm (marker `ibsim`).

Every routed fabric is checked by walking the switches' tables as dump_fts read them back from the
simulated switches (tests/plugin/hdor_walk.py): every HCA pair delivered on a minimal path in one
dimension order, acyclic channel dependencies, switch LIDs reached minimally."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hdor_digests import added_since, check as check_digests, current_test, known, of_run
from support import ibtool
from hdor_walk import check_routes, fat_tree, libhdor, read_hdor_dump, rebuild  # noqa: F401
from ibtool.formats import ibnetdiscover
from ibtool.topologies.kns import kns

pytestmark = [pytest.mark.ibsim, pytest.mark.usefixtures("libhdor")]

DECLINE = re.compile(r"hdor: declined \((HD[0-9A-F]{2})\): (.+); OpenSM falls back to the next routing engine")
ROUTED = re.compile(r"hdor: routed k=(\d+) n=(\d+) s=(\d+): (\d+) switches, (\d+) LIDs, (\d+) us")
ROUTED_LINE = re.compile(r"hdor: routed k=.*")


def sim(tmp_path: Path, net: Path, engines="hdor,minhop", *extra, check=0) -> tuple[dict, str, Path]:
    run = tmp_path / "run"
    ibtool("sim", "run", net, "--engine", engines, "--out", run, *extra, check=check)
    s = json.loads((run / "summary.json").read_text())
    return s, (run / "opensm.log").read_text(errors="replace"), run


def plan(tmp_path: Path, *args) -> Path:
    out = tmp_path / "plan"
    ibtool("topo", "kns", *args, "--out", out, check=0)
    return out / "topology.net"


def assert_hdor_routed(s: dict, log: str, k: int, n: int, switches: int, hcas: int, lids: int | None = None):
    assert s["subnet_up"], s
    assert s["engine"] == "hdor" and not s["fallback"] and s["declined"] == [], s
    assert "hdor tables configured on all switches" in log
    assert not DECLINE.search(log), DECLINE.search(log).group(0)
    m = ROUTED.search(log)
    assert m, "no hdor summary line"
    assert (int(m.group(1)), int(m.group(2)), int(m.group(4))) == (k, n, switches)
    if lids is not None:
        assert int(m.group(5)) == lids
    assert s["fabric"]["hcas"] == hcas


def assert_equals_reference(run: Path):
    """The plugin's tables (OpenSM's opensm-lfts.dump) and coordinates dump equal the Python
    reference's (ibtool/routing/hdor.py) computed from the discovered fabric, entry by entry."""
    from ibtool.formats import lft
    from ibtool.routing import hdor

    fab = ibnetdiscover.read(run / "ibnetdiscover.out")
    ref = hdor.compute(fab)
    got = lft.read(run / "osm" / "opensm-lfts.dump")
    assert set(got.lft) == set(ref.tables.lft)
    assert hdor.compare_tables(got, ref.tables) == []
    assert (run / "osm" / "opensm-hdor.dump").read_text().splitlines() == hdor.dump_lines(ref, fab)
    # and both are what they were before issue 28 (tests/hdor_digests.py), for every case recorded
    # then; a case added since has no such digests (its tables are the reference's, whose are held)
    key = f"c/{current_test()}/{run.name}"
    if known(key) or not added_since(current_test()):
        check_digests(key, of_run(run / "osm"))


@pytest.mark.parametrize("args,k,n,s_,switches,hcas", [
    (["--k", "4", "--n", "2"], 4, 2, 1, 24, 16),
    (["--k", "6", "--n", "2", "--radix", "8"], 6, 2, 1, 48, 36),
    (["--k", "3", "--n", "3"], 3, 3, 1, 54, 27),
    (["--k", "4", "--n", "3", "--hcas-per-router", "2", "--multiplicity", "2"], 4, 3, 1, 112, 128),
    (["--k", "4", "--n", "2", "--s", "2", "--radix", "8"], 4, 2, 2, 48, 16),
    (["--k", "8", "--n", "2", "--s", "3", "--radix", "8"], 8, 2, 3, 256, 64),
], ids=["kns-4-2", "kns-6-2-radix8", "kns-3-3", "kns-4-3-h2-m2", "kns-4-2-s2", "kns-8-2-s3"])
def test_hdor_routes_kns(tmp_path, args, k, n, s_, switches, hcas):
    net = plan(tmp_path, *args)
    s, log, run = sim(tmp_path, net)
    assert_hdor_routed(s, log, k, n, switches, hcas, lids=switches + hcas)
    assert int(ROUTED.search(log).group(3)) == s_
    res = check_routes(run)
    assert res["hca_paths"] == hcas * (hcas - 1)
    assert res["switch_paths"] == switches * switches
    d = res["dump"]
    assert d["header"] == {"k": k, "n": n, "routers": k ** n, "switches": switches - k ** n, "hcas": hcas,
                           "lids": switches + hcas}
    # the engine's coordinates are the plan's: router R[c] got c (the plan numbers positions by
    # GUID order, as the spec does)
    for guid, c in d["router"].items():
        assert d["names"][guid] == "R[" + ",".join(map(str, c)) + "]"
    if "--multiplicity" in args:
        # parallel router-switch links: every router-dimension pair reported, spread evenly
        assert len(d["spread"]) == k ** n * n
        for guid, dim, ports in d["spread"]:
            assert len(ports) == 2 and min(ports.values()) > 0, (hex(guid), dim, ports)
            assert max(ports.values()) - min(ports.values()) <= 1, (hex(guid), dim, ports)
    else:
        assert d["spread"] == []


def test_hdor_shuffled_ports_and_node_order(tmp_path):
    """Wiring needs no port order: shuffled ports and node order give the same coordinates."""
    f = kns(k=4, n=2, hcas_per_router=2, multiplicity=2, radix=12)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain, shuffled = tmp_path / "a" / "plain.net", tmp_path / "b" / "shuffled.net"
    ibnetdiscover.write(f, plain)
    ibnetdiscover.write(rebuild(f, seed=7), shuffled)
    assert plain.read_text() != shuffled.read_text()
    s1, log1, run1 = sim(tmp_path / "a", plain)
    s2, log2, run2 = sim(tmp_path / "b", shuffled)
    assert_hdor_routed(s2, log2, 4, 2, 24, 32)
    res = check_routes(run2)
    assert res["hca_paths"] == 32 * 31
    d1 = read_hdor_dump(run1 / "osm" / "opensm-hdor.dump")
    d2 = res["dump"]
    for key in ("header", "router", "switch", "hca"):
        assert d1[key] == d2[key], key
    # the ports moved, so the spread lines name other ports, but every pair is still reported
    assert len(d2["spread"]) == 16 * 2
    assert {(g, dim) for g, dim, _ in d1["spread"]} == {(g, dim) for g, dim, _ in d2["spread"]}
    assert_equals_reference(run2)


def test_hdor_lmc(tmp_path):
    """Every LID of an LMC range is routed (lmc 1: two LIDs per HCA port)."""
    net = plan(tmp_path, "--k", "3", "--n", "2")
    s, log, run = sim(tmp_path, net, "hdor,minhop", "--conf", "lmc=1")
    assert_hdor_routed(s, log, 3, 2, 15, 9)
    res = check_routes(run)
    assert res["hca_paths"] == 2 * 9 * 8
    assert_equals_reference(run)


def test_fat_tree_declined_falls_back_to_minhop(tmp_path):
    net = tmp_path / "fattree.net"
    ibnetdiscover.write(fat_tree(), net)
    s, log, run = sim(tmp_path, net, check=1)  # a fallback: the first engine did not route (issue 36)
    assert s["subnet_up"] and s["engine"] == "minhop" and s["fallback"] and not s["ok"], s
    assert "hdor" in s["declined"], s
    m = DECLINE.search(log)
    assert m, "no decline line from hdor"
    assert m.group(1) == "HD10" and "4 routers, but k^n = 4^2" in m.group(2)
    assert "not identified at first sight (the indirect networks of switches" in m.group(2)  # two spines share leaves
    line = log[log.rfind("\n", 0, m.start()) + 1:m.start()]
    assert " 0x02 " in line and "ERR" not in line  # one INFO line, not an error
    assert len(DECLINE.findall(log)) == log.count("building routing with 'hdor'")  # one line a pass
    assert not (run / "osm" / "opensm-hdor.dump").exists()
    assert not ROUTED.search(log)


def test_kns_with_a_missing_router_link_identified_at_first_sight(tmp_path):
    """docs/hdor.md section 7: a missing router-switch cable at the first sweep (no description, no
    remembered state) is identified and routed; the tables equal the Python reference's."""
    f = kns(k=4, n=2)
    g = rebuild(f, drop_link=lambda a, b: {a, b} == {"R[2,1]", "S[0,2]"})
    assert g.num_links == f.num_links - 1
    net = tmp_path / "broken.net"
    ibnetdiscover.write(g, net)
    s, log, run = sim(tmp_path, net, "hdor,minhop", "--conf", "qos=TRUE")
    assert s["subnet_up"] and s["engine"] == "hdor" and not s["declined"], s
    assert "identified at first sight: 0 router(s), 0 indirect switch(es), 1 router cable(s) missing" in \
        ROUTED.search(log).string[ROUTED.search(log).start():].splitlines()[0]
    assert_equals_reference(run)


def test_kns_with_a_missing_router_identified_at_first_sight(tmp_path):
    f = kns(k=3, n=2)
    g = rebuild(f, drop_link=lambda a, b: "R[1,1]" in (a, b))  # router and its HCA cut off
    net = tmp_path / "norouter.net"
    ibnetdiscover.write(g, net)
    s, log, run = sim(tmp_path, net, "hdor,minhop", "--conf", "qos=TRUE")
    assert s["engine"] == "hdor" and not s["declined"], s
    assert "identified at first sight: 1 router(s)" in log
    assert_equals_reference(run)
    dump = (run / "osm" / "opensm-hdor.dump").read_text()
    assert "'R[1,1]'" not in dump and "routers=8 " in dump  # the phantom is not dumped


def test_hdor_alone_declining_leaves_subnet_to_default(tmp_path):
    """routing_engine hdor alone on a fat tree: OpenSM's default minhop still brings it up."""
    net = tmp_path / "fattree.net"
    ibnetdiscover.write(fat_tree(leaves=3, spines=3, hcas=1), net)
    s, log, run = sim(tmp_path, net, "hdor", check=1)  # the runner reports the fallback
    assert s["subnet_up"] and s["engine"] == "minhop" and s["fallback"], s
    assert DECLINE.search(log)


@pytest.mark.parametrize("args", [
    ["--k", "4", "--n", "2"],
    ["--k", "6", "--n", "2", "--radix", "8"],
    ["--k", "3", "--n", "3"],
    ["--k", "4", "--n", "3", "--hcas-per-router", "2", "--multiplicity", "2"],
    ["--k", "4", "--n", "2", "--s", "2", "--radix", "8"],
    ["--k", "8", "--n", "2", "--s", "3", "--radix", "8"],
], ids=["kns-4-2", "kns-6-2-radix8", "kns-3-3", "kns-4-3-h2-m2", "kns-4-2-s2", "kns-8-2-s3"])
def test_c_tables_equal_python_reference(tmp_path, args):
    net = plan(tmp_path, *args)
    s, log, run = sim(tmp_path, net)
    assert s["engine"] == "hdor" and not s["fallback"]
    assert_equals_reference(run)


def lid_matrix(path: Path) -> dict:
    """opensm-lid-matrix.dump -> {(switch guid, target port guid): hops per port}"""
    out, sw = {}, None
    for ln in path.read_text().splitlines():
        if ln.startswith("Switch: guid "):
            sw = int(ln.split()[2], 16)
        elif ln.startswith("0x") and "# portguid" in ln:
            hops, pg = ln.split(":", 1)[1].split("# portguid")
            out[(sw, int(pg, 16))] = hops.split()
    return out


@pytest.mark.parametrize("args", [["--k", "4", "--n", "2", "--multiplicity", "2"], ["--k", "3", "--n", "3"],
                                  ["--k", "4", "--n", "2", "--s", "2", "--radix", "8"],
                                  ["--k", "8", "--n", "2", "--s", "3", "--radix", "8"], ["router-router"]],
                         ids=["kns-4-2-m2", "kns-3-3", "kns-4-2-s2", "kns-8-2-s3", "kns-3-2-router-router"])
def test_own_hop_matrices_equal_opensm_min_hop(tmp_path, args):
    """hdor fills OpenSM's hop matrices itself (from the coordinates when s = 1, by BFS when s > 1)
    and returns 0 from build_lid_matrices; they must equal the matrices OpenSM's own min-hop
    relaxation builds (HDOR_OPENSM_HOPS=1 makes hdor return 1 and leave them to OpenSM), port by
    port."""
    if args == ["router-router"]:  # a KNS with a stray router-router cable (BFS, not the closed form)
        f, what = mutate(kns(k=3, n=2, radix=6), 4)
        assert what.startswith("add R[") and "-R[" in what
        net = tmp_path / "rr.net"
        ibnetdiscover.write(f, net)
    else:
        net = plan(tmp_path, *args)
    (tmp_path / "own").mkdir()
    _, _, run1 = sim(tmp_path / "own", net)
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    run2 = ref_dir / "run"
    ibtool("sim", "run", net, "--engine", "hdor,minhop", "--out", run2, "--no-discover",
           env={"HDOR_OPENSM_HOPS": "1"}, check=0)
    log1 = (run1 / "opensm.log").read_text()
    log2 = (run2 / "opensm.log").read_text()
    assert "own hop matrices" in log1 and "OpenSM's hop matrices" in log2
    # the summary line's phases (docs/plugin.md "Log lines"); OpenSM's own hop matrices fall between
    # hdor's callbacks
    line1, line2 = ROUTED_LINE.search(log1).group(0), ROUTED_LINE.search(log2).group(0)
    # (the plan's hdor.conf: the first pass routes the described KNS, "analysis and routing")
    assert re.search(r"; analysis (and routing )?\d+ us: remembered KNS \d+ us, .+; own hop matrices \d+ us, "
                     r".*LFT fill \d+ us, dump \d+ us.*; peak allocation [\d.]+ MiB\)$", line1), line1
    assert re.search(r"OpenSM's hop matrices \d+ us, OpenSM between the callbacks \d+ us", line2), line2
    m1, m2 = lid_matrix(run1 / "osm" / "opensm-lid-matrix.dump"), lid_matrix(run2 / "osm" / "opensm-lid-matrix.dump")
    assert len(m1) == len(m2) > 0
    assert m1 == m2
    # and the tables do not depend on who built the matrices
    assert (run1 / "osm" / "opensm-lfts.dump").read_text() == (run2 / "osm" / "opensm-lfts.dump").read_text()


def mutate(f, seed: int):
    """A KNS with random damage: drop a cable, add a cable between free ports of two random
    switches, or move a cable end to another switch's free port."""
    import random

    from hdor_walk import SWITCH

    rnd = random.Random(seed)
    g = rebuild(f)
    sws = [i for i in range(g.num_nodes) if g.types[i] == SWITCH]
    op = ("drop", "add", "move")[seed % 3]

    def free_port(node):
        used = {p for p, _, _ in g.neighbors(node)}
        free = [p for p in range(1, g.nports[node] + 1) if p not in used]
        return rnd.choice(free) if free else None

    if op == "drop":
        li = rnd.randrange(g.num_links)
        names = {g.names[g.link_a[li]], g.names[g.link_b[li]]}
        return rebuild(g, drop_link=lambda a, b: {a, b} == names), f"drop {sorted(names)}"
    a, b = rnd.sample(sws, 2)
    if op == "add":
        pa, pb = free_port(a), free_port(b)
        g.add_link(a, b, pa, pb)
        return g, f"add {g.names[a]}[{pa}]-{g.names[b]}[{pb}]"
    li = rnd.randrange(g.num_links)
    x, px = g.link_a[li], g.link_pa[li]
    y = b if b != x else a
    names = {g.names[g.link_a[li]], g.names[g.link_b[li]]}
    h = rebuild(g, drop_link=lambda u, v: {u, v} == names)
    py = free_port(h.index(g.names[y]))
    h.add_link(h.index(g.names[x]), h.index(g.names[y]), px, py)
    return h, f"move {sorted(names)} -> {g.names[x]}[{px}]-{g.names[y]}[{py}]"


@pytest.mark.parametrize("seed", range(9))
def test_damaged_kns_never_crashes(tmp_path, seed):
    """Random damage: OpenSM comes up either with hdor (and then the tables equal the Python
    reference's; a complete KNS's routes are also walked: a stray router-router cable is ignored,
    routes are minimal without it) or with minhop after hdor's decline line, and the reference
    declines it too; never a crash or a silent failure."""
    from ibtool.routing import hdor

    f, what = mutate(kns(k=3, n=2, radix=6), seed)
    net = tmp_path / "damaged.net"
    ibnetdiscover.write(f, net)
    s, log, run = sim(tmp_path, net, "hdor,minhop", "--conf", "qos=TRUE", check=None)
    # OpenSM ran on as the SA for the path SLs (None: alive to the end) or exited cleanly
    assert s["opensm_exit"] in (0, None) and not s["timed_out"] and s["subnet_up"], (what, s)
    assert what.startswith(("drop", "add", "move")[seed % 3])
    assert s["engine"] in ("hdor", "minhop"), (what, s)
    if s["engine"] == "hdor":
        assert ROUTED.search(log), what
        if "degraded KNS" not in log:
            check_routes(run)
        assert_equals_reference(run)
    else:
        assert DECLINE.search(log), (what, "declined without a reason line")
        with pytest.raises(hdor.NotFamily):  # the Python reference declines it too
            hdor.compute(ibnetdiscover.read(run / "ibnetdiscover.out"))


def test_dual_port_hca_to_two_routers(tmp_path):
    """An HCA cabled to two routers: each port's LID is routed to its own router (hdor.md section
    3: the HCA's coordinates are those of the router on its lowest-numbered port)."""
    from ibtool.fabric import Fabric

    f = kns(k=3, n=2)
    g = Fabric("dual")
    g.params = dict(f.params)
    for i in range(f.num_nodes):
        ports = 2 if f.names[i] == "H[1,1]" else f.nports[i]
        g.add_node(f.types[i], f.names[i], ports, f.roles[i], dict(f.labels[i]), guid=f.guids[i])
    for li in range(f.num_links):
        g.add_link(f.link_a[li], f.link_b[li], f.link_pa[li], f.link_pb[li])
    g.add_link(g.index("H[1,1]"), g.index("R[2,0]"), 2, 30)
    net = tmp_path / "dual.net"
    ibnetdiscover.write(g, net)
    s, log, run = sim(tmp_path, net)
    assert_hdor_routed(s, log, 3, 2, 15, 9, lids=15 + 10)
    res = check_routes(run)
    assert res["hca_paths"] == 10 * 9  # every ordered pair of HCA ports (H[1,1] port 1 to port 2 too)
    h = {d: c for guid, c in res["dump"]["hca"].items() for d in [res["dump"]["names"][guid]]}
    assert h["H[1,1]"] == (1, 1)
    assert_equals_reference(run)
