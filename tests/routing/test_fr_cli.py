"""`ibtool route fr` refuses bad input with one line naming the file or option, exit 2, no output."""

import shutil

import pytest
from support import ibtool

pytestmark = pytest.mark.ibsim


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    d = tmp_path_factory.mktemp("plans")
    ibtool("topo", "skywalk", "--z", 4, "--c", 4, "--di", 3, "--do", 1, "--out", d / "sky", check=0)
    ibtool("topo", "torus", "--dims", "3x3", "--out", d / "torus", check=0)
    # the fabric with LIDs, as ibnetdiscover prints it under ibsim
    ibtool("sim", "run", d / "sky" / "topology.net", "--out", d / "run", check=0)
    shutil.copy(d / "run" / "ibnetdiscover.out", d / "sky.disc")
    return d


@pytest.mark.parametrize("fabric,layout,out,words", [
    ("sky/topology.net", "sky/layout.json", "x.lft", "sky/topology.net: --fabric: no LIDs in this file"),
    ("sky.disc", "torus/layout.json", "x.lft", "torus/layout.json: node "),
    ("sky.disc", "missing.json", "x.lft", "missing.json: cannot read"),
    ("sky.disc", "sky/layout.json", "nodir/x.lft", "--out"),
])
def test_bad_input(plans, fabric, layout, out, words):
    r = ibtool("route", "fr", "--fabric", plans / fabric, "--layout", plans / layout, "--out", plans / out)
    assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 or r.stderr.startswith("  read")
    assert not (plans / out).exists()


def test_plan_with_lids_routes(plans):
    r = ibtool("route", "fr", "--fabric", plans / "sky.disc", "--layout", plans / "sky" / "layout.json",
               "--out", plans / "ok.lft", check=0)
    assert "FR: 16 switches" in r.stdout and (plans / "ok.lft").read_text().startswith("Unicast lids")


def test_sl_out_layers(plans):
    import json
    r = ibtool("route", "fr", "--fabric", plans / "sky.disc", "--layout", plans / "sky" / "layout.json",
               "--out", plans / "l.lft", "--sl-out", plans / "l.sl", "--json", check=0)
    s = json.loads(r.stdout)
    rows = [ln.split() for ln in (plans / "l.sl").read_text().splitlines() if not ln.startswith("#")]
    lids = 32  # 16 switches + 16 HCAs
    assert len(rows) == lids * (lids - 1) and s["layers"] >= 1
    assert {int(x[2]) for x in rows} == set(range(s["layers"]))
