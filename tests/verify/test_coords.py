"""verify coords: hdor's dump vs. the Python reference, and the fabric vs. the plan up to the
legitimate relabelings (dimension order, positions within a dimension)."""

import json
import shutil

from support import FIXTURES, ibtool
from verify_fabrics import Cabling
from ibtool.formats import hdor_dump, ibnetdiscover
from ibtool.routing.lids import assign_lids
from ibtool.topologies.kns import kns
from ibtool.verify import coords
from ibtool.verify.matching import match

KNS = FIXTURES / "real" / "ibsim-kns-k3-n2-hdor"
PLAN = FIXTURES / "real" / "plan-kns-k3-n2.net"


def test_hdor_dump_matches_reference_and_plan():
    r = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--dump", KNS / "opensm-hdor.dump",
               "--plan", PLAN, "--json")
    assert r.returncode == 0, r.stdout[-2000:]
    rep = json.loads(r.stdout)["coords"]
    assert rep["dump_vs_reference"]["ok"] and rep["dump_vs_reference"]["devices"] == 24
    rp = rep["reference_vs_plan"]
    assert rp["ok"] and rp["routers_compared"] == 9 and rp["relabeling"]["dimensions"] == [0, 1]


def test_the_plan_may_be_its_directory(tmp_path):
    """--plan names a plan as every command does: its directory or its net file (issue 37)."""
    (tmp_path / "plan").mkdir()
    shutil.copy(PLAN, tmp_path / "plan" / "topology.net")
    r = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--plan", tmp_path / "plan", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["coords"]["reference_vs_plan"]["routers_compared"] == 9


def test_tampered_dump_names_the_device(tmp_path):
    d = tmp_path / "opensm-hdor.dump"
    text = (KNS / "opensm-hdor.dump").read_text()
    text = text.replace('router 0x0002c90000000090 [1,1] "R[1,1]"', 'router 0x0002c90000000090 [1,2] "R[1,1]"')
    text = text.replace('switch 0x0002c90000000170 dim=1', 'switch 0x0002c90000000170 dim=0')
    d.write_text(text)
    r = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--dump", d, "--json")
    assert r.returncode == 1
    probs = json.loads(r.stdout)["coords"]["dump_vs_reference"]["problems"]
    assert len(probs) == 2
    assert probs[0].startswith("R[1,1] (0x0002c90000000090, dump line 6): dump says [1,2], reference says [1,1]")
    assert "S[1,1]" in probs[1] and "dump says dimension 0, reference says 1" in probs[1]
    human = ibtool("verify", "coords", "--fabric", KNS / "ibnetdiscover.out", "--dump", d)
    assert "coords: dump vs reference: FAIL  24 devices, 2 inconsistent" in human.stdout


def test_disguised_fabric_is_the_plan_up_to_relabeling():
    """New GUIDs reorder hdor's axes: coordinates differ from the plan's by a relabeling only."""
    plan = kns(4, 3, radix=8)
    found = Cabling(plan, 13).build()
    assign_lids(found)
    m = match(plan, found).to_plan
    rep = coords.verify(found, None, plan, m)
    rp = rep["reference_vs_plan"]
    assert rep["ok"] and rp["ok"] and rp["routers_compared"] == 64
    maps = [{int(k): v for k, v in mp.items()} for mp in rp["relabeling"]["positions"]]
    assert any(mp != {x: x for x in range(4)} for mp in maps)  # not the identity: a real relabeling
    assert all(sorted(mp.values()) == [0, 1, 2, 3] for mp in maps)


def test_wrong_matching_is_reported_per_router():
    """If the plan matching put two routers in each other's place, both are reported, with why."""
    plan = kns(3, 2, radix=8)
    found = Cabling(plan, 5).build(disguise=False)
    assign_lids(found)
    m = match(plan, found).to_plan
    a, b = found.index("R[0,0]"), found.index("R[2,2]")
    m[a], m[b] = m[b], m[a]
    rep = coords.verify(found, None, plan, m)["reference_vs_plan"]
    assert not rep["ok"]
    bad = [p for p in rep["problems"] if p.startswith(("R[0,0]", "R[2,2]"))]
    assert len(bad) == 2 and all("should be found dimension" in p for p in bad)


def test_not_a_kns_is_a_clear_failure(tmp_path):
    plan = kns(3, 2, radix=8)
    cab = Cabling(plan, 1)
    cab.swap("R[0,0]", 2, "R[1,1]", 3)  # a dimension-0 cable and a dimension-1 cable trade switches
    f = cab.build()
    assign_lids(f)
    rep = coords.verify(f)
    assert not rep["ok"] and rep["error"].startswith("the discovered fabric is not a KNS: ")
    # the same through the command line, with the dump of the good fabric: exit 1, the reason
    net = tmp_path / "x.ibnetdiscover"
    ibnetdiscover.write(f, net)
    assert ibnetdiscover.read(net).num_links == f.num_links
    r = ibtool("verify", "coords", "--fabric", net, "--dump", KNS / "opensm-hdor.dump")
    assert r.returncode == 1 and "not a KNS" in r.stdout and hdor_dump.read(KNS / "opensm-hdor.dump").role


def test_hca_on_the_wrong_router_is_at_the_wrong_coordinates():
    plan = kns(3, 2, hcas_per_router=2, radix=8)
    cab = Cabling(plan, 6)
    cab.swap("R[0,0]", 1, "R[2,1]", 2)  # two HCAs trade routers: still a KNS
    found = cab.build(disguise=False)
    assign_lids(found)
    rep = coords.verify(found, None, plan, {j: j for j in range(found.num_nodes)})  # matched by name
    probs = rep["reference_vs_plan"]["problems"]
    assert not rep["ok"] and len(probs) == 2
    assert all("cabled to another router" in p for p in probs)
    assert {p.split(" ")[0] for p in probs} == {"H[0,0]-0", "H[2,1]-1"}


def test_a_plan_that_is_not_a_kns_is_a_finding_not_an_abort(tmp_path):
    """`verify all` with a plan of another shape: the coordinates check fails saying why, and the
    topology and routes sections are still reported (exit 1, not a bare error)."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("ibnetdiscover.out", "dump_fts.out"):
        shutil.copy(KNS / name, run)
    (run / "summary.json").write_text('{"engine": "hdor", "ok": true}')
    r = ibtool("verify", "all", run, "--plan", FIXTURES / "real" / "ndr-2sw.ibnetdiscover", "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    rep = json.loads(r.stdout)
    assert {"topology", "coords", "routes"} <= set(rep) and rep["routes"]["ok"]
    assert rep["coords"]["reference_vs_plan"]["problems"][0].startswith("the plan is not a KNS: ")
    check = next(c for c in rep["checks"] if c["name"] == "coords: fabric vs plan")
    assert not check["ok"] and check["summary"].startswith("the plan is not a KNS: ")
