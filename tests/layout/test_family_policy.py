"""One source for the policy that places a family: its @topology registration. `ibtool topo`
(layout.json), `ibtool cabling`, `ibtool analyze` and the library's `place()` all give it, for
every family (SMALL: one small plan of each)."""

import json

import pytest
from click.testing import CliRunner
from support import SMALL

from ibtool.cli.main import cli
from ibtool.layout import place
from ibtool.plan import read_plan
from ibtool.registry import TOPOLOGIES


def run(*args) -> str:
    r = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("family", sorted(SMALL))
def test_every_command_places_a_family_by_its_registration(family, tmp_path):
    want = TOPOLOGIES[family].layout
    plan = tmp_path / "plan"
    run("topo", family, *SMALL[family], "--out", plan)
    fabric, plan_dir, _ = read_plan(plan)
    if TOPOLOGIES[family].places(fabric):  # built on a cabinet floor: `topo` records it
        assert json.loads((plan / "layout.json").read_text())["policy"] == want
    else:
        assert not (plan / "layout.json").exists()
    assert place(fabric).policy == want  # the library, on the plan as `ibtool cabling` reads it
    report = json.loads(run("analyze", plan, "--bisection", "none", "--json"))
    assert report["layout"]["policy"] == want
    pkg = json.loads(run("cabling", plan, "--out", tmp_path / "cabling", "--json"))
    assert pkg["policy"] == want


def test_policy_names_are_registered_policies():
    from ibtool.layout import POLICIES
    assert {t.layout for _, t in TOPOLOGIES.items()} <= set(POLICIES)
    # the paper's own floors: KNS as CELLIA was built, trees by stage, paper 004's families cabinet-aware
    assert (TOPOLOGIES["kns"].layout, TOPOLOGIES["fattree"].layout, TOPOLOGIES["skywalk"].layout,
            TOPOLOGIES["equality"].layout) == ("switch-rack", "tree-stages", "cabinet-aware", "sequential")
