"""Every tree family under real ibsim + OpenSM with the engine its plan names (no fallback), and
`ibtool verify all` passing on what ibnetdiscover and dump_fts report."""

import json

import pytest

from support import ibtool
from ibtool.formats import ibnetdiscover

pytestmark = pytest.mark.ibsim

FAMILIES = [
    ("fattree", ["--k", "3", "--n", "3"], "ftree"),
    ("fattree", ["--k", "2", "--n", "4", "--hcas-per-leaf", "3", "--radix", "8"], "ftree"),
    ("clos", ["--leaves", "6", "--hcas-per-leaf", "4", "--uplinks", "4", "--radix", "8"], "ftree"),
    ("clos", ["--leaves", "6", "--hcas-per-leaf", "2", "--uplinks", "2", "--levels", "3", "--radix", "8"], "ftree"),
    ("sft", ["--preset", "cellia"], "ftree"),
    ("sft", ["--preset", "cellia36"], "ftree"),
    ("mikant", ["--k", "3", "--n", "3"], "updn"),
    ("kantc", ["--k", "3", "--n", "3"], "updn"),
    ("kantc", ["--k", "4", "--n", "2"], "updn"),
    ("mikantc", ["--k", "3", "--n", "3"], "updn"),
    ("mikantc", ["--k", "2", "--n", "2"], "updn"),
]


@pytest.mark.parametrize("family,args,engine", FAMILIES, ids=[f"{f}-{'-'.join(a[1::2])}" for f, a, _ in FAMILIES])
def test_family_routes_with_its_engine_and_verifies(tmp_path, family, args, engine):
    plan = tmp_path / "plan"
    ibtool("topo", family, *args, "--out", plan, check=0)
    run = tmp_path / "run"
    r = ibtool("sim", "run", plan / "topology.net", "--out", run, check=0)
    s = json.loads((run / "summary.json").read_text())
    assert s["engine"] == engine and s["ok"] and not s["fallback"], r.stdout
    # the names, ports and links ibnetdiscover reports are the plan's (labels travel as names)
    disc, want = ibnetdiscover.read(run / "ibnetdiscover.out"), ibnetdiscover.read(plan / "topology.net")
    assert disc.link_set() == want.link_set()
    r = ibtool("verify", "all", run, "--json", check=0)
    rep = json.loads(r.stdout)
    assert rep["ok"]
    checks = {c["name"]: c for c in rep["checks"]}
    assert checks["routes: deadlock freedom"]["ok"] and checks["routes: delivery"]["ok"]
    assert checks["topology"]["ok"]


def test_mirrored_tree_with_both_tops_as_updn_roots_has_a_credit_loop(tmp_path):
    """Why mikant/mikantc name a single updn root (module docstring of topologies/kantc.py): with
    the level n-2 switches of both groups as roots, OpenSM's updn turns between equal-rank roots
    and VL0 has a cycle through the mirror links."""
    plan = tmp_path / "plan"
    ibtool("topo", "mikant", "--k", "3", "--n", "3", "--out", plan, check=0)
    from ibtool.topologies.kantc import mikant
    f = mikant(3, 3)
    tops = tmp_path / "tops"
    tops.write_text("".join(f"0x{f.guids[i]:016x}\n" for i, lab in enumerate(f.labels)
                            if f.is_switch(i) and lab["level"] == 1))
    run = tmp_path / "run"
    ibtool("sim", "run", plan / "topology.net", "--engine", "updn", "--conf", f"root_guid_file={tops}",
           "--out", run, check=0)
    r = ibtool("verify", "all", run, "--json", check=1)
    routes = json.loads(r.stdout)["routes"]
    assert routes["delivered"] == routes["pairs"] - sum(routes["undelivered_switch_to_switch"].values())
    cycle = routes["deadlock"]["cycle"]
    assert not routes["deadlock"]["free"] and cycle
    assert all(c.startswith("S[") and ",1," in c[:6] for c in cycle)  # channels between level-1 (top) switches
