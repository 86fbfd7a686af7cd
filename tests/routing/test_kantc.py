"""`ibtool route kantc` (routing/kantc.py): labels recovered from the wiring, paper 001's
Algorithms 1-2 delivering every pair, and refusals."""

import json
import random

import pytest

from support import FIXTURES, ibtool
from ibtool.errors import NotFamily
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover, lft
from ibtool.routing import kantc as R
from ibtool.routing.lids import assign_lids
from ibtool.topologies.fattree import fattree
from ibtool.topologies.kantc import kantc, mikantc
from ibtool.verify.routes import verify

SIZES = [(kantc, 2, 2), (kantc, 3, 3), (kantc, 4, 3), (kantc, 3, 4), (mikantc, 2, 2), (mikantc, 3, 3),
         (mikantc, 4, 3)]


def scrambled(f: Fabric, seed: int) -> Fabric:
    """The same fabric (same GUIDs) with nodes renamed, added in another order, and every
    switch's ports permuted."""
    rnd = random.Random(seed)
    order = list(range(f.num_nodes))
    rnd.shuffle(order)
    g = Fabric("scrambled")
    new = {}
    for i in order:
        new[i] = g.add_node(f.types[i], f"node-{rnd.random():.12f}", f.nports[i], "x", guid=f.guids[i])
    perm = {}
    for i in range(f.num_nodes):
        p = list(range(1, f.nports[i] + 1))
        if f.is_switch(i):
            rnd.shuffle(p)
        perm[i] = p
    for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb):
        g.add_link(new[a], new[b], perm[a][pa - 1], perm[b][pb - 1])
    return g


def builder_label(f: Fabric, i: int) -> dict:
    lab = f.labels[i]
    return {"group": lab.get("group", 0), "level": lab.get("level", 0), "word": lab.get("word"), "c": lab.get("c")}


@pytest.mark.parametrize("build,k,n", SIZES, ids=[f"{b.__name__}{k}{n}" for b, k, n in SIZES])
def test_labels_recovered_from_wiring_and_every_pair_delivered_minimally(build, k, n):
    f = build(k, n)
    assign_lids(f)
    r = R.compute(f)
    assert (r.k, r.n, r.mirrored) == (k, n, build is mikantc)
    for i in range(f.num_nodes):
        if f.is_switch(i):
            got = r.label[i]
            assert {key: got.get(key) for key in ("group", "level", "word", "c")} == builder_label(f, i), f.names[i]
    v = verify(f, r.tables, balance=False)
    assert v["delivered"] == v["pairs"] and v["minimal"]


@pytest.mark.parametrize("build,k,n", [(kantc, 3, 3), (mikantc, 3, 3), (kantc, 4, 3)])
def test_renamed_nodes_and_shuffled_ports(build, k, n):
    """Names and port numbers are never read: the labels (by GUID) are those of the original, and
    the tables still deliver every pair on shortest paths."""
    f = build(k, n)
    assign_lids(f)
    want = {f.guids[i]: lab for i, lab in R.compute(f).label.items()}
    for seed in (1, 2):
        g = scrambled(f, seed)
        assign_lids(g)
        r = R.compute(g)
        assert {g.guids[i]: lab for i, lab in r.label.items()} == want
        v = verify(g, r.tables, balance=False)
        assert v["delivered"] == v["pairs"] and v["minimal"]


def test_deadlock_status_on_vl0():
    """Honest status of the paper's routing on one VL: KANTC(3,3) and MiKANTC(3,3) have an acyclic
    channel graph; from k = 4 a route that comes down into a cube and one that leaves it through
    another intermediate close a cycle (use updn, the plan's engine, or more VLs)."""
    for build, k, n, free in [(kantc, 3, 3, True), (mikantc, 3, 3, True), (kantc, 4, 3, False), (mikantc, 4, 3, False)]:
        f = build(k, n)
        assign_lids(f)
        d = verify(f, R.compute(f).tables, balance=False)["deadlock"]
        assert d["free"] is free, (build.__name__, k, n)
        if not free:
            assert any(c.startswith("C[") for c in d["cycle"]) and any(c.startswith("S[") for c in d["cycle"])


def test_dump_names_every_node_with_its_label(tmp_path):
    f = kantc(3, 3)
    assign_lids(f)
    r = R.compute(f)
    R.write_dump(r, f, tmp_path / "d")
    lines = (tmp_path / "d").read_text().splitlines()
    assert lines[0] == "# kantc k=3 n=3 mirrored=0 cubes=3 lids=87"
    assert len(lines) == 1 + f.num_nodes
    assert f'switch 0x{f.guids[f.index("S[2,1,0]")]:016x} <2,1,0,000> "S[2,1,0]"' in lines
    assert f'switch 0x{f.guids[f.index("C[1,010]")]:016x} <0,1,1,010> "C[1,010]"' in lines  # I_1 of cube 1
    assert f'switch 0x{f.guids[f.index("C[1,011]")]:016x} <0,1,*,011> "C[1,011]"' in lines


def test_declines_fabrics_that_are_not_kantc(tmp_path):
    f = fattree(3, 3)
    assign_lids(f)
    with pytest.raises(NotFamily) as e:
        R.compute(f)
    assert "cube" in e.value.reason and e.value.family == "KANTC/MiKANTC" and e.value.exit_code == 1
    r = ibtool("route", "kantc", "--fabric", FIXTURES / "ibnetdiscover" / "cellia-minhop.out",
               "--out", tmp_path / "x.lft", check=1)
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("ibtool: error:")]
    assert len(err) == 1 and "not a KANTC/MiKANTC fabric" in err[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "x.lft").exists()
    r = ibtool("route", "kantc", "--fabric", tmp_path / "missing.out", "--out", tmp_path / "x.lft", check=2)
    assert "missing.out" in r.stderr


@pytest.mark.ibsim
@pytest.mark.parametrize("family", ["kantc", "mikantc"])
def test_file_engine_tables_deliver_every_pair_under_ibsim(tmp_path, family):
    plan = tmp_path / "plan"
    ibtool("topo", family, "--k", "3", "--n", "3", "--out", plan, check=0)
    net = plan / "topology.net"
    run1 = tmp_path / "run1"
    ibtool("sim", "run", net, "--out", run1, check=0)  # the plan's engine (updn): LIDs and wiring
    lfts, dump = (tmp_path / "kantc.lft").resolve(), tmp_path / "labels"
    r = ibtool("route", "kantc", "--fabric", run1 / "ibnetdiscover.out", "--out", lfts, "--dump", dump,
               "--json", check=0)
    s = json.loads(r.stdout)
    assert (s["family"], s["k"], s["n"]) == ({"kantc": "KANTC", "mikantc": "MiKANTC"}[family], 3, 3)
    assert s["cubes"] == (3 if family == "kantc" else 6)
    run2 = tmp_path / "run2"
    r = ibtool("sim", "run", net, "--engine", "file", "--conf", f"lfts_file={lfts}", "--out", run2, check=0)
    summary = json.loads((run2 / "summary.json").read_text())
    assert summary["engine"] == "file" and summary["ok"] and not summary["fallback"]
    # what the switches hold is what we computed for run 2's LIDs
    f2 = ibnetdiscover.read(run2 / "ibnetdiscover.out")
    want = R.compute(f2).tables
    got = lft.read(run2 / "osm" / "opensm-lfts.dump")
    for guid, row in want.lft.items():
        assert (got.lft[guid][:len(row)] == row).all(), want.names[guid]
    r = ibtool("verify", "all", run2, "--json", check=0)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["routes: delivery"]["ok"] and checks["routes: deadlock freedom"]["ok"]
    assert checks["routes: minimal"]["summary"].startswith("0 routes longer")
