"""verify routes: the numpy tracer against a plain per-pair walker, the deadlock check against a
plain DFS, and real OpenSM tables from ibsim (hdor, minhop, updn, ftree) against ibdmchk."""

import json
import shutil
import subprocess

import numpy as np
import pytest

from support import FIXTURES, FULL, ibtool
from verify_fabrics import fat_tree, torus_2d
from ibtool.fabric import CA, SWITCH
from ibtool.formats import ibnetdiscover, lft
from ibtool.routing import hdor
from ibtool.routing.lids import assign_lids
from ibtool.topologies.kns import kns
from ibtool.verify import deadlock, routes


def routed(fabric):
    assign_lids(fabric)
    return hdor.compute(fabric)


def mixed_order(f, ref) -> lft.Tables:
    """hdor's tables, except that the routers with odd coordinate sums cross dimension 1 first (YX)
    to routers and HCAs that differ in both coordinates, while the rest go XY."""
    t = lft.Tables(lft={g: a.copy() for g, a in ref.tables.lft.items()}, names=dict(ref.tables.names))
    owners = f.lid_owners()
    for w in range(f.num_nodes):
        c = ref.coords.get(w)
        if ref.role[w] != "router" or sum(c) % 2 == 0:
            continue
        for lid, (node, _) in owners.items():
            if ref.role[node] in ("router", "hca") and node != w:
                tc = ref.coords[node]
                if tc[0] != c[0] and tc[1] != c[1]:  # differs in both: take dimension 1 (port 3) first
                    t.lft[f.guids[w]][lid] = 3
    return t


def naive(f, tables):
    """Walk every (source port, LID) pair one hop at a time in plain Python."""
    owners = f.lid_owners()
    counts = {}
    sources = [(i, 0) for i in range(f.num_nodes) if f.types[i] == SWITCH]
    sources += [k for k in f.port_lids if f.types[k[0]] == CA]
    for src in sources:
        for lid, dst in owners.items():
            if dst == src:
                continue
            node, port = src
            if f.types[node] == CA:
                node = f.peer(node, port)[0]
            seen, status = set(), None
            while status is None:
                if node in seen:
                    status = "loop"
                    break
                seen.add(node)
                arr = tables.lft[f.guids[node]]
                out = int(arr[lid]) if lid < len(arr) else 255
                if out == 255:
                    status = "black hole (no LFT entry)"
                elif out == 0:
                    status = "delivered" if dst == (node, 0) else "delivered to the wrong port"
                else:
                    p = f.peer(node, out) if out <= f.nports[node] else None
                    if p is None:
                        status = "black hole (port not cabled or not present)"
                    elif f.types[p[0]] == CA:
                        status = "delivered" if p == dst else "delivered to the wrong port"
                    else:
                        node = p[0]
            counts[status] = counts.get(status, 0) + 1
    return counts


def test_clean_hdor_tables_pass_every_check():
    f = kns(3, 3, hcas_per_router=2, radix=8)
    ref = routed(f)
    r = routes.verify(f, ref.tables, expect="hdor", reference=ref)
    assert r["ok"] and r["delivered"] == r["pairs"] == naive(f, ref.tables)["delivered"]
    assert r["deadlock"]["free"] and r["minimal"] and set(r["extra_hops_histogram"]) == {"0"}
    assert r["expect"]["tables_equal"] and r["expect"]["dimension_order"]["violations"] == 0
    assert r["expect"]["dimension_order"]["checked_pairs"] > 0


def test_corrupted_tables_counted_like_a_plain_walker():
    f = kns(4, 2, radix=8)
    ref = routed(f)
    t = ref.tables
    owners = f.lid_owners()
    lid_of = {f.names[n]: lid for lid, (n, p) in owners.items()}
    g = lambda name: f.guids[f.index(name)]  # noqa: E731
    t.lft[g("R[0,0]")][lid_of["H[3,3]"]] = 255  # black hole
    # loop: R[1,1] and its dimension-0 switch send H[2,2]'s LID back and forth
    r11 = f.index("R[1,1]")
    port, sw, swport = f.neighbors(r11)[1]
    t.lft[f.guids[r11]][lid_of["H[2,2]"]] = port
    t.lft[f.guids[sw]][lid_of["H[2,2]"]] = swport
    t.lft[g("R[3,0]")][lid_of["H[0,3]"]] = 1  # to its own HCA: the wrong port
    t.lft[g("R[2,1]")][lid_of["H[1,2]"]] = 7  # an uncabled port
    r = routes.verify(f, t)
    want = naive(f, t)
    assert r["delivered"] == want["delivered"]
    assert {k: v for k, v in r["undelivered"].items() if v} == {k: v for k, v in want.items() if k != "delivered"}
    assert all(r["undelivered"][k] > 0 for k in want if k != "delivered")
    assert not r["ok"]
    ex = r["undelivered_examples"]["loop"][0]
    assert "R[1,1]" in ex and "(again)" in ex


def test_find_cycle_on_small_graphs():
    n = 10
    enc = lambda edges: np.asarray(sorted(a * n + b for a, b in edges), dtype=np.int64)  # noqa: E731
    assert deadlock.find_cycle(enc([(0, 1), (1, 2), (2, 3), (0, 3)]), n) is None
    cyc = deadlock.find_cycle(enc([(0, 1), (1, 2), (2, 3), (3, 1), (3, 4), (5, 0)]), n)
    assert sorted(cyc) == [1, 2, 3]
    assert deadlock.find_cycle(enc([(7, 7)]), n) == [7]


def _cycle_is_real(f, cycle):
    """Each printed channel 'A[p] -> B[q] (VLv)' is a link, and each starts where the last ended."""
    ends = []
    for c in cycle:
        a, b = c.rsplit(" (VL", 1)[0].split(" -> ")
        an, ap = a.rsplit("[", 1)
        bn, bp = b.rsplit("[", 1)
        assert f.peer(f.index(an), int(ap[:-1])) == (f.index(bn), int(bp[:-1]))
        ends.append((an, bn))
    for (a1, b1), (a2, b2) in zip(ends, ends[1:] + ends[:1]):
        assert b1 == a2


def test_mixed_dimension_order_has_a_real_cycle():
    """Minimal routes, but half the routers cross dimension 1 first (YX) while the rest go XY:
    every pair is delivered on a shortest path, yet the channel dependency graph has a cycle."""
    f = kns(3, 2, radix=8)
    ref = routed(f)
    assert routes.verify(f, ref.tables)["deadlock"]["free"]
    t = mixed_order(f, ref)
    r = routes.verify(f, t, expect="hdor", reference=ref)
    assert r["delivered"] == r["pairs"] == naive(f, t)["delivered"]
    assert r["minimal"]
    assert not r["deadlock"]["free"]
    _cycle_is_real(f, r["deadlock"]["cycle"])
    assert r["expect"]["dimension_order"]["violations"] > 0 and not r["expect"]["tables_equal"]


# ------------------------------------------------------------------------------ ibsim

def _run(tmp_path, name, net, engine, *conf):
    out = tmp_path / name
    args = ["sim", "run", net, "--engine", engine, "--out", out]
    for c in conf:
        args += ["--conf", c]
    ibtool(*args, check=0)
    return out


def _plan(tmp_path, name, *args):
    out = tmp_path / name
    ibtool("topo", "kns", *args, "--out", out, check=0)
    return out


def _ibdmchk(run, tmp_path):
    exe = shutil.which("ibdmchk")
    assert exe, "ibdmchk missing: apt-get install ibutils (scripts/debian-packages.txt)"
    osm = run / "osm"
    p = subprocess.run([exe, "-s", osm / "opensm-subnet.lst", "-f", osm / "opensm.fdbs", "-m", osm / "opensm.mcfdbs"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode in (0, 1, 139, -11), p.stderr  # it always crashes (SIGSEGV) after its verdict
    text = p.stdout + p.stderr
    assert "credit loop" in text.lower() or "Credit Loop" in text, text[-2000:]
    return text


def _ibdmchk_loop(text: str) -> bool:
    """ibdmchk's verdict: 'Found credit loop on: ...' or '-I- no credit loops found'."""
    found, none = "Found credit loop" in text, "no credit loops found" in text
    assert found != none, "no credit loop verdict in ibdmchk output:\n" + text[-2000:]
    return found


@pytest.mark.ibsim
@pytest.mark.parametrize("args", [("--k", "3", "--n", "3"), ("--k", "3", "--n", "2", "--s", "2"),
                                  ("--k", "4", "--n", "2", "--hcas-per-router", "2", "--multiplicity", "2")])
def test_kns_hdor_passes_minhop_fails(tmp_path, args):
    plan = _plan(tmp_path, "plan", *args, "--radix", "8")
    good = _run(tmp_path, "hdor", plan / "topology.net", "hdor")
    v = ibtool("verify", "all", good, "--json")
    rep = json.loads(v.stdout)
    assert v.returncode == 0, v.stdout[-3000:]
    assert rep["ok"] and all(c["ok"] for c in rep["checks"])
    names = {c["name"] for c in rep["checks"]}
    assert {"topology", "coords: dump vs reference", "coords: fabric vs plan", "routes: delivery",
            "routes: deadlock freedom", "routes: hdor tables", "routes: dimension order", "run"} <= names
    assert rep["routes"]["expect"]["dimension_order"]["checked_pairs"] > 0

    bad = _run(tmp_path, "minhop", plan / "topology.net", "minhop")
    v = ibtool("verify", "routes", "--fabric", bad / "ibnetdiscover.out", "--lfts", bad / "dump_fts.out",
               "--expect", "hdor", "--json")
    assert v.returncode == 1
    rep = json.loads(v.stdout)
    checks = {c["name"]: c["ok"] for c in rep["checks"]}
    assert checks["routes: delivery"] and not checks["routes: dimension order"]
    assert not checks["routes: deadlock freedom"] and not checks["routes: hdor tables"]
    f = ibnetdiscover.read(bad / "ibnetdiscover.out")
    _cycle_is_real(f, rep["routes"]["deadlock"]["cycle"])
    human = ibtool("verify", "routes", "--fabric", bad / "ibnetdiscover.out", "--lfts",
                   bad / "osm" / "opensm-lfts.dump", "--expect", "hdor")
    assert human.returncode == 1 and "credit loop (channel dependency cycle" in human.stdout
    assert "routes: dimension order: FAIL" in human.stdout and "route out of dimension order, e.g. " in human.stdout
    # the same verdicts as ibdmchk on OpenSM's own dumps
    assert _ibdmchk_loop(_ibdmchk(bad, tmp_path)) is True
    assert _ibdmchk_loop(_ibdmchk(good, tmp_path)) is False


@pytest.mark.ibsim
@pytest.mark.parametrize("engine", ["updn", "ftree"])
def test_fat_tree_up_down_is_deadlock_free(tmp_path, engine):
    f = fat_tree(4)
    net = tmp_path / "ft.net"
    ibnetdiscover.write(f, net)
    roots = tmp_path / "roots"
    roots.write_text("".join(f"{f.guids[i]:#018x}\n" for i in range(f.num_nodes) if f.roles[i] == "spine"))
    run = _run(tmp_path, engine, net, engine, f"root_guid_file={roots}")
    assert json.loads((run / "summary.json").read_text())["engine"] == engine
    v = ibtool("verify", "routes", "--fabric", run / "ibnetdiscover.out", "--lfts", run / "dump_fts.out", "--json")
    rep = json.loads(v.stdout)
    assert v.returncode == 0, v.stdout[-2000:]
    assert rep["routes"]["deadlock"]["free"] and rep["routes"]["deadlock"]["dependencies"] > 0
    assert _ibdmchk_loop(_ibdmchk(run, tmp_path)) is False


@pytest.mark.ibsim
def test_sl2vl_and_lmc(tmp_path):
    """With QoS on, OpenSM writes SL2VL tables; with LMC 1 every port owns two LIDs: both traced."""
    plan = _plan(tmp_path, "plan", "--k", "3", "--n", "2", "--radix", "8")
    run = _run(tmp_path, "q", plan / "topology.net", "minhop", "qos=TRUE", "lmc=1")
    assert (run / "osm" / "opensm-sl2vl.dump").is_file()
    v = ibtool("verify", "all", run, "--json")
    rep = json.loads(v.stdout)
    r = rep["routes"]
    assert rep["inputs"]["sl2vl"] and r["deadlock"]["sl2vl"]
    f = ibnetdiscover.read(run / "ibnetdiscover.out")
    # CA ports own 2 LIDs each; switch port 0 one (OpenSM's lmc_esp0 is off by default)
    assert f.count(kind=CA) == 9 and all(lmc == 1 for (n, p), (lid, lmc) in f.port_lids.items() if p)
    assert r["lids"] == sum(1 << lmc for lid, lmc in f.port_lids.values()) == 15 + 2 * 9
    sources = f.count(kind=SWITCH) + f.count(kind=CA)
    assert r["pairs"] == sources * r["lids"] - r["lids"]  # minus each port to its own LIDs
    assert not r["deadlock"]["free"]  # minhop's loop stays: SL 0 maps to VL 0 everywhere


def test_sl2vl_moves_channels_to_other_vls():
    """The VL of each hop comes from the SL2VL tables: with every switch sending SL 0 on VL 3, the
    mixed-order cycle is found on VL3, and each printed channel carries that VL."""
    from ibtool.formats.sl2vl import SL2VL
    f = kns(3, 2, radix=8)
    ref = routed(f)
    t = mixed_order(f, ref)
    s = SL2VL()
    for i in range(f.num_nodes):
        if f.types[i] == SWITCH:
            s[f.guids[i]] = {(a, b): (3,) * 16 for a in range(9) for b in range(9)}
    r = routes.verify(f, t, sl2vl=s)
    d = r["deadlock"]
    assert d["sl2vl"] and d["vls"] == 4 and not d["free"]
    assert all(c.endswith("(VL3)") for c in d["cycle"])
    _cycle_is_real(f, d["cycle"])


# ------------------------------------------------------------------------------ issue 8 item 2, issue 9 items 4, 9

REAL = FIXTURES / "real" / "ibsim-kns-k3-n2-hdor"


def test_a_port_without_lid_is_a_finding_not_a_smaller_denominator(tmp_path):
    """Issue 9 item 4: H[1,2] with LID 0 in a real ibsim dump: FAIL naming it, and the pairs to and
    from it counted (as undelivered), so the denominator is the one of the whole fabric."""
    text = (REAL / "ibnetdiscover.out").read_text()
    full = routes.verify(ibnetdiscover.read(REAL / "ibnetdiscover.out"), lft.read(REAL / "dump_fts.out"))
    assert full["ok"]
    cut = text.replace('# "H[1,2]" lid 21 4xQDR', '# "H[1,2]" lid 0 4xQDR').replace(
        '# lid 21 lmc 0 "R[1,2]"', '# lid 0 lmc 0 "R[1,2]"')
    assert cut.count("lid 0") == text.count("lid 0") + 2
    disc = tmp_path / "ibnetdiscover.out"
    disc.write_text(cut)
    r = ibtool("verify", "routes", "--fabric", disc, "--lfts", REAL / "dump_fts.out", "--json")
    assert r.returncode == 1
    rr = json.loads(r.stdout)["routes"]
    assert rr["unaddressed"] == ["H[1,2] has no LID"]
    assert rr["pairs"] == full["pairs"]
    sources, lids = full["source_ports"], full["lids"]  # 21 switches + 9 HCAs; 30 LIDs
    assert rr["undelivered"]["no LID (port not addressed)"] == (sources - 1) + (lids - 1)
    human = ibtool("verify", "routes", "--fabric", disc, "--lfts", REAL / "dump_fts.out")
    assert "routes: delivery: FAIL" in human.stdout and "H[1,2] has no LID" in human.stdout


def test_a_missing_switch_table_gives_one_count_explained():
    """Issue 9 item 9: the summary line and the details give the same number of black holes, with
    the switch-to-switch share said in both."""
    from ibtool.verify import report
    f = ibnetdiscover.read(REAL / "ibnetdiscover.out")
    t = lft.read(REAL / "dump_fts.out")
    gone = f.guids[f.index("R[1,1]")]
    del t.lft[gone]
    r = routes.verify(f, t)
    holes = r["undelivered"]["black hole (no LFT entry)"]
    ss = r["undelivered_switch_to_switch"]["black hole (no LFT entry)"]
    assert holes > ss > 0 and not r["ok"] and r["switches_without_table"] == ["R[1,1]"]
    text = report.text(report.build({}, {"routes": r}))
    summary = next(ln for ln in text.splitlines() if "routes: delivery" in ln)
    detail = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{holes} black hole"))
    said = f"{holes} black hole (no LFT entry) ({ss} of them between switches only)"
    assert said in summary and said in detail
    assert "R[1,1]" in text.split("switches without a table", 1)[1]


def test_dump_without_the_top_lid_block_is_said_not_black_holes(tmp_path):
    """Issue 8 item 2 (verify side): a dump that lacks exactly the top LID (a multiple of 64) on
    every switch is one finding, not thousands of black holes; other missing entries still are."""
    f = kns(4, 2, s=2, radix=8)
    ref = routed(f)
    top = ref.tables.max_lid
    assert top == 64
    cut = lft.Tables({g: a[:top].copy() for g, a in ref.tables.lft.items()}, ref.tables.names)
    r = routes.verify(f, cut, expect="hdor", reference=ref)
    assert r["ok"], r["undelivered"]
    assert r["top_lid_not_in_dump"]["lid"] == 64 and r["top_lid_not_in_dump"]["pairs_not_checked"] > 0
    assert not any(r["undelivered"].values()) and r["expect"]["tables_equal"]
    one = next(iter(cut.lft))
    cut.lft[one] = cut.lft[one][:top - 1]  # one switch also lacks LID 63: that one is a black hole
    r2 = routes.verify(f, cut)
    assert r2["top_lid_not_in_dump"] and r2["undelivered"]["black hole (no LFT entry)"] > 0 and not r2["ok"]


# (plan arguments, top LID, switches): KNS 4^2 with 2-stage indirect networks has 64 LIDs; 8^3
# (1,216 = 19 * 64 LIDs, 704 switches), the size issue 8 named, in `make test-full`
TOP_LID_SHAPES = {"k4n2s2": (("--k", "4", "--n", "2", "--s", "2", "--radix", "36"), 64, 48)}
if FULL:
    TOP_LID_SHAPES["k8n3"] = (("--k", "8", "--n", "3"), 1216, 704)


@pytest.mark.ibsim
@pytest.mark.parametrize("shape", list(TOP_LID_SHAPES))
def test_sim_run_collects_the_top_lid_and_verify_all_passes(tmp_path, shape):
    """Issue 8 item 2: a KNS routed by hdor whose top LID is a multiple of 64, which dump_fts leaves
    out. `sim run` reads it from every switch (smpdump) into dump_fts.out, and `verify all` passes;
    the raw dump alone gives the one finding, not black holes."""
    args, lid, switches = TOP_LID_SHAPES[shape]
    plan = _plan(tmp_path, "plan", *args)
    run = _run(tmp_path, "hdor", plan / "topology.net", "hdor")
    top = json.loads((run / "summary.json").read_text())["dump_fts_top_lid"]
    assert top["lid"] == lid and top["switches"] == top["routed"] == switches
    merged, raw = lft.read(run / "dump_fts.out"), lft.read(run / "dump_fts.raw.out")
    osm = lft.read(run / "osm" / "opensm-lfts.dump")
    assert all(len(a) <= lid or a[lid] == 255 for a in raw.lft.values())
    assert {g: int(a[lid]) for g, a in merged.lft.items()} == {g: int(a[lid]) for g, a in osm.lft.items()}
    assert hdor.compare_tables(merged, osm) == []
    v = ibtool("verify", "all", run, "--json")
    rep = json.loads(v.stdout)
    assert v.returncode == 0 and rep["ok"], [c for c in rep["checks"] if not c["ok"]]
    assert rep["routes"]["delivered"] == rep["routes"]["pairs"] and rep["routes"]["top_lid_not_in_dump"] is None
    v = ibtool("verify", "routes", "--fabric", run / "ibnetdiscover.out", "--lfts", run / "dump_fts.raw.out",
               "--expect", "hdor")
    assert v.returncode == 0, v.stdout[-2000:]
    assert f"routes: dump incomplete: info  LID {lid}" in v.stdout and "black hole" not in v.stdout


# ------------------------------------------------------------------------------ issue 8 item 3: VLs

def _vl_run(tmp_path, engine):
    """A small fabric each engine routes without falling back (facts/ibsim-scale.md: dfsssp and lash
    need more VLs than ibsim has from KNS 8^3 and tori 8x8 up), with QoS on (SL2VL dump) and the
    path SLs collected from the SA."""
    if engine == "torus-2QoS":
        f, conf = torus_2d(5)
        net = tmp_path / "torus.net"
        ibnetdiscover.write(f, net)
        (tmp_path / "torus-2QoS.conf").write_text(conf)
        extra = ["--conf", f"torus_config={tmp_path / 'torus-2QoS.conf'}"]
    else:
        net = _plan(tmp_path, "plan", "--k", "3", "--n", "2", "--radix", "8") / "topology.net"
        extra = []
    run = tmp_path / engine
    ibtool("sim", "run", net, "--engine", engine, "--path-sls", "--conf", "qos=TRUE", *extra, "--out", run, check=0)
    s = json.loads((run / "summary.json").read_text())
    assert s["engine"] == engine and not s["fallback"]
    assert s["path_sls"]["records"] == s["path_sls"]["pairs"] > 0
    return run


@pytest.mark.ibsim
@pytest.mark.parametrize("engine", ["dfsssp", "lash", "nue", "torus-2QoS"])
def test_engines_with_virtual_lanes_verified_per_vl(tmp_path, engine):
    run = _vl_run(tmp_path, engine)
    v = ibtool("verify", "all", run, "--json")
    rep = json.loads(v.stdout)
    d = rep["routes"]["deadlock"]
    assert v.returncode == 0, [c for c in rep["checks"] if not c["ok"]]
    assert d["free"] is True and d["sl2vl"] and d["path_sls"]["pairs_without_record"] == 0
    assert sum(d["dependencies_per_vl"].values()) == d["dependencies"] > 0
    if engine in ("dfsssp", "lash", "torus-2QoS"):
        assert len(d["dependencies_per_vl"]) >= 2  # routes really spread over VLs
    # without the SLs: every route on one VL. Acyclic there proves it (PASS); a cycle there is
    # neither a FAIL nor a PASS but NOT CHECKED, exit 5 (issue 36 item 2)
    v0 = ibtool("verify", "routes", "--fabric", run / "ibnetdiscover.out", "--lfts", run / "dump_fts.out",
                "--engine", engine, "--json")
    r0 = json.loads(v0.stdout)
    d0 = r0["routes"]["deadlock"]
    assert d0["free"] is True or (d0["free"] is None and d0["note"].startswith(f"{engine} gives each path its own SL"))
    assert (v0.returncode, r0["verdict"]) == ((0, "PASS") if d0["free"] else (5, "NOT CHECKED"))
    if engine in ("dfsssp", "torus-2QoS"):  # the false credit loop of issue 8, the false PASS of issue 36
        assert d0["free"] is None
        c = next(c for c in r0["checks"] if c["name"] == "routes: deadlock freedom")
        assert c["not_checked"] and not c["ok"] and "--path-sls" in c["summary"]
        plain = ibtool("verify", "routes", "--fabric", run / "ibnetdiscover.out", "--lfts", run / "dump_fts.out")
        assert plain.returncode == 1 and "credit loop" in plain.stdout  # engine unknown: VL0 judged


def test_path_sls_put_a_cycle_on_its_vl():
    """With path SLs the VL of each hop is SL2VL[SL]: the mixed-order cycle (one SL for every
    path) is found on that SL's VL; split between two SLs by source parity, each VL half of it."""
    from ibtool.formats.pathrecord import PathSLs
    f = kns(3, 2, radix=8)
    ref = routed(f)
    t = mixed_order(f, ref)
    owners = f.lid_owners()
    hcas = [lid for lid, (n, p) in owners.items() if f.types[n] == CA]
    one = PathSLs({(a, b): 5 for a in hcas for b in hcas if a != b})
    one.path = "x"
    r = routes.verify(f, t, path_sls=one)
    d = r["deadlock"]
    assert d["free"] is False and all(c.endswith("(VL5)") for c in d["cycle"])
    assert list(d["dependencies_per_vl"]) == ["VL5"]
    _cycle_is_real(f, d["cycle"])
    missing = PathSLs({k: v for k, v in list(one.items())[1:]})
    assert routes.verify(f, t, path_sls=missing)["deadlock"]["path_sls"]["pairs_without_record"] == 1


@pytest.mark.parametrize("case", ["hdor", "mixed", "corrupt", "real-minhop-qos", "real-hdor", "two-stage"])
def test_certified_lids_count_exactly_as_tracing_them(monkeypatch, case):
    """The certificate (issue 8, faster) must give what tracing every pair gives: the same counts,
    histograms and channel dependencies, on clean, non-minimal-free, broken and real tables."""
    if case.startswith("real"):
        d = FIXTURES / "real" / ("ibsim-kns-k3-n2-hdor" if case == "real-hdor" else "ibsim-kns-k3-n2-minhop-qos")
        f, t = ibnetdiscover.read(d / "ibnetdiscover.out"), lft.read(d / "dump_fts.out")
    else:
        f = {"hdor": lambda: kns(3, 3, hcas_per_router=2, radix=8),  # two-stage: HCA-less switches in chains
             "two-stage": lambda: kns(4, 2, s=2, radix=8)}.get(case, lambda: kns(3, 2, radix=8))()
        ref = routed(f)
        t = mixed_order(f, ref) if case == "mixed" else ref.tables
        if case == "corrupt":
            t.lft[f.guids[f.index("R[0,0]")]][f.port_lids[(f.index("H[2,2]"), 1)][0]] = 255
    keys = ("pairs", "delivered", "undelivered", "undelivered_switch_to_switch", "length_histogram",
            "extra_hops_histogram", "minimal", "ok")
    fast = routes.verify(f, t, permutations=1)
    assert fast["certified_lids"] > 0
    monkeypatch.setattr(routes, "certify", lambda b, *a, **k: np.zeros(b.lft.shape[1], dtype=bool))
    slow = routes.verify(f, t, permutations=1)
    assert slow["certified_lids"] == 0
    assert {k: fast[k] for k in keys} == {k: slow[k] for k in keys}
    assert {k: v for k, v in fast["deadlock"].items() if k != "cycle"} == \
        {k: v for k, v in slow["deadlock"].items() if k != "cycle"}


def test_bad_path_sl_files_are_one_line_errors(tmp_path):
    real = REAL / "ibnetdiscover.out"
    cases = {"garbage": "hello\n", "empty": "", "sl out of range": "PathRecord dump:\n\t\tdlid....2\n\t\tslid....3\n"
             "\t\tsl......0x1f\n", "no sl": "PathRecord dump:\n\t\tdlid....2\n\t\tslid....3\n"}
    for name, text in cases.items():
        p = tmp_path / "paths.out"
        p.write_text(text)
        r = ibtool("verify", "routes", "--fabric", real, "--lfts", REAL / "dump_fts.out", "--path-sls", p, "--json")
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.startswith(f"ibtool: error: {p}") and len(r.stderr.strip().splitlines()) == 1, name
        assert json.loads(r.stdout)["exit_code"] == 2
        assert "Traceback" not in r.stderr
