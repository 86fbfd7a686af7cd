"""verify topology: structural matching on fabrics whose GUIDs and names differ from the plan's.

Each fault is injected by plan names (tests/verify/fabrics.py); the report must name exactly the
injected faults, and applying its fixes to the fabric as cabled must give back the plan.
"""

import json

import pytest

from support import ibtool
from verify_fabrics import Cabling, fat_tree, write_net
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover, node_name_map
from ibtool.topologies.kns import kns
from ibtool.verify.topology import compare


def short_links(f, links):
    n = f.names
    return {frozenset((f"{n[a]}[{pa}]", f"{n[b]}[{pb}]")) for a, pa, b, pb in links}


def apply_fixes(rep: dict, cables: set) -> set:
    """The fabric after a technician followed the report: cables as sets of 'Name[port]'."""
    cables = set(cables)

    def at(end):
        return next(c for c in cables if end in c)

    for fx in rep["fixes"]:
        if fx["kind"] == "move":
            c = at(fx["from"])
            cables.remove(c)
            cables.add(frozenset((next(iter(c - {fx["from"]})), fx["to"])))
        else:
            x, y = fx["ends"]
            cx, cy = at(x), at(y)
            cables -= {cx, cy}
            cables.add(frozenset((next(iter(cx - {x})), y)))
            cables.add(frozenset((next(iter(cy - {y})), x)))
    for c in rep["missing_cables"]:
        cables.add(frozenset(c["ends"]))
    for c in rep["extra_cables"]:
        cables.discard(frozenset(c["ends"]))
    return cables


def check(plan, cab: Cabling, rep: dict, moved: int):
    """Exactly the injected faults, nothing else, and the fixes restore the plan."""
    done = cab.done
    want_wrong = {(d[1], d[2], d[3]) for d in done if d[0] in ("move", "swap")}
    got_wrong = {(m["port"], m["found"], m["expected"]) for m in rep["miswired"]}
    # a swap may be explained from either end of each cable: compare the wrong cables, and below
    # check that the fixes give the plan back
    assert len(rep["miswired"]) == moved
    assert {frozenset((a, f)) for a, f, e in got_wrong} == {frozenset((a, f)) for a, f, e in want_wrong}
    moves = {x for x in want_wrong if x in {(d[1], d[2], d[3]) for d in done if d[0] == "move"}}
    assert moves <= got_wrong  # a single misplaced end is always explained from its right end
    assert sum(1 for fx in rep["fixes"] if fx["kind"] == "swap") == sum(1 for d in done if d[0] == "swap") // 2
    assert {frozenset(c["ends"]) for c in rep["missing_cables"]} == {d[1] for d in done if d[0] == "missing"}
    assert rep["extra_cables"] == [] and rep["missing_devices"] == [] and rep["extra_devices"] == []
    assert len(rep["degraded_links"]) == sum(1 for d in done if d[0] == "degraded")
    for d in done:
        if d[0] == "degraded":
            assert {frozenset(x["ends"]) for x in rep["degraded_links"]} == {d[1]}
    assert not rep["not_planned_topology"]
    found = short_links(plan, [cab.links[li] for li in range(len(cab.links)) if li not in cab.removed])
    assert apply_fixes(rep, found) == short_links(plan, zip(plan.link_a, plan.link_pa, plan.link_b, plan.link_pb))


def faults(n_moves: int, plan, seed=5, swap=True, remove=None, degrade=None):
    cab = Cabling(plan, seed)
    routers = [plan.names[i] for i in range(plan.num_nodes) if plan.roles[i] == "router"]
    count = 0
    if swap:
        cab.swap(routers[5], 3, routers[-3], 2)
        count += 2
    rng = cab.rng
    used = {routers[5], routers[-3]}
    for r in rng.sample([r for r in routers if r not in used], n_moves - count):
        cab.move(r, rng.choice([2, 3]))
        used.add(r)
    spare = [r for r in routers if r not in used]  # routers no fault touched so far
    if remove:
        cab.remove(spare[0], 2)
    if degrade:
        cab.degrade(spare[1], 3, degrade)
    return cab


@pytest.mark.parametrize("moves,swap", [(1, False), (2, False), (2, True), (10, True)])
def test_miswired_cables_named_with_their_fix(moves, swap):
    plan = kns(4, 2, radix=8)
    cab = faults(moves, plan, swap=swap)
    found = cab.build()
    assert not set(found.names) & set(plan.names) and not set(found.guids) & set(plan.guids)
    rep = compare(plan, found).as_dict()
    check(plan, cab, rep, moves)
    assert rep["ok"] is False


def test_removed_cable_and_degraded_link():
    plan = kns(3, 3, radix=8)
    cab = Cabling(plan, 11)
    cab.remove("R[1,2,0]", 3)
    cab.degrade("R[2,2,2]", 4, "4xDDR")
    rep = compare(plan, cab.build()).as_dict()
    check(plan, cab, rep, 0)
    d = rep["degraded_links"][0]
    assert d["rate"] == "4xDDR" and d["fabric_rate"] == "4xEDR" and "DDR instead of EDR" in d["text"]


def test_hca_cable_moved_to_another_router():
    plan = kns(4, 2, radix=8)
    cab = Cabling(plan, 2)
    cab.move("H[2,2]", 1, to="R[3,3]")  # the HCA's cable plugged into a free port of the wrong router
    rep = compare(plan, cab.build()).as_dict()
    check(plan, cab, rep, 1)
    assert rep["fixes"][0]["fix"] == "move the end at R[3,3] port 4 to R[2,2] port 1"


def test_plan_against_itself_disguised_passes():
    plan = kns(3, 2, s=2, hcas_per_router=2, radix=8)
    rep = compare(plan, Cabling(plan).build()).as_dict()
    assert rep["ok"] and rep["correct_cables"] == plan.num_links and rep["counts"]["miswired_cables"] == 0


def test_missing_device_and_extra_device():
    plan = kns(3, 2, radix=8)
    cab = Cabling(plan, 4)
    found = cab.build()
    # H[1,1] never came up (ibnetdiscover does not see it); a switch not in the plan is cabled to
    # a free port of R[2,2]
    gone = plan.index("H[1,1]")
    keep = [i for i in range(found.num_nodes) if i != gone]
    new = {i: k for k, i in enumerate(keep)}
    links = [(new[a], pa, new[b], pb) for a, pa, b, pb in zip(found.link_a, found.link_pa, found.link_b,
                                                                found.link_pb) if gone not in (a, b)]
    f2 = Fabric("cabled")
    for i in keep:
        f2.add_node(found.types[i], found.names[i], found.nports[i], found.roles[i], guid=found.guids[i])
    for a, pa, b, pb in links:
        f2.add_link(a, b, pa, pb, rate="4xEDR")
    x = f2.add_switch("MF0;stray:MQM9700/U1", 64, guid=0x1234560)
    f2.add_link(new[plan.index("R[2,2]")], x, 6, 1, rate="4xEDR")
    rep = compare(plan, f2).as_dict()
    assert [d["device"] for d in rep["missing_devices"]] == ["H[1,1]"]
    assert rep["missing_devices"][0]["cabled_to"] == ["R[1,1] port 1"]
    assert [d["device"] for d in rep["extra_devices"]] == ["MF0;stray:MQM9700/U1"]
    assert rep["extra_devices"][0]["cabled_to"][0].startswith("R[2,2] (found as 'MF0;sw-")
    assert rep["extra_devices"][0]["cabled_to"][0].endswith(" port 6")
    assert rep["miswired"] == [] and rep["missing_cables"] == [] and rep["extra_cables"] == []


def test_not_the_planned_topology():
    rep = compare(kns(4, 2, radix=8), fat_tree(4)).as_dict()
    assert rep["not_planned_topology"] and not rep["ok"]
    assert "not the planned topology" in rep["reason"]


def test_fat_tree_without_names_or_anchors():
    """A fat tree's leaves look alike; the seed search must still find the one wrong cable."""
    plan = fat_tree(4)
    cab = Cabling(plan, 9)
    cab.move("leaf2", 6)
    rep = compare(plan, cab.build()).as_dict()
    check(plan, cab, rep, 1)


# ------------------------------------------------------------------------------ through ibsim

def _sim(tmp_path, plan, cab, name):
    d = tmp_path / name
    d.mkdir()
    found = cab.build(rate="4xQDR")
    deg = {}
    for x in cab.done:
        if x[0] == "degraded":
            ends = set(x[1])
            for li in range(found.num_links):
                e = {f"{plan.names[found.link_a[li]]}[{found.link_pa[li]}]",
                     f"{plan.names[found.link_b[li]]}[{found.link_pb[li]}]"}
                if e == ends:
                    deg[li] = 1
    write_net(found, d / "cabled.net", deg)
    ibnetdiscover.write(plan, d / "plan.net")
    ibtool("sim", "run", d / "cabled.net", "--engine", "minhop", "--out", d / "run", check=0)
    return d


@pytest.mark.ibsim
def test_ibsim_miswired_removed_degraded(tmp_path):
    """10 miswired cables (one swapped pair), a removed cable and a 1x link, through ibsim and
    ibnetdiscover, on a fabric whose GUIDs and descriptions are not the plan's."""
    plan = kns(4, 2, radix=8)
    cab = faults(10, plan, seed=21, remove=True, degrade="1xSDR")
    d = _sim(tmp_path, plan, cab, "ten")
    disc = ibnetdiscover.read(d / "run" / "ibnetdiscover.out")
    assert not set(disc.names) & set(plan.names) and not set(disc.guids) & set(plan.guids)
    v = ibtool("verify", "topology", "--plan", d / "plan.net", "--discovered", d / "run" / "ibnetdiscover.out",
               "--json")
    assert v.returncode == 1, v.stderr
    rep = json.loads(v.stdout)
    assert rep["schema"] == "ibtool-verify/1"
    check(plan, cab, rep, 10)
    assert rep["degraded_links"][0]["rate"] == "1xSDR" and rep["fabric_rate"] == "4xQDR"
    human = ibtool("verify", "topology", "--plan", d / "plan.net", "--discovered", d / "run" / "ibnetdiscover.out")
    assert human.returncode == 1
    assert human.stdout.startswith("verify: FAIL\n  topology: FAIL  ")
    assert "10 miswired (9 fixes), 1 missing" in human.stdout and "swap the cable ends at" in human.stdout


@pytest.mark.ibsim
@pytest.mark.parametrize("moves", [1, 2])
def test_ibsim_one_and_two_miswired(tmp_path, moves):
    plan = kns(3, 3, radix=8)
    cab = faults(moves, plan, seed=moves, swap=moves == 2)
    d = _sim(tmp_path, plan, cab, f"m{moves}")
    v = ibtool("verify", "topology", "--plan", d / "plan.net", "--discovered", d / "run" / "ibnetdiscover.out",
               "--json")
    rep = json.loads(v.stdout)
    check(plan, cab, rep, moves)
    assert v.returncode == 1


@pytest.mark.ibsim
def test_ibsim_node_name_map_gives_plan_names(tmp_path):
    """With a node-name-map from the technician's records, the devices are named by it; a clean
    fabric passes and says so."""
    plan = kns(3, 2, radix=8)
    cab = Cabling(plan, 3)
    d = _sim(tmp_path, plan, cab, "nnm")
    found = cab.build()
    nnm = d / "map"
    nnm.write_text("".join(f'{found.guids[i]:#018x} "{plan.names[i]}"\n' for i in range(plan.num_nodes)))
    assert node_name_map.read(nnm)
    v = ibtool("verify", "topology", "--plan", d / "plan.net", "--discovered", d / "run" / "ibnetdiscover.out",
               "--node-name-map", nnm, "--json", check=0)
    rep = json.loads(v.stdout)
    assert rep["ok"] and rep["matching"]["method"] == "node-name-map + structure"
    assert rep["correct_cables"] == plan.num_links
