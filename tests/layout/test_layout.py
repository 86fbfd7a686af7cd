"""Layout model, policies, cable models and the site description."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ibtool.errors import InputError
from ibtool.fabric import Fabric, attached_switch
from ibtool.layout import (
    Layout,
    length_paper002,
    length_paper004,
    medium,
    place,
    purchasable,
    read_site,
)
from ibtool.layout.policies import POLICIES
from ibtool.topologies.kns import kns


# ---------------------------------------------------------------- cable models: the papers' figures
def test_paper002_adjacent_modules_are_104_45_cm():
    # paper 002, section 4: "a cable to the adjacent module is 104.45 cm, i.e., 2 x 0.5 m + 44.45 mm"
    # 2 x 0.5 m + 44.45 mm is 104.445 cm exactly; the paper prints it rounded to 104.45 cm
    assert length_paper002(0, 0, 41, 0, 0, 42) == pytest.approx(1.04445)
    assert length_paper002(0, 0, 41, 0, 0, 42) == pytest.approx(1.0445, abs=0.0001)


def test_paper002_between_cabinets_goes_through_the_overhead_pathway():
    # two top modules (U42) of neighbouring 1 m cabinets: 0.5 + 1 up + 1 across + 1 down + 0.5
    assert length_paper002(0, 0, 42, 0, 1, 42) == pytest.approx(4.0)
    # one row apart and one U lower at each end: + 2 x 44.45 mm
    assert length_paper002(0, 0, 41, 1, 0, 41) == pytest.approx(4.0889)


def test_paper004_intra_and_inter_cabinet_lengths():
    # paper 004, section III: 2 m inside a cabinet; 4 m + Manhattan distance (0.6 m wide, 2.1 m deep)
    got = length_paper004([0, 0, 0, 0], [0, 0, 0, 3], [0, 0, 1, 2], [0, 1, 0, 0])
    assert got.tolist() == pytest.approx([2.0, 4.6, 6.1, 4.0 + 2 * 2.1 + 3 * 0.6])


def test_purchasable_rounds_up_and_marks_too_long():
    got = purchasable([0.3, 1.0, 1.0445, 4.6, 101.0], (0.5, 1, 1.5, 2, 5, 100))
    assert got[:4].tolist() == [0.5, 1.0, 1.5, 5.0] and math.isnan(got[4])


def test_medium_follows_the_copper_limit_per_speed():
    got = medium([3.0, 3.0, 9.0, np.nan], ["QDR", "HDR", "XYZ", "QDR"], {"QDR": 7.0, "HDR": 2.0, "*": 8.0})
    assert got.tolist() == ["copper", "fiber", "fiber", ""]


# ---------------------------------------------------------------- policies
def cellia():
    return kns(6, 2, radix=8)  # 36 routers + 36 HCAs + 12 switches


def test_sequential_routers_top_endpoints_same_or_next_cabinet():
    f = cellia()
    lay = place(f, "sequential")
    att = attached_switch(f)
    for i in range(f.num_nodes):
        assert 1 <= lay.u[i] <= 42
        if f.is_switch(i) and f.roles[i] == "router":
            # routers stack down from the top: every slot above a router holds a switch
            c = lay.cabinet[i]
            above = [j for j in range(f.num_nodes) if lay.cabinet[j] == c and lay.u[j] > lay.u[i]]
            assert all(f.is_switch(j) for j in above)
        if not f.is_switch(i):
            assert lay.cabinet[i] - lay.cabinet[att[i]] in (0, 1)
    # 84 one-U devices fill two 42U cabinets exactly
    assert lay.num_cabinets == 2
    slots = {(int(c), int(u)) for c, u in zip(lay.cabinet, lay.u)}
    assert len(slots) == f.num_nodes


def test_cabinet_aware_grid_and_z_switches_per_cabinet():
    f = cellia()
    lay = place(f, "cabinet-aware", site={"switches_per_cabinet": 8})
    sw = [i for i in range(f.num_nodes) if f.is_switch(i)]
    assert lay.num_cabinets == 6 and lay.grid == (3, 2)  # x = ceil(sqrt 6) = 3, y = ceil(6/3) = 2
    counts = np.bincount(lay.cabinet[sw])
    assert counts.tolist() == [8] * 6
    assert POLICIES["cabinet-aware"].site.grid_for(256) == (16, 16)
    assert POLICIES["cabinet-aware"].site.grid_for(10) == (4, 3)


def test_cabinet_aware_honours_the_family_order_label():
    f = Fabric("t")
    a = f.add_switch("a", 4, labels={"cabinet": 1})
    b = f.add_switch("b", 4, labels={"cabinet": 0})
    f.add_link(a, b)
    lay = place(f, "cabinet-aware", site={"switches_per_cabinet": 1})
    assert lay.cabinet.tolist() == [1, 0]
    # 2 cabinets: x = ceil(sqrt 2) = 2 rows of y = 1, so one row pitch (2.1 m) apart
    assert lay.grid == (2, 1) and lay.cable_length(0) == pytest.approx(4.0 + 2.1)


def test_switch_rack_cellia():
    # CELLIA: all switches in one switch rack (front and back), the nodes in two node racks
    lay = place(cellia(), "switch-rack", site={"hcas_per_cabinet": 25})
    assert lay.cabinet_kind == ["switch", "node", "node"]
    f = lay.fabric
    sw = [i for i in range(f.num_nodes) if f.is_switch(i)]
    assert set(lay.cabinet[sw].tolist()) == {0}
    assert set(lay.side[sw].tolist()) == {0, 1}  # 48 switches need both faces of a 42U rack
    assert np.bincount(lay.cabinet[[i for i in range(f.num_nodes) if not f.is_switch(i)]]).tolist() == [0, 25, 11]


def test_layout_never_changes_the_fabric():
    f = cellia()
    before = (f.num_nodes, f.link_set())
    place(f, "sequential")
    assert (f.num_nodes, f.link_set()) == before


# ---------------------------------------------------------------- layout.json
def test_layout_json_round_trip(tmp_path):
    f = cellia()
    lay = place(f, "cabinet-aware")
    lay.write(tmp_path / "layout.json")
    back = Layout.read(tmp_path / "layout.json", f)
    assert back.policy == "cabinet-aware" and back.site == lay.site
    assert np.array_equal(back.cabinet, lay.cabinet) and np.array_equal(back.u, lay.u)
    assert np.allclose(back.length, lay.length) and list(back.medium) == list(lay.medium)
    assert back.summary() == lay.summary()


def test_layout_json_keeps_a_length_measured_by_hand(tmp_path):
    f = cellia()
    d = place(f).to_dict()
    d["cables"][0][4] = 3.25
    (tmp_path / "l.json").write_text(json.dumps(d))
    assert Layout.read(tmp_path / "l.json", f).cable_length(0) == 3.25


def test_layout_json_of_another_fabric_is_refused(tmp_path):
    place(kns(3, 2, radix=8)).write(tmp_path / "layout.json")
    with pytest.raises(InputError, match=r"layout.json: .*not in the fabric|layout.json: .*no position"):
        Layout.read(tmp_path / "layout.json", cellia())


# ---------------------------------------------------------------- site description
def test_site_yaml_overrides_the_policy_defaults(tmp_path):
    p = tmp_path / "site.yaml"
    p.write_text("cabinet_u: 48\nreserved_u: 2\ngrid: [4, 4]\ncopper_limit: {qdr: 5, '*': 8}\n")
    s = read_site(p, POLICIES["sequential"].site)
    assert (s.cabinet_u, s.reserved_u, s.grid, s.cabinet_width) == (48, 2, (4, 4), 1.0)
    assert s.copper_limit == {"QDR": 5.0, "*": 8.0}


@pytest.mark.parametrize("text, message", [
    ("cabinet_u: 42\ncabinet_hieght: 3\n", r"site.yaml:2: unknown site key 'cabinet_hieght'"),
    ("cabinet_u: 2\nreserved_u: 1\nswitch_u: 2\n", r"site.yaml:1: cabinet_u: .*too small for one switch"),
    ("side: -0.5\n", r"site.yaml:1: side: a length cannot be negative"),
    ("grid: [1, 1]\n", r"site.yaml:1: grid: R\[3,3\] does not fit the room: .* needs 2 cabinets, the grid 1x1 holds 1"),
    ("cable_model: [\n", r"site.yaml:\d+: not valid YAML"),
])
def test_bad_site_descriptions_name_the_key(tmp_path, text, message):
    p = tmp_path / "site.yaml"
    p.write_text(text)
    with pytest.raises(InputError, match=message):
        place(cellia(), "sequential", site=p)


def test_unknown_policy_is_refused():
    with pytest.raises(InputError, match="unknown layout policy 'rows'"):
        place(cellia(), "rows")


def test_family_default_policy():
    assert place(cellia()).policy == "switch-rack"  # KNS: as CELLIA was built (paper 000)
    f = Fabric("plain")
    f.add_link(f.add_switch("a", 4), f.add_switch("b", 4))
    assert place(f).policy == "sequential"
