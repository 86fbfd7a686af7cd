"""The KNS hdor knows without having seen it complete (docs/hdor.md section 7; Python reference
ibtool/routing/hdor_description.py, hdor_kns.py, hdor_first_sight.py): the hdor.conf format, routing
against a description, identification at first sight, replacements. The C engine is compared with this reference on ibsim in
tests/plugin/test_hdor_kns_ibsim.py."""

from __future__ import annotations

import pytest
from hdor_helpers import degrade, kns_with_lids, rebuild, shuffled

from ibtool.errors import InputError
from ibtool.formats import hdor_conf
from ibtool.routing import hdor, hdor_description, hdor_first_sight, hdor_kns
from ibtool.routing.lids import assign_lids


def without(f, nodes=(), links=()):
    """degrade() by the plan's names: devices (a router takes its HCAs along) and cables gone."""
    cut = [li for li in range(f.num_links) if {f.names[f.link_a[li]], f.names[f.link_b[li]]} in [set(c) for c in links]]
    assert len(cut) == len(links)
    return degrade(f, nodes=[f.index(x) for x in nodes], links=cut)


def long_running(f, g):
    """What a long-running hdor computes for g, having routed the complete f."""
    return hdor.compute(g, baseline=(f, hdor.compute(f)))


SHAPES = {"4^2": (4, 2, 1), "3^3": (3, 3, 1), "4^2 s=2": (4, 2, 2)}


def fabric(shape, seed=1):
    """The KNS with its nodes in another order, its ports renumbered, its GUIDs dealt anew."""
    k, n, s = SHAPES[shape]
    g, _ = shuffled(kns_with_lids(k, n, s, radix=8 if s == 1 else 36), seed, guids=True)
    assign_lids(g)
    return g


def a_cable(f, shape):
    r = "R[1,2]" if shape != "3^3" else "R[1,1,1]"
    x = f.index(r)
    return r, next(f.names[p] for _, p, _ in f.neighbors(x) if f.roles[p] == "switch")


# ---------------------------------------------------------------- the format

def test_description_round_trip_and_routing(tmp_path):
    f = fabric("4^2")
    r = hdor.compute(f)
    conf = hdor_description.describe(f, r, comment="test")
    hdor_conf.write(conf, tmp_path / "hdor.conf")
    text = (tmp_path / "hdor.conf").read_text()
    assert text.startswith("# test\n") and "\nhdor-kns 1 k=4 n=2 s=1 routers=16 switches=8 hcas=16 links=48\n" in text
    back = hdor_conf.read(tmp_path / "hdor.conf")
    assert hdor_conf.lines(back) == hdor_conf.lines(conf)
    got = hdor.compute(f, description=back)  # complete and described: the tables of section 4
    assert hdor.compare_tables(got.tables, r.tables) == [] and got.coords == r.coords and got.path_sls is None


@pytest.mark.parametrize("line, why", [
    ("hdor-kns 2 k=4 n=2", "not a KNS description"),
    ("hdor-kns 1 k=1 n=2", "k >= 2"),
    ("hdor-kns 1 k=4 n=2 red", "unknown header field 'red'"),
])
def test_description_header_errors(tmp_path, line, why):
    (tmp_path / "h.conf").write_text(line + "\n")
    with pytest.raises(InputError, match=why) as e:
        hdor_conf.read(tmp_path / "h.conf")
    assert str(e.value).startswith(f"{tmp_path / 'h.conf'}:1: ")


@pytest.mark.parametrize("line, why", [
    ('router 0x10 ports=8 [0,0] "R', "without its closing quote"),
    ('router 0x10 [0,0] "R"', "ports= is missing"),
    ('router 0x10 ports=8 [0,4] "R"', "coordinate 4 is not below k = 4"),
    ('switch 0x10 ports=8 [0] "S"', "needs dim=D"),
    ('router 0x10 ports=8 [0,0] lids=0:0 "R"', "LID: 0 is outside 1..49151"),
    ('router 0x10 ports=8 [0,0] lids=3:9 "R"', "lids= names port 3"),
    ('router 0x10 ports=8 [0,0] speed=fast "R"', "unknown field 'speed=fast'"),
    ('cable 0x10 1 0x20 1', "'cable' is not router, switch, hca or link"),
    ('link 0x10 2 0x99 1', "GUID 0x0000000000000099 is not a node of the file"),
    ('link 0x10 9 0x20 1', "port 9 of 0x0000000000000010 is beyond its ports="),
    ('link 0x10 1 0x20 2', "port 1 of 0x0000000000000010 is cabled twice"),
    ('router 0x10 ports=8 [1,1] "again"', "GUID 0x0000000000000010 is listed twice"),
])
def test_description_line_errors(tmp_path, line, why):
    base = ["hdor-kns 1 k=4 n=2", 'router 0x10 ports=8 [0,0] "R0"', 'hca 0x20 ports=1 [0,0] "H0"', "link 0x10 1 0x20 1"]
    (tmp_path / "b.conf").write_text("\n".join(base + [line]) + "\n")
    with pytest.raises(InputError, match=why.replace("(", r"\(").replace("[", r"\[")) as e:
        hdor_conf.read(tmp_path / "b.conf")
    assert f"b.conf:{len(base) + 1}: " in str(e.value)


# ---------------------------------------------------------------- a description

@pytest.mark.parametrize("shape", list(SHAPES))
def test_described_degraded_equals_long_running(shape):
    """A description and a fabric missing a cable, an indirect switch, a router or all three: the
    tables, path SLs and SL2VL a long-running hdor computes. With s = 1 a description without
    LIDs (a plan's) does it; with s = 2 the LIDs of the missing devices count in the spreading over
    equal up-ports, so the description carries the LIDs (test_description_with_the_lids_...)."""
    f = fabric(shape)
    conf = hdor_description.describe(f, hdor.compute(f), lids=SHAPES[shape][2] > 1)
    r1, s1 = a_cable(f, shape)
    sw = sorted(x for x in f.names if x.startswith("S["))[3]
    router = "R[2,3]" if shape != "3^3" else "R[2,0,1]"
    for nodes, links in (((), [(r1, s1)]), ((sw,), ()), ((router,), ()), ((sw, router), [(r1, s1)])):
        g = without(f, nodes, links)
        got, want = hdor.compute(g, description=conf), long_running(f, g)
        assert got.faults and hdor.compare_tables(got.tables, want.tables) == [], (nodes, links)
        assert got.path_sls == want.path_sls and got.sl2vl == want.sl2vl and got.coords == want.coords


def test_description_of_another_fabric_is_declined():
    f, other = fabric("4^2", 1), fabric("4^2", 2)
    conf = hdor_description.describe(other, hdor.compute(other))
    conf.path = "hdor.conf"
    with pytest.raises(hdor.NotFamily, match=r"the fabric is not the KNS of hdor.conf: .* is not in the KNS|cabled to"):
        hdor.compute(f, description=conf)


def test_description_with_the_lids_of_missing_ports():
    """A description with LIDs: a missing router's LIDs still count where they are free (docs
    section 7), so a spread up-port set (s = 2) is dealt as a long-running hdor deals it."""
    f = fabric("4^2 s=2")
    conf = hdor_description.describe(f, hdor.compute(f))  # with LIDs
    g = without(f, ["R[2,3]"])
    got, want = hdor.compute(g, description=conf), long_running(f, g)
    assert hdor.compare_tables(got.tables, want.tables) == [] and got.path_sls == want.path_sls
    bare = hdor_description.describe(f, hdor.compute(f), lids=False)
    differs = hdor.compare_tables(hdor.compute(g, description=bare).tables, want.tables)
    assert differs, "without the missing router's LIDs the spread up-ports deal LIDs differently"


# ---------------------------------------------------------------- first sight

@pytest.mark.parametrize("shape", list(SHAPES))
def test_first_sight_of_a_missing_cable_is_the_long_running_routing(shape):
    """A cable decides no coordinate: the same coordinates, tables, SLs as a long-running hdor."""
    f = fabric(shape)
    g = without(f, links=[a_cable(f, shape)])
    got, want = hdor.compute(g), long_running(f, g)
    assert got.faults["first_sight"] == {"routers": 0, "switches": 0, "cables": 1}
    assert got.coords == want.coords and hdor.compare_tables(got.tables, want.tables) == []
    assert got.path_sls == want.path_sls and got.sl2vl == want.sl2vl and got.vls == 2


@pytest.mark.parametrize("shape, nodes", [("4^2", ["S[1,2]"]), ("4^2", ["R[2,3]"]), ("3^3", ["S[2,5]"]),
                                          ("3^3", ["R[2,0,1]"]), ("3^3", ["R[2,2,2]", "S[0,3]"]),
                                          ("4^2 s=2", ["R[2,3]"])])
def test_first_sight_of_missing_devices(shape, nodes):
    """Missing routers and switches become phantoms (GUIDs from 0xffffffff00000000, after every
    device there): routed as a long-running hdor routes the completed KNS; where the phantoms
    decide no coordinate, exactly as a long-running hdor routes the real one."""
    f = fabric(shape)
    g = without(f, nodes)
    got = hdor.compute(g)
    bf, missing = hdor_first_sight.first_sight(g)
    assert missing["routers"] == sum(x.startswith("R") for x in nodes)
    assert missing["switches"] == sum(x.startswith("S") for x in nodes)
    phantoms = [x for x in range(bf.num_nodes) if bf.guids[x] >= hdor_conf.PHANTOM]
    assert all(bf.names[x].startswith("missing ") for x in phantoms)
    assert len(phantoms) == 2 * missing["routers"] + missing["switches"]  # a router comes with its HCA
    want = hdor.compute(g, baseline=(bf, hdor.compute(bf)))  # the completed KNS, remembered
    assert hdor.compare_tables(got.tables, want.tables) == [] and got.path_sls == want.path_sls
    lr = long_running(f, g)
    if got.coords == lr.coords and SHAPES[shape][2] == 1:
        # the phantoms decided nothing, and with s = 1 no table spreads LIDs over equal ports (their
        # LIDs, which first sight cannot know, do not count): the real KNS's routing
        assert hdor.compare_tables(got.tables, lr.tables) == []


def test_first_sight_cannot_place_two_missing_lines_of_one_dimension():
    """n = 2 with two dimension-0 switches missing: their routers could be on either line."""
    f = fabric("4^2")
    g = without(f, ["S[0,1]", "S[0,2]"])
    with pytest.raises(hdor.NotFamily, match=r"is not decided by the fabric .* give hdor the description hdor.conf"):
        hdor.compute(g)


def test_first_sight_completes_a_few_faults_only():
    f = fabric("3^3")
    g = without(f, ["R[0,1,1]", "R[1,2,2]", "R[2,0,2]", "R[1,0,0]"])  # 4 of 27 routers (no two on a line): more than an eighth
    with pytest.raises(hdor.NotFamily, match=r"4 router\(s\), 0 indirect network\(s\) and 0 cable\(s\) missing: more "
                                          r"than first sight completes"):
        hdor.compute(g)


# ---------------------------------------------------------------- replacements

def test_a_replaced_switch_and_router_take_their_places():
    """New GUIDs at exactly the places of missing devices: the same routes (by destination port),
    the description's coordinates kept even where the new GUIDs would order them differently."""
    f = fabric("4^2")
    conf = hdor_description.describe(f, hdor.compute(f), lids=False)
    new = {f.index("S[0,1]"): 0x0000000000000001, f.index("R[2,2]"): 0x0000000000000002}  # smallest GUIDs
    g = rebuild(f, guid_map={i: new.get(i, f.guids[i]) for i in range(f.num_nodes)})
    g.port_lids = dict(f.port_lids)
    got = hdor.compute(g, description=conf)
    want = hdor.compute(f, description=conf)
    assert got.coords == want.coords
    assert {g.guids[i]: row.tolist() for i, row in ((g.by_guid(k), v) for k, v in got.tables.lft.items())} == \
        {g.guids[f.by_guid(k)]: row.tolist() for k, row in want.tables.lft.items()}
    assert hdor_kns.replacements(g, hdor_description.fabric_of(conf)[0], conf) == {
        g.index("S[0,1]"): f.guids[f.index("S[0,1]")], g.index("R[2,2]"): f.guids[f.index("R[2,2]")]}
    # the rule by itself decides the routes by the new GUIDs' order: not what a replacement does
    assert hdor.compute(g).coords != got.coords


def test_a_device_on_other_ports_is_no_replacement():
    f = fabric("4^2")
    conf = hdor_description.describe(f, hdor.compute(f), lids=False)
    x = f.index("S[0,1]")
    links = [(p, y, q) for p, y, q in f.neighbors(x)]
    g = rebuild(f, drop_nodes=[x])
    s = g.add_switch("S[0,1] elsewhere", 8, guid=0x42)
    for (p, y, q), p2 in zip(links, [links[1][0], links[0][0], *[lk[0] for lk in links[2:]]]):
        g.add_link(s, g.by_guid(f.guids[y]), p2, q)  # two of its cables swapped
    from ibtool.routing.lids import assign_lids
    assign_lids(g)
    with pytest.raises(hdor.NotFamily, match="is not in the KNS"):
        hdor.compute(g, description=conf)
